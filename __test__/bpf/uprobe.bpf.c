// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test program: uprobe/uretprobe on a user function, and a counter for uv__io_poll. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "compat.bpf.h"
#include <bpf/bpf_tracing.h>
#include "uprobe.h"

__u64 entries = 0;
__u64 io_polls = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __s32);
} args SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} events SEC(".maps");

SEC("uprobe")
int BPF_UPROBE(handle_add_one, int x)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	__sync_fetch_and_add(&entries, 1);
	bpf_map_update_elem(&args, &tid, &x, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_URETPROBE(handle_add_one_return, int ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct call_event *e;
	__s32 *arg;

	arg = bpf_map_lookup_elem(&args, &tid);
	if (!arg)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (e) {
		e->pid = id >> 32;
		e->arg = *arg;
		e->ret = ret;
		bpf_ringbuf_submit(e, 0);
	}
	bpf_map_delete_elem(&args, &tid);
	return 0;
}

SEC("uprobe")
int handle_io_poll(void *ctx)
{
	__sync_fetch_and_add(&io_polls, 1);
	return 0;
}

/* one record per return of uv__io_poll: delivering it wakes the loop again */
SEC("uretprobe")
int handle_io_poll_return(void *ctx)
{
	struct call_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (e) {
		e->pid = bpf_get_current_pid_tgid() >> 32;
		e->arg = -1;
		e->ret = 0;
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

/* calls of many functions through one uprobe.multi link, by cookie */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} multi_counts SEC(".maps");

SEC("uprobe.multi")
int handle_multi(struct pt_regs *ctx)
{
	__u64 cookie = attach_cookie(ctx), one = 1, *count;

	count = bpf_map_lookup_elem(&multi_counts, &cookie);
	if (count)
		__sync_fetch_and_add(count, 1);
	else
		bpf_map_update_elem(&multi_counts, &cookie, &one, BPF_NOEXIST);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
