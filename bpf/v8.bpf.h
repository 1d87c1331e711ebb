/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The V8 frame walk (issue 27): JavaScript frames of a node started with
 * no flags. A bounded frame-pointer walk of the user stack (V8 keeps frame
 * pointers in all its code) that records, per frame, what identifies a JS
 * function in the process's memory (bpf/v8.h struct v8_frame): the
 * JSFunction's SharedFunctionInfo, its code at the sample (JSFunction::code,
 * or on leaptiering V8s the code of its dispatch-table entry) and, where
 * it is interpreted, the raw bytecode-offset slot; a typed frame (stub,
 * builtin exit, entry) records its marker. User space
 * (lib/frames/v8_names.js) names them from the process's memory;
 * the walk records raw facts only.
 *
 * The process's V8 layout (struct v8_layout) comes from v8_layouts, keyed
 * by the kernel's tgid, which user space fills; no entry (or version 0):
 * no walk. A walked stack with at least one JS frame is kept in v8_stacks,
 * keyed by a hash of its frames (the same stack twice is kept once); the
 * key goes into the caller's counting key (0: not walked).
 *
 * Reads: 4 KiB of the stack from sp at the walk's start (the innermost
 * frames' slots are copied from there), else one read of a frame's slots
 * (fp - 64 .. fp + 16); for a JS frame, the JSFunction's first 64 bytes
 * (its map, shared and code), its map's instance type once a walk per
 * map, and on a leaptiering V8 with the dispatch table's address its
 * entry's code. Bounds: V8_MAX_FRAMES frames; a frame pointer must grow
 * by less than V8_FRAME_SPAN per frame. Bounded for-loops with constant
 * bounds, no bpf_loop: 5.10's verifier takes it.
 *
 * Include after vmlinux.h, bpf_helpers.h, bpf_tracing.h and compat.bpf.h.
 */
#ifndef __V8_BPF_H
#define __V8_BPF_H

#include "v8.h"
#include "scratch_slots.h"

#define V8_LAYOUTS_MAX 1024
#define V8_STACKS_MAX 4096
/* the frame's slots read at once: V8_WINDOW_BELOW bytes below fp, then the saved fp and the return address */
#define V8_WINDOW_BELOW 64
#define V8_WINDOW_WORDS (V8_WINDOW_BELOW / 8 + 2)
/* the window's array: a power of two, so that an index masked with V8_WINDOW_MASK is in it */
#define V8_WINDOW_MASK 15
/* the most a frame pointer moves from one frame to the next (a frame's size) */
#define V8_FRAME_SPAN 0x100000
/* the highest typed-frame marker: StackFrame::Type << 1, a few dozen types */
#define V8_MARKER_MAX 0x100
/* `x & mask`, the mask kept: clang drops a mask it can prove idle, and may keep a bounds check apart from the use the verifier checks */
#define V8_MASKED(x, mask) ({ asm volatile("" : "+r"(x)); (x) & (mask); })
/* a JSFunction's first words read at once (map, shared, code or dispatch handle: within 64 bytes in V8 11-14) */
#define V8_HEAD_WORDS 8
/* the stack read at once from sp at the walk's start (a frame inside it is not read again): 4 KiB, a power of two */
#define V8_BULK_WORDS 512
/* the JSFunction maps a walk remembers (no read of their instance type again) */
#define V8_FN_MAPS 2
/* a user-space address on x86_64 and arm64 (kernel addresses have the top bit set) */
#define V8_USER_ADDR(a) ((a) > 0x1000 && (a) < (1ULL << 56))
#if defined(__TARGET_ARCH_arm64)
/*
 * a saved return address without its pointer-authentication code: code built with branch
 * protection (paciasp: node's, on a CPU with pointer authentication) signs lr in bits 48-54
 * before it stores it; the kernel's user stacks strip it. A user address (bit 55 clear) only:
 * user space has 48 address bits
 */
#define V8_RET(a) ((a) & (1ULL << 55) ? (a) : (a) & ((1ULL << 48) - 1))
#else
#define V8_RET(a) (a)
#endif

/* the layout of each traced node process, by the kernel's tgid (user space fills it) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, V8_LAYOUTS_MAX);
	__type(key, __u32);
	__type(value, struct v8_layout);
} v8_layouts SEC(".maps");

/* walked stacks, by a hash of their frames (the key in the counting keys' v8_stack) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, V8_STACKS_MAX);
	__type(key, __u64);
	__type(value, struct v8_stack);
} v8_stacks SEC(".maps");

/* stacks walked, not kept: v8_stacks was full */
__u64 v8_dropped = 0;

