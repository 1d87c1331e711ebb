/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __NET_LATENCY_H
#define __NET_LATENCY_H

#define TASK_COMM_LEN 16

/* which call a record is about (not the kernel's syscall numbers) */
enum net_syscall {
	NET_SOCKET = 0,
	NET_CONNECT = 1,
};

/* one call, emitted at its sys_exit; byte offsets for the JavaScript decoder */
struct net_event {
	__u32 syscall;			/*  0: enum net_syscall */
	__u32 pid;			/*  4: process (tgid) */
	__u32 tid;			/*  8: thread */
	__s32 fd;			/* 12: connect */
	__u64 duration_ns;		/* 16 */
	__s64 ret;			/* 24: fd (socket), 0 (connect) or -errno */
	__u32 family;			/* 32: socket domain; connect: sa_family */
	__u32 type;			/* 36: socket: SOCK_* with SOCK_NONBLOCK/SOCK_CLOEXEC */
	__u32 protocol;			/* 40: socket */
	__u16 port;			/* 44: connect, network byte order */
	__u16 __pad;			/* 46 */
	__u8 addr[16];			/* 48: connect: IPv4 in addr[0..3], or IPv6 */
	char comm[TASK_COMM_LEN];	/* 64 */
};					/* 80 bytes */

#endif /* __NET_LATENCY_H */
