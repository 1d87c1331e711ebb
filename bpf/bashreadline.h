/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __BASHREADLINE_H
#define __BASHREADLINE_H

#define TASK_COMM_LEN 16
#define MAX_LINE_LEN 480

/* one line that readline() returned to an interactive bash */
struct readline_event {
	__u64 ts_ns;			/* bpf_ktime_get_ns() at the return */
	__u32 pid;			/* the bash (tgid) */
	__u32 len;			/* bytes in line: longer lines are cut at MAX_LINE_LEN - 1 */
	char comm[TASK_COMM_LEN];
	char line[MAX_LINE_LEN];
};

#endif /* __BASHREADLINE_H */
