/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The wire types of the in-process monitor (lib/service/monitor.js): what it reads
 * from its maps. Histograms are struct syscall_counts (syscall_hist.h): a
 * count, a sum, and log2 slots of microseconds. */
#ifndef __MONITOR_H
#define __MONITOR_H

#include "syscall_hist.h"
#include "node_syscalls.h"

/* off-CPU reasons: the syscall the main thread slept in (its number, below
 * OFFCPU_SYSCALLS), or one of these two (the array's last two entries) */
#define OFFCPU_SYSCALLS		1024
#define OFFCPU_PREEMPTED	OFFCPU_SYSCALLS		/* preempted: runnable, waiting for a CPU */
#define OFFCPU_OTHER		(OFFCPU_SYSCALLS + 1)	/* asleep outside a syscall (a page fault) */
#define OFFCPU_REASONS		(OFFCPU_SYSCALLS + 2)

/* off-CPU histograms */
enum offcpu_kind {
	OFFCPU_BLOCKED,		/* every off-CPU interval but waits for I/O in the poll phase (epoll) */
	OFFCPU_IDLE,		/* waits in epoll: the loop had nothing to do */
	OFFCPU_KINDS,
};

/* the main thread's time off the CPU, per reason */
struct offcpu_time {
	__u64 count;
	__u64 total_ns;
};

#endif /* __MONITOR_H */
