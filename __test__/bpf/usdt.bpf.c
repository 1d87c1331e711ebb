// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test program: counts and sums the argument of a USDT probe. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>

__u64 ticks = 0;
__u64 sum = 0;
__u64 cookie = 0;

SEC("usdt")
int BPF_USDT(handle_tick, int i)
{
	__sync_fetch_and_add(&ticks, 1);
	__sync_fetch_and_add(&sum, i);
	cookie = bpf_usdt_cookie(ctx);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
