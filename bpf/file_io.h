/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __FILE_IO_H
#define __FILE_IO_H

#define FILENAME_LEN 256
#define TASK_COMM_LEN 16

/* which call a record is about (not the kernel's syscall numbers) */
enum file_io_syscall {
	FILE_IO_OPENAT = 0,
	FILE_IO_READ = 1,
	FILE_IO_WRITE = 2,
	FILE_IO_CLOSE = 3,
};

/* one call, emitted at its sys_exit; byte offsets for the JavaScript decoder */
struct file_io_event {
	__u32 syscall;			/*  0: enum file_io_syscall */
	__u32 pid;			/*  4: process (tgid) */
	__u32 tid;			/*  8: thread */
	__s32 fd;			/* 12: read, write, close */
	__u64 duration_ns;		/* 16 */
	__s64 ret;			/* 24: fd (openat), bytes (read, write) or -errno */
	__u32 flags;			/* 32: openat O_* flags */
	__u32 mode;			/* 36: openat mode (with O_CREAT) */
	char comm[TASK_COMM_LEN];	/* 40 */
	char filename[FILENAME_LEN];	/* 56: openat */
};					/* 312 bytes */

#endif /* __FILE_IO_H */
