/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __BENCH_SYSCALLS_H
#define __BENCH_SYSCALLS_H

/* one system call of the traced process, at its exit: 32 bytes */
struct syscall_event {
	__u32 pid;
	__u32 tid;
	__u32 nr;  /* the syscall number */
	__u32 pad;
	__s64 ret;
	__u64 duration_ns;
};

#endif /* __BENCH_SYSCALLS_H */
