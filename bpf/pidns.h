/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __PIDNS_H
#define __PIDNS_H

/* one task: its ids as the kernel's BPF helpers see them (the initial pid
 * namespace: bpf_get_current_pid_tgid(), task->pid) and as the reader of the
 * iterator sees them (its own pid namespace) */
struct pidns_task {
	__u32 host_tgid;
	__u32 host_tid;
	__u32 ns_tgid;
	__u32 ns_tid;
};

#endif /* __PIDNS_H */
