// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Memory management latency: mmap, munmap and madvise of one process, one ring buffer record per call. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "mem_latency.h"

const volatile __u32 target_pid = 0;

/* a call in progress: when it started and the arguments its record reports */
struct start {
	__u64 ts;
	struct mem_event event;
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
static __always_inline struct start *enter_call(enum mem_syscall syscall)
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
static __always_inline int exit_call(enum mem_syscall syscall, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct mem_event *e;
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

/* mmap(addr, len, prot, flags, fd, off) */
SEC("tp/syscalls/sys_enter_mmap")
int handle_enter_mmap(struct trace_event_raw_sys_enter *ctx)
{
	struct start *s = enter_call(MEM_MMAP);

	if (!s)
		return 0;
	s->event.addr = ctx->args[0];
	s->event.len = ctx->args[1];
	s->event.prot = ctx->args[2];
	s->event.flags = ctx->args[3];
	s->event.fd = ctx->args[4];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_mmap")
int handle_exit_mmap(struct trace_event_raw_sys_exit *ctx)
{
	return exit_call(MEM_MMAP, ctx->ret);
}

/* munmap(addr, len) */
SEC("tp/syscalls/sys_enter_munmap")
int handle_enter_munmap(struct trace_event_raw_sys_enter *ctx)
{
	struct start *s = enter_call(MEM_MUNMAP);

	if (!s)
		return 0;
	s->event.addr = ctx->args[0];
	s->event.len = ctx->args[1];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_munmap")
int handle_exit_munmap(struct trace_event_raw_sys_exit *ctx)
{
	return exit_call(MEM_MUNMAP, ctx->ret);
}

/* madvise(addr, len, advice) */
SEC("tp/syscalls/sys_enter_madvise")
int handle_enter_madvise(struct trace_event_raw_sys_enter *ctx)
{
	struct start *s = enter_call(MEM_MADVISE);

	if (!s)
		return 0;
	s->event.addr = ctx->args[0];
	s->event.len = ctx->args[1];
	s->event.advice = ctx->args[2];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_madvise")
int handle_exit_madvise(struct trace_event_raw_sys_exit *ctx)
{
	return exit_call(MEM_MADVISE, ctx->ret);
}

char LICENSE[] SEC("license") = "GPL";
