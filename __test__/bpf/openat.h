/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __OPENAT_H
#define __OPENAT_H

#define FILENAME_LEN 256

/* one openat call, emitted at sys_exit_openat */
struct openat_event {
	__u32 pid;
	__u32 tid;
	__u64 duration_ns;
	__s32 ret;
	__u32 sink;
	char filename[FILENAME_LEN];
};

#endif /* __OPENAT_H */
