// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libuv event loop phases: an entry and a return program, attached to every
 * phase function (uv__run_timers, ..., uv__io_poll, uv__run_check) with the
 * phase as the attach cookie (or, before 5.15, a pair of programs per phase). Each return emits a ring buffer record and
 * counts its duration in a per-phase log2 histogram.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compat.bpf.h"
#include <bpf/bpf_tracing.h>
#include "hist.bpf.h"
#include "event_loop.h"

#define MAX_DEPTH 8

const volatile __u32 target_pid = 0;
/* threads whose libuv loops are Node's own, not the application's (the
 * platform's delayed-task scheduler runs one: Node 26 iterates it); 0: unused */
const volatile __u32 skip_tids[4] = {};
/* set by user space when it stops: nothing is counted or emitted after it */
bool stopped = false;

/* a phase in progress */
struct frame {
	enum uv_phase phase;
	__u64 loop;
	__u64 start_ns;
};

/*
 * per thread, the phases it is inside: a loop run inside a phase (the
 * uv_run of spawnSync inside a timer callback) nests, and uretprobes fire
 * in reverse order of their entries
 */
struct stack {
	__u32 depth;
	struct frame frames[MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct stack);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 6 * LOG2_SLOTS);
	__type(key, struct phase_hist_key);
	__type(value, __u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* keeps struct phase_event in BTF: records are decoded by it */
struct phase_event *unused_phase_event __attribute__((unused));

static __always_inline bool trace_allowed(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;

	if (stopped || (target_pid && tgid != target_pid))
		return false;
	for (int i = 0; i < 4; i++) {
		if (skip_tids[i] && skip_tids[i] == tid)
			return false;
	}
	return true;
}

/* a phase begins: push it on this thread's stack */
static __always_inline int phase_entry(struct pt_regs *ctx, void *loop, enum uv_phase phase)
{
	static const struct stack empty = {};
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct stack *s;
	__u32 depth;

	if (!trace_allowed())
		return 0;
	s = bpf_map_lookup_elem(&stacks, &tid);
	if (!s) {
		bpf_map_update_elem(&stacks, &tid, &empty, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&stacks, &tid);
		if (!s)
			return 0;
	}
	depth = s->depth;
	if (depth >= MAX_DEPTH)
		return 0;
	s->frames[depth].phase = phase;
	s->frames[depth].loop = (__u64)loop;
	s->frames[depth].start_ns = bpf_ktime_get_ns();
	s->depth = depth + 1;
	return 0;
}

/* a phase ends: pop it, count its duration, emit its record */
static __always_inline int phase_return(struct pt_regs *ctx, enum uv_phase phase)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	struct phase_hist_key key = { .phase = phase };
	struct phase_event *e;
	struct frame *f;
	__u64 one = 1, *count;
	__u32 tid = (__u32)id;
	struct stack *s;
	__u32 depth;

	if (!trace_allowed())
		return 0;
	s = bpf_map_lookup_elem(&stacks, &tid);
	if (!s)
		return 0;
	depth = s->depth;
	if (depth == 0 || depth > MAX_DEPTH)
		return 0;
	/* masked: older verifiers cannot bound depth - 1 on their own */
	f = &s->frames[(depth - 1) & (MAX_DEPTH - 1)];
	/* a return whose entry was not seen (the call began before the attach) */
	if (f->phase != phase)
		return 0;
	s->depth = depth - 1;

	key.slot = log2_slot((now - f->start_ns) / 1000);
	count = bpf_map_lookup_elem(&hist, &key);
	if (count)
		__sync_fetch_and_add(count, 1);
	else
		bpf_map_update_elem(&hist, &key, &one, BPF_NOEXIST);

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->phase = phase;
	e->pid = id >> 32;
	e->tid = tid;
	e->depth = depth - 1;
	e->loop = f->loop;
	e->start_ns = f->start_ns;
	e->duration_ns = now - f->start_ns;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/*
 * the same, attached one probe per phase (attachUprobe) or all phases of a
 * binary through one link (attachUprobeMulti, kernels 6.6+: detaching one
 * link costs one RCU grace period, not one per probe)
 */
SEC("uprobe")
int BPF_UPROBE(handle_phase_entry, void *loop)
{
	return phase_entry(ctx, loop, attach_cookie(ctx));
}

SEC("uretprobe")
int BPF_URETPROBE(handle_phase_return)
{
	return phase_return(ctx, attach_cookie(ctx));
}

SEC("uprobe.multi")
int BPF_UPROBE(handle_phase_entry_multi, void *loop)
{
	return phase_entry(ctx, loop, attach_cookie(ctx));
}

SEC("uretprobe.multi")
int BPF_URETPROBE(handle_phase_return_multi)
{
	return phase_return(ctx, attach_cookie(ctx));
}

/*
 * kernels without attach cookies (before 5.15): a pair of programs per
 * phase, the phase built in; not loaded unless user space asks for them
 * (SEC("?..."): autoload off)
 */
#define PHASE_PROGRAMS(name, phase)					\
	SEC("?uprobe")							\
	int BPF_UPROBE(handle_##name##_entry, void *loop)		\
	{								\
		return phase_entry(ctx, loop, phase);			\
	}								\
	SEC("?uretprobe")						\
	int BPF_URETPROBE(handle_##name##_return)			\
	{								\
		return phase_return(ctx, phase);			\
	}

PHASE_PROGRAMS(pending, UV_PHASE_PENDING)
PHASE_PROGRAMS(idle, UV_PHASE_IDLE)
PHASE_PROGRAMS(prepare, UV_PHASE_PREPARE)
PHASE_PROGRAMS(poll, UV_PHASE_POLL)
PHASE_PROGRAMS(check, UV_PHASE_CHECK)
PHASE_PROGRAMS(timers, UV_PHASE_TIMERS)

char LICENSE[] SEC("license") = "GPL";