/*
 * The keys of the stacks kept, in turn (v8_fresh[n % V8_FRESH] is the n-th,
 * v8_fresh_count the next n): user space names the new ones as they come
 * (V8Frames.prime) without listing the whole map. Not atomic (5.10 has no
 * fetch-and-add): two CPUs keeping a stack at once may lose one key, which
 * is then named when the window ends.
 */
#define V8_FRESH 256
__u64 v8_fresh[V8_FRESH] = {};
__u64 v8_fresh_count = 0;

/* the walk's state (per CPU, one per SCRATCH_SLOT_*): the stack so far, where it is, the slots of the frame being read */
struct v8_scratch {
	struct v8_stack stack;
	__u64 pc;		/* the frame's pc */
	__u64 fp;		/* its frame pointer */
	__u64 hash;		/* of the frames so far */
	__u32 js;		/* JS frames so far */
	__u32 at_entry;		/* frame 0's pc is a builtin's first instruction, called from its caller's code (x86_64: [sp], arm64: lr) */
	struct v8_layout layout;	/* the process's, copied once per walk (a per-CPU array lookup per frame, not a hash one) */
	__u64 window[V8_WINDOW_MASK + 1];
	__u64 head[V8_HEAD_WORDS];	/* a JSFunction's first words: its map, shared and code (or dispatch handle) in one read */
	__u64 fn_maps[V8_FN_MAPS];	/* maps this walk found to be JSFunction maps (a walk's functions share a few) */
	__u64 base;			/* the user address of bulk[0] (the sampled sp), or 0: not read */
	__u64 bulk[V8_BULK_WORDS];	/* the stack from sp: the innermost frames' windows are copied from it */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct v8_scratch);
} v8_scratch SEC(".maps");

/* a tagged heap-object pointer's address, or 0 if `tagged` is not one */
static __always_inline __u64 v8_object(const struct v8_layout *l, __u64 tagged)
{
	if ((tagged & l->heap_object_tag_mask) != l->heap_object_tag || !V8_USER_ADDR(tagged))
		return 0;
	return tagged - l->heap_object_tag;
}

/* the word at `addr`, or 0 */
static __always_inline __u64 v8_read_u64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* the window index of frame slot `off` (bytes from fp), or V8_WINDOW_WORDS if outside it */
static __always_inline __u32 v8_slot_index(__s32 off)
{
	if (off < -V8_WINDOW_BELOW || off >= 16 || (off & 7))
		return V8_WINDOW_WORDS;
	return (__u32)(off + V8_WINDOW_BELOW) / 8;
}

/* word `off` (bytes) of the JSFunction head read in `s`, or the word read alone at fn + off where the head does not hold it */
static __always_inline __u64 v8_head_word(struct v8_scratch *s, bool head, __u64 fn, __u32 off)
{
	__u32 i = off / 8;

	if (head && !(off & 7) && i < V8_HEAD_WORDS)
		return s->head[V8_MASKED(i, V8_HEAD_WORDS - 1)];
	return v8_read_u64(fn + off);
}

/*
 * A JS frame's function: if `slot` (the frame's function slot) is a
 * JSFunction (its map's instance type in js_function_first..last), fills
 * sfi and code and returns true. The function's first words come in one
 * read (its map, shared and code), and a map this walk found to be a
 * JSFunction's is not read again: three reads where there were six.
 */
