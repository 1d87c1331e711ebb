// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* stackcount: counts the stacks (kernel and user) that lead to an event
 * (tracepoints, uprobes) or that CPU samples land in (perf event), in the
 * kernel: stack ids from a stack-trace map, counted in a hash. User space
 * symbolizes them at the end. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "compat.bpf.h"
#include "filter.bpf.h"
#include "stackcount.h"
#include "v8.bpf.h"
#include "stacks.bpf.h"

const volatile __u32 target_pid = 0;	/* 0: every process (CPU samples: but idle) */
const volatile bool kernel_stacks = true;
const volatile bool user_stacks = true;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct stackcount_key);
	__type(value, __u64);
} counts SEC(".maps");

/* where the walk of the user stack's JS frames (bpf/v8.bpf.h) starts: the user registers of */
enum walk_from {
	WALK_TASK,	/* the task's saved user registers (a tracepoint) */
	WALK_CTX,	/* the uprobe's (user registers) */
	WALK_SAMPLE,	/* the perf event sample's */
};

static __always_inline int count_stack(void *ctx, enum walk_from from)
{
	__u64 id = bpf_get_current_pid_tgid(), one = 1, *count;
	struct stackcount_key key = {};

	key.pid = id >> 32;
	if ((target_pid ? key.pid != target_pid : !id) || !cgroup_traced())
		return 0;
	key.cgroup = container_key();
	key.kernel_stack = kernel_stacks ? stack_id(ctx, 0, SCRATCH_SLOT_EVENT) : -EFAULT;
	key.user_stack = user_stacks ? stack_id(ctx, BPF_F_USER_STACK, SCRATCH_SLOT_EVENT) : -EFAULT;
	if (user_stacks) {
		if (from == WALK_SAMPLE)
			key.v8_stack = v8_walk_sample(key.pid, ctx);
		else if (from == WALK_CTX)
			key.v8_stack = v8_walk(key.pid, PT_REGS_IP((struct pt_regs *)ctx), PT_REGS_FP((struct pt_regs *)ctx),
					       PT_REGS_SP((struct pt_regs *)ctx), SCRATCH_SLOT_EVENT);
		else
			key.v8_stack = v8_walk_current(key.pid, SCRATCH_SLOT_EVENT);
	}
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	count = bpf_map_lookup_elem(&counts, &key);
	if (count) {
		__sync_fetch_and_add(count, 1);
	} else if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST)) {
		/* another CPU created it first */
		count = bpf_map_lookup_elem(&counts, &key);
		if (count)
			__sync_fetch_and_add(count, 1);
	}
	return 0;
}

/* every tracepoint (-t category:name) */
SEC("tp")
int handle_tracepoint(void *ctx)
{
	return count_stack(ctx, WALK_TASK);
}

/* every uprobe (u:library:function) */
SEC("uprobe")
int handle_uprobe(void *ctx)
{
	return count_stack(ctx, WALK_CTX);
}

/* CPU samples (--profile) */
SEC("perf_event")
int handle_sample(struct bpf_perf_event_data *ctx)
{
	return count_stack(ctx, WALK_SAMPLE);
}

char LICENSE[] SEC("license") = "GPL";
