/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* In-kernel histogram slots, read by lib/tools/hist.js (as bpftrace prints them). */
#ifndef __HIST_BPF_H
#define __HIST_BPF_H

#define LOG2_SLOTS 65

/* floor(log2(v)) of v > 0, without a loop (libbpf-tools' bits.bpf.h):
 * halves the range of the highest set bit at each step; 0 for v = 0 */
static __always_inline __u32 log2_32(__u32 v)
{
	__u32 shift, r;

	r = (v > 0xFFFF) << 4; v >>= r;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline __u32 log2_64(__u64 v)
{
	__u32 hi = v >> 32;

	return hi ? log2_32(hi) + 32 : log2_32(v);
}

/* slot 0: value 0; slot k (k >= 1): [2^(k-1), 2^k), i.e. v's bit length */
static __always_inline __u32 log2_slot(__u64 v)
{
	__u64 slot = v ? log2_64(v) + 1 : 0;

	/* slot <= 64, which clang knows (it drops the callers' bounds checks)
	 * but older verifiers (5.10: an OR with a register loses the bounds)
	 * do not: a check they see, on the register itself */
	barrier_var(slot);
	if (slot > 64)
		slot = 64;
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