static __always_inline bool v8_function(struct v8_scratch *s, __u64 slot, struct v8_frame *f)
{
	const struct v8_layout *l = &s->layout;
	__u64 fn = v8_object(l, slot), map, code = 0, entry;
	__u32 handle;
	__u16 type;
	bool head;

	if (!fn)
		return false;
	/* (64 bytes: the function's fields, perhaps the next object's first; where that reaches an unreadable page, each word is read alone) */
	head = !bpf_probe_read_user(s->head, sizeof(s->head), (void *)fn);
	map = v8_object(l, v8_head_word(s, head, fn, l->object_map));
	if (!map)
		return false;
	if (map != s->fn_maps[0] && map != s->fn_maps[1]) {
		if (bpf_probe_read_user(&type, sizeof(type), (void *)(map + l->map_instance_type)))
			return false;
		if (type < l->js_function_first || type > l->js_function_last)
			return false;
		s->fn_maps[1] = s->fn_maps[0];
		s->fn_maps[0] = map;
	}
	f->sfi = v8_head_word(s, head, fn, l->function_shared);
	/* a JSFunction's shared is a heap object: else this was not one (a C++ frame's word that looked like it) */
	if (!v8_object(l, f->sfi)) {
		f->sfi = 0;
		return false;
	}
	if (!l->function_code) {
		/* 0 is the map's offset: the layout has no code offset */
	} else if (l->dispatch_table) {
		/* leaptiering: a dispatch handle (the low half of its word), its table entry holds the code (shifted, with a marking bit) */
		if (head && !(l->function_code & 3) && l->function_code / 8 < V8_HEAD_WORDS) {
			handle = (__u32)(v8_head_word(s, head, fn, l->function_code & ~7U) >> ((l->function_code & 4) * 8));
		} else if (bpf_probe_read_user(&handle, sizeof(handle), (void *)(fn + l->function_code))) {
			handle = 0;
		}
		if (handle) {
			entry = l->dispatch_table + ((__u64)(handle >> (l->dispatch_handle_shift & 31)) << (l->dispatch_entry_shift & 31));
			code = v8_read_u64(entry + l->dispatch_entry_code);
			code = code ? (code >> (l->dispatch_code_shift & 63)) | l->heap_object_tag : 0;
		}
	} else {
		code = v8_head_word(s, head, fn, l->function_code);
	}
	f->code = v8_object(l, code) ? code : 0;
	return true;
}

/* whether pc is in the interpreter's code (the layout's ranges): its frame's bytecode-offset slot means something */
static __always_inline bool v8_interpreted(const struct v8_layout *l, __u64 pc)
{
	__u32 k;

	for (k = 0; k < V8_INTERP_RANGES; k++) {
		if (pc >= l->interp_start[k] && pc < l->interp_end[k])
			return true;
	}
	return false;
}

/* what v8_walk_frame says */
#define V8_FRAME_NEXT 0		/* recorded; the chain goes on */
#define V8_FRAME_LAST 1		/* recorded; the chain ends here */
#define V8_FRAME_NONE 2		/* not recorded (its slots could not be read) */

/*
 * Frame `i` of the walk (the layout in scratch `slot`): reads the slots of the frame at
 * the scratch's fp, records struct v8_frame i (pc: the scratch's pc), adds
 * it to the hash, and moves the scratch's pc and fp to the caller's frame.
 * A global function: the verifier checks it once, not once per frame and
 * path of the walk (which 5.10's complexity limit would not take).
 */
__attribute__((noinline)) int v8_walk_frame(__u32 i, __u32 slot)
{
	__u32 ictx, ifn, ibc, k;
	__u64 off, w, j;
	struct v8_scratch *s = bpf_map_lookup_elem(&v8_scratch, &slot);
	__u64 marker, next, ret, fp, hash;
	struct v8_layout *l;
	struct v8_frame *f;

	if (!s || i >= V8_MAX_FRAMES)
		return V8_FRAME_NONE;
	l = &s->layout;
	ictx = v8_slot_index(l->fp_context);
	ifn = v8_slot_index(l->fp_function);
	ibc = v8_slot_index(l->fp_bytecode_offset);
	fp = s->fp;
	off = fp - V8_WINDOW_BELOW - s->base;
	if (s->base && fp >= s->base + V8_WINDOW_BELOW && !(off & 7) && off + V8_WINDOW_WORDS * 8 <= V8_BULK_WORDS * 8) {
		/* inside the stack read at the walk's start: copied, not read again */
		w = off / 8;
		for (k = 0; k < V8_WINDOW_WORDS; k++) {
			j = w + k;
			s->window[V8_MASKED(k, V8_WINDOW_MASK)] = s->bulk[V8_MASKED(j, V8_BULK_WORDS - 1)];
		}
	} else if (bpf_probe_read_user(s->window, V8_WINDOW_WORDS * 8, (void *)(fp - V8_WINDOW_BELOW))) {
		return V8_FRAME_NONE;
	}
	f = &s->stack.frames[V8_MASKED(i, V8_MAX_FRAMES - 1)];
	f->pc = s->pc;
	f->sfi = 0;
	f->code = 0;
	f->slot = 0;
	marker = s->window[V8_MASKED(ictx, V8_WINDOW_MASK)];
	if (ictx >= V8_WINDOW_WORDS || ifn >= V8_WINDOW_WORDS || ibc >= V8_WINDOW_WORDS) {
		/* a layout the window does not hold: the frame's pc only */
	} else if (marker && marker < V8_MARKER_MAX && !(marker & l->smi_tag_mask)) {
		/* a typed frame (stub, builtin exit, entry...): its marker in the context slot */
		f->slot = marker;
	} else if (v8_function(s, s->window[V8_MASKED(ifn, V8_WINDOW_MASK)], f)) {
		/*
		 * (a pc in a function's first instructions: the frame is its caller's, named at
		 * entered_ret; at a builtin's first instruction the pc is the builtin's alone, which
		 * the merged interpreter ranges may hold: the caller's code decides)
		 */
		if ((!(!i && s->at_entry) && v8_interpreted(l, f->pc)) || (!i && v8_interpreted(l, s->stack.entered_ret)))
			f->slot = s->window[V8_MASKED(ibc, V8_WINDOW_MASK)];
		s->js++;
	}
	hash = s->hash;
	hash = (hash ^ f->pc) * 1099511628211ULL;
	hash = (hash ^ f->sfi) * 1099511628211ULL;
	hash = (hash ^ f->code) * 1099511628211ULL;
	hash = (hash ^ f->slot) * 1099511628211ULL;
	s->hash = hash;
	next = s->window[V8_WINDOW_WORDS - 2];
	ret = V8_RET(s->window[V8_WINDOW_WORDS - 1]);
	if (next <= fp || next - fp >= V8_FRAME_SPAN || !V8_USER_ADDR(ret))
		return V8_FRAME_LAST;
	s->fp = next;
	s->pc = ret;
	return V8_FRAME_NEXT;
}

