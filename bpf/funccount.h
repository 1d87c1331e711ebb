/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __FUNCCOUNT_H
#define __FUNCCOUNT_H

#define TASK_COMM_LEN 16

/* what a count is of: the probe (its attach cookie), and with per_process the
 * process, with per_container the cgroup */
struct funccount_key {
	__u64 probe;			/* attach cookie: the probe's index in the tool's list */
	__u32 pid;			/* process (tgid); 0 unless per_process */
	__u32 pad;
	__u64 cgroup;			/* cgroup id (v2); 0 unless per_container */
};

struct funccount_value {
	__u64 count;
	char comm[TASK_COMM_LEN];	/* the process's name (its main thread's), with per_process */
};

#endif /* __FUNCCOUNT_H */
