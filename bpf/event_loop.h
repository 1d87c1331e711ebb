/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __EVENT_LOOP_H
#define __EVENT_LOOP_H

/*
 * The phases of a libuv loop iteration, in the order uv_run() runs them
 * (libuv 1.45+, Node.js 20+: timers close the iteration, and also run once
 * before the first); the attach cookie of each probe. Records and histogram
 * keys decode them by name.
 */
enum uv_phase {
	UV_PHASE_PENDING,	/* uv__run_pending (also after poll, when callbacks were deferred) */
	UV_PHASE_IDLE,		/* uv__run_idle */
	UV_PHASE_PREPARE,	/* uv__run_prepare */
	UV_PHASE_POLL,		/* uv__io_poll: waits for I/O, at most until the next timer */
	UV_PHASE_CHECK,		/* uv__run_check: setImmediate callbacks */
	UV_PHASE_TIMERS,	/* uv__run_timers */
};

/* one run of one phase, emitted when it returns */
struct phase_event {
	enum uv_phase phase;
	__u32 pid;		/* process (tgid) */
	__u32 tid;		/* the thread running the loop */
	__u32 depth;		/* phases this thread was inside already (a loop run in a phase: spawnSync) */
	__u64 loop;		/* the uv_loop_t, the phase function's first argument */
	__u64 start_ns;		/* bpf_ktime_get_ns() at entry */
	__u64 duration_ns;
};

/* key of the in-kernel histogram: per phase, log2 slots of the duration in µs */
struct phase_hist_key {
	enum uv_phase phase;
	__u32 slot;
};

#endif /* __EVENT_LOOP_H */