/*
 * Walks the user stack of process `tgid` from its registers (pc, fp, sp; lr: arm64's x30, or 0
 * where it is not known), in scratch `slot` (SCRATCH_SLOT_*: the program's kind): the key of the
 * walked stack in v8_stacks, or 0 (no layout for the process, no JS frame found, the table full).
 */
static __always_inline __u64 v8_walk_lr(__u32 tgid, __u64 pc, __u64 fp, __u64 sp, __u64 lr, __u32 slot)
{
	struct v8_layout *l = bpf_map_lookup_elem(&v8_layouts, &tgid);
	__u32 depth = 0;
	struct v8_scratch *s;
	__u64 hash, n, w0 = 0, w1 = 0;
	bool at_entry = false;
	int i, r;

	if (!l || !l->version)
		return 0;
	if (!V8_USER_ADDR(pc) || fp < sp || fp - sp >= V8_FRAME_SPAN * 8)
		return 0;
	s = bpf_map_lookup_elem(&v8_scratch, &slot);
	if (!s)
		return 0;
	s->layout = *l;
	s->pc = pc;
	s->fp = fp;
	s->hash = 14695981039346656037ULL;
	s->js = 0;
	s->fn_maps[0] = 0;
	s->fn_maps[1] = 0;
	s->stack.flags = 0;
	/*
	 * a sample in a function's first instructions, after `push rbp` (x86_64) or `stp x29, x30,
	 * [sp, #-16]!` (arm64) and before fp moves: frame 0's fp is still the caller's, the word at sp
	 * is that fp and the next the return address into the caller (a builtin such as Math.sqrt
	 * called from JIT code; user space names the caller's line from it)
	 */
	s->stack.entered_ret = 0;
	s->at_entry = 0;
	/* the stack from sp, at once (where its 4 KiB reach past the stack's end: each frame read alone) */
	s->base = bpf_probe_read_user(s->bulk, sizeof(s->bulk), (void *)sp) ? 0 : sp;
	if (s->base) {
		w0 = s->bulk[0];
		w1 = s->bulk[1];
	} else if (!bpf_probe_read_user(s->window, 16, (void *)sp)) {
		w0 = s->window[0];
		w1 = s->window[1];
	}
	w1 = V8_RET(w1);
	lr = V8_RET(lr);
	if (w0 == fp && V8_USER_ADDR(w1))
		s->stack.entered_ret = w1;
#if defined(__TARGET_ARCH_x86)
	/*
	 * a builtin called from JIT code (Math.sqrt's, from a function Maglev inlined on Node 24), at
	 * its first instruction: its call pushed the return address, it has pushed nothing yet. Kept
	 * only where frame 0 turns out a JS frame (the caller's: a builtin with its own frame, or
	 * C++, has its own fp), and named only where the word is an address in that function's code
	 */
	else if (pc >= l->exe_start && pc < l->exe_end && V8_USER_ADDR(w0)) {
		s->stack.entered_ret = w0;
		s->at_entry = 1;
		at_entry = true;
	}
#elif defined(__TARGET_ARCH_arm64)
	/*
	 * the same on arm64, where bl leaves the return address in x30 (lr), not on the stack: at a
	 * builtin's first instruction (nothing stored yet) the caller's return address is lr, in JIT
	 * code (outside node's). Kept and named under the same conditions (lr holds the last call's
	 * return address anywhere else)
	 */
	else if (pc >= l->exe_start && pc < l->exe_end && V8_USER_ADDR(lr) && (lr < l->exe_start || lr >= l->exe_end)) {
		s->stack.entered_ret = lr;
		s->at_entry = 1;
		at_entry = true;
	}
#endif
	for (i = 0; i < V8_MAX_FRAMES; i++) {
		r = v8_walk_frame(i, slot);
		if (r == V8_FRAME_NONE)
			break;
		depth = i + 1;
		if (r == V8_FRAME_LAST)
			break;
		if (i == V8_MAX_FRAMES - 1)
			s->stack.flags |= V8_STACK_TRUNCATED;
	}
	if (!s->js)
		return 0;
	if (at_entry && (!depth || !s->stack.frames[0].sfi))
		s->stack.entered_ret = 0;
	s->stack.depth = depth;
	hash = (s->hash ^ s->stack.entered_ret) * 1099511628211ULL ^ depth;
	if (!hash)
		hash = 1;
	if (bpf_map_lookup_elem(&v8_stacks, &hash))
		return hash;
	if (!bpf_map_update_elem(&v8_stacks, &hash, &s->stack, BPF_NOEXIST)) {
		n = v8_fresh_count;
		v8_fresh[V8_MASKED(n, V8_FRESH - 1)] = hash;
		v8_fresh_count = n + 1;
	} else if (!bpf_map_lookup_elem(&v8_stacks, &hash)) {
		__sync_fetch_and_add(&v8_dropped, 1);
		return 0;
	}
	return hash;
}

