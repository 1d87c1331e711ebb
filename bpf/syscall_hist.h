/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __SYSCALL_HIST_H
#define __SYSCALL_HIST_H

/* histogram slots per syscall: the 65 log2 slots of bpf/hist.bpf.h, or up to
 * 64 linear steps and the two open ends */
#define SYSCALL_HIST_SLOTS 66

/* what one syscall's calls added up to, since the object was loaded */
struct syscall_counts {
	__u64 count;
	__u64 total_ns;			/* latency, summed */
	__u64 errors;			/* calls that returned -errno, but EAGAIN and EINPROGRESS */
	__u64 slots[SYSCALL_HIST_SLOTS];	/* the latency histogram (slots as bpf/hist.bpf.h numbers them) */
};

/* the key of the counts by cgroup (syscall_hist --per-container) */
struct syscall_cgroup_key {
	__u64 cgroup;			/* cgroup (v2) id of the calling thread */
	__u32 syscall;
	__u32 pad;
};

#endif /* __SYSCALL_HIST_H */
