// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* stackcount: counts the stacks (kernel and user) that lead to an event
 * (tracepoints, uprobes) or that CPU samples land in (perf event), in the
 * kernel: stack ids from a stack-trace map, counted in a hash. User space
 * symbolizes them at the end. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "filter.bpf.h"
#include "stackcount.h"

#define MAX_STACK_DEPTH 127
#define EFAULT 14

const volatile __u32 target_pid = 0;	/* 0: every process (CPU samples: but idle) */
const volatile bool kernel_stacks = true;
const volatile bool user_stacks = true;

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct stackcount_key);
	__type(value, __u64);
} counts SEC(".maps");

static __always_inline int count_stack(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), one = 1, *count;
	struct stackcount_key key = {};

	key.pid = id >> 32;
	if ((target_pid ? key.pid != target_pid : !id) || !cgroup_traced())
		return 0;
	key.cgroup = container_key();
	key.kernel_stack = kernel_stacks ? bpf_get_stackid(ctx, &stacks, 0) : -EFAULT;
	key.user_stack = user_stacks ? bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) : -EFAULT;
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
	return count_stack(ctx);
}

/* every uprobe (u:library:function) */
SEC("uprobe")
int handle_uprobe(void *ctx)
{
	return count_stack(ctx);
}

/* CPU samples (--profile) */
SEC("perf_event")
int handle_sample(struct bpf_perf_event_data *ctx)
{
	return count_stack(ctx);
}

char LICENSE[] SEC("license") = "GPL";
