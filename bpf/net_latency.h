/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __NET_LATENCY_H
#define __NET_LATENCY_H

#define TASK_COMM_LEN 16

/* which call a record is about (not the kernel's syscall numbers); records decode it by name */
enum net_syscall {
	NET_SOCKET,
	NET_CONNECT,
};

/* one call, emitted at its sys_exit; JavaScript decodes it from the object's BTF */
struct net_event {
	enum net_syscall syscall;
	__u32 pid;			/* process (tgid) */
	__u32 tid;			/* thread */
	__s32 fd;			/* connect */
	__u64 duration_ns;
	__s64 ret;			/* fd (socket), 0 (connect) or -errno */
	__u32 family;			/* socket: domain; connect: sa_family */
	__u32 type;			/* socket: SOCK_* with SOCK_NONBLOCK/SOCK_CLOEXEC */
	__u32 protocol;			/* socket */
	__u16 port;			/* connect: destination port, host byte order */
	union {				/* connect: destination, network byte order */
		__u8 v4[4];		/* AF_INET */
		__u8 v6[16];		/* AF_INET6 */
	} addr;
	char comm[TASK_COMM_LEN];
};

#endif /* __NET_LATENCY_H */
