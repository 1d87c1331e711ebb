/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stacks of the programs that count stacks (profile, stackcount), kept
 * by a 64-bit hash of their addresses (FNV-1a) in a hash map, not in a
 * stack-trace map. A stack-trace map keeps one stack per bucket (the low
 * bits of the kernel's 32-bit hash): a new stack whose bucket holds another
 * gets -EEXIST, and every sample of it was lost. A hot stack that collided
 * lost the hot path (20% of a profile's samples once, under load); 4,096
 * distinct stacks lost 496 (12%) in a 16,384-entry map. Here a stack is
 * lost only when the map is full (STACKS_MAX distinct stacks).
 *
 * stack_id gives a stack's key in `stacks` (a positive 63-bit hash), or
 * -errno: -EFAULT, none (a kernel thread's user stack, a user-mode
 * sample's kernel stack); any other, lost (-ENOMEM: the map full). The
 * value holds the addresses innermost first, a 0 after the last
 * (lib/frames/stacks.js stackReader). Include after vmlinux.h and
 * bpf_helpers.h.
 */
#ifndef __STACKS_BPF_H
#define __STACKS_BPF_H

#include "scratch_slots.h"

/* the frames of a stack kept (the kernel's perf_event_max_stack is 127) */
#define MAX_STACK_DEPTH 127
#define STACKS_MAX 16384

#ifndef EFAULT
#define EFAULT 14
#endif
#ifndef ENOMEM
#define ENOMEM 12
#endif

struct stack_ips {
	__u64 ips[MAX_STACK_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, STACKS_MAX);
	__type(key, __u64);
	__type(value, struct stack_ips);
} stacks SEC(".maps");

/* the stack being read (per CPU: a kilobyte, too big for the BPF stack), one per SCRATCH_SLOT_* */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct stack_ips);
} stack_scratch SEC(".maps");

/* the key in `stacks` of the stack at `ctx` (`flags`: bpf_get_stack's; `slot`: SCRATCH_SLOT_*), or -errno */
static __always_inline __s64 stack_id(void *ctx, __u64 flags, __u32 slot)
{
	__u64 hash = 14695981039346656037ULL;
	struct stack_ips *s;
	__u32 end;
	long n;
	int i;

	s = bpf_map_lookup_elem(&stack_scratch, &slot);
	if (!s)
		return -ENOMEM;
	n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), flags);
	if (n < 0)
		return n;
	if (n == 0)
		return -EFAULT;
	n /= 8;
	for (i = 0; i < MAX_STACK_DEPTH && i < n; i++)
		hash = (hash ^ s->ips[i]) * 1099511628211ULL;
	/* a 0 after the last (the bound checked right at the store, where the verifier sees it) */
	end = n;
	asm volatile("" : "+r"(end));
	if (end < MAX_STACK_DEPTH)
		s->ips[end] = 0;
	hash = (hash ^ n) & 0x7fffffffffffffffULL;
	if (!hash)
		hash = 1;
	if (bpf_map_update_elem(&stacks, &hash, s, BPF_NOEXIST) && !bpf_map_lookup_elem(&stacks, &hash))
		return -ENOMEM;
	return hash;
}

#endif /* __STACKS_BPF_H */
