// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* File I/O latency: openat, read, write and close of one process, one perf event per call. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "file_io.h"

const volatile __u32 target_pid = 0;

/* a call in progress: when it started and the arguments its record reports */
struct start {
	__u64 ts;
	struct file_io_event event;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, struct start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

static __always_inline bool trace_allowed(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return !target_pid || tgid == target_pid;
}

/* a zeroed start for this thread's call, or NULL when not traced */
static __always_inline struct start *enter_call(enum file_io_syscall syscall)
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
static __always_inline int exit_call(void *ctx, enum file_io_syscall syscall, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct file_io_event *e;
	struct start *s;

	if (!trace_allowed())
		return 0;
	s = bpf_map_lookup_elem(&starts, &tid);
	if (!s)
		return 0;
	/* a start of another call means this call's entry was missed */
	if (s->event.syscall == syscall) {
		e = &s->event;
		e->pid = id >> 32;
		e->tid = tid;
		e->duration_ns = bpf_ktime_get_ns() - s->ts;
		e->ret = ret;
		bpf_get_current_comm(e->comm, sizeof(e->comm));
		bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, e, sizeof(*e));
	}
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}

/* openat(dfd, filename, flags, mode) */
SEC("tp/syscalls/sys_enter_openat")
int handle_enter_openat(struct trace_event_raw_sys_enter *ctx)
{
	struct start *s = enter_call(FILE_IO_OPENAT);

	if (!s)
		return 0;
	/* the name is only readable at entry: copy it from the caller's memory */
	bpf_probe_read_user_str(s->event.filename, sizeof(s->event.filename),
				(const char *)ctx->args[1]);
	s->event.flags = ctx->args[2];
	s->event.mode = ctx->args[3];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_openat")
int handle_exit_openat(struct trace_event_raw_sys_exit *ctx)
{
	return exit_call(ctx, FILE_IO_OPENAT, ctx->ret);
}

/* read(fd, buf, count) */
SEC("tp/syscalls/sys_enter_read")
int handle_enter_read(struct trace_event_raw_sys_enter *ctx)
{
	struct start *s = enter_call(FILE_IO_READ);

	if (!s)
		return 0;
	s->event.fd = ctx->args[0];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_read")
int handle_exit_read(struct trace_event_raw_sys_exit *ctx)
{
	return exit_call(ctx, FILE_IO_READ, ctx->ret);
}

/* write(fd, buf, count) */
SEC("tp/syscalls/sys_enter_write")
int handle_enter_write(struct trace_event_raw_sys_enter *ctx)
{
	struct start *s = enter_call(FILE_IO_WRITE);

	if (!s)
		return 0;
	s->event.fd = ctx->args[0];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_write")
int handle_exit_write(struct trace_event_raw_sys_exit *ctx)
{
	return exit_call(ctx, FILE_IO_WRITE, ctx->ret);
}

/* close(fd) */
SEC("tp/syscalls/sys_enter_close")
int handle_enter_close(struct trace_event_raw_sys_enter *ctx)
{
	struct start *s = enter_call(FILE_IO_CLOSE);

	if (!s)
		return 0;
	s->event.fd = ctx->args[0];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_close")
int handle_exit_close(struct trace_event_raw_sys_exit *ctx)
{
	return exit_call(ctx, FILE_IO_CLOSE, ctx->ret);
}

char LICENSE[] SEC("license") = "GPL";
