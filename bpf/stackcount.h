/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __STACKCOUNT_H
#define __STACKCOUNT_H

#define TASK_COMM_LEN 16

/* what is counted: a thread's kernel and user stacks at the event */
struct stackcount_key {
	__u32 pid;			/* process (tgid) */
	__u32 pad;
	__s64 kernel_stack;		/* key in the stacks map (bpf/stacks.bpf.h), or -errno: none (-EFAULT), lost (-ENOMEM) */
	__s64 user_stack;		/* the same, for the user-space stack */
	char comm[TASK_COMM_LEN];	/* the thread's name */
	__u64 cgroup;			/* cgroup id (v2); 0 unless per_container */
	__u64 v8_stack;			/* key in the v8_stacks map of the stack's JS frames (bpf/v8.bpf.h), or 0: not walked */
};

#endif /* __STACKCOUNT_H */
