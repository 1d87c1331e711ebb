// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* node_syscalls: what a Node.js process asks of the kernel. Per-syscall
 * latency histograms (syscall_hist.bpf.h), the files it opens and the
 * endpoints it connects to, all counted in the kernel. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "syscall_hist.bpf.h"
#include "node_syscalls.bpf.h"
#include "filter.bpf.h"

/* sys_enter(struct pt_regs *regs, long id) */
SEC("raw_tp/sys_enter")
int handle_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	long nr = ctx->args[1];

	/* not started: its exit is not counted either */
	if (cgroup_traced() && syscall_enter(nr))
		files_endpoints_enter((__u32)bpf_get_current_pid_tgid(), nr, (struct pt_regs *)ctx->args[0]);
	return 0;
}

/* sys_exit(struct pt_regs *regs, long ret) */
SEC("raw_tp/sys_exit")
int handle_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	long ret = ctx->args[1];

	files_endpoints_exit((__u32)bpf_get_current_pid_tgid(), syscall_exit(ret), ret);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
