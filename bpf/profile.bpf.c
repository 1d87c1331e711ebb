// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Profiles of the process it runs in (lib/service/profile.js): where its threads
 * are on the CPU, and where its main thread waits off it. Stacks (user and
 * kernel) are kept in a stack-trace map and aggregated here by stack id;
 * user space names their frames when it reads a window. Needs CAP_BPF +
 * CAP_PERFMON, no tracefs.
 *
 *   on CPU: this process's threads, sampled by a cpu-clock perf event on
 *	every CPU (handle_sample), or by the kernel's tick (handle_tick)
 *   off CPU: the main thread: its stacks as it leaves the CPU, weighted by
 *	how long it stays off, from one of
 *	handle_switch: a context-switches perf event of the main thread
 *	    alone: runs on its own switches only, as it leaves the CPU; the
 *	    interval it left before ends at its last arrival on a CPU
 *	    (sched_info.last_arrival, on the run queue's clock), counted
 *	    at its next switch (user space makes one at the window's end)
 *	handle_sched_switch: tp_btf sched_switch: runs on every switch of
 *	    every task of the machine (where the first needs what it lacks)
 *   both: the request labels' id the thread runs under (bpf/labels.bpf.h)
 *	in the key, so stacks split by label set
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "compat.bpf.h"
#include "profile.h"
#include "v8.bpf.h"
#include "stacks.bpf.h"
#include "labels.bpf.h"

const volatile __u32 target_pid = 0;	/* the kernel's tgid of the process; its main thread has the same id */
const volatile __u64 min_offcpu_ns = 1000000;
/* the epoll waits of libuv's poll phase: idle, not blocked (left out unless offcpu_idle) */
const volatile __s32 nr_epoll_wait = -1;
const volatile __s32 nr_epoll_pwait = -1;
const volatile __s32 nr_epoll_pwait2 = -1;
const volatile bool offcpu_idle = false;
/* preempted intervals (runnable, waiting for a CPU) by stack: a walk at every
 * preemption; else only their count and time (preempted_count, _ns) */
const volatile bool offcpu_preempted = false;

/* CPU samples by thread and stack */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct profile_key);
	__type(value, __u64);
} counts SEC(".maps");

/* the main thread's off-CPU intervals by stack */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct profile_key);
	__type(value, struct profile_offcpu);
} offcpu SEC(".maps");

/* frame-pointer chains recovered off CPU (profile_key.user_chain) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct profile_chain);
} chains SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profile_chain);
} chain_scratch SEC(".maps");

/* samples and intervals not counted: their table was full */
__u64 dropped_samples = 0;
__u64 dropped_offcpu = 0;
/* the main thread's preempted intervals when not by stack (offcpu_preempted false) */
__u64 preempted_count = 0;
__u64 preempted_ns = 0;

/* the main thread's last switch off the CPU */
struct {
	__u64 start_ns;		/* when (0: on it, or not counted): bpf_ktime_get_ns() for
				 * handle_sched_switch, the run queue's clock for handle_switch */
	__u64 nvcsw, nivcsw;	/* handle_switch: its switch counts then (0: not known) */
	__u32 walked;		/* key holds its stacks (else: preempted, counted apart) */
	struct profile_key key;
} off = {};

/* handle_switch: 1 while user space ends the window: the switch it makes
 * ends the last interval and starts none; flushed counts those switches */
__u32 flushing = 0;
__u64 flushed = 0;

/* Words of the user stack scanned from sp for a saved frame pointer
 * (recover_chain). The farthest one found above glibc's (Debian 12's
 * 2.36) futex, waitpid, read and join waits was 53 words up: 128 leaves
 * room for deeper ones. Each word costs the verifier: 256 of them took
 * 110 of the off-CPU program's 177 ms of load, in the profiler's start. */
#define SCAN_WORDS 128
/* a plausible user-space code address */
#define USER_CODE(a) ((a) > 0x10000 && (a) < 0x800000000000ULL)
#define STACK_SPAN 0x100000

