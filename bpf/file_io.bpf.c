// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* File I/O latency: openat, read, write and close of one process, one perf event per call. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "file_io.h"

#define LATENCY_EVENT struct file_io_event
#define LATENCY_PERF_BUFFER
#include "syscall_latency.bpf.h"

/* openat(dfd, filename, flags, mode) */
SEC("tp/syscalls/sys_enter_openat")
int handle_enter_openat(struct syscall_enter_ctx *ctx)
{
	struct call_start *s = enter_call(FILE_IO_OPENAT);

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
int handle_exit_openat(struct syscall_exit_ctx *ctx)
{
	return exit_call(ctx, FILE_IO_OPENAT, ctx->ret);
}

/* read(fd, buf, count) */
SEC("tp/syscalls/sys_enter_read")
int handle_enter_read(struct syscall_enter_ctx *ctx)
{
	struct call_start *s = enter_call(FILE_IO_READ);

	if (!s)
		return 0;
	s->event.fd = ctx->args[0];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_read")
int handle_exit_read(struct syscall_exit_ctx *ctx)
{
	return exit_call(ctx, FILE_IO_READ, ctx->ret);
}

/* write(fd, buf, count) */
SEC("tp/syscalls/sys_enter_write")
int handle_enter_write(struct syscall_enter_ctx *ctx)
{
	struct call_start *s = enter_call(FILE_IO_WRITE);

	if (!s)
		return 0;
	s->event.fd = ctx->args[0];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_write")
int handle_exit_write(struct syscall_exit_ctx *ctx)
{
	return exit_call(ctx, FILE_IO_WRITE, ctx->ret);
}

/* close(fd) */
SEC("tp/syscalls/sys_enter_close")
int handle_enter_close(struct syscall_enter_ctx *ctx)
{
	struct call_start *s = enter_call(FILE_IO_CLOSE);

	if (!s)
		return 0;
	s->event.fd = ctx->args[0];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_close")
int handle_exit_close(struct syscall_exit_ctx *ctx)
{
	return exit_call(ctx, FILE_IO_CLOSE, ctx->ret);
}

char LICENSE[] SEC("license") = "GPL";
