/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __STREAM_H
#define __STREAM_H

/* one getppid call of the traced process: 24 bytes */
struct stream_event {
	__u32 pid;
	__u32 tid;
	__u64 ts;
	__u64 seq;
};

#endif /* __STREAM_H */