/*
 * The frames above a thread that sleeps in a library built without frame
 * pointers (glibc's pthread_cond_timedwait, under Atomics.wait): the
 * kernel's unwinder stops there. A word on the user stack that looks
 * like a saved frame pointer (a stack address above it whose own first
 * word is one too) is the rbp of the nearest caller with frame pointers
 * (the library pushed it as a callee-saved register); its chain is
 * followed from there. Of the words below the frame found, the one that
 * points lowest wins: a stale word (a dead local of an earlier call) may
 * point to a live frame further up, and its chain would skip the frames
 * below it. A heuristic: a wrong guess gives a short or odd chain, never a
 * fault. Returns the chain's key in chains, or 0, and the frame pointer it
 * starts from in *found (0: none).
 */
static __always_inline __u64 recover_chain(struct task_struct *task, __u64 *found)
{
	struct pt_regs *regs = task_user_regs(task);
	__u64 sp, fp = 0, w, next, ret, hash = 14695981039346656037ULL;
	struct profile_chain *c;
	__u32 zero = 0;
	int i, n = 0;

	if (!regs)
		return 0;
#if defined(__TARGET_ARCH_x86)
	sp = BPF_CORE_READ(regs, sp);
#else
	return 0;
#endif
	c = bpf_map_lookup_elem(&chain_scratch, &zero);
	if (!c)
		return 0;
	for (i = 0; i < SCAN_WORDS; i++) {
		__u64 at = sp + i * 8, n2, r2;

		/* (the words from the frame found on are that frame's and its callers') */
		if (fp && at >= fp)
			break;
		if (bpf_probe_read_user(&w, sizeof(w), (void *)at))
			break;
		if (w <= at || w >= at + STACK_SPAN || (w & 7))
			continue;
		if (bpf_probe_read_user(&next, sizeof(next), (void *)w) ||
		    bpf_probe_read_user(&ret, sizeof(ret), (void *)(w + 8)))
			continue;
		if (next <= w || next >= w + STACK_SPAN || !USER_CODE(ret))
			continue;
		/* and the frame it links to is one too */
		if (bpf_probe_read_user(&n2, sizeof(n2), (void *)next) ||
		    bpf_probe_read_user(&r2, sizeof(r2), (void *)(next + 8)))
			continue;
		/* the lowest frame found: a stale word below the saved one may point to a frame further up */
		if (((n2 > next && n2 < next + STACK_SPAN && USER_CODE(r2)) || (!n2 && USER_CODE(r2))) && (!fp || w < fp))
			fp = w;
	}
	if (!fp)
		return 0;
	*found = fp;
	/* (the frames past the chain's end are zeros: stores the verifier checks once, not a loop it walks) */
	__builtin_memset(c->ips, 0, sizeof(c->ips));
	for (i = 0; i < PROFILE_CHAIN_DEPTH; i++) {
		if (bpf_probe_read_user(&next, sizeof(next), (void *)fp) ||
		    bpf_probe_read_user(&ret, sizeof(ret), (void *)(fp + 8)) || !ret)
			break;
		c->ips[i] = ret;
		hash = (hash ^ ret) * 1099511628211ULL;
		n = i + 1;
		if (next <= fp || next >= fp + STACK_SPAN)
			break;
		fp = next;
	}
	if (n < 2)
		return 0;
	hash ^= n;
	if (!hash)
		hash = 1;
	bpf_map_update_elem(&chains, &hash, c, BPF_ANY);
	return hash;
}

static __always_inline bool idle_wait(long nr)
{
	return nr >= 0 && (nr == nr_epoll_wait || nr == nr_epoll_pwait || nr == nr_epoll_pwait2);
}

