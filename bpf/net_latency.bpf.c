// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Network latency: socket and connect of one process, one ring buffer record per call. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "net_latency.h"

#define LATENCY_EVENT struct net_event
#include "syscall_latency.bpf.h"

#define AF_INET 2
#define AF_INET6 10

/* socket(family, type, protocol) */
SEC("tp/syscalls/sys_enter_socket")
int handle_enter_socket(struct syscall_enter_ctx *ctx)
{
	struct call_start *s = enter_call(NET_SOCKET);

	if (!s)
		return 0;
	s->event.family = ctx->args[0];
	s->event.type = ctx->args[1];
	s->event.protocol = ctx->args[2];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_socket")
int handle_exit_socket(struct syscall_exit_ctx *ctx)
{
	return exit_call(ctx, NET_SOCKET, ctx->ret);
}

/* connect(fd, uservaddr, addrlen) */
SEC("tp/syscalls/sys_enter_connect")
int handle_enter_connect(struct syscall_enter_ctx *ctx)
{
	const void *uaddr = (const void *)ctx->args[1];
	__u64 addrlen = ctx->args[2];
	struct call_start *s = enter_call(NET_CONNECT);
	struct net_event *e;
	__u16 family = 0;

	if (!s)
		return 0;
	e = &s->event;
	e->fd = ctx->args[0];
	/* the destination: the caller's struct sockaddr, readable only at entry */
	bpf_probe_read_user(&family, sizeof(family), uaddr);
	e->family = family;
	if (family == AF_INET && addrlen >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in sin = {};

		bpf_probe_read_user(&sin, sizeof(sin), uaddr);
		e->port = bpf_ntohs(sin.sin_port);
		__builtin_memcpy(e->addr.v4, &sin.sin_addr, sizeof(e->addr.v4));
	} else if (family == AF_INET6 && addrlen >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 sin6 = {};

		bpf_probe_read_user(&sin6, sizeof(sin6), uaddr);
		e->port = bpf_ntohs(sin6.sin6_port);
		__builtin_memcpy(e->addr.v6, &sin6.sin6_addr, sizeof(e->addr.v6));
	}
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_connect")
int handle_exit_connect(struct syscall_exit_ctx *ctx)
{
	return exit_call(ctx, NET_CONNECT, ctx->ret);
}

char LICENSE[] SEC("license") = "GPL";
