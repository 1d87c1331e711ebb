/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __UPROBE_H
#define __UPROBE_H

/* one return of the probed function */
struct call_event {
	__u32 pid;
	__s32 arg;
	__s64 ret;
};

#endif /* __UPROBE_H */