/* counts a CPU sample of thread `tid` (current) at `ctx`, its JS frames walked into `v8_stack` */
static __always_inline void count_sample(void *ctx, __u32 tid, __u64 v8_stack)
{
	struct profile_key key = {};
	__u64 one = 1, *count;

	key.tid = tid;
	key.user_stack = stack_id(ctx, BPF_F_USER_STACK, SCRATCH_SLOT_EVENT);
	key.kernel_stack = stack_id(ctx, 0, SCRATCH_SLOT_EVENT);
	key.v8_stack = v8_stack;
	key.label_id = labels_of(tid);
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	count = bpf_map_lookup_elem(&counts, &key);
	if (count) {
		__sync_fetch_and_add(count, 1);
	} else if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST)) {
		/* another CPU created it first, or the table is full */
		count = bpf_map_lookup_elem(&counts, &key);
		if (count)
			__sync_fetch_and_add(count, 1);
		else
			__sync_fetch_and_add(&dropped_samples, 1);
	}
}

/* clock 'cpu-clock': a perf event's sample (its own timer interrupt) */
SEC("perf_event")
int handle_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (id >> 32 != target_pid)
		return 0;
	count_sample(ctx, (__u32)id, v8_walk_sample(target_pid, ctx));
	return 0;
}

/*
 * clock 'tick': the kernel's own tick (the hrtimer it accounts CPU time
 * with, CONFIG_HZ times a second on a busy CPU) samples what runs at every
 * tick_every-th tick of a CPU, whichever task that is, so a sample stands
 * for tick_every ticks of CPU time: no timer interrupt of the profiler's
 * own (on a VM, each costs the sampled thread more than the program). The
 * kernel stack taken here starts in the tick's interrupt: user space cuts
 * it at the interrupt's entry.
 */
/* the functions the tick's hrtimer may have (lib/service/tick.js TICK_FUNCTIONS, from kallsyms; unused ones 0) */
const volatile __u64 tick_fns[3] = {};
const volatile __u64 tick_period_ns = 10101010;	/* the period asked for: tick_every is the nearest whole number of ticks */
const volatile bool tick_main_only = false;	/* threads 'main' */
/*
 * the shortest gap seen between two ticks of a busy CPU, as scheduled (their expiry, not when they
 * ran: no jitter): the tick's period, 1/CONFIG_HZ (0: not yet seen). Only ticks that found a task
 * running count: an idle CPU's tick is stopped, and the one that ends its sleep may be due off the
 * tick's grid (at the next timer's expiry); a busy CPU's ticks are on the grid.
 */
__u64 tick_ns = 0;
__u64 ticks_seen = 0;	/* 1 once the tick ran (a kernel whose tick is no hrtimer sees none) */
__u64 tick_every = 0;	/* ticks a sample stands for (0: not yet known) */

struct tick_cpu {
	__s64 last;	/* when this CPU's last tick was due (its expiry) */
	__u64 busy;	/* whether a task ran at it (not the idle task) */
	__u64 ticks;	/* its ticks seen since tick_every was known */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tick_cpu);
} tick_cpus SEC(".maps");

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(handle_tick, struct hrtimer *timer, ktime_t *now)
{
	__u64 every, id, fn, period = tick_ns;
	__s64 due, d;
	struct tick_cpu *c;
	__u32 zero = 0;

	fn = (__u64)timer->function;
	if (!fn || (fn != tick_fns[0] && fn != tick_fns[1] && fn != tick_fns[2]))
		return 0;
	c = bpf_map_lookup_elem(&tick_cpus, &zero);
	if (!c)
		return 0;
	/* (written once, and tick_every when it changes: every CPU's tick writes this cache line otherwise) */
	if (!ticks_seen)
		ticks_seen = 1;
	id = bpf_get_current_pid_tgid();
	due = timer->node.expires;
	d = due - c->last;
	/* (a late tick skips periods: the shortest gap is the tick) */
	if (c->last && c->busy && (__u32)id && d > 0 && (!period || (__u64)d < period)) {
		tick_ns = d;
		period = d;
	}
	c->last = due;
	c->busy = (__u32)id != 0;
	if (!period)
		return 0;
	every = (tick_period_ns + period / 2) / period;
	if (!every)
		every = 1;
	if (tick_every != every)
		tick_every = every;
	if (++c->ticks % every)
		return 0;
	if (id >> 32 != target_pid || (tick_main_only && (__u32)id != target_pid))
		return 0;
	count_sample(ctx, (__u32)id, v8_walk_current(target_pid, SCRATCH_SLOT_EVENT));
	return 0;
}

