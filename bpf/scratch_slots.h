/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The slots of the per-CPU scratch buffers (stacks.bpf.h's stack_scratch,
 * v8.bpf.h's v8_scratch): one per kind of program that can interrupt
 * another on the same CPU. A perf event's program (a CPU sample, in the
 * timer's interrupt) may run in the middle of a tp_btf program
 * (sched_switch), which the kernel does not keep it out of; the two must
 * not share a buffer, or the interrupted one records a stack made of both.
 */
#ifndef __SCRATCH_SLOTS_H
#define __SCRATCH_SLOTS_H

#define SCRATCH_SLOT_EVENT 0	/* perf events, tracepoints, uprobes: never nested in one another */
#define SCRATCH_SLOT_BTF 1	/* tp_btf programs: a perf event's may interrupt them */
#define SCRATCH_SLOTS 2

#endif /* __SCRATCH_SLOTS_H */
