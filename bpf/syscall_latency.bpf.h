/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Syscall latency tracers that emit one record per call, from the
 * syscalls:sys_enter_X and sys_exit_X tracepoints of one process: the call's
 * start and the arguments its record reports kept in the thread's task
 * storage (a hash keyed by thread before 5.11, compat.bpf.h) at entry, the record completed and emitted at exit. Included by
 * file_io.bpf.c, net_latency.bpf.c and mem_latency.bpf.c (driven by
 * lib/tools/trace_syscalls.js), each defining first:
 *
 *   LATENCY_EVENT        its record (X.h): a struct with the fields syscall,
 *                        pid, tid, duration_ns, ret and comm
 *   LATENCY_PERF_BUFFER  (optional) emit into a perf buffer, not a ring buffer
 *
 * An entry handler takes `struct call_start *s = enter_call(X_SYSCALL)`,
 * fills in `s->event` and sets `s->ts = bpf_ktime_get_ns()` last; the exit
 * handler returns `exit_call(ctx, X_SYSCALL, ctx->ret)`. The handlers take
 * `struct syscall_enter_ctx *` and `struct syscall_exit_ctx *`. */
#ifndef __SYSCALL_LATENCY_BPF_H
#define __SYSCALL_LATENCY_BPF_H

#include "compat.bpf.h"
#include "filter.bpf.h"

#ifndef LATENCY_EVENT
#error "define LATENCY_EVENT (the record's struct) before including syscall_latency.bpf.h"
#endif

/* A syscalls:sys_enter_X or sys_exit_X tracepoint's record, as its format
 * file (tracefs events/syscalls/sys_enter_X/format) lays it out on every
 * kernel and architecture: 8 bytes of common fields, the syscall's number
 * (an int, in 8 bytes), then each argument, or the return value, in 8
 * bytes. Declared here, not vmlinux.h's trace_event_raw_sys_enter/exit:
 * those are CO-RE relocated, and an object with no CO-RE relocation loads
 * without libbpf parsing the kernel's BTF (file_io.bpf.o: 2.6 ms, not 20). */
struct syscall_enter_ctx {
	__u64 common;
	long nr;
	unsigned long args[6];
};

struct syscall_exit_ctx {
	__u64 common;
	long nr;
	long ret;
};

const volatile __u32 target_pid = 0;	/* 0: every process */

/* the call a thread is in: when it started and the arguments its record reports */
struct call_start {
	__u64 ts;			/* 0: none */
	LATENCY_EVENT event;
};

/* the thread's call: task storage, or a hash keyed by thread before 5.11 */
THREAD_STORAGE(starts, struct call_start);

#ifdef LATENCY_PERF_BUFFER
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");
#else
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");
#endif

static __always_inline bool trace_allowed(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return (!target_pid || tgid == target_pid) && cgroup_traced();
}

/* a zeroed start for this thread's call, or NULL when not traced */
static __always_inline struct call_start *enter_call(int syscall)
{
	struct call_start *s;

	if (!trace_allowed())
		return NULL;
	s = thread_storage_get(starts, true);
	if (!s)
		return NULL;
	/* the fields this call does not set are 0 in its record */
	__builtin_memset(s, 0, sizeof(*s));
	s->event.syscall = syscall;
	return s;
}

/* fills in what a record has of every call: process, thread, duration, return value, comm */
static __always_inline void complete(LATENCY_EVENT *e, __u64 ts, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();

	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->duration_ns = bpf_ktime_get_ns() - ts;
	e->ret = ret;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
}

#ifdef LATENCY_PERF_BUFFER
static __always_inline void emit(void *ctx, struct call_start *s, long ret)
{
	/* from the task storage itself: the perf buffer takes a copy */
	complete(&s->event, s->ts, ret);
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &s->event, sizeof(s->event));
}
#else
static __always_inline void emit(void *ctx, struct call_start *s, long ret)
{
	LATENCY_EVENT *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e)
		return;
	*e = s->event;
	complete(e, s->ts, ret);
	bpf_ringbuf_submit(e, 0);
}
#endif

/* completes this thread's call with its duration and return value, and emits it */
static __always_inline int exit_call(void *ctx, int syscall, long ret)
{
	struct call_start *s;

	if (!trace_allowed())
		return 0;
	s = thread_storage_get(starts, false);
	if (!s || !s->ts)
		return 0;
	/* a start of another call means this call's entry was missed */
	if (s->event.syscall == syscall)
		emit(ctx, s, ret);
	s->ts = 0;
	thread_storage_done(starts);
	return 0;
}

#endif /* __SYSCALL_LATENCY_BPF_H */
