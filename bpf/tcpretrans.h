/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __TCPRETRANS_H
#define __TCPRETRANS_H

/* one TCP segment retransmitted (tcp:tcp_retransmit_skb) */
struct tcpretrans_event {
	__u64 ts_ns;		/* bpf_ktime_get_ns() */
	__u64 ino;		/* the socket's inode (whose it is, in /proc/PID/fd); 0 once closed */
	__u32 netns;		/* the socket's network namespace (inode of /proc/PID/ns/net) */
	__s32 state;		/* TCP_ESTABLISHED (1) ... of include/net/tcp_states.h */
	__u16 family;		/* AF_INET or AF_INET6 */
	__u16 sport;		/* local port, host byte order */
	__u16 dport;		/* remote port, host byte order */
	__s16 err;		/* 0, or -errno: failed (-EBUSY: not tried, skb still queued), where the tracepoint has it */
	__u16 segs;		/* segments in the retransmitted skb (what TcpRetransSegs counts) */
	__u16 pad;
	__u8 saddr[16];		/* local address, network byte order: AF_INET in the first 4 bytes */
	__u8 daddr[16];		/* remote address */
	__u64 cgroup;		/* the socket's cgroup (v2) id: its creator's; 0 before 5.15 */
};

#endif /* __TCPRETRANS_H */
