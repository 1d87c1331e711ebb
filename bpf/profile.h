/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __PROFILE_H
#define __PROFILE_H

#define TASK_COMM_LEN 16

/* a stack of one thread: CPU samples (counts) and off-CPU intervals
 * (offcpu) are keyed by it */
struct profile_key {
	__u32 tid;			/* the kernel's thread id */
	__u32 preempted;		/* off CPU: 1 if it was preempted (runnable), 0 if it slept */
	__s64 user_stack;		/* key in the stacks map (bpf/stacks.bpf.h), or -errno: none (-EFAULT), lost (-ENOMEM) */
	__s64 kernel_stack;		/* the same, for the kernel stack */
	char comm[TASK_COMM_LEN];	/* the thread's name */
	__u64 user_chain;		/* off CPU: key in the chains map of the frames recovered above a
					 * library without frame pointers (glibc's futex waits), or 0 */
	__u64 v8_stack;			/* key in the v8_stacks map of the stack's JS frames (bpf/v8.bpf.h), or 0: not walked */
	__u32 label_id;			/* the request labels' id it ran under (bpf/labels.bpf.h), or 0: none */
	__u32 pad;
};

/* where a thread's label id is (labels_threads, keyed by the kernel's tid; lib/service/labels.js) */
#define LABELS_CPED 1	/* addr: the isolate's CPED slot -> an AsyncContextFrame (a JSMap) -> its table at table_off */
#define LABELS_WORD 2	/* addr: a 32-bit word that holds the store (Node 20, 22 without AsyncContextFrame) */

struct labels_thread {
	__u64 addr;
	__u32 kind;
	__u32 table_off;
};

#define PROFILE_CHAIN_DEPTH 64

/* return addresses of a frame-pointer chain, outermost last, 0 after the last */
struct profile_chain {
	__u64 ips[PROFILE_CHAIN_DEPTH];
};

/* the off-CPU intervals of one stack */
struct profile_offcpu {
	__u64 count;
	__u64 total_ns;
};

#endif /* __PROFILE_H */
