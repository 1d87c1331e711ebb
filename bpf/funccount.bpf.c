// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* funccount: counts the hits of many probes with one program per kind of
 * probe: the attach cookie (or, for syscalls, the syscall number) tells the
 * probes apart (before 5.15, without cookies: a program per probe); the counts only grow, and user space takes
 * differences (a delete beside a program's add would lose the add). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compat.bpf.h"
#include <bpf/bpf_core_read.h>
#include "filter.bpf.h"
#include "funccount.h"

#define MAX_SYSCALLS 1024

const volatile __u32 target_pid = 0;	/* 0: every process */
const volatile bool per_process = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct funccount_key);
	__type(value, struct funccount_value);
} counts SEC(".maps");

/* syscalls:sys_enter_X and sys_exit_X, counted from the raw tracepoints:
 * syscall number -> the probe's index + 1 (0: not counted) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, __u64);
} enter_probes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, __u64);
} exit_probes SEC(".maps");

static __always_inline int count_hit(__u64 probe)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct funccount_key key = {};
	struct funccount_value *value, zero = {};

	if ((target_pid && tgid != target_pid) || !cgroup_traced())
		return 0;
	key.probe = probe;
	key.cgroup = container_key();
	if (per_process)
		key.pid = tgid;
	value = bpf_map_lookup_elem(&counts, &key);
	if (!value) {
		if (per_process) {
			struct task_struct *task = (void *)bpf_get_current_task();

			BPF_CORE_READ_STR_INTO(&zero.comm, task, group_leader, comm);
		}
		/* another CPU may create it first: then add to its value */
		bpf_map_update_elem(&counts, &key, &zero, BPF_NOEXIST);
		value = bpf_map_lookup_elem(&counts, &key);
		if (!value)
			return 0;
	}
	__sync_fetch_and_add(&value->count, 1);
	return 0;
}

static __always_inline int count_syscall(void *map, __u32 nr)
{
	__u64 *probe = bpf_map_lookup_elem(map, &nr);

	return probe && *probe ? count_hit(*probe - 1) : 0;
}

/* every tracepoint (t:category:name) */
SEC("tp")
int handle_tracepoint(void *ctx)
{
	return count_hit(attach_cookie(ctx));
}

/* every uprobe (u:library:function), and kprobes where the kernel has them */
SEC("uprobe")
int handle_uprobe(void *ctx)
{
	return count_hit(attach_cookie(ctx));
}

/* kernels without attach cookies: a program per probe, its index built
 * in, loaded only when user space asks (SEC("?...")); a tracepoint's
 * common_type cannot tell them apart either (the kernel puts pt_regs in
 * the first 8 bytes of the record it hands the program) */
#define PROBE_SLOT(n)							\
	SEC("?uprobe") int handle_uprobe_##n(void *ctx) { return count_hit(n); } \
	SEC("?tp") int handle_tracepoint_##n(void *ctx) { return count_hit(n); }

PROBE_SLOT(0) PROBE_SLOT(1) PROBE_SLOT(2) PROBE_SLOT(3) PROBE_SLOT(4) PROBE_SLOT(5) PROBE_SLOT(6) PROBE_SLOT(7)
PROBE_SLOT(8) PROBE_SLOT(9) PROBE_SLOT(10) PROBE_SLOT(11) PROBE_SLOT(12) PROBE_SLOT(13) PROBE_SLOT(14) PROBE_SLOT(15)
PROBE_SLOT(16) PROBE_SLOT(17) PROBE_SLOT(18) PROBE_SLOT(19) PROBE_SLOT(20) PROBE_SLOT(21) PROBE_SLOT(22) PROBE_SLOT(23)
PROBE_SLOT(24) PROBE_SLOT(25) PROBE_SLOT(26) PROBE_SLOT(27) PROBE_SLOT(28) PROBE_SLOT(29) PROBE_SLOT(30) PROBE_SLOT(31)

/* sys_enter(struct pt_regs *regs, long id) */
SEC("raw_tp/sys_enter")
int handle_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	return count_syscall(&enter_probes, ctx->args[1]);
}

/* sys_exit(struct pt_regs *regs, long ret) */
SEC("raw_tp/sys_exit")
int handle_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];

#if defined(__TARGET_ARCH_x86)
	return count_syscall(&exit_probes, BPF_CORE_READ(regs, orig_ax));
#elif defined(__TARGET_ARCH_arm64)
	return count_syscall(&exit_probes, BPF_CORE_READ(regs, syscallno));
#else
	return 0;
#endif
}

char LICENSE[] SEC("license") = "GPL";
