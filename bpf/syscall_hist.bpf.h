/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Per-syscall latency histograms counted in the kernel, from the raw
 * tracepoints sys_enter and sys_exit: the start kept in the thread's task
 * storage (a hash keyed by thread before 5.11, compat.bpf.h) at entry, the syscall's count, time and histogram slot bumped at
 * exit. Included by syscall_hist.bpf.c and node_syscalls.bpf.c; read by
 * lib/tools/syscalls.js. With SYSCALL_HIST_PER_CGROUP defined (and filter.bpf.h
 * included first), per_container counts by cgroup and syscall instead, in
 * the hash cgroup_syscalls. */
#ifndef __SYSCALL_HIST_BPF_H
#define __SYSCALL_HIST_BPF_H

#include "compat.bpf.h"
#include "hist.bpf.h"
#include "syscall_hist.h"

#define MAX_SYSCALLS 1024
/* flags of the syscalls array: BPF_F_MMAPABLE to read it with no syscall */
#ifndef SYSCALL_HIST_MAP_FLAGS
#define SYSCALL_HIST_MAP_FLAGS 0
#endif
#define EAGAIN 11
#define EINPROGRESS 115

const volatile __u32 target_pid = 0;	/* 0: every process */
const volatile __u64 unit_ns = 1000;	/* histograms count latency / unit_ns */
const volatile bool linear = false;	/* linear slots (below) instead of log2 */
const volatile __u64 linear_min = 0;
const volatile __u64 linear_max = 0;
const volatile __u64 linear_step = 1;
const volatile bool filter_syscalls = false;	/* only the syscalls set in traced_syscalls */

/* the call a thread is in */
struct syscall_start {
	__u64 ts;			/* 0: none (or not traced) */
	__u32 syscall;
};

/* the thread's call: task storage, or a hash keyed by thread before 5.11 */
THREAD_STORAGE(starts, struct syscall_start);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, __u8);
} traced_syscalls SEC(".maps");

/* by syscall number, counting up from load: the reader takes differences (an
 * array lookup is inlined by the JIT; one array, not per CPU, so that its size
 * does not grow with the CPUs) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALLS);
	__uint(map_flags, SYSCALL_HIST_MAP_FLAGS);
	__type(key, __u32);
	__type(value, struct syscall_counts);
} syscalls SEC(".maps");

#ifdef SYSCALL_HIST_PER_CGROUP
/* counting up from load, as syscalls; allocated as cgroups call */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct syscall_cgroup_key);
	__type(value, struct syscall_counts);
} cgroup_syscalls SEC(".maps");

/* the counts of this thread's cgroup for syscall, created as zero when missing */
static __always_inline struct syscall_counts *cgroup_counts(__u32 syscall)
{
	static const struct syscall_counts zero = {};
	struct syscall_cgroup_key key = { .cgroup = bpf_get_current_cgroup_id(), .syscall = syscall };
	struct syscall_counts *counts = bpf_map_lookup_elem(&cgroup_syscalls, &key);

	if (counts)
		return counts;
	/* another CPU may create it first */
	bpf_map_update_elem(&cgroup_syscalls, &key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&cgroup_syscalls, &key);
}
#endif

static __always_inline bool pid_traced(void)
{
	return !target_pid || (bpf_get_current_pid_tgid() >> 32) == target_pid;
}

/* at sys_enter: remembers when this thread's call started; false when not traced */
static __always_inline bool syscall_enter(__u32 syscall)
{
	struct syscall_start *start;
	__u8 *on;

	if (!pid_traced() || syscall >= MAX_SYSCALLS)
		return false;
	if (filter_syscalls) {
		on = bpf_map_lookup_elem(&traced_syscalls, &syscall);
		if (!on || !*on)
			return false;
	}
	start = thread_storage_get(starts, true);
	if (!start)
		return false;
	start->syscall = syscall;
	start->ts = bpf_ktime_get_ns();
	return true;
}

/* at sys_exit: counts this thread's call in its histogram and stats; returns
 * the syscall number, or -1 when no call of this thread was started */
static __always_inline long syscall_exit(long ret)
{
	struct syscall_counts *counts;
	struct syscall_start *start;
	__u64 delta, value, slot;
	__u32 syscall;

	if (!pid_traced())
		return -1;
	start = thread_storage_get(starts, false);
	if (!start || !start->ts)
		return -1;
	delta = bpf_ktime_get_ns() - start->ts;
	syscall = start->syscall;
	start->ts = 0;
	thread_storage_done(starts);

#ifdef SYSCALL_HIST_PER_CGROUP
	counts = per_container ? cgroup_counts(syscall) : bpf_map_lookup_elem(&syscalls, &syscall);
#else
	counts = bpf_map_lookup_elem(&syscalls, &syscall);
#endif
	if (!counts)
		return -1;
	value = delta / unit_ns;
	slot = linear ? linear_slot(value, linear_min, linear_max, linear_step) : log2_slot(value);
	if (slot >= SYSCALL_HIST_SLOTS)	/* lib/tools/syscalls.js allows no more linear slots */
		slot = SYSCALL_HIST_SLOTS - 1;
	__sync_fetch_and_add(&counts->slots[slot], 1);
	__sync_fetch_and_add(&counts->count, 1);
	__sync_fetch_and_add(&counts->total_ns, delta);
	/* a non-blocking call that would block, or is under way, did not fail */
	if (ret < 0 && ret >= -4095 && ret != -EAGAIN && ret != -EINPROGRESS)
		__sync_fetch_and_add(&counts->errors, 1);
	return syscall;
}

#endif /* __SYSCALL_HIST_BPF_H */
