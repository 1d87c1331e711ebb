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

/* The walk up the thread's cgroups, for kernels before 6.4 (and where
 * cgroup_walk is set: the tests), reads the kernel's structs at offsets
 * that configureCgroup() (lib/host/cgroup.js) takes from the running
 * kernel's BTF and sets before load with target_cgroup: no CO-RE
 * relocation, so that an object that needs no other loads without libbpf
 * parsing the kernel's BTF (about 15 ms of a 20 ms load). */
const volatile bool cgroup_walk = false;
const volatile __u32 cgroup_off_task_cgroups = 0;	/* task_struct.cgroups */
const volatile __u32 cgroup_off_css_set_dfl = 0;	/* css_set.dfl_cgrp */
const volatile __u32 cgroup_off_level = 0;		/* cgroup.level */
const volatile __u32 cgroup_off_parent = 0;		/* cgroup.self.parent */
const volatile __u32 cgroup_off_css_cgroup = 0;		/* cgroup_subsys_state.cgroup */
const volatile __u32 cgroup_off_kn = 0;			/* cgroup.kn */
const volatile __u32 cgroup_off_kn_id = 0;		/* kernfs_node.id */

/* the pointer at byte `off` of the kernel's `base`; NULL when base is */
static __always_inline const void *cgroup_read_ptr(const void *base, __u32 off)
{
	const void *p = NULL;

	if (base)
		bpf_probe_read_kernel(&p, sizeof(p), (const char *)base + off);
	return p;
}

static __always_inline bool cgroup_under(const struct cgroup *cgrp);

/* whether the current thread is in target_cgroup or below it */
static __always_inline bool cgroup_traced(void)
{
	const void *task;

	if (!target_cgroup)
		return true;
	/* The ancestor helper (5.7) was for cgroup programs only; tracing
	 * programs may call it since 6.4 (every program type may), the kernels
	 * before refuse to load a program that does (5.10: EINVAL). There, the
	 * thread's cgroup v2 and its parents, read as cgroup_under() reads a
	 * socket's. (The verifier drops the branch not taken: constants.) */
	if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(6, 4, 0) && !cgroup_walk)
		return bpf_get_current_ancestor_cgroup_id(target_cgroup_level) == target_cgroup;
	task = (const void *)bpf_get_current_task();
	return cgroup_under(cgroup_read_ptr(cgroup_read_ptr(task, cgroup_off_task_cgroups), cgroup_off_css_set_dfl));
}

/* whether cgroup cgrp (a socket's: sock_cgroup(); a thread's) is
 * target_cgroup or below it, for events that do not run in their owner's
 * thread (softirq, timers); needs the offsets above set, whatever the kernel */
static __always_inline bool cgroup_under(const struct cgroup *cgrp)
{
	const void *c = cgrp;
	int level = 0;
	__u64 id = 0;

	if (!target_cgroup)
		return true;
	if (!c)
		return false;
	bpf_probe_read_kernel(&level, sizeof(level), (const char *)c + cgroup_off_level);
	for (int i = 0; i < 64 && level > (int)target_cgroup_level; i++, level--)
		c = cgroup_read_ptr(cgroup_read_ptr(c, cgroup_off_parent), cgroup_off_css_cgroup);
	if (!c || level != (int)target_cgroup_level)
		return false;
	c = cgroup_read_ptr(c, cgroup_off_kn);
	if (!c)
		return false;
	bpf_probe_read_kernel(&id, sizeof(id), (const char *)c + cgroup_off_kn_id);
	return id == target_cgroup;
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