/* the main thread leaves the CPU: it is current, its stacks are here; ctx is the program's own */
static __always_inline void leave_cpu(void *ctx, struct task_struct *prev, bool preempt, __u64 now, __u32 slot)
{
	__u64 chain_fp = 0;
	struct pt_regs *regs;

	off.key.tid = target_pid;
	off.key.preempted = preempt;
	off.key.user_stack = stack_id(ctx, BPF_F_USER_STACK, slot);
	off.key.kernel_stack = stack_id(ctx, 0, slot);
	/* preempted, it was running code with frame pointers (JIT code, node): no chain to recover */
	off.key.user_chain = preempt ? 0 : recover_chain(prev, &chain_fp);
	/* JS frames (V8's own data): from the saved registers, else from the recovered chain */
	regs = task_user_regs(prev);
	off.key.v8_stack = v8_walk_kregs(target_pid, regs, slot);
	if (!off.key.v8_stack && chain_fp && regs)
		off.key.v8_stack = v8_walk(target_pid, PT_REGS_IP_CORE(regs), chain_fp, PT_REGS_SP_CORE(regs), slot);
	bpf_get_current_comm(off.key.comm, sizeof(off.key.comm));
	/* (the thread leaving is current: its labels are read from its own memory) */
	off.key.label_id = labels_of(target_pid);
	off.walked = 1;
	off.start_ns = now;
}

/* the main thread leaves the CPU: its stacks are taken, or (preempted, not by stack) its time only */
/* (slot: the scratch buffers', SCRATCH_SLOT_BTF from the tp_btf program, whose run a CPU sample may interrupt) */
static __always_inline void leave(void *ctx, struct task_struct *prev, bool preempt, __u64 now, __u32 slot)
{
	if (preempt && !offcpu_preempted) {
		off.walked = 0;
		off.start_ns = now;
		return;
	}
	leave_cpu(ctx, prev, preempt, now, slot);
}

/* the interval off.key started ended after delta ns */
static __always_inline void count_offcpu(__u64 delta)
{
	struct profile_offcpu *v, first = { 1, 0 };

	if (delta < min_offcpu_ns)
		return;
	if (!off.walked) {
		__sync_fetch_and_add(&preempted_count, 1);
		__sync_fetch_and_add(&preempted_ns, delta);
		return;
	}
	v = bpf_map_lookup_elem(&offcpu, &off.key);
	if (v) {
		__sync_fetch_and_add(&v->count, 1);
		__sync_fetch_and_add(&v->total_ns, delta);
		return;
	}
	first.total_ns = delta;
	if (bpf_map_update_elem(&offcpu, &off.key, &first, BPF_NOEXIST))
		__sync_fetch_and_add(&dropped_offcpu, 1);
}

/* libuv's idle poll: not counted unless offcpu_idle */
static __always_inline bool idle_poll(struct task_struct *prev, bool preempt)
{
	return !offcpu_idle && !preempt && idle_wait(task_syscall(prev));
}

/*
 * A context-switches event of the main thread (sample period 1): the kernel
 * raises it in the thread's own context as the thread leaves the CPU
 * (perf_event_task_sched_out), so the stacks are its own. The interval
 * it left before ends at its arrival since (sched_info.last_arrival: set
 * as it came back, on the run queue's clock, as the start is taken here).
 */
/* what handle_switch reads of the thread leaving the CPU */
struct switch_facts {
	__u64 clock;	/* its run queue's clock, set as this switch began (0: unknown) */
	__u64 arrival;	/* sched_info.last_arrival: its last arrival on a CPU, on that clock */
	__u64 nvcsw, nivcsw;
};

