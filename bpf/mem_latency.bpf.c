// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Memory management latency: mmap, munmap and madvise of one process, one ring buffer record per call. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "mem_latency.h"

#define LATENCY_EVENT struct mem_event
#include "syscall_latency.bpf.h"

/* mmap(addr, len, prot, flags, fd, off) */
SEC("tp/syscalls/sys_enter_mmap")
int handle_enter_mmap(struct syscall_enter_ctx *ctx)
{
	struct call_start *s = enter_call(MEM_MMAP);

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
int handle_exit_mmap(struct syscall_exit_ctx *ctx)
{
	return exit_call(ctx, MEM_MMAP, ctx->ret);
}

/* munmap(addr, len) */
SEC("tp/syscalls/sys_enter_munmap")
int handle_enter_munmap(struct syscall_enter_ctx *ctx)
{
	struct call_start *s = enter_call(MEM_MUNMAP);

	if (!s)
		return 0;
	s->event.addr = ctx->args[0];
	s->event.len = ctx->args[1];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_munmap")
int handle_exit_munmap(struct syscall_exit_ctx *ctx)
{
	return exit_call(ctx, MEM_MUNMAP, ctx->ret);
}

/* madvise(addr, len, advice) */
SEC("tp/syscalls/sys_enter_madvise")
int handle_enter_madvise(struct syscall_enter_ctx *ctx)
{
	struct call_start *s = enter_call(MEM_MADVISE);

	if (!s)
		return 0;
	s->event.addr = ctx->args[0];
	s->event.len = ctx->args[1];
	s->event.advice = ctx->args[2];
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_madvise")
int handle_exit_madvise(struct syscall_exit_ctx *ctx)
{
	return exit_call(ctx, MEM_MADVISE, ctx->ret);
}

char LICENSE[] SEC("license") = "GPL";
