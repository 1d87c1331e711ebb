/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __FILE_IO_H
#define __FILE_IO_H

#define FILENAME_LEN 256
#define TASK_COMM_LEN 16

/* which call a record is about (not the kernel's syscall numbers); records decode it by name */
enum file_io_syscall {
	FILE_IO_OPENAT,
	FILE_IO_READ,
	FILE_IO_WRITE,
	FILE_IO_CLOSE,
};

/* one call, emitted at its sys_exit; JavaScript decodes it from the object's BTF */
struct file_io_event {
	enum file_io_syscall syscall;
	__u32 pid;			/* process (tgid) */
	__u32 tid;			/* thread */
	__s32 fd;			/* read, write, close */
	__u64 duration_ns;
	__s64 ret;			/* fd (openat), bytes (read, write) or -errno */
	__u32 flags;			/* openat: O_* flags */
	__u32 mode;			/* openat: mode (with O_CREAT) */
	char comm[TASK_COMM_LEN];
	char filename[FILENAME_LEN];	/* openat */
};

#endif /* __FILE_IO_H */
