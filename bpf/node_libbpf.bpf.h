/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* node-libbpf's own threads, for programs that trace the process they run
 * in: the poller (it wakes the event loop once per delivery: a write to
 * libuv's eventfd) and the release thread. Set node_libbpf_tids before load
 * from JavaScript with bpf.excludeLibraryThreads(obj) (the tids of
 * bpf.libraryThreads()); then skip what node_libbpf_thread() says is ours:
 *
 *	if (node_libbpf_thread((__u32)bpf_get_current_pid_tgid()))
 *		return 0;
 *
 * A const volatile array, not a map: the check costs a few compares, no
 * lookup. */
#ifndef __NODE_LIBBPF_BPF_H
#define __NODE_LIBBPF_BPF_H

#define NODE_LIBBPF_MAX_THREADS 8

/* 0: unused */
const volatile __u32 node_libbpf_tids[NODE_LIBBPF_MAX_THREADS] = {};

/* whether tid is one of node-libbpf's own threads */
static __always_inline bool node_libbpf_thread(__u32 tid)
{
	for (int i = 0; i < NODE_LIBBPF_MAX_THREADS; i++) {
		if (node_libbpf_tids[i] && node_libbpf_tids[i] == tid)
			return true;
	}
	return false;
}

#endif /* __NODE_LIBBPF_BPF_H */
