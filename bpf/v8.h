/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __V8_H
#define __V8_H

/*
 * JavaScript frames named from V8's own data (no node flags): the wire
 * types between the BPF frame walk (bpf/v8.bpf.h) and user space, which
 * fills the layout from the node binary's v8dbg_* symbols (src/v8/) and
 * names the recorded frames from the process's memory.
 */

#define V8_MAX_FRAMES 64
#define V8_INTERP_RANGES 4

/* what the BPF walk needs of one process's V8 (a map keyed by the kernel's tgid); the object
 * fields' offsets (object_map .. function_code) are from the object's start, as v8dbg_class_*
 * give them: the walk reads a field at tagged pointer - heap_object_tag + offset */
struct v8_layout {
	__u32 version;			/* V8's major << 24 | minor << 16 | build; 0: no walk */
	__s32 fp_context;		/* frame slots, relative to fp (v8dbg_off_fp_*): the context, or a typed frame's marker */
	__s32 fp_function;		/* the JSFunction */
	__s32 fp_bytecode_offset;	/* an interpreted frame's bytecode offset (a SMI) */
	__u32 heap_object_tag;		/* v8dbg_HeapObjectTag */
	__u32 heap_object_tag_mask;	/* v8dbg_HeapObjectTagMask */
	__u32 smi_tag_mask;		/* v8dbg_SmiTagMask */
	__u32 smi_shift;		/* a SMI's value is raw >> smi_shift (v8dbg_SmiShiftSize + 1) */
	__u32 object_map;		/* HeapObject::map */
	__u32 map_instance_type;	/* Map::instance_type (a u16) */
	__u16 js_function_first;	/* the instance types of JSFunction (first..last) */
	__u16 js_function_last;
	__u32 function_shared;		/* JSFunction::shared_function_info */
	__u32 function_code;		/* JSFunction::code, or its dispatch handle (u32) where dispatch_table; 0: no code */
	__u64 dispatch_table;		/* leaptiering (V8 >= 13): the address of the table's entries in the process, else 0 */
	__u32 dispatch_entry_shift;	/* entry = dispatch_table + (handle >> dispatch_handle_shift << dispatch_entry_shift) */
	__u32 dispatch_handle_shift;
	__u32 dispatch_entry_code;	/* the entry's code word: its offset in the entry */
	__u32 dispatch_code_shift;	/* code = word >> dispatch_code_shift | heap_object_tag (JSDispatchEntry's
					 * kObjectPointerShift, 16 on 64-bit: the low bits hold the parameter
					 * count and the marking bit) */
	/*
	 * the interpreter's code in this process (its trampolines and bytecode handlers): [start,
	 * end) ranges that hold it all; unused ones 0. A JS frame whose pc is in one records its
	 * bytecode-offset slot, any other 0: a compiled frame's slot holds whatever its code keeps
	 * there (a loop counter), and recorded it made nearly every sample a new stack
	 */
	__u64 interp_start[V8_INTERP_RANGES];
	__u64 interp_end[V8_INTERP_RANGES];
	/*
	 * node's own code in this process (the span of its executable mappings: the embedded
	 * builtins, the C++), or 0, 0: a pc there under a JS frame 0 is taken for a builtin's
	 * first instruction, the return address at sp (x86_64) or in lr (arm64) (entered_ret)
	 */
	__u64 exe_start;
	__u64 exe_end;
};

/* one frame of a user stack, innermost first */
struct v8_frame {
	__u64 pc;		/* the sampled ip (innermost), else the return address into this frame */
	__u64 sfi;		/* JS frame: its JSFunction's SharedFunctionInfo (tagged), read at the sample; 0: a native frame */
	__u64 code;		/* JS frame: the function's code at the sample (a tagged Code object), or 0 */
	__u64 slot;		/* JS frame: the raw bytecode-offset slot (a SMI) if interpreted, else 0;
				 * a typed V8 frame (sfi 0): its raw marker (a SMI) */
};

/* a walked user stack: the value of the v8_stacks map, keyed by a hash of its frames */
struct v8_stack {
	__u32 depth;		/* frames used */
	__u32 flags;		/* V8_STACK_* */
	__u64 entered_ret;	/* the innermost pc in a function's first instructions (fp pushed, not yet
				 * moved: the word at sp is fp): the return address above it, into the
				 * function of frame 0's fp; or the pc in node's code under a JS frame 0, at
				 * a builtin's first instruction (fp not pushed yet): the word at sp (x86_64)
				 * or lr (arm64); else 0 */
	struct v8_frame frames[V8_MAX_FRAMES];
};

#define V8_STACK_TRUNCATED 1	/* the chain went deeper than V8_MAX_FRAMES */

#endif /* __V8_H */
