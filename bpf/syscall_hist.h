/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __SYSCALL_HIST_H
#define __SYSCALL_HIST_H

/* one slot of one syscall's latency histogram (slots as bpf/hist.bpf.h numbers them) */
struct syscall_hist_key {
	__u32 syscall;			/* the kernel's syscall number */
	__u32 slot;
};

/* per syscall */
struct syscall_stats {
	__u64 count;
	__u64 total_ns;			/* latency, summed */
	__u64 errors;			/* calls that returned -errno, but EAGAIN and EINPROGRESS */
};

#endif /* __SYSCALL_HIST_H */