/* the run queue a task's fair-class queue is on (cfs_rq->rq; or, without group scheduling, the rq it is in) */
static __always_inline struct rq *cfs_rq_of(struct cfs_rq *cfs)
{
	if (bpf_core_field_exists(cfs->rq))
		return BPF_CORE_READ(cfs, rq);
	return (void *)cfs - bpf_core_field_offset(struct rq, cfs);
}

/*
 * A context-switches event of the main thread (sample period 1): the kernel
 * raises it in the thread's own context as the thread leaves the CPU
 * (perf_event_task_sched_out), so the stacks are its own. The interval
 * it left before ends at its arrival since (sched_info.last_arrival: set
 * as it came back, on the run queue's clock, as the start is taken here).
 */
SEC("perf_event")
int handle_switch(struct bpf_perf_event_data *ctx)
{
	struct switch_facts f = {};
	struct task_struct *prev;
	struct cfs_rq *cfs;
	bool preempt;

	if (HAVE_TASK_PT_REGS) {
		/* 5.15 on: a trusted pointer, read directly (each CO-RE read below is a helper call) */
		struct task_struct *t = bpf_get_current_task_btf();

		/* (the event follows the main thread only) */
		if (t->pid != target_pid)
			return 0;
		cfs = t->se.cfs_rq;
		if (cfs && bpf_core_field_exists(cfs->rq) && cfs->rq)
			f.clock = cfs->rq->clock;
		else if (cfs)
			f.clock = BPF_CORE_READ(cfs_rq_of(cfs), clock);
		f.arrival = t->sched_info.last_arrival;
		f.nvcsw = t->nvcsw;
		f.nivcsw = t->nivcsw;
		prev = t;
	} else {
		prev = (struct task_struct *)bpf_get_current_task();
		if (BPF_CORE_READ(prev, pid) != target_pid)
			return 0;
		cfs = BPF_CORE_READ(prev, se.cfs_rq);
		if (cfs)
			f.clock = BPF_CORE_READ(cfs_rq_of(cfs), clock);
		f.arrival = BPF_CORE_READ(prev, sched_info.last_arrival);
		f.nvcsw = BPF_CORE_READ(prev, nvcsw);
		f.nivcsw = BPF_CORE_READ(prev, nivcsw);
	}
	if (off.start_ns) {
		if (f.arrival > off.start_ns && f.arrival <= f.clock)
			count_offcpu(f.arrival - off.start_ns);
		off.start_ns = 0;
	}
	if (flushing) {
		__sync_fetch_and_add(&flushed, 1);
		off.nvcsw = 0;
		return 0;
	}
	/* still runnable (preempted) if this switch was an involuntary one (the kernel's nivcsw) */
	if (off.nvcsw && f.nvcsw + f.nivcsw == off.nvcsw + off.nivcsw + 1)
		preempt = f.nivcsw != off.nivcsw;
	else
		preempt = task_runnable(prev);
	off.nvcsw = f.nvcsw;
	off.nivcsw = f.nivcsw;
	if (idle_poll(prev, preempt) || !f.clock)
		return 0;
	leave(ctx, prev, preempt, f.clock, SCRATCH_SLOT_EVENT);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(handle_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 delta;

	/* every switch of the machine: the cheapest test first (two loads from the arguments) */
	if (prev->pid == target_pid) {
		/* still runnable, as the kernel counts it (nivcsw): preempted, or leaving while TASK_RUNNING
		 * (a wake-up's preemption, taken as it returns to user space, is a plain schedule()) */
		preempt = preempt || task_runnable(prev);
		if (idle_poll(prev, preempt))
			off.start_ns = 0;
		else
			leave(ctx, prev, preempt, bpf_ktime_get_ns(), SCRATCH_SLOT_BTF);
		return 0;
	}
	if (next->pid != target_pid || !off.start_ns)
		return 0;
	delta = bpf_ktime_get_ns() - off.start_ns;
	off.start_ns = 0;
	count_offcpu(delta);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
