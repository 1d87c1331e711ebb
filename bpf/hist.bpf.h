/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* In-kernel histogram slots, read by lib/hist.js (as bpftrace prints them). */
#ifndef __HIST_BPF_H
#define __HIST_BPF_H

#define LOG2_SLOTS 65

/* slot 0: value 0; slot k (k >= 1): [2^(k-1), 2^k) */
static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 slot = 0;

	for (int i = 0; i < 64 && v; i++) {
		v >>= 1;
		slot++;
	}
	return slot;
}

/* slot 0: below min; slot k (1..n): [min + (k-1)*step, min + k*step); slot n + 1: max and above */
static __always_inline __u32 linear_slot(__u64 v, __u64 min, __u64 max, __u64 step)
{
	if (v < min)
		return 0;
	if (v >= max)
		return (max - min) / step + 1;
	return (v - min) / step + 1;
}

#endif /* __HIST_BPF_H */