/* the walk from registers without lr (a program's own context; x86_64 needs none) */
static __always_inline __u64 v8_walk(__u32 tgid, __u64 pc, __u64 fp, __u64 sp, __u32 slot)
{
	return v8_walk_lr(tgid, pc, fp, sp, 0, slot);
}

/* lr (x30) of user registers: arm64's return address at a function's entry; 0 elsewhere (x86_64's is on the stack) */
#if defined(__TARGET_ARCH_arm64)
#define V8_LR(regs) PT_REGS_RET(regs)
#define V8_LR_CORE(regs) PT_REGS_RET_CORE(regs)
#else
#define V8_LR(regs) 0
#define V8_LR_CORE(regs) 0
#endif

/* the walk from user registers saved in kernel memory (a task's pt_regs) */
static __always_inline __u64 v8_walk_kregs(__u32 tgid, struct pt_regs *regs, __u32 slot)
{
	if (!regs)
		return 0;
	return v8_walk_lr(tgid, PT_REGS_IP_CORE(regs), PT_REGS_FP_CORE(regs), PT_REGS_SP_CORE(regs), V8_LR_CORE(regs), slot);
}

/* the walk of `task` (a BTF pointer: tp_btf's arguments) from the user registers it entered the kernel with */
static __always_inline __u64 v8_walk_task(__u32 tgid, struct task_struct *task, __u32 slot)
{
	return v8_walk_kregs(tgid, task_user_regs(task), slot);
}

/* the walk of the current task from the user registers it entered the kernel with (tracepoints, or a sample in the kernel) */
static __always_inline __u64 v8_walk_current(__u32 tgid, __u32 slot)
{
	if (!bpf_map_lookup_elem(&v8_layouts, &tgid))
		return 0;
	return v8_walk_kregs(tgid, current_user_regs(), slot);
}

/* the walk from a perf event sample's registers: its own if it interrupted user space, else the task's user registers */
static __always_inline __u64 v8_walk_sample(__u32 tgid, struct bpf_perf_event_data *ctx)
{
	__u64 pc = PT_REGS_IP(&ctx->regs);

	if (V8_USER_ADDR(pc))
		return v8_walk_lr(tgid, pc, PT_REGS_FP(&ctx->regs), PT_REGS_SP(&ctx->regs), V8_LR(&ctx->regs), SCRATCH_SLOT_EVENT);
	return v8_walk_current(tgid, SCRATCH_SLOT_EVENT);
}

#endif /* __V8_BPF_H */
