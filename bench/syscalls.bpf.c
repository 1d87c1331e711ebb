// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The HTTP row's tracer: every system call of one process, with its latency,
 * one ring buffer record per call (raw_syscalls:sys_enter/sys_exit). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "syscalls.h"

const volatile __u32 target_pid = 0;

struct syscall_event *unused_syscall_event __attribute__((unused));

__u64 ring_full = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, __u64);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} events SEC(".maps");

SEC("tp/raw_syscalls/sys_enter")
int handle_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u64 ts;

	if ((id >> 32) != target_pid)
		return 0;
	ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &tid, &ts, BPF_ANY);
	return 0;
}

SEC("tp/raw_syscalls/sys_exit")
int handle_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct syscall_event *e;
	__u64 *start;

	if ((id >> 32) != target_pid)
		return 0;
	start = bpf_map_lookup_elem(&starts, &tid);
	if (!start)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (e) {
		e->pid = id >> 32;
		e->tid = tid;
		e->nr = ctx->id;
		e->duration_ns = bpf_ktime_get_ns() - *start;
		e->ret = ctx->ret;
		bpf_ringbuf_submit(e, 0);
	} else {
		__sync_fetch_and_add(&ring_full, 1);
	}
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
