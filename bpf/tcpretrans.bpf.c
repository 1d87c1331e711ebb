// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* TCP retransmits: the tcp:tcp_retransmit_skb tracepoint, one ring buffer record per segment. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "filter.bpf.h"
#include "tcpretrans.h"

#define AF_INET 2

/*
 * The tracepoint's record, as its format file gives it: the same fields on
 * 5.x and 6.x kernels, whose event was tcp_event_sk_skb's until the err
 * field was added after them; read at these fixed offsets, and err through
 * CO-RE where the kernel has it
 */
struct tcp_retransmit_skb_args {
	__u64 common;			/* struct trace_entry */
	const void *skbaddr;
	const void *skaddr;
	int state;
	__u16 sport;
	__u16 dport;
	__u16 family;
	__u8 saddr[4];
	__u8 daddr[4];
	__u8 saddr_v6[16];
	__u8 daddr_v6[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* keeps struct tcpretrans_event in BTF: records are decoded by it */
struct tcpretrans_event *unused_tcpretrans_event __attribute__((unused));

/* tcp_skb_pcount(skb): how many segments the skb is (GSO), from its control block */
static __always_inline __u16 skb_segs(const struct sk_buff *skb)
{
	const struct tcp_skb_cb *cb = (const void *)skb + bpf_core_field_offset(struct sk_buff, cb);

	return BPF_CORE_READ(cb, tcp_gso_segs);
}

/* the inode of the socket's file: what /proc/PID/fd links to (socket:[ino]) */
static __always_inline __u64 socket_ino(const struct sock *sk)
{
	struct socket *sock = BPF_CORE_READ(sk, sk_socket);

	if (!sock)
		return 0;
	return BPF_CORE_READ(container_of(sock, struct socket_alloc, socket), vfs_inode.i_ino);
}

/*
 * newer kernels give the tracepoint an event struct of its own, with the
 * error of the retransmit: a local flavor of it, so that the program also
 * compiles against a vmlinux.h without it (CO-RE checks the running kernel)
 */
struct trace_event_raw_tcp_retransmit_skb___err {
	int err;
} __attribute__((preserve_access_index));

SEC("tp/tcp/tcp_retransmit_skb")
int handle_tcp_retransmit_skb(struct tcp_retransmit_skb_args *ctx)
{
	const struct sock *sk = ctx->skaddr;
	const struct cgroup *cgrp = sock_cgroup(sk);
	struct tcpretrans_event *e;

	/* often in softirq or a timer: the socket's cgroup, not the current thread's */
	if (!cgroup_under(cgrp))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->ts_ns = bpf_ktime_get_ns();
	e->ino = socket_ino(sk);
	e->netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
	e->cgroup = cgrp ? BPF_CORE_READ(cgrp, kn, id) : 0;
	e->state = ctx->state;
	e->family = ctx->family;
	e->sport = ctx->sport;
	e->dport = ctx->dport;
	e->segs = skb_segs(ctx->skbaddr);
	e->pad = 0;
	e->err = 0;
	if (bpf_core_field_exists(((struct trace_event_raw_tcp_retransmit_skb___err *)0)->err))
		e->err = ((struct trace_event_raw_tcp_retransmit_skb___err *)ctx)->err;
	if (ctx->family == AF_INET) {
		__builtin_memset(e->saddr, 0, sizeof(e->saddr));
		__builtin_memset(e->daddr, 0, sizeof(e->daddr));
		__builtin_memcpy(e->saddr, ctx->saddr, sizeof(ctx->saddr));
		__builtin_memcpy(e->daddr, ctx->daddr, sizeof(ctx->daddr));
	} else {
		__builtin_memcpy(e->saddr, ctx->saddr_v6, sizeof(e->saddr));
		__builtin_memcpy(e->daddr, ctx->daddr_v6, sizeof(e->daddr));
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
