/* libFuzzer harness of node-libbpf's object loader: what open_object
 * (src/object.rs) and ObjectState::open (src/state.rs) do before the kernel
 * is involved. The bytes go through our ELF check (src/elf_check.rs, linked
 * in as a static library); what it accepts goes to bpf_object__open_mem,
 * then the maps, programs and BTF are walked as the addon walks them. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbpf.h"
#include "btf.h"

/* fuzz/object/check.rs: 0 when src/elf_check.rs accepts the bytes */
extern int node_libbpf_elf_check(const uint8_t *data, size_t size);

static volatile size_t sink;

/* as src/libbpf_log.c: every message formatted (a bad argument shows here) */
static int print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL;
	int n = vasprintf(&msg, fmt, ap);

	if (n > 0)
		sink += strlen(msg);
	if (n > 0 && getenv("FUZZ_OBJECT_LOG")) /* for a crash's root cause */
		fputs(msg, stderr);
	free(msg);
	return n;
}

static void touch(const char *s)
{
	if (s)
		sink += strlen(s);
}

/* src/btf.rs: globals() and the type names, through libbpf's accessors */
static void walk_btf(const struct btf *btf)
{
	__u32 n = btf__type_cnt(btf);

	for (__u32 id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);

		if (!t)
			continue;
		touch(btf__name_by_offset(btf, t->name_off));
		if (btf_is_datasec(t)) {
			const struct btf_var_secinfo *v = btf_var_secinfos(t);

			for (__u16 i = 0; i < btf_vlen(t); i++, v++) {
				const struct btf_type *var = btf__type_by_id(btf, v->type);

				if (!var || !btf_is_var(var))
					continue;
				touch(btf__name_by_offset(btf, var->name_off));
				sink += btf__resolve_size(btf, var->type) + v->offset + v->size;
			}
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;

	libbpf_set_print(print);
	if (node_libbpf_elf_check(data, size) != 0)
		return -1; /* refused with a coded Error: not worth keeping in the corpus */
	obj = bpf_object__open_mem(data, size, &opts);
	if (!obj)
		return 0;
	bpf_object__for_each_map(map, obj) {
		sink += bpf_map__type(map);
		touch(bpf_map__name(map));
	}
	bpf_object__for_each_program(prog, obj) {
		touch(bpf_program__name(prog));
		touch(bpf_program__section_name(prog));
	}
	if (bpf_object__btf(obj))
		walk_btf(bpf_object__btf(obj));
	bpf_object__close(obj);
	return 0;
}
