/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __LABELS_BPF_H
#define __LABELS_BPF_H
/*
 * The request labels' id a thread runs under, read as it is sampled
 * (lib/service/labels.js): the store of an AsyncLocalStorage of ours is
 * the Smi LABELS_TAG | id. With node's AsyncContextFrame (Node 24 on), the
 * isolate's CPED slot holds the current frame, a JSMap of storage -> store:
 * its table (an OrderedHashMap: a FixedArray of nof, ndeleted, nbuckets,
 * buckets, then entries of key, value, chain) is scanned for a value that
 * carries the tag. Without it, a word lib/service/labels.js keeps current.
 * Every read is checked: any failure is no labels (0), never another id.
 * No pointer compression (official node builds): a tagged pointer is 64
 * bits, a Smi its int32 in the upper half.
 */
#include "profile.h"

#define LABELS_TAG 0x5a
#define LABELS_ID_MASK 0xffffff
#define LABELS_ENTRIES 8
#define LABELS_BUCKETS 1024

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct labels_thread);
} labels_threads SEC(".maps");

static __always_inline __u32 labels_smi_id(__u64 w)
{
	if ((__u32)w || (w >> 56) != LABELS_TAG)
		return 0;
	return (w >> 32) & LABELS_ID_MASK;
}

static __always_inline bool labels_heap(__u64 w)
{
	return (w & 3) == 1 && w > 0x10000 && w < 0x800000000000ULL;
}

/* the label id of thread tid (current: its memory is the one read), 0: none */
static __always_inline __u32 labels_of(__u32 tid)
{
	struct labels_thread *t = bpf_map_lookup_elem(&labels_threads, &tid);
	__u64 frame, table, hdr[3], v, n, nb, entries;
	__u32 word, id;
	int i;

	if (!t)
		return 0;
	if (t->kind == LABELS_WORD) {
		if (bpf_probe_read_user(&word, sizeof(word), (void *)t->addr))
			return 0;
		return labels_smi_id((__u64)word << 32);
	}
	if (t->kind != LABELS_CPED || t->table_off > 64)
		return 0;
	if (bpf_probe_read_user(&frame, sizeof(frame), (void *)t->addr) || !labels_heap(frame))
		return 0;
	if (bpf_probe_read_user(&table, sizeof(table), (void *)(frame - 1 + t->table_off)) || !labels_heap(table))
		return 0;
	/* (after the FixedArray's map and length) nof, ndeleted, nbuckets: Smis */
	if (bpf_probe_read_user(hdr, sizeof(hdr), (void *)(table - 1 + 16)))
		return 0;
	if ((__u32)hdr[0] || (__u32)hdr[1] || (__u32)hdr[2])
		return 0;
	n = (hdr[0] >> 32) + (hdr[1] >> 32);
	nb = hdr[2] >> 32;
	if (!nb || nb > LABELS_BUCKETS || (nb & (nb - 1)) || n > 2 * nb)
		return 0;
	entries = table - 1 + 8 * (5 + nb);
	for (i = 0; i < LABELS_ENTRIES; i++) {
		if (i >= n)
			break;
		/* an entry: key, value, chain */
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(entries + (i * 3 + 1) * 8)))
			return 0;
		id = labels_smi_id(v);
		if (id)
			return id;
	}
	return 0;
}

#endif /* __LABELS_BPF_H */
