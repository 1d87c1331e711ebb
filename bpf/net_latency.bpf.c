// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Network latency: socket and connect of one process, one ring buffer record per call. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "net_latency.h"

#define AF_INET 2
#define AF_INET6 10

const volatile __u32 target_pid = 0;

/* a call in progress: when it started and the arguments its record reports */
struct start {
	__u64 ts;
	struct net_event event;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, struct start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

static __always_inline bool trace_allowed(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return !target_pid || tgid == target_pid;
}

/* a zeroed start for this thread's call, or NULL when not traced */
static __always_inline struct start *enter_call(enum net_syscall syscall)
{
	static const struct start zero = {};
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct start *s;

	if (!trace_allowed())
		return NULL;
	if (bpf_map_update_elem(&starts, &tid, &zero, BPF_ANY))
		return NULL;
	s = bpf_map_lookup_elem(&starts, &tid);
	if (s)
		s->event.syscall = syscall;
	return s;
}

/* completes this thread's call with its duration and return value, and emits it */
static __always_inline int exit_call(enum net_syscall syscall, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct net_event *e;
	struct start *s;

	if (!trace_allowed())
		return 0;
	s = bpf_map_lookup_elem(&starts, &tid);
	if (!s)
		return 0;
	/* a start of another call means this call's entry was missed */
	if (s->event.syscall == syscall) {
		/* reserve sample from BPF ringbuf */
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (e) {
			*e = s->event;
			e->pid = id >> 32;
			e->tid = tid;
			e->duration_ns = bpf_ktime_get_ns() - s->ts;
			e->ret = ret;
			bpf_get_current_comm(e->comm, sizeof(e->comm));
			bpf_ringbuf_submit(e, 0);
		}
	}
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}

/* socket(family, type, protocol) */
SEC("tp/syscalls/sys_enter_socket")
int handle_enter_socket(struct trace_event_raw_sys_enter *ctx)
{
	struct start *s = enter_call(NET_SOCKET);

	if (!s)
		return 0;
	s->event.family = ctx->args[0];
	s->event.type = ctx->args[1];
	s->event.protocol = ctx->args[2];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_socket")
int handle_exit_socket(struct trace_event_raw_sys_exit *ctx)
{
	return exit_call(NET_SOCKET, ctx->ret);
}

/* connect(fd, uservaddr, addrlen) */
SEC("tp/syscalls/sys_enter_connect")
int handle_enter_connect(struct trace_event_raw_sys_enter *ctx)
{
	const void *uaddr = (const void *)ctx->args[1];
	__u64 addrlen = ctx->args[2];
	struct start *s = enter_call(NET_CONNECT);
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
int handle_exit_connect(struct trace_event_raw_sys_exit *ctx)
{
	return exit_call(NET_CONNECT, ctx->ret);
}

char LICENSE[] SEC("license") = "GPL";
