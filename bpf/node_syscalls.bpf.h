/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The files a process opens and the endpoints it connects to, counted in the
 * kernel by name and address, with errors: the arguments kept at sys_enter,
 * counted at sys_exit. Included by node_syscalls.bpf.c and monitor.bpf.c
 * (after syscall_hist.bpf.h, for EINPROGRESS); read by lib/tools/syscalls.js and
 * lib/service/monitor.js. A syscall number of -1 turns its part off. */
#ifndef __NODE_SYSCALLS_BPF_H
#define __NODE_SYSCALLS_BPF_H

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "node_syscalls.h"

#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#ifndef EEXIST
#define EEXIST 17
#endif

/* this architecture's syscall numbers (set from lib/tools/syscalls.js); -1: none */
const volatile __s32 nr_open = -1;
const volatile __s32 nr_openat = -1;
const volatile __s32 nr_openat2 = -1;
const volatile __s32 nr_connect = -1;

/* the arguments of calls in progress, by thread */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct node_file);
} opening SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct node_endpoint);
} connecting SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct node_file);
	__type(value, struct node_calls);
} files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct node_endpoint);
	__type(value, struct node_calls);
} endpoints SEC(".maps");

/* calls not counted because a table was full (files or opening, endpoints
 * or connecting): a hash map refuses a new key then (E2BIG) */
__u64 files_overflows = 0;
__u64 endpoints_overflows = 0;

static __always_inline void enter_open(__u32 tid, const char *filename)
{
	static const struct node_file zero = {};
	struct node_file *f;

	/* the name is only readable at entry; a map value holds it (too big for the stack) */
	if (bpf_map_update_elem(&opening, &tid, &zero, BPF_ANY)) {
		__sync_fetch_and_add(&files_overflows, 1);
		return;
	}
	f = bpf_map_lookup_elem(&opening, &tid);
	if (f)
		bpf_probe_read_user_str(f->filename, sizeof(f->filename), filename);
}

static __always_inline void enter_connect(__u32 tid, const void *uaddr, __u32 addrlen)
{
	struct node_endpoint e = {};
	__u16 port;

	if (bpf_probe_read_user(&e.family, sizeof(e.family), uaddr))
		return;
	if (e.family == AF_INET || e.family == AF_INET6) {
		bpf_probe_read_user(&port, sizeof(port), uaddr + 2);
		e.port = bpf_ntohs(port);
		if (e.family == AF_INET)
			bpf_probe_read_user(e.addr.v4, sizeof(e.addr.v4), uaddr + 4);	/* sin_addr */
		else
			bpf_probe_read_user(e.addr.v6, sizeof(e.addr.v6), uaddr + 8);	/* sin6_addr */
	} else if (e.family == AF_UNIX && addrlen > 2) {
		bpf_probe_read_user_str(e.addr.path, sizeof(e.addr.path), uaddr + 2);
		if (!e.addr.path[0]) {
			/* abstract: a NUL, then the name */
			bpf_probe_read_user_str(e.addr.path + 1, sizeof(e.addr.path) - 1, uaddr + 3);
			e.addr.path[0] = '@';
		}
	}
	if (bpf_map_update_elem(&connecting, &tid, &e, BPF_ANY))
		__sync_fetch_and_add(&endpoints_overflows, 1);
}

/* the value at key, created as zero when missing (another CPU may create it
 * first); NULL when the map is full, counted in *overflows */
static __always_inline void *lookup_or_init(void *map, const void *key, const void *zero, __u64 *overflows)
{
	void *value = bpf_map_lookup_elem(map, key);
	long err;

	if (value)
		return value;
	err = bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		__sync_fetch_and_add(overflows, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(map, key);
}

static __always_inline void count_call(void *map, const void *key, bool error, __u64 *overflows)
{
	static const struct node_calls zero = {};
	struct node_calls *c = lookup_or_init(map, key, &zero, overflows);

	if (!c)
		return;
	__sync_fetch_and_add(&c->count, 1);
	if (error)
		__sync_fetch_and_add(&c->errors, 1);
}

/* at sys_enter of call nr: keeps the name or address it was given */
static __always_inline void files_endpoints_enter(__u32 tid, long nr, struct pt_regs *regs)
{
	if (nr == nr_openat || nr == nr_openat2)	/* (dfd, filename, ...) */
		enter_open(tid, (const char *)PT_REGS_PARM2_CORE_SYSCALL(regs));
	else if (nr == nr_open)				/* (filename, flags, mode) */
		enter_open(tid, (const char *)PT_REGS_PARM1_CORE_SYSCALL(regs));
	else if (nr == nr_connect)			/* (fd, uservaddr, addrlen) */
		enter_connect(tid, (const void *)PT_REGS_PARM2_CORE_SYSCALL(regs),
			      PT_REGS_PARM3_CORE_SYSCALL(regs));
}

/* at sys_exit of call nr: counts the file or endpoint kept at entry */
static __always_inline void files_endpoints_exit(__u32 tid, long nr, long ret)
{
	bool error = ret < 0 && ret >= -4095;
	void *args;

	if (nr < 0)
		return;
	if (nr == nr_openat || nr == nr_openat2 || nr == nr_open) {
		args = bpf_map_lookup_elem(&opening, &tid);
		if (args) {
			count_call(&files, args, error, &files_overflows);
			bpf_map_delete_elem(&opening, &tid);
		}
	} else if (nr == nr_connect) {
		args = bpf_map_lookup_elem(&connecting, &tid);
		if (args) {
			count_call(&endpoints, args, error && ret != -EINPROGRESS, &endpoints_overflows);
			bpf_map_delete_elem(&connecting, &tid);
		}
	}
}

#endif /* __NODE_SYSCALLS_BPF_H */
