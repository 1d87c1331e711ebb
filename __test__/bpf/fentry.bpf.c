// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test program: fentry/fexit on do_sys_openat2 (refused by some kernels at load). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile __u32 target_pid = 0;

__u64 fentry_hits = 0;
__u64 fexit_hits = 0;

SEC("fentry/do_sys_openat2")
int BPF_PROG(handle_fentry_openat, int dfd, const char *filename)
{
	if ((bpf_get_current_pid_tgid() >> 32) == target_pid)
		__sync_fetch_and_add(&fentry_hits, 1);
	return 0;
}

SEC("fexit/do_sys_openat2")
int BPF_PROG(handle_fexit_openat, int dfd, const char *filename, struct open_how *how, long ret)
{
	if ((bpf_get_current_pid_tgid() >> 32) == target_pid)
		__sync_fetch_and_add(&fexit_hits, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
