// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cachestat: page-cache accesses, additions (misses) and dirtied pages, as
 * bcc's and libbpf-tools' cachestat count them, system-wide or for one
 * process. The functions differ between kernels (folio_* since 5.16), so,
 * as libbpf-tools' cachestat, there is one fentry and one kprobe program
 * per event, none loaded unless user space asks (SEC("?...")):
 * examples/cachestat.js probes each function (fentryCanAttach,
 * kprobeExists) and loads the fentry program retargeted to the function
 * this kernel has (setAttachTarget), or the kprobe program, attached to it;
 * for dirtied pages, the writeback tracepoint where the functions are
 * inlined. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "filter.bpf.h"
#include "cachestat.h"

const volatile __u32 target_pid = 0;	/* 0: every process */

/* counting up from load: user space takes differences */
__u64 counts[CACHESTAT_EVENTS] = {};

static __always_inline int count(enum cachestat_event event)
{
	if ((target_pid && (bpf_get_current_pid_tgid() >> 32) != target_pid) || !cgroup_traced())
		return 0;
	__sync_fetch_and_add(&counts[event], 1);
	return 0;
}

/* SEC() names the newest function: user space retargets or attaches to the one found */
SEC("?fentry/folio_mark_accessed")
int BPF_PROG(fentry_accessed) { return count(CACHESTAT_ACCESSED); }
SEC("?kprobe/folio_mark_accessed")
int BPF_KPROBE(kprobe_accessed) { return count(CACHESTAT_ACCESSED); }

SEC("?fentry/filemap_add_folio")
int BPF_PROG(fentry_added) { return count(CACHESTAT_ADDED); }
SEC("?kprobe/filemap_add_folio")
int BPF_KPROBE(kprobe_added) { return count(CACHESTAT_ADDED); }

SEC("?fentry/folio_account_dirtied")
int BPF_PROG(fentry_dirtied) { return count(CACHESTAT_DIRTIED); }
SEC("?kprobe/folio_account_dirtied")
int BPF_KPROBE(kprobe_dirtied) { return count(CACHESTAT_DIRTIED); }

SEC("?fentry/mark_buffer_dirty")
int BPF_PROG(fentry_buffer_dirtied) { return count(CACHESTAT_BUFFER_DIRTIED); }
SEC("?kprobe/mark_buffer_dirty")
int BPF_KPROBE(kprobe_buffer_dirtied) { return count(CACHESTAT_BUFFER_DIRTIED); }

/* where the dirtying function is inlined: the tracepoint it fires
 * (writeback_dirty_folio, or writeback_dirty_page before 5.16) */
SEC("?tp/writeback/writeback_dirty_folio")
int tp_dirtied(void *ctx)
{
	return count(CACHESTAT_DIRTIED);
}

char LICENSE[] SEC("license") = "GPL";
