/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Per-syscall latency histograms counted in the kernel, from the raw
 * tracepoints sys_enter and sys_exit: one start per thread at entry, a
 * histogram slot and the stats bumped at exit. Included by
 * syscall_hist.bpf.c and node_syscalls.bpf.c; read by lib/syscalls.js. */
#ifndef __SYSCALL_HIST_BPF_H
#define __SYSCALL_HIST_BPF_H

#include "hist.bpf.h"
#include "syscall_hist.h"

#define MAX_SYSCALLS 1024
#define EAGAIN 11
#define EINPROGRESS 115

const volatile __u32 target_pid = 0;	/* 0: every process */
const volatile __u64 unit_ns = 1000;	/* histograms count latency / unit_ns */
const volatile bool linear = false;	/* linear slots (below) instead of log2 */
const volatile __u64 linear_min = 0;
const volatile __u64 linear_max = 0;
const volatile __u64 linear_step = 1;
const volatile bool filter_syscalls = false;	/* only the syscalls set in traced_syscalls */

/* a call in progress */
struct syscall_start {
	__u64 ts;
	__u32 syscall;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);		/* thread */
	__type(value, struct syscall_start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, __u8);
} traced_syscalls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct syscall_hist_key);
	__type(value, __u64);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, struct syscall_stats);
} stats SEC(".maps");

static __always_inline bool pid_traced(void)
{
	return !target_pid || (bpf_get_current_pid_tgid() >> 32) == target_pid;
}

static __always_inline bool syscall_traced(__u32 syscall)
{
	__u8 *on;

	if (!pid_traced())
		return false;
	if (!filter_syscalls)
		return true;
	on = bpf_map_lookup_elem(&traced_syscalls, &syscall);
	return on && *on;
}

/* the value at key, created as zero when missing (another CPU may create it first) */
static __always_inline void *lookup_or_init(void *map, const void *key, const void *zero)
{
	void *value = bpf_map_lookup_elem(map, key);

	if (value)
		return value;
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* at sys_enter: remembers when this thread's call started; false when not traced */
static __always_inline bool syscall_enter(__u32 syscall)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct syscall_start start;

	if (!syscall_traced(syscall))
		return false;
	start.syscall = syscall;
	start.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &tid, &start, BPF_ANY);
	return true;
}

/* at sys_exit: counts this thread's call in its histogram and stats; returns
 * the syscall number, or -1 when no call of this thread was started */
static __always_inline long syscall_exit(long ret)
{
	static const struct syscall_stats zero_stats = {};
	static const __u64 zero = 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct syscall_hist_key key;
	struct syscall_start *start;
	struct syscall_stats *st;
	__u64 delta, value, *slot;

	if (!pid_traced())
		return -1;
	start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return -1;
	delta = bpf_ktime_get_ns() - start->ts;
	key.syscall = start->syscall;
	bpf_map_delete_elem(&starts, &tid);

	value = delta / unit_ns;
	key.slot = linear ? linear_slot(value, linear_min, linear_max, linear_step) : log2_slot(value);
	slot = lookup_or_init(&hists, &key, &zero);
	if (slot)
		__sync_fetch_and_add(slot, 1);
	st = lookup_or_init(&stats, &key.syscall, &zero_stats);
	if (st) {
		__sync_fetch_and_add(&st->count, 1);
		__sync_fetch_and_add(&st->total_ns, delta);
		/* a non-blocking call that would block, or is under way, did not fail */
		if (ret < 0 && ret >= -4095 && ret != -EAGAIN && ret != -EINPROGRESS)
			__sync_fetch_and_add(&st->errors, 1);
	}
	return key.syscall;
}

#endif /* __SYSCALL_HIST_BPF_H */
