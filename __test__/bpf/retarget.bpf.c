// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test program: a tp_btf program whose SEC() names sys_enter, retargeted
 * by the test (prog.setAttachTarget('sys_exit')); it counts the calls of
 * thread target_tid whose second argument (sys_enter: the syscall number,
 * sys_exit: the return value) is `marker`. And an fentry program to
 * retarget where the kernel refuses fentry. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile __u32 target_tid = 0;
const volatile long marker = 0;

__u64 hits = 0;

SEC("tp_btf/sys_enter")
int BPF_PROG(second_arg, struct pt_regs *regs, long arg)
{
	if ((__u32)bpf_get_current_pid_tgid() == target_tid && arg == marker)
		__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("?fentry/do_sys_openat2")
int BPF_PROG(fentry_any)
{
	return 0;
}

SEC("?raw_tp/sys_enter")
int raw_any(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
