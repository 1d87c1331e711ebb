/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __NODE_SYSCALLS_H
#define __NODE_SYSCALLS_H

#include "syscall_hist.h"

#define NODE_PATH_LEN 256
#define NODE_UNIX_PATH_LEN 108

/* a file opened (open, openat, openat2): the name as the call gave it */
struct node_file {
	char filename[NODE_PATH_LEN];
};

/* a connect destination */
struct node_endpoint {
	__u16 family;			/* AF_INET, AF_INET6, AF_UNIX, ... */
	__u16 port;			/* host byte order */
	union {
		__u8 v4[4];		/* AF_INET, network byte order */
		__u8 v6[16];		/* AF_INET6, network byte order */
		char path[NODE_UNIX_PATH_LEN];	/* AF_UNIX; abstract names start with '@' */
	} addr;
};

/* calls per file or endpoint */
struct node_calls {
	__u64 count;
	__u64 errors;			/* -errno, but connect's EINPROGRESS (a non-blocking connect under way) */
};

#endif /* __NODE_SYSCALLS_H */
