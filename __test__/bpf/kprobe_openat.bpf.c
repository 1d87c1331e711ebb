// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test program: openat latency of one process with a kprobe and a kretprobe
 * on the syscall's kernel function (__x64_sys_openat), as the article does
 * with attachKprobe/attachKretprobe. The function is the syscall wrapper: its
 * only argument is the user's pt_regs, which BPF_KSYSCALL reads the syscall
 * arguments from. Kernels without kprobes refuse the attach (not the load). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compat.bpf.h"
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "kprobe_openat.h"

const volatile __u32 target_pid = 0;

/* this process's calls seen at entry and at return (.bss) */
__u64 enter_count = 0;
__u64 exit_count = 0;
/* bpf_get_attach_cookie() at the last entry: attachKprobe's { cookie } */
__u64 entry_cookie = 0;

struct start {
	__u64 ts;
	__s32 dfd;
	char filename[KPROBE_FILENAME_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

static __always_inline bool trace_allowed(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == target_pid;
}

SEC("ksyscall/openat")
int BPF_KSYSCALL(handle_openat_entry, int dfd, const char *filename)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	static const struct start zero = {};
	struct start *s;

	if (!trace_allowed())
		return 0;
	__sync_fetch_and_add(&enter_count, 1);
	entry_cookie = attach_cookie(ctx);
	if (bpf_map_update_elem(&starts, &tid, &zero, BPF_ANY))
		return 0;
	s = bpf_map_lookup_elem(&starts, &tid);
	if (!s)
		return 0;
	s->dfd = dfd;
	bpf_probe_read_user_str(s->filename, sizeof(s->filename), filename);
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("kretsyscall/openat")
int BPF_KRETPROBE(handle_openat_return, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct kprobe_openat_event *e;
	struct start *s;

	if (!trace_allowed())
		return 0;
	__sync_fetch_and_add(&exit_count, 1);
	s = bpf_map_lookup_elem(&starts, &tid);
	if (!s)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (e) {
		e->pid = id >> 32;
		e->tid = tid;
		e->duration_ns = bpf_ktime_get_ns() - s->ts;
		e->ret = ret;
		e->dfd = s->dfd;
		__builtin_memcpy(e->filename, s->filename, sizeof(e->filename));
		bpf_ringbuf_submit(e, 0);
	}
	bpf_map_delete_elem(&starts, &tid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
