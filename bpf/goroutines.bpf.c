// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Goroutine state changes: a uprobe on runtime.casgstatus(gp *g, oldval,
 * newval uint32) of a Go binary. Go passes arguments in registers of its
 * own ABI (ABIInternal, Go 1.17+), not the C ones.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "goroutines.h"

/* the first three integer arguments in Go's register ABI */
#if defined(__TARGET_ARCH_x86)
#define GO_PARM1(x) ((x)->ax)
#define GO_PARM2(x) ((x)->bx)
#define GO_PARM3(x) ((x)->cx)
#elif defined(__TARGET_ARCH_arm64)
#define GO_PARM1(x) PT_REGS_PARM1(x)
#define GO_PARM2(x) PT_REGS_PARM2(x)
#define GO_PARM3(x) PT_REGS_PARM3(x)
#else
#error "Go register ABI: x86_64 and arm64 only"
#endif

#define GSTATUS_SLOTS 16

const volatile __u32 target_pid = 0;
/* offsetof(runtime.g, goid): from the binary's DWARF, it changes across Go versions */
const volatile __u64 goid_offset = 0;

/* transitions into each state (_Gscan bit dropped), counted even when the ring buffer is full */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GSTATUS_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} transitions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} events SEC(".maps");

/* keeps struct goroutine_event in BTF: records are decoded by it */
struct goroutine_event *unused_goroutine_event __attribute__((unused));

static __always_inline bool trace_allowed(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return !target_pid || tgid == target_pid;
}

SEC("uprobe")
int handle_casgstatus(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	void *gp = (void *)GO_PARM1(ctx);
	__u32 oldval = GO_PARM2(ctx);
	__u32 newval = GO_PARM3(ctx);
	__u32 slot = newval & (GSTATUS_SLOTS - 1);
	struct goroutine_event *e;
	__u64 *count, goid;

	if (!trace_allowed())
		return 0;
	count = bpf_map_lookup_elem(&transitions, &slot);
	if (count)
		__sync_fetch_and_add(count, 1);
	if (bpf_probe_read_user(&goid, sizeof(goid), gp + goid_offset))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 0;
	e->ts_ns = bpf_ktime_get_ns();
	e->goid = goid;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->oldstate = oldval;
	e->newstate = newval;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
