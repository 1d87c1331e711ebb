/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The tools' --cgroup filter and --per-container key: set target_cgroup (the
 * cgroup v2 directory's inode) and target_cgroup_level (its depth below the
 * v2 root) before load, from lib/host/cgroup.js; then
 *
 *	if (!cgroup_traced())
 *		return 0;
 *
 * keeps the threads of that cgroup and of the cgroups below it (a pod's
 * slice: its containers). 0 (the default): every cgroup, and no helper
 * call. */
#ifndef __FILTER_BPF_H
#define __FILTER_BPF_H

#include <bpf/bpf_core_read.h>

const volatile __u64 target_cgroup = 0;		/* 0: every cgroup */
const volatile __u32 target_cgroup_level = 0;	/* its depth: 0 is the v2 root */
const volatile bool per_container = false;	/* count keys carry the cgroup id */

extern int LINUX_KERNEL_VERSION __kconfig;

static __always_inline bool cgroup_under(const struct cgroup *cgrp);

/* whether the current thread is in target_cgroup or below it */
static __always_inline bool cgroup_traced(void)
{
	struct task_struct *task;

	if (!target_cgroup)
		return true;
	/* The ancestor helper (5.7) was for cgroup programs only; tracing
	 * programs may call it since 6.4 (every program type may), the kernels
	 * before refuse to load a program that does (5.10: EINVAL). There, the
	 * thread's cgroup v2 and its parents, read as cgroup_under() reads a
	 * socket's. (The verifier drops the branch not taken: a constant.) */
	if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(6, 4, 0))
		return bpf_get_current_ancestor_cgroup_id(target_cgroup_level) == target_cgroup;
	task = (void *)bpf_get_current_task();
	return cgroup_under(BPF_CORE_READ(task, cgroups, dfl_cgrp));
}

/* whether cgroup cgrp (a socket's: sock_cgroup(); a thread's) is
 * target_cgroup or below it, for events that do not run in their owner's
 * thread (softirq, timers) */
static __always_inline bool cgroup_under(const struct cgroup *cgrp)
{
	int level;

	if (!target_cgroup)
		return true;
	if (!cgrp)
		return false;
	level = BPF_CORE_READ(cgrp, level);
	for (int i = 0; i < 64 && level > (int)target_cgroup_level; i++, level--)
		cgrp = BPF_CORE_READ(cgrp, self.parent, cgroup);
	return cgrp && level == (int)target_cgroup_level && BPF_CORE_READ(cgrp, kn, id) == target_cgroup;
}

/* the cgroup (v2) of a socket: its creator's, where the kernel keeps it
 * (5.15+); NULL before */
static __always_inline const struct cgroup *sock_cgroup(const struct sock *sk)
{
	if (!bpf_core_field_exists(struct sock_cgroup_data, cgroup))
		return NULL;
	return BPF_CORE_READ(sk, sk_cgrp_data.cgroup);
}

/* the current thread's cgroup id for a count's key: 0 unless per_container */
static __always_inline __u64 container_key(void)
{
	return per_container ? bpf_get_current_cgroup_id() : 0;
}

#endif /* __FILTER_BPF_H */
