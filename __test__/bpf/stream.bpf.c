// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* One numbered record per getppid call of one process, to a ring buffer or
 * a perf buffer, counting what the kernel could not take. The tests load it
 * from bpf/.output/stream.bpf.o (4 MiB ring); the benchmark compiles this
 * same source into bench/.build/stream.bpf.o with an 8 MiB ring, and its C
 * and node-libbpf consumers load that object. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "stream.h"

const volatile __u32 target_pid = 0;
/* SINK_RING or SINK_PERF */
const volatile __u32 sink = SINK_RING;
/* submit ring records without waking the reader (BPF_RB_NO_WAKEUP) */
const volatile bool no_wakeup = false;

/* keep struct stream_event in BTF for typed decoding */
struct stream_event *unused_stream_event __attribute__((unused));

/* .bss: the next seq, and what the kernel refused */
__u64 seq = 0;
__u64 ring_full = 0;   /* bpf_ringbuf_reserve failed */
__u64 perf_errors = 0; /* bpf_perf_event_output failed */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, STREAM_RING_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perf_events SEC(".maps");

SEC("tp/syscalls/sys_enter_getppid")
int handle_enter_getppid(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct stream_event *e, rec;

	if ((id >> 32) != target_pid)
		return 0;
	rec.pid = id >> 32;
	rec.tid = (__u32)id;
	rec.ts = bpf_ktime_get_ns();
	/* one producer thread: read, then add (an atomic fetch-and-add needs
	 * Linux 5.12: 5.10 refuses it, "BPF_STX uses reserved fields") */
	rec.seq = seq;
	__sync_fetch_and_add(&seq, 1);
	if (sink == SINK_PERF) {
		if (bpf_perf_event_output(ctx, &perf_events, BPF_F_CURRENT_CPU, &rec, sizeof(rec)))
			__sync_fetch_and_add(&perf_errors, 1);
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&ring_full, 1);
		return 0;
	}
	*e = rec;
	bpf_ringbuf_submit(e, no_wakeup ? BPF_RB_NO_WAKEUP : 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
