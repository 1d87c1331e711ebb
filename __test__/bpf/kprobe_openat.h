/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __KPROBE_OPENAT_H
#define __KPROBE_OPENAT_H

#define KPROBE_FILENAME_LEN 256

/* one openat call, emitted at the kretprobe of the syscall's function */
struct kprobe_openat_event {
	__u32 pid;
	__u32 tid;
	__u64 duration_ns;
	__s32 ret;
	__s32 dfd;
	char filename[KPROBE_FILENAME_LEN];
};

#endif /* __KPROBE_OPENAT_H */
