/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The wire types of stream.bpf.c, shared with bench/consumer.c (the
 * benchmark's C consumer of the same program). */
#ifndef __STREAM_H
#define __STREAM_H

/* one getppid call of the traced process: 24 bytes */
struct stream_event {
	__u32 pid;
	__u32 tid;
	__u64 ts;  /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 seq; /* 0, 1, 2, ... across the whole run: finds what is missing */
};

/* where records go (const volatile sink) */
#define SINK_RING 1
#define SINK_PERF 2

/* the ring buffer's size: 4 MiB for the tests; the benchmark builds its
 * own object with -DSTREAM_RING_BYTES=8388608 */
#ifndef STREAM_RING_BYTES
#define STREAM_RING_BYTES (4 * 1024 * 1024)
#endif

#endif /* __STREAM_H */
