/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The benchmark's wire types, shared by bench.bpf.c and bench/consumer.c. */
#ifndef __BENCH_H
#define __BENCH_H

/* one getppid call of the traced process: 24 bytes */
struct event {
	__u32 pid;
	__u32 tid;
	__u64 ts;  /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 seq; /* 0, 1, 2, ... across the whole run: finds what is missing */
};

/* the program's counters: the only variable of .bss */
struct bench_stats {
	__u64 seq;         /* the next seq */
	__u64 ring_full;   /* bpf_ringbuf_reserve failed: the kernel dropped a record */
	__u64 perf_errors; /* bpf_perf_event_output failed */
};

/* where records go (const volatile sink) */
#define SINK_RING 1
#define SINK_PERF 2

/* the ring buffer's size */
#define BENCH_RING_BYTES (8 * 1024 * 1024)

#endif /* __BENCH_H */
