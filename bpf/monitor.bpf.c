// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The in-process monitor (lib/service/monitor.js): a Node.js process counting its
 * own kernel-level behaviour, read on demand. Each part has its own
 * programs; user space attaches the parts asked for. Every counter lives in
 * a BPF_F_MMAPABLE array read with no syscall, or in a hash map read in
 * batches. Nothing here needs tracefs: raw tracepoints, tp_btf and uprobes
 * (perf's uprobe PMU) need CAP_BPF + CAP_PERFMON only.
 *
 *   syscalls, files, connects: raw_tp sys_enter/sys_exit (syscall_hist.bpf.h,
 *	node_syscalls.bpf.h), this process's threads but node-libbpf's own
 *   eventLoop: uprobes on the entries of the libuv phase functions, the
 *	main thread's loops
 *   offCpu: tp_btf sched_switch, the main thread
 *   tcpRetransmits: tp_btf tcp_retransmit_skb, on this process's sockets
 *	(those it connected, tp_btf inet_sock_set_state, and those accepted on
 *	its listening ports)
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#define SYSCALL_HIST_MAP_FLAGS BPF_F_MMAPABLE
#include "syscall_hist.bpf.h"
#include "node_syscalls.bpf.h"
#include "node_libbpf.bpf.h"
#include "compat.bpf.h"
#include "event_loop.h"
#include "monitor.h"

#define UV_PHASES (UV_PHASE_TIMERS + 1)
#define TCP_ESTABLISHED 1
#define TCP_SYN_SENT 2
#define TCP_CLOSE 7
#define TCP_LISTEN 10

/* the syscall the kernel's uretprobe trampoline makes (6.11+) when a
 * uretprobe (another tracer's) returns in this process: not the service's */
const volatile __s32 nr_uretprobe = -1;

/* the epoll waits of the poll phase: off-CPU there is idle, not blocked */
const volatile __s32 nr_epoll_wait = -1;
const volatile __s32 nr_epoll_pwait = -1;
const volatile __s32 nr_epoll_pwait2 = -1;

/* per phase (enum uv_phase), the main thread's loop */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UV_PHASES);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct syscall_counts);
} phases SEC(".maps");

/* per reason (monitor.h): how often and how long the main thread was off the CPU */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OFFCPU_REASONS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct offcpu_time);
} offcpu SEC(".maps");

/* per enum offcpu_kind, the histogram of the main thread's off-CPU intervals */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, OFFCPU_KINDS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct syscall_counts);
} offcpu_hist SEC(".maps");

/* TCP segments retransmitted on this process's sockets, by remote endpoint */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct node_endpoint);
	__type(value, __u64);
} retransmits SEC(".maps");

/* the sockets this process connected (by address), while they live */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} own_sockets SEC(".maps");

/* the local ports this process listens on (lib/service/monitor.js adds those
 * listening before the monitor started) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u16);
	__type(value, __u8);
} own_ports SEC(".maps");

/* where a loop is: the phase it began last, and when */
struct loop_phase {
	__u32 phase;
	__u64 start_ns;
};

/* by loop (uv_loop_t *): a loop run inside a phase (spawnSync's) has its own */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, struct loop_phase);
} loops SEC(".maps");

/* inserts refused because the table was full (E2BIG): retransmits (those
 * segments went uncounted), own_ports (a port whose accepted connections'
 * retransmits go uncounted) */
__u64 retransmits_overflows = 0;
__u64 own_ports_overflows = 0;

/* the main thread's last switch off the CPU */
struct offcpu_start {
	__u64 start_ns;
	__u32 reason;
} off = {};

static __always_inline bool own_process(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == target_pid;
}

static __always_inline bool main_thread(void)
{
	return (__u32)bpf_get_current_pid_tgid() == target_pid;
}

/* counts one interval of delta_ns in a histogram */
static __always_inline void hist_add(struct syscall_counts *h, __u64 delta_ns)
{
	__u32 slot = log2_slot(delta_ns / 1000);

	if (slot >= SYSCALL_HIST_SLOTS)
		slot = SYSCALL_HIST_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->total_ns, delta_ns);
}

/* sys_enter(struct pt_regs *regs, long id) */
SEC("raw_tp/sys_enter")
int handle_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	long nr = ctx->args[1];

	/* the library's own threads are not the service */
	if (!own_process() || node_libbpf_thread(tid) || nr == nr_uretprobe)
		return 0;
	if (syscall_enter(nr))
		files_endpoints_enter(tid, nr, (struct pt_regs *)ctx->args[0]);
	return 0;
}

/* sys_exit(struct pt_regs *regs, long ret) */
SEC("raw_tp/sys_exit")
int handle_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	long ret = ctx->args[1];

	if (!own_process())
		return 0;
	files_endpoints_exit((__u32)bpf_get_current_pid_tgid(), syscall_exit(ret), ret);
	return 0;
}

/*
 * a phase begins (the phase is the attach cookie, or built into the
 * program on kernels without cookies): the one its loop began before ends
 * here. Entry probes only, no uretprobes: a phase lasts from its
 * start to the start of the next (check includes closing the handles,
 * timers the loop's own bookkeeping), at half the probes' cost. A phase
 * that runs a loop of its own (spawnSync) lasts as long as that loop.
 */
static __always_inline int phase_entry(struct pt_regs *ctx, __u64 loop, __u32 phase)
{
	struct loop_phase next = { .phase = phase }, *last;
	struct syscall_counts *h;

	if (!main_thread())
		return 0;
	next.start_ns = bpf_ktime_get_ns();
	last = bpf_map_lookup_elem(&loops, &loop);
	if (last) {
		h = bpf_map_lookup_elem(&phases, &last->phase);
		if (h)
			hist_add(h, next.start_ns - last->start_ns);
		*last = next;
		return 0;
	}
	bpf_map_update_elem(&loops, &loop, &next, BPF_ANY);
	return 0;
}

