// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test program: counts CPU-clock samples that land in one process. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

const volatile __u32 target_pid = 0;

__u64 samples = 0;
__u64 all_samples = 0;

SEC("perf_event")
int handle_cpu_clock(void *ctx)
{
	__sync_fetch_and_add(&all_samples, 1);
	if ((bpf_get_current_pid_tgid() >> 32) == target_pid)
		__sync_fetch_and_add(&samples, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
