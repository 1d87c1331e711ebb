// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test program: kprobe, kretprobe, fentry and raw tracepoint handlers, for
 * the kernel-dependent tests (kprobes and fentry are missing on some
 * kernels) and the raw tracepoint test. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compat.bpf.h"
#include <bpf/bpf_tracing.h>

const volatile __u32 target_pid = 0;

__u64 kprobe_hits = 0;
__u64 kretprobe_hits = 0;
__u64 raw_tp_hits = 0;
__u64 tp_btf_hits = 0;

/* calls counted by attach cookie */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} cookie_counts SEC(".maps");

static __always_inline bool trace_allowed(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == target_pid;
}

SEC("kprobe/do_sys_openat2")
int BPF_KPROBE(handle_kprobe_openat)
{
	if (trace_allowed())
		__sync_fetch_and_add(&kprobe_hits, 1);
	return 0;
}

SEC("kretprobe/do_sys_openat2")
int BPF_KRETPROBE(handle_kretprobe_openat)
{
	if (trace_allowed())
		__sync_fetch_and_add(&kretprobe_hits, 1);
	return 0;
}

/* getppid's syscall number: the raw tracepoint sees the architecture's own */
#if defined(__TARGET_ARCH_arm64)
#define NR_GETPPID 173
#else
#define NR_GETPPID 110
#endif

/* sys_enter raw tracepoint: args[1] is the syscall number */
SEC("raw_tp/sys_enter")
int handle_raw_sys_enter(struct bpf_raw_tracepoint_args *ctx)
{
	if (trace_allowed() && ctx->args[1] == NR_GETPPID)
		__sync_fetch_and_add(&raw_tp_hits, 1);
	return 0;
}

/* the same tracepoint through BTF: typed arguments */
SEC("tp_btf/sys_enter")
int BPF_PROG(handle_btf_sys_enter, struct pt_regs *regs, long id)
{
	if (trace_allowed() && id == NR_GETPPID)
		__sync_fetch_and_add(&tp_btf_hits, 1);
	return 0;
}

SEC("tp/syscalls/sys_enter_getppid")
int handle_cookie_getppid(void *ctx)
{
	__u64 cookie = attach_cookie(ctx), one = 1, *count;

	if (!trace_allowed())
		return 0;
	count = bpf_map_lookup_elem(&cookie_counts, &cookie);
	if (count)
		__sync_fetch_and_add(count, 1);
	else
		bpf_map_update_elem(&cookie_counts, &cookie, &one, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
