/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __GOROUTINES_H
#define __GOROUTINES_H

/* one goroutine state change: runtime.casgstatus(gp, oldval, newval) */
struct goroutine_event {
	__u64 ts_ns;		/* bpf_ktime_get_ns() */
	__u64 goid;		/* gp->goid */
	__u32 pid;		/* process (tgid) */
	__u32 tid;		/* the thread (M) making the change */
	__u32 oldstate;		/* _G* of runtime/runtime2.go */
	__u32 newstate;
};

#endif /* __GOROUTINES_H */
