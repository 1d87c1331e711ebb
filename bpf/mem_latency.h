/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __MEM_LATENCY_H
#define __MEM_LATENCY_H

#define TASK_COMM_LEN 16

/* which call a record is about (not the kernel's syscall numbers) */
enum mem_syscall {
	MEM_MMAP = 0,
	MEM_MUNMAP = 1,
	MEM_MADVISE = 2,
};

/* one call, emitted at its sys_exit; byte offsets for the JavaScript decoder */
struct mem_event {
	__u32 syscall;			/*  0: enum mem_syscall */
	__u32 pid;			/*  4: process (tgid) */
	__u32 tid;			/*  8: thread */
	__s32 fd;			/* 12: mmap (-1: anonymous) */
	__u64 duration_ns;		/* 16 */
	__s64 ret;			/* 24: address (mmap), 0 or -errno */
	__u64 addr;			/* 32 */
	__u64 len;			/* 40 */
	__u32 prot;			/* 48: mmap PROT_* */
	__u32 flags;			/* 52: mmap MAP_* */
	__u32 advice;			/* 56: madvise MADV_* */
	__u32 __pad;			/* 60 */
	char comm[TASK_COMM_LEN];	/* 64 */
};					/* 80 bytes */

#endif /* __MEM_LATENCY_H */
