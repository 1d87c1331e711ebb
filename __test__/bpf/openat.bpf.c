// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test program: openat enter/exit pairs of one process, to a ring and a perf buffer. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "openat.h"

const volatile __u32 target_pid = 0;
const volatile __u8 small_u8 = 0;
const volatile __s16 small_s16 = 0;
const volatile __s64 big_s64 = 0;
const volatile bool flag = false;

/* where records go: 1 ring buffer, 2 perf buffer, 3 both (.data, writable after load) */
volatile __u32 sinks = 3;

/* counters of this process's calls (.bss) */
__u64 enter_count = 0;
__u64 exit_count = 0;

struct start {
	__u64 ts;
	char filename[FILENAME_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct openat_event);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} rb_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perf_events SEC(".maps");

/* a plain hash map for the raw map API tests */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} kv SEC(".maps");

static __always_inline bool trace_allowed(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == target_pid;
}

SEC("tp/syscalls/sys_enter_openat")
int handle_enter_openat(struct trace_event_raw_sys_enter *ctx)
{
	struct start *s;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	static const struct start zero = {};

	if (!trace_allowed())
		return 0;
	__sync_fetch_and_add(&enter_count, 1);
	if (bpf_map_update_elem(&starts, &tid, &zero, BPF_ANY))
		return 0;
	s = bpf_map_lookup_elem(&starts, &tid);
	if (!s)
		return 0;
	bpf_probe_read_user_str(s->filename, sizeof(s->filename), (const char *)ctx->args[1]);
	s->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp/syscalls/sys_exit_openat")
int handle_exit_openat(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, zero = 0;
	struct openat_event *e;
	struct start *s;

	if (!trace_allowed())
		return 0;
	__sync_fetch_and_add(&exit_count, 1);
	s = bpf_map_lookup_elem(&starts, &tid);
	if (!s)
		return 0;
	e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e) {
		bpf_map_delete_elem(&starts, &tid);
		return 0;
	}
	e->pid = id >> 32;
	e->tid = tid;
	e->duration_ns = bpf_ktime_get_ns() - s->ts;
	e->ret = ctx->ret;
	__builtin_memcpy(e->filename, s->filename, sizeof(e->filename));
	bpf_map_delete_elem(&starts, &tid);

	if (sinks & 1) {
		e->sink = 1;
		bpf_ringbuf_output(&rb_events, e, sizeof(*e), 0);
	}
	if (sinks & 2) {
		e->sink = 2;
		bpf_perf_event_output(ctx, &perf_events, BPF_F_CURRENT_CPU, e, sizeof(*e));
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
