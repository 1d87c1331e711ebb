// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cachestat: page-cache accesses, additions (misses) and dirtied pages, as
 * bcc's and libbpf-tools' cachestat count them, system-wide or for one
 * process. The functions differ between kernels (folio_* since 5.16), so
 * every variant is here, as fentry and as kprobe, none loaded unless user
 * space asks (SEC("?...")): examples/cachestat.js loads those of the
 * functions this kernel has, fentry where it allows it, else kprobes. */
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

#define CACHESTAT_PROBES(func, event)					\
	SEC("?fentry/" #func)						\
	int BPF_PROG(fentry_##func) { return count(event); }		\
	SEC("?kprobe/" #func)						\
	int BPF_KPROBE(kprobe_##func) { return count(event); }

CACHESTAT_PROBES(folio_mark_accessed, CACHESTAT_ACCESSED)
CACHESTAT_PROBES(mark_page_accessed, CACHESTAT_ACCESSED)
CACHESTAT_PROBES(filemap_add_folio, CACHESTAT_ADDED)
CACHESTAT_PROBES(add_to_page_cache_lru, CACHESTAT_ADDED)
CACHESTAT_PROBES(folio_account_dirtied, CACHESTAT_DIRTIED)
CACHESTAT_PROBES(account_page_dirtied, CACHESTAT_DIRTIED)
CACHESTAT_PROBES(mark_buffer_dirty, CACHESTAT_BUFFER_DIRTIED)

/* where the dirtying function is inlined: the tracepoint it fires */
SEC("?tp/writeback/writeback_dirty_folio")
int tp_writeback_dirty_folio(void *ctx)
{
	return count(CACHESTAT_DIRTIED);
}

SEC("?tp/writeback/writeback_dirty_page")
int tp_writeback_dirty_page(void *ctx)
{
	return count(CACHESTAT_DIRTIED);
}

char LICENSE[] SEC("license") = "GPL";
