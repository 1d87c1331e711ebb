// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The benchmark's BPF program: one 24-byte numbered record per getppid call
 * of one process, into an 8 MiB ring buffer or a perf buffer. Every consumer
 * of the benchmark (C libbpf, node-libbpf) loads this same object. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "bench.h"

const volatile __u32 target_pid = 0;
/* SINK_RING or SINK_PERF */
const volatile __u32 sink = SINK_RING;
/* submit ring records with BPF_RB_NO_WAKEUP: the reader polls */
const volatile bool no_wakeup = false;

/* keep struct event in BTF for typed decoding */
struct event *unused_event __attribute__((unused));

struct bench_stats stats = {};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BENCH_RING_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perf_events SEC(".maps");

SEC("tp/syscalls/sys_enter_getppid")
int handle_getppid(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct event *e, rec;

	if ((id >> 32) != target_pid)
		return 0;
	rec.pid = id >> 32;
	rec.tid = (__u32)id;
	rec.ts = bpf_ktime_get_ns();
	rec.seq = __sync_fetch_and_add(&stats.seq, 1);
	if (sink == SINK_PERF) {
		if (bpf_perf_event_output(ctx, &perf_events, BPF_F_CURRENT_CPU, &rec, sizeof(rec)))
			__sync_fetch_and_add(&stats.perf_errors, 1);
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&stats.ring_full, 1);
		return 0;
	}
	*e = rec;
	bpf_ringbuf_submit(e, no_wakeup ? BPF_RB_NO_WAKEUP : 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
