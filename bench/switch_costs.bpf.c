// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench/profile_costs.js's switches row: the two ways to run a program at
 * a thread's context switches, each with the least work (what the
 * dispatch costs, not the program): the sched_switch tracepoint with the
 * profile's first test (two loads from its arguments), and a perf_event
 * program for a context-switches event of one thread.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile __u32 target_pid = 0;
__u64 hits = 0;

SEC("tp_btf/sched_switch")
int BPF_PROG(first_test, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (prev->pid != target_pid && next->pid != target_pid)
		return 0;
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("perf_event")
int own_switch(struct bpf_perf_event_data *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
