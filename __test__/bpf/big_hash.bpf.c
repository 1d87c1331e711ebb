// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* a hash map bigger than a batch (256 entries), for the whole-map reads
 * (getBatch, lookupAndDeleteBatch): the kernel hands out whole buckets, so
 * a batch comes back short wherever the next bucket does not fit */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} big SEC(".maps");

char LICENSE[] SEC("license") = "GPL";
