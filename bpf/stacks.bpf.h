/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stack ids of the programs that count stacks (profile, stackcount): two
 * stack-trace maps. A stack-trace map keeps one stack per bucket (the
 * stack's hash); a new stack whose bucket holds another gets -EEXIST, and
 * without a second chance its samples were lost, every one of them: a hot
 * stack that collides loses the hot path (20% of a profile's samples once,
 * under load). stack_id tries `stacks`, then `stacks_b` for the stacks
 * whose bucket in `stacks` is taken, flagging those ids with STACK_B (user
 * space: lib/frames/stacks.js stackReader). The kernel hashes a stack the
 * same way for both maps, so a stack whose bucket is taken in `stacks`
 * finds the same bucket in `stacks_b`: a bucket holds two stacks, and a
 * third one is lost. At 1,000 distinct stacks a window that loses ~0.3% of
 * them, at 4,096 ~3.4% (measured: 135 of 4,096), against ~3% and ~11.5%
 * with one map of the same memory (16,384). A hash of the raw stack
 * (bpf_get_stack into a hash map keyed by 64 bits) would lose none; it
 * changes the counting keys' ids to 64 bits.
 *
 * Include after vmlinux.h and bpf_helpers.h.
 */
#ifndef __STACKS_BPF_H
#define __STACKS_BPF_H

/* the frames of a stack the maps keep (the kernel's perf_event_max_stack is 127) */
#define MAX_STACK_DEPTH 127

#ifndef EEXIST
#define EEXIST 17
#endif

/* an id in stacks_b (bit 30: ids are bucket indexes, far below it) */
#define STACK_B (1 << 30)

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

/* the stacks whose bucket in `stacks` holds another stack */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
} stacks_b SEC(".maps");

/* the id of the stack at `ctx` (`flags`: bpf_get_stackid's), or -errno: none (-EFAULT), lost (-EEXIST, -ENOMEM) */
static __always_inline __s32 stack_id(void *ctx, __u64 flags)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);

	if (id == -EEXIST) {
		id = bpf_get_stackid(ctx, &stacks_b, flags);
		if (id >= 0)
			id |= STACK_B;
	}
	return id;
}

#endif /* __STACKS_BPF_H */
