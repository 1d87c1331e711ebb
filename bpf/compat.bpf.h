/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What older kernels lack, chosen at load from the running kernel's own BTF
 * (CO-RE: libbpf resolves each check to a constant, and the verifier never
 * walks the branch not taken), as libbpf-tools' compat.bpf.h does. */
#ifndef __COMPAT_BPF_H
#define __COMPAT_BPF_H

#include <bpf/bpf_core_read.h>

/* bpf_get_attach_cookie(): kprobes, uprobes and tracepoints since 5.15 */
#define HAVE_ATTACH_COOKIE bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_attach_cookie)

/* the attachment's cookie, 0 on kernels without attach cookies (their
 * attach calls take none: bpf.features().attachCookie) */
static __always_inline __u64 attach_cookie(void *ctx)
{
	return HAVE_ATTACH_COOKIE ? bpf_get_attach_cookie(ctx) : 0;
}

/* bpf_task_pt_regs(): since 5.15 */
#define HAVE_TASK_PT_REGS bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)

/* the kernel stack of a task on x86_64 and arm64 (16 KiB, as every
 * distribution builds them; KASAN kernels double it) */
#define KERNEL_STACK_BYTES (16 * 1024)

/*
 * The user registers `task` saved on entering the kernel (its syscall
 * number among them): bpf_task_pt_regs() where the kernel has it, else
 * where that helper finds them, at the top of the task's kernel stack
 * (task_pt_regs(), as BCC computes it on older kernels).
 */
static __always_inline struct pt_regs *task_user_regs(struct task_struct *task)
{
	void *stack;

	if (HAVE_TASK_PT_REGS)
		return (struct pt_regs *)bpf_task_pt_regs(task);
	stack = BPF_CORE_READ(task, stack);
	return stack ? (struct pt_regs *)(stack + KERNEL_STACK_BYTES) - 1 : NULL;
}

/*
 * The user registers the current task entered the kernel with: through
 * bpf_get_current_task_btf() where bpf_task_pt_regs() takes it (5.15),
 * else bpf_get_current_task() (any task pointer: task_user_regs reads it
 * with CO-RE reads).
 */
static __always_inline struct pt_regs *current_user_regs(void)
{
	if (HAVE_TASK_PT_REGS)
		return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	return task_user_regs((struct task_struct *)bpf_get_current_task());
}

/* before 5.14, task_struct's __state was state */
struct task_struct___state_before_5_14 {
	long state;
} __attribute__((preserve_access_index));

/*
 * Whether a task leaving the CPU stays runnable (TASK_RUNNING): with
 * sched_switch's preempt, what the kernel counts as an involuntary switch
 * (nivcsw): a wake-up's preemption taken as the task returns to user space
 * is a plain schedule() (preempt false) of a running task.
 */
static __always_inline bool task_runnable(struct task_struct *task)
{
	if (bpf_core_field_exists(task->__state))
		return BPF_CORE_READ(task, __state) == 0;
	return BPF_CORE_READ((struct task_struct___state_before_5_14 *)task, state) == 0;
}

/* the syscall a sleeping task is in, or -1 */
static __always_inline long task_syscall(struct task_struct *task)
{
	struct pt_regs *regs = task_user_regs(task);

	if (!regs)
		return -1;
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(regs, orig_ax);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ(regs, syscallno);
#else
	return -1;
#endif
}

/*
 * Per-thread storage: task storage where the kernel lets tracing programs
 * use it (no insert and delete per call, nothing left behind by a thread
 * that exits), else (before 5.11) a hash keyed by thread id. User space
 * chooses before load from bpf.features().taskStorage (lib/core/compat.js
 * chooseThreadStorage): it sets use_task_storage and leaves the other map
 * out. THREAD_STORAGE(name, type) (once per object) declares both maps,
 * `name` and `name_by_tid`, and use_task_storage; thread_storage_get(name,
 * create) is this thread's value or NULL; thread_storage_done(name)
 * forgets it (the hash only).
 */
#define THREAD_STORAGE_MAX 16384

#define THREAD_STORAGE(name, value_type)				\
	const volatile bool use_task_storage = true;			\
	struct {							\
		__uint(type, BPF_MAP_TYPE_TASK_STORAGE);		\
		__uint(map_flags, BPF_F_NO_PREALLOC);			\
		__type(key, int);					\
		__type(value, value_type);				\
	} name SEC(".maps");						\
	struct {							\
		__uint(type, BPF_MAP_TYPE_HASH);			\
		__uint(map_flags, BPF_F_NO_PREALLOC);			\
		__uint(max_entries, THREAD_STORAGE_MAX);		\
		__type(key, __u32);					\
		__type(value, value_type);				\
	} name##_by_tid SEC(".maps");					\
	/* the hash's new entries start from this */			\
	static const value_type name##_zero = {}

#define thread_storage_get(name, create) ({				\
	void *__v;							\
	if (use_task_storage) {						\
		__v = bpf_task_storage_get(&name, bpf_get_current_task_btf(), 0, \
					   (create) ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0); \
	} else {							\
		__u32 __tid = (__u32)bpf_get_current_pid_tgid();	\
		__v = bpf_map_lookup_elem(&name##_by_tid, &__tid);	\
		if (!__v && (create)) {					\
			bpf_map_update_elem(&name##_by_tid, &__tid, &name##_zero, BPF_NOEXIST); \
			__v = bpf_map_lookup_elem(&name##_by_tid, &__tid); \
		}							\
	}								\
	__v;								\
})

#define thread_storage_done(name) ({					\
	if (!use_task_storage) {					\
		__u32 __tid = (__u32)bpf_get_current_pid_tgid();	\
		bpf_map_delete_elem(&name##_by_tid, &__tid);		\
	}								\
})

#endif /* __COMPAT_BPF_H */
