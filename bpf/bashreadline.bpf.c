// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Command lines typed in interactive bash: a uretprobe on bash's readline(). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "filter.bpf.h"
#include "bashreadline.h"

const volatile __u32 target_pid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* keeps struct readline_event in BTF: records are decoded by it */
struct readline_event *unused_readline_event __attribute__((unused));

static __always_inline bool trace_allowed(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return (!target_pid || tgid == target_pid) && cgroup_traced();
}

/* char *readline(const char *prompt): the line, malloc'd; NULL at end of input */
SEC("uretprobe")
int BPF_URETPROBE(handle_readline_return, const char *line)
{
	struct readline_event *e;
	long len;

	if (!line || !trace_allowed())
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 0;
	len = bpf_probe_read_user_str(e->line, sizeof(e->line), line);
	if (len < 0) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->len = len - 1;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
