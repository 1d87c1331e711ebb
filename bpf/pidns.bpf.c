// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The ids of tasks in two pid namespaces: the initial one, where BPF helpers
 * and task->pid speak, and the reader's (lib/host/pidns.js). An iterator over
 * every task (iter/task, 5.8+) runs in the context of the thread that reads
 * it: that thread's pid namespace is the one to translate from. A task is
 * visible there iff its struct pid has a number at the reader's level and
 * that number belongs to the reader's namespace (nested namespaces
 * included). Only bpf_get_current_task() (not its _btf form, 5.11+) and
 * CO-RE reads: runs on 5.10.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "pidns.h"

/* only this process (its id in the reader's namespace); 0: every visible task */
const volatile __u32 ns_tgid = 0;

/* the number of pid at level and its namespace (NULL: pid has no such level) */
static __always_inline struct pid_namespace *pid_at(struct pid *pid, unsigned int level, __u32 *nr)
{
	struct upid *upid;

	if (!pid || BPF_CORE_READ(pid, level) < level)
		return NULL;
	upid = (void *)pid + bpf_core_field_offset(struct pid, numbers) + level * bpf_core_type_size(struct upid);
	*nr = BPF_CORE_READ(upid, nr);
	return BPF_CORE_READ(upid, ns);
}

SEC("iter/task")
int dump_task(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct task_struct *reader = (void *)bpf_get_current_task();
	struct pidns_task out = {};
	struct pid_namespace *ns;
	struct pid *me;
	unsigned int level;
	__u32 nr;

	if (!task)
		return 0;
	/* the reader's namespace: the one of its own pid's deepest number */
	me = BPF_CORE_READ(reader, thread_pid);
	if (!me)
		return 0;
	level = BPF_CORE_READ(me, level);
	ns = pid_at(me, level, &nr);
	if (!ns)
		return 0;

	if (pid_at(BPF_CORE_READ(task, group_leader, thread_pid), level, &out.ns_tgid) != ns)
		return 0;
	if (ns_tgid && out.ns_tgid != ns_tgid)
		return 0;
	if (pid_at(BPF_CORE_READ(task, thread_pid), level, &out.ns_tid) != ns)
		return 0;
	out.host_tgid = BPF_CORE_READ(task, tgid);
	out.host_tid = BPF_CORE_READ(task, pid);
	bpf_seq_write(ctx->meta->seq, &out, sizeof(out));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
