/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __MEM_LATENCY_H
#define __MEM_LATENCY_H

#define TASK_COMM_LEN 16

/* which call a record is about (not the kernel's syscall numbers); records decode it by name */
enum mem_syscall {
	MEM_MMAP,
	MEM_MUNMAP,
	MEM_MADVISE,
};

/* one call, emitted at its sys_exit; JavaScript decodes it from the object's BTF */
struct mem_event {
	enum mem_syscall syscall;
	__u32 pid;			/* process (tgid) */
	__u32 tid;			/* thread */
	__s32 fd;			/* mmap (-1: anonymous) */
	__u64 duration_ns;
	__s64 ret;			/* address (mmap), 0 or -errno */
	__u64 addr;
	__u64 len;
	__u32 prot;			/* mmap: PROT_* */
	__u32 flags;			/* mmap: MAP_* */
	__u32 advice;			/* madvise: MADV_* */
	char comm[TASK_COMM_LEN];
};

#endif /* __MEM_LATENCY_H */
