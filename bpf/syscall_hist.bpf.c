// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* syscall_hist: per-syscall latency histograms of one process (log2, or
 * linear as bpftrace's lhist), counted in the kernel. Raw tracepoints: one
 * attach each for every syscall, and no per-event record to build. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "filter.bpf.h"
#define SYSCALL_HIST_PER_CGROUP
#include "syscall_hist.bpf.h"

/* sys_enter(struct pt_regs *regs, long id) */
SEC("raw_tp/sys_enter")
int handle_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	/* not started: its exit is not counted either */
	if (cgroup_traced())
		syscall_enter(ctx->args[1]);
	return 0;
}

/* sys_exit(struct pt_regs *regs, long ret) */
SEC("raw_tp/sys_exit")
int handle_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	syscall_exit(ctx->args[1]);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
