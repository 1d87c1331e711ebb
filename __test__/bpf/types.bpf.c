// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Test program for typed data: on each getppid of one process, emits a
 * `struct kinds` with known values to a ring and a perf buffer, and moves
 * values between maps of each type so that the test can check both
 * directions (what JS sets, the program reads; what it writes, JS reads). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "types.h"

const volatile __u32 target_pid = 0;

/* clang keeps a struct in BTF only when a map, a global or a function
 * signature uses it: records built in a scratch buffer need this */
struct kinds *unused_kinds __attribute__((unused));

/* globals of non-scalar types */
struct counter settings = { .delta = 1, .color = GREEN };
char greeting[8] = "hi";
__u32 calls = 0;
__s64 last_stack_id = -1;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} pb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, char[sizeof(struct kinds) + TAIL_LEN]);
} scratch SEC(".maps");

/* JS sets in_hash[key]; the program copies it to out_hash[key] with count + delta */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, struct name_key);
	__type(value, struct counter);
} in_hash SEC(".maps"), out_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct counter);
} lru SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct counter);
} arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} percpu_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct counter);
} percpu_arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 64);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} stacks SEC(".maps");

/* no BTF key/value types: raw Buffers */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__uint(key_size, 4);
	__uint(value_size, 8);
} untyped SEC(".maps");

static __always_inline void fill(struct kinds *k)
{
	k->small = 0xdeadbeef;
	k->big = 0x123456789abcdefULL;
	k->negative = -1234567890123LL;
	k->neg32 = -2000000000;
	k->neg16 = -300;
	k->neg8 = -5;
	k->byte = 250;
	k->flag = true;
	__builtin_memcpy(k->comm, "types-test\0\0\0\0\0", 16);
	k->raw[0] = 1; k->raw[1] = 2; k->raw[2] = 3; k->raw[3] = 4;
	k->arr[0] = 10; k->arr[1] = 20; k->arr[2] = 30;
	k->nested.a = 65535; k->nested.b = -128;
	__builtin_memcpy(k->nested.tag, "abc", 4);
	k->pair[0].a = 1; k->pair[0].b = 2; __builtin_memcpy(k->pair[0].tag, "p0", 3);
	k->pair[1].a = 3; k->pair[1].b = -4; __builtin_memcpy(k->pair[1].tag, "p1x", 4);
	k->u.as_u32 = 0x04030201;
	k->color = BLUE;
	k->unnamed_color = (enum color)42;
	k->bits_lo = 5;
	k->bits_hi = 17;
	k->sbits = -3;
	k->ptr = (const void *)0xffff888012345678ULL;
	k->x = 111;
	k->y = 222;
	k->tail_len = TAIL_LEN;
	for (int i = 0; i < TAIL_LEN; i++)
		k->tail[i] = 0xa0 + i;
}

static __always_inline void move_maps(void)
{
	struct name_key key = { .id = 1, .name = "one" };
	struct counter *in, out;
	__u32 zero = 0, one = 1, pid_key = 7;
	__u64 *pc, init = 0;

	in = bpf_map_lookup_elem(&in_hash, &key);
	if (in) {
		out = *in;
		out.count += in->delta;
		bpf_map_update_elem(&out_hash, &key, &out, BPF_ANY);
	}
	in = bpf_map_lookup_elem(&lru, &pid_key);
	if (in)
		in->count += in->delta;
	in = bpf_map_lookup_elem(&arr, &zero);
	if (in) {
		out = *in;
		out.count += settings.delta;
		out.color = settings.color;
		bpf_map_update_elem(&arr, &one, &out, BPF_ANY);
	}
	pc = bpf_map_lookup_elem(&percpu_hash, &pid_key);
	if (!pc) {
		bpf_map_update_elem(&percpu_hash, &pid_key, &init, BPF_NOEXIST);
		pc = bpf_map_lookup_elem(&percpu_hash, &pid_key);
	}
	if (pc)
		*pc += 1;
	in = bpf_map_lookup_elem(&percpu_arr, &one);
	if (in)
		in->count += in->delta;
}

SEC("tp/syscalls/sys_enter_getppid")
int handle_enter_getppid(struct trace_event_raw_sys_enter *ctx)
{
	__u32 zero = 0;
	struct kinds *k;

	if ((bpf_get_current_pid_tgid() >> 32) != target_pid)
		return 0;
	calls++;
	k = bpf_map_lookup_elem(&scratch, &zero);
	if (!k)
		return 0;
	fill(k);
	bpf_ringbuf_output(&rb, k, sizeof(*k) + TAIL_LEN, 0);
	bpf_perf_event_output(ctx, &pb, BPF_F_CURRENT_CPU, k, sizeof(*k) + TAIL_LEN);
	/* a record one byte short of the struct */
	bpf_ringbuf_output(&rb, k, sizeof(*k) - 1, 0);
	move_maps();
	last_stack_id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