SEC("uprobe")
int BPF_UPROBE(handle_phase_entry, void *loop)
{
	return phase_entry(ctx, (__u64)loop, attach_cookie(ctx));
}

SEC("uprobe.multi")
int BPF_UPROBE(handle_phase_entry_multi, void *loop)
{
	return phase_entry(ctx, (__u64)loop, attach_cookie(ctx));
}

/*
 * kernels without attach cookies (before 5.15): a program per phase, the
 * phase built in; loaded only when user space asks for them (SEC("?..."):
 * lib/host/event_loop.js choosePhasePrograms)
 */
#define PHASE_ENTRY(name, phase)					\
	SEC("?uprobe")							\
	int BPF_UPROBE(handle_##name##_entry, void *loop)		\
	{								\
		return phase_entry(ctx, (__u64)loop, phase);		\
	}

PHASE_ENTRY(pending, UV_PHASE_PENDING)
PHASE_ENTRY(idle, UV_PHASE_IDLE)
PHASE_ENTRY(prepare, UV_PHASE_PREPARE)
PHASE_ENTRY(poll, UV_PHASE_POLL)
PHASE_ENTRY(check, UV_PHASE_CHECK)
PHASE_ENTRY(timers, UV_PHASE_TIMERS)

static __always_inline bool idle_wait(long nr)
{
	return nr >= 0 && (nr == nr_epoll_wait || nr == nr_epoll_pwait || nr == nr_epoll_pwait2);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(handle_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct syscall_counts *h;
	struct offcpu_time *t;
	__u32 kind, reason;
	__u64 now, delta;
	long nr;

	if (prev->pid == target_pid) {
		/* still runnable: preempted (a wake-up's preemption at the return to user space included) */
		preempt = preempt || task_runnable(prev);
		nr = preempt ? -1 : task_syscall(prev);
		off.reason = preempt ? OFFCPU_PREEMPTED : nr >= 0 && nr < OFFCPU_SYSCALLS ? nr : OFFCPU_OTHER;
		off.start_ns = bpf_ktime_get_ns();
		return 0;
	}
	if (next->pid != target_pid || !off.start_ns)
		return 0;
	now = bpf_ktime_get_ns();
	delta = now - off.start_ns;
	reason = off.reason;
	off.start_ns = 0;
	t = bpf_map_lookup_elem(&offcpu, &reason);
	if (t) {
		__sync_fetch_and_add(&t->count, 1);
		__sync_fetch_and_add(&t->total_ns, delta);
	}
	kind = reason < OFFCPU_SYSCALLS && idle_wait(reason) ? OFFCPU_IDLE : OFFCPU_BLOCKED;
	h = bpf_map_lookup_elem(&offcpu_hist, &kind);
	if (h)
		hist_add(h, delta);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(handle_inet_sock_set_state, const struct sock *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk;
	__u16 port;
	__u8 one = 1;

	if (newstate == TCP_CLOSE) {
		bpf_map_delete_elem(&own_sockets, &key);
		if (oldstate == TCP_LISTEN && own_process()) {
			port = BPF_CORE_READ(sk, __sk_common.skc_num);
			bpf_map_delete_elem(&own_ports, &port);
		}
		return 0;
	}
	if (!own_process())
		return 0;
	if (newstate == TCP_SYN_SENT) {
		bpf_map_update_elem(&own_sockets, &key, &one, BPF_ANY);
	} else if (newstate == TCP_LISTEN) {
		port = BPF_CORE_READ(sk, __sk_common.skc_num);
		if (bpf_map_update_elem(&own_ports, &port, &one, BPF_ANY))
			__sync_fetch_and_add(&own_ports_overflows, 1);
	}
	return 0;
}

/* tcp_skb_pcount(skb): how many segments the skb is (GSO) */
static __always_inline __u16 skb_segs(const struct sk_buff *skb)
{
	const struct tcp_skb_cb *cb = (const void *)skb + bpf_core_field_offset(struct sk_buff, cb);

	return BPF_CORE_READ(cb, tcp_gso_segs);
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(handle_tcp_retransmit_skb, const struct sock *sk, const struct sk_buff *skb)
{
	struct node_endpoint remote = {};
	__u64 key = (__u64)sk, *count, segs;
	__u16 port = BPF_CORE_READ(sk, __sk_common.skc_num);
	long err;

	if (!bpf_map_lookup_elem(&own_sockets, &key) && !bpf_map_lookup_elem(&own_ports, &port))
		return 0;
	remote.family = BPF_CORE_READ(sk, __sk_common.skc_family);
	remote.port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (remote.family == AF_INET)
		BPF_CORE_READ_INTO(&remote.addr.v4, sk, __sk_common.skc_daddr);
	else
		BPF_CORE_READ_INTO(&remote.addr.v6, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	segs = skb_segs(skb) ?: 1;
	count = bpf_map_lookup_elem(&retransmits, &remote);
	if (count) {
		__sync_fetch_and_add(count, segs);
		return 0;
	}
	err = bpf_map_update_elem(&retransmits, &remote, &segs, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* another CPU made it first */
		count = bpf_map_lookup_elem(&retransmits, &remote);
		if (count)
			__sync_fetch_and_add(count, segs);
	} else if (err) {
		__sync_fetch_and_add(&retransmits_overflows, 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
