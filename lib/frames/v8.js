'use strict';
/**
 * JavaScript frames named from V8's own data (issue 27), for the programs
 * that walk a node process's stack in the kernel (bpf/v8.bpf.h: profile,
 * stackcount): no node flags needed.
 *
 *   const v8 = new V8Frames();
 *   v8.watch(obj, pid);                      // fills v8_layouts: the walk runs for pid
 *   const walked = v8.readStacks(obj);        // key -> { depth, flags, frames }
 *   v8.align(addresses, walked.get(key));     // the walked frame of each user address
 *   v8.frameNames(pid, frame);                // [{ name, file, line, column, kind, inlined }]
 *
 * The layout of a process (what the walk needs: struct v8_layout, bpf/v8.h)
 * and the naming of the frames it records come from the addon's
 * V8Symbolizer (src/v8/): the v8dbg_* symbols of the process's node and
 * its memory. Until the addon has it, the layout is read here from the
 * v8dbg_* symbols of the node binary (Node 20 and 22 on x86_64 and arm64;
 * a leaptiering V8, Node 24 and 26, without the code pointer) and frames
 * are shown raw: `[JS sfi=0x…]`.
 */
const fs = require('node:fs');
const native = require('../core/native');
const { V8Names, interpreterAddresses } = require('./v8_names');
const { heapLayout } = require('./v8_heap');
const { codedError } = require('../core/validate');

const FRAME_WORDS = 4; // struct v8_frame: pc, sfi, code, slot
const MAX_PROCESSES = 256; // processes named at once (each keeps its /proc/PID/mem open)

// ---- the provisional layout reader (until the addon's V8Symbolizer) ----

/** ELF e_machine -> the architecture (os.arch()'s name) of the nodes read: x86_64, aarch64. */
const MACHINES = { 62: 'x64', 183: 'arm64' };

/**
 * What the walk needs of node binary `file`, read by the addon's
 * v8dbgSymbols (section headers, symbol tables and the 4-byte values, in
 * ranges, each bounded: a forged binary costs no more than a real one):
 * `{ values: Map(name -> number), version: [major, minor, build] (empty
 * where missing), interpreter: [[fileOffset, end]] (the interpreter's code,
 * sorted), bytecodeSizes, arch: 'x64' | 'arm64' | undefined (another
 * machine), machine: e_machine, stat: { size, dev, ino, mtimeMs } (the file
 * read) }`. `/proc/PID/exe` is the file the process runs, even deleted.
 */
function v8dbgSymbols(file) {
  let read;
  try {
    read = native.v8dbgSymbols(file);
  } catch (err) {
    throw err.code === 'ERR_BPF_INVALID_OBJECT' ? codedError('ERR_V8_ELF', err.message) : err;
  }
  // (by name: the same binary gives the same order)
  const values = new Map(Object.entries(read.values).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { values, version: read.version, interpreter: read.interpreter, bytecodeSizes: read.bytecodeSizes ?? null, arch: MACHINES[read.machine], machine: read.machine, stat: read.file };
}

/** v8dbgSymbols of the binaries read: `dev:ino:size:mtime` -> values */
const symbolCache = new Map();

/** The first of `names` that `values` has. */
function first(values, ...names) {
  for (const n of names) if (values.has(n)) return values.get(n);
  return undefined;
}

/** A cache key of a file's contents: statTargetFile's `{ dev, ino, size, mtimeMs }`. */
const idOf = (st) => `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;

/**
 * The node binary of process `pid`: `{ exe (its path in the process, for
 * messages), deleted (that path no longer names it), file (/proc/PID/exe),
 * id, stat, values, version, interpreter, bytecodeSizes }` (v8dbgSymbols,
 * read once per binary). The bytes are the running inode's, through the
 * kernel's link /proc/PID/exe, never its path: a FIFO or link planted there
 * since the process started is not opened.
 */
function binaryOf(pid) {
  let exe;
  try {
    exe = fs.readlinkSync(`/proc/${pid}/exe`);
  } catch (err) {
    throw codedError('ERR_V8_NO_PROCESS', `process ${pid}: ${err.message}`);
  }
  const deleted = exe.endsWith(' (deleted)');
  if (deleted) exe = exe.slice(0, -' (deleted)'.length);
  const file = `/proc/${pid}/exe`;
  // one read per binary (a system-wide stackcount meets many processes of the same node)
  let id;
  try {
    id = idOf(native.statTargetFile(file, { follow: true }));
  } catch (err) {
    throw err.code === 'ENOENT' ? codedError('ERR_V8_NO_PROCESS', `process ${pid}: ${err.message}`) : err;
  }
  if (!symbolCache.has(id)) {
    const read = v8dbgSymbols(file);
    // (keyed by the file read: the process may have run another binary since the stat)
    id = idOf(read.stat);
    if (symbolCache.size >= 16) symbolCache.clear();
    symbolCache.set(id, read);
  }
  return { exe, deleted, file, id, ...symbolCache.get(id) };
}

/**
 * struct v8_layout of process `pid` from the v8dbg_* symbols of its node
 * binary, as a plain object (the v8_layouts map's value), or throws a coded
 * error saying why there is none. Provisional: the addon's V8Symbolizer
 * replaces it.
 */
function provisionalLayout(pid) {
  const binary = binaryOf(pid);
  return layoutOf(binary, `process ${pid} (${binary.exe})`);
}

/**
 * struct v8_layout (bpf/v8.h) and the naming's heap layout (v8_heap.js
 * heapLayout) read from the node binary `file`, of any architecture the
 * reader knows (x86_64, aarch64): `{ arch, version: [major, minor, build],
 * layout, heap }` (the dispatch table's address is per process: 0 here).
 * For tests and diagnosis (another architecture's binary is only read).
 */
function binaryLayout(file) {
  const binary = v8dbgSymbols(file);
  if (!binary.arch) throw codedError('ERR_V8_ELF', `${file} is a node for ELF machine ${binary.machine}: the V8 reader knows x86_64 (62) and aarch64 (183)`);
  return { arch: binary.arch, version: binary.version, layout: layoutOf(binary, file), heap: heapLayout(binary.values, binary.version) };
}

/**
 * The sane range of each v8dbg_* value the walk uses (a forged binary's
 * value outside it is refused, ERR_V8_LAYOUT): frame slots within 4 KiB of
 * fp, object offsets within 4 KiB, tags and masks small, a SMI's shift
 * below 64, instance types below 2^16.
 */
const SANE = {
  v8dbg_off_fp_context_or_frame_type: [-4096, 4096],
  v8dbg_off_fp_context: [-4096, 4096],
  v8dbg_off_fp_function: [-4096, 4096],
  v8dbg_off_fp_bytecode_offset: [-4096, 4096],
  v8dbg_HeapObjectTag: [0, 15],
  v8dbg_HeapObjectTagMask: [1, 15],
  v8dbg_SmiTagMask: [1, 15],
  v8dbg_SmiShiftSize: [0, 62],
  v8dbg_class_HeapObject__map__Map: [0, 4095],
  v8dbg_class_Map__instance_type__uint16_t: [0, 4095],
  v8dbg_class_JSFunction__shared__SharedFunctionInfo: [0, 4095],
  v8dbg_class_JSFunction__shared__Tagged_SharedFunctionInfo_: [0, 4095],
  v8dbg_class_JSFunction__code__Tagged_Code_: [0, 4095],
  v8dbg_class_JSFunction__code__Code: [0, 4095],
  v8dbg_type_JSFunction__JS_FUNCTION_TYPE: [0, 0xffff],
  v8dbg_FirstJSFunctionType: [0, 0xffff],
  v8dbg_LastJSFunctionType: [0, 0xffff],
};

/** struct v8_layout from a binary's v8dbg_* `values` and `version`; `who` names it in errors. */
function layoutOf({ values: all, version }, who) {
  if (!all.size) throw codedError('ERR_V8_NOT_NODE', `${who} has no v8dbg_* symbols: not a node (or a stripped one); JavaScript frames are named from its perf map, if any`);
  if (version.length !== 3) throw codedError('ERR_V8_VERSION', `${who}: V8's version symbols are missing`);
  const [major, minor, build] = version;
  // every value read is checked against SANE first
  const values = { get: (name) => sane(who, name, all.get(name)), has: (name) => all.has(name) };
  const shared = first(values, 'v8dbg_class_JSFunction__shared__SharedFunctionInfo', 'v8dbg_class_JSFunction__shared__Tagged_SharedFunctionInfo_');
  const typeJsFunction = values.get('v8dbg_type_JSFunction__JS_FUNCTION_TYPE');
  const need = { shared, typeJsFunction, fp_function: values.get('v8dbg_off_fp_function'), fp_context: values.get('v8dbg_off_fp_context') };
  const missing = Object.keys(need).filter((k) => need[k] === undefined);
  if (missing.length) throw codedError('ERR_V8_LAYOUT', `${who}, V8 ${major}.${minor}.${build}: no ${missing.join(', ')} among its v8dbg_* symbols`);
  // JSFunction::code: exported from V8 12 on; before, right after feedback_cell (V8 11: shared, context, feedback_cell, code)
  const leaptiering = major >= 13;
  const code = first(values, 'v8dbg_class_JSFunction__code__Tagged_Code_', 'v8dbg_class_JSFunction__code__Code') ?? (major === 11 ? shared + 24 : 24);
  const jsFirst = values.get('v8dbg_FirstJSFunctionType') ?? typeJsFunction;
  const jsLast = values.get('v8dbg_LastJSFunctionType') ?? Math.min(typeJsFunction + 16, 0xffff);
  if (jsFirst > jsLast) throw codedError('ERR_V8_LAYOUT', `${who}: v8dbg_FirstJSFunctionType ${jsFirst} is past v8dbg_LastJSFunctionType ${jsLast}: JavaScript frames are not walked`);
  return {
    version: ((major << 24) | (minor << 16) | build) >>> 0,
    fp_context: first(values, 'v8dbg_off_fp_context_or_frame_type', 'v8dbg_off_fp_context'),
    fp_function: need.fp_function,
    fp_bytecode_offset: values.get('v8dbg_off_fp_bytecode_offset') ?? -40,
    heap_object_tag: values.get('v8dbg_HeapObjectTag') ?? 1,
    heap_object_tag_mask: values.get('v8dbg_HeapObjectTagMask') ?? 3,
    smi_tag_mask: values.get('v8dbg_SmiTagMask') ?? 1,
    smi_shift: (values.get('v8dbg_SmiShiftSize') ?? 31) + 1,
    object_map: values.get('v8dbg_class_HeapObject__map__Map') ?? 0,
    map_instance_type: first(values, 'v8dbg_class_Map__instance_type__uint16_t') ?? 12,
    js_function_first: jsFirst,
    js_function_last: jsLast,
    function_shared: shared,
    // leaptiering without the dispatch table's address: 0, no code (the naming falls back to the SFI)
    function_code: leaptiering ? 0 : code,
    dispatch_table: 0n,
    dispatch_entry_shift: 0,
    dispatch_handle_shift: 0,
    dispatch_entry_code: 0,
    dispatch_code_shift: 0,
  };
}

/** v8dbg_* value `value` of symbol `name` (undefined: absent), if within its SANE range; else ERR_V8_LAYOUT naming both. */
function sane(who, name, value) {
  const range = SANE[name];
  if (value === undefined || !range || (Number.isInteger(value) && value >= range[0] && value <= range[1])) return value;
  throw codedError(
    'ERR_V8_LAYOUT',
    `${who}: ${name} is ${value}, outside ${range[0]}..${range[1]}: not a layout V8 builds (a forged or damaged binary); JavaScript frames are not walked`,
  );
}

// ---- the frames ----

/** A walked frame's raw name, where nothing names it. */
function rawName(frame) {
  return frame.sfi ? `[JS sfi=0x${frame.sfi.toString(16)}]` : `[V8 frame marker=${frame.slot}]`;
}

/** `name file:line:column` (what lib/service/profile.js's jsFrame parses), or the name alone. */
function frameLabel(f) {
  if (!f.file) return f.name;
  // (no line known: the file alone, not a made-up :0:0)
  if (!f.line) return `${f.name} ${f.file}`;
  return `${f.name} ${f.file}:${f.line}:${f.column ?? 0}`;
}

/**
 * Readers of a v8_stacks value's bytes (`layout`: the map's value layout),
 * its words as Numbers (addresses and SMIs are exact as Numbers), no
 * BigInt made and a frame read only when it is needed: `depth(b)`,
 * `flags(b)`, `enteredRet(b)`, `word(b, i, k)` (frame i's pc, sfi, code or
 * slot) and `frame(b, i)`: frame i (innermost first) as `{ pc, sfi, code,
 * slot }`. The first is marked `innermost`: its pc is the sampled ip,
 * looked up as is; every other pc is a return address (looked up at pc -
 * 1). Where the sample was in a function's first instructions (bpf/v8.h's
 * entered_ret), the first also has `enteredRet`.
 */
function stackBytesReader(layout) {
  const field = (l, name) => l.fields.find((f) => f.name === name);
  const frames = field(layout, 'frames');
  const elem = frames.type.elem;
  const [depthAt, flagsAt, retAt, framesAt, size, max] = [field(layout, 'depth').offset, field(layout, 'flags').offset, field(layout, 'entered_ret').offset, frames.offset, elem.size, frames.type.len];
  const offsets = Object.fromEntries(['pc', 'sfi', 'code', 'slot'].map((k) => [k, field(elem, k).offset]));
  const u64 = (b, o) => b.readUInt32LE(o) + b.readUInt32LE(o + 4) * 4294967296;
  const word = (b, i, k) => u64(b, framesAt + i * size + offsets[k]);
  const enteredRet = (b) => u64(b, retAt);
  return {
    depth: (b) => Math.min(b.readUInt32LE(depthAt), max),
    flags: (b) => b.readUInt32LE(flagsAt),
    enteredRet,
    word,
    frame(b, i) {
      const f = /** @type {any} */ ({ pc: word(b, i, 'pc'), sfi: word(b, i, 'sfi'), code: word(b, i, 'code'), slot: word(b, i, 'slot') });
      if (i === 0) {
        f.innermost = true;
        if (enteredRet(b)) f.enteredRet = enteredRet(b);
      }
      return f;
    },
  };
}

/** struct v8_layout's interpreter ranges (bpf/v8.h V8_INTERP_RANGES). */
const V8_INTERP_RANGES = 4;

/**
 * The interpreter's code in process `pid` (its node: `binary`) as struct
 * v8_layout's `interp_start` and `interp_end`: at most V8_INTERP_RANGES
 * ranges that hold all of it (the nearest ones merged, with the little
 * code between them: a frame there keeps a slot the naming does not use);
 * and `exe_start`, `exe_end`: the span of node's executable mappings
 * (0, 0 where none is found): `{ layout, note }` (note: what was left out,
 * interpreterAddresses').
 */
function interpreterLayout(pid, binary) {
  const { interpreter, exe, note } = interpreterAddresses(pid, binary);
  const ranges = mergeRanges(interpreter, V8_INTERP_RANGES);
  let [exe_start, exe_end] = [0, 0];
  for (const [s, e] of exe) {
    if (!exe_end || s < exe_start) exe_start = s;
    if (e > exe_end) exe_end = e;
  }
  return { layout: { interp_start: ranges.map((r) => r[0]), interp_end: ranges.map((r) => r[1]), exe_start, exe_end }, note };
}

/**
 * At most `count` ranges that hold all of `ranges` ([start, end) pairs):
 * the overlapping ones joined, then the `count - 1` widest gaps between
 * them kept and every other closed (the nearest ranges merged). O(n log n).
 */
function mergeRanges(ranges, count) {
  const joined = [];
  for (const [s, e] of [...ranges].sort((a, b) => a[0] - b[0])) {
    const last = joined.at(-1);
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else joined.push([s, e]);
  }
  if (joined.length <= count) return joined;
  // the gaps after each range but the last, widest first (the first of equal ones)
  const gaps = joined.slice(0, -1).map((r, i) => [joined[i + 1][0] - r[1], i]);
  gaps.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  const cuts = gaps.slice(0, count - 1).map(([, i]) => i).sort((a, b) => a - b);
  const out = [];
  let from = 0;
  for (const i of [...cuts, joined.length - 1]) {
    out.push([joined[from][0], joined[i][1]]);
    from = i + 1;
  }
  return out;
}

/** A v8_stacks value's bytes `b` as `{ depth, flags, frames }` (`read`: stackBytesReader's). */
function decodeStack(read, b) {
  const depth = read.depth(b);
  const frames = new Array(depth);
  for (let i = 0; i < depth; i++) frames[i] = read.frame(b, i);
  return { depth, flags: read.flags(b), frames };
}

// ---- the self-check: a known frame named right, or no names ----

/**
 * The functions the in-process self-check runs (V8Frames.selfCheck): the
 * walk records v8SelfCheck's frame as it waits in Atomics.wait (an
 * off-CPU program sees it leave the CPU), or as it spins under a CPU
 * sampler until `kept()` says the walk kept a stack (at most until
 * `until`, performance.now()'s), and its caller's. Their lines are read
 * from this file (checkLines): keep the markers. The caller's name is
 * V8's inferred one, `selfCheck.call`, a cons string, as many a method's
 * is, where the naming reads inferred names (V8 11; after: `(anonymous)`).
 * @param {Int32Array} cell @param {number} until @param {() => boolean} kept
 */
function v8SelfCheck(cell, until, kept) {
  for (let n = 1; performance.now() < until; n++) if (n % 64 === 0 && kept()) break; // self-check: spin
  return Atomics.wait(cell, 0, 0, 1); // self-check: wait
}
const selfCheck = {};
selfCheck.call = function (cell, until, kept) {
  return v8SelfCheck(cell, until, kept); // self-check: call
};

/** The script the self-check calls through (externalCaller). */
const EXTERNAL_SCRIPT = 'node-libbpf:self-check';
const EXTERNAL_CALL_LINE = 2;

/**
 * A function of a script whose source is an external string (as node's
 * own modules' are), past node's EXTERN_APEX (a latin1 string over ~1 MB is
 * made external), which calls its first argument at line 2: the naming
 * reads its line from that source. Made for one check (1-5 ms), then dropped.
 * @returns {(f: Function, ...args: any[]) => any}
 */
function externalCaller() {
  const head = 'function selfCheckExternal(f, a, b, c) {\n  return f(a, b, c);\n}\nselfCheckExternal;\n//';
  const bytes = Buffer.alloc(1032192, 0x20);
  bytes.write(head, 0, 'latin1');
  return require('node:vm').runInThisContext(bytes.toString('latin1'), { filename: EXTERNAL_SCRIPT });
}

/** The lines of v8SelfCheck's spin and wait, and of its call, in this file (read once). */
let selfCheckLines = null;
function checkLines() {
  if (selfCheckLines) return selfCheckLines;
  const source = fs.readFileSync(__filename, 'utf8').split('\n');
  const start = source.findIndex((l) => l.startsWith('function v8SelfCheck('));
  const at = (marker) => source.findIndex((l, i) => i > start && l.endsWith(`// self-check: ${marker}`)) + 1;
  selfCheckLines = { own: [at('spin'), at('wait')], call: at('call') };
  return selfCheckLines;
}

/**
 * A name V8 gives a function of a script: identifiers (Unicode ones, #private
 * ones, `[Symbol.iterator]`) joined by dots; `get x`, `set x`, `async x`,
 * `static x`: a method's.
 */
const FUNCTION_NAME = /^((get|set|async|static) )*(#?[\p{ID_Start}_$][\p{ID_Continue}$\u200c\u200d]*|\[[^\]\p{Cc}]{1,200}\])(\.(#?[\p{ID_Start}_$][\p{ID_Continue}$\u200c\u200d]*|\[[^\]\p{Cc}]{1,200}\]|<computed>))*$/u;
/**
 * A script name of a node process: a node: module, an absolute path (spaces
 * too), a URL (file:, a loader's), `node -e`'s and vm's names, a relative
 * file name a vm.Script was given.
 */
const SCRIPT_NAME = /^(node:[\w/.-]+|\/[^\p{Cc}]*|[a-z][\w+.-]*:\S+|\[eval\](-wrapper)?|evalmachine\.<anonymous>|[^\p{Cc}/]+\.[cm]?[jt]sx?)$/u;
/** The most distinct functions the host's check reads. */
const CHECKED_FUNCTIONS = 64;

/** The ERR_V8_LAYOUT of a layout the self-check found wrong for process `pid` (its node `binary`): `what` went wrong. */
function layoutError(pid, binary, what) {
  const v = binary.version?.length === 3 ? `V8 ${binary.version.join('.')}` : 'an unknown V8';
  return codedError(
    'ERR_V8_LAYOUT',
    `process ${pid} (${binary.exe ?? binary.file}, ${v}): the V8 layout read from its node does not match its memory (${what}); ` +
      'its JavaScript frames are left unnamed (the perf map names them, if any), never named wrong. ' +
      'Please report it to node-libbpf\'s issues with this message and the output of `node --version` and `uname -m`',
  );
}

/** The walk's ring of new stack keys (bpf/v8.bpf.h V8_FRESH). */
const V8_FRESH = 256;

/**
 * A profiler empties v8_stacks (bpf/v8.bpf.h V8_STACKS_MAX: 4096) at a
 * window's start once it holds this many stacks.
 */
const V8_STACKS_KEPT = 2048;

class V8Frames {
  /** @param {any} [bpf] what has V8Symbolizer: the addon (default) or the package entry */
  constructor(bpf = native) {
    // (the addon's, once it has one: src/v8/)
    this.Symbolizer = bpf.V8Symbolizer ?? /** @type {any} */ (native).V8Symbolizer;
    this.processes = new Map(); // pid -> { symbolizer, layout, error }
    /** @type {Map<string, boolean>} what was left out of a process's walk (its node mapped past the mappings looked at) */
    this.notes = new Map();
  }

  /** Whether walked frames get names: yes (lib/frames/v8_names.js reads the process's memory; or the addon's V8Symbolizer). */
  get names() {
    return true;
  }

  /** Closes what naming each process keeps open (its /proc/PID/mem). */
  close() {
    for (const p of this.processes.values()) p.names?.close();
    this.processes.clear();
  }

  /** What naming process `pid` has: `{ symbolizer, layout, error }` (error: why its JS frames are not walked). */
  process(pid) {
    if (!this.processes.has(pid)) {
      if (this.processes.size >= MAX_PROCESSES) this.close();
      const p = { symbolizer: null, layout: null, error: null, names: undefined, namesError: null };
      try {
        if (this.Symbolizer) {
          p.symbolizer = new this.Symbolizer(pid);
          p.layout = p.symbolizer.layoutBytes();
        } else {
          p.layout = provisionalLayout(pid);
        }
      } catch (err) {
        p.error = err;
      }
      this.processes.set(pid, p);
    }
    return this.processes.get(pid);
  }

  /**
   * Fills `obj`'s v8_layouts for process `pid` (`kernelPid`: its id as the
   * kernel sees it, where that differs): its stacks' JS frames are walked
   * from then on. Returns null, or the error that says why they are not
   * (not a node, an unknown V8).
   */
  watch(obj, pid, kernelPid = pid) {
    const p = this.process(pid);
    if (p.error) return p.error;
    const map = obj.getMap('v8_layouts');
    const value = Buffer.isBuffer(p.layout) ? require('../core/codec').decode(map.valueLayout, p.layout) : p.layout;
    const { layout, note } = interpreterLayout(pid, binaryOf(pid));
    if (note && this.notes.size < 256) this.notes.set(`pid ${pid}: ${note}`, true);
    map.set(kernelPid, { ...value, ...layout });
    return null;
  }

  /**
   * Checks process `pid`'s layout (watch's) against frames of known names,
   * before anything is named with it: returns null (they are named right),
   * undefined (from the host: no JS frame walked yet; check again later) or
   * an ERR_V8_LAYOUT error, which becomes the process's: its frames are
   * no longer walked (its v8_layouts entry is deleted, `kernelPid`'s) nor
   * named (`[JS sfi=0x…: ERR_V8_LAYOUT]`, the perf map's names win).
   *
   * In process (`attach`: attaches a program of `obj` that walks this
   * thread, returns its detach; `spinMs`: how long to spin for a CPU
   * sampler, 0 for an off-CPU program): v8SelfCheck runs, the walk records
   * its frame, which must be named v8SelfCheck, this file, at its spin or
   * wait line, below selfCheck.call at its call's line, below a function
   * of a script whose source is an external string (externalCaller) at its
   * line 2 (interpreted, a few calls at most: the
   * bytecode offset, the SFI, its name, script and line ends all read
   * through the layout). From the host (no `attach`): the functions of the
   * JS frames the walk kept so far (`obj`'s v8_stacks, at most 64), read
   * through the layout, must be more often a function (an identifier's
   * name, a node: module or a file) than not.
   *
   * `binary`: v8dbgSymbols' values to check instead of the process's node's
   * (tests forge one value at a time); the walk then runs with its layout,
   * and a failure is returned, not kept.
   * @param {any} obj @param {number} pid
   * @param {{ kernelPid?: number, attach?: () => () => void, spinMs?: number, binary?: any }} [options]
   */
  selfCheck(obj, pid, { kernelPid = pid, attach = undefined, spinMs = 0, binary = undefined } = {}) {
    const p = this.process(pid);
    if (p.error) return p.error;
    const bin = binary ?? binaryOf(pid);
    let names;
    let error = null;
    try {
      if (binary) {
        const { layout } = interpreterLayout(pid, bin);
        obj.getMap('v8_layouts').set(kernelPid, { ...layoutOf(bin, `process ${pid}`), ...layout });
        names = new V8Names(pid, bin);
      } else if (this.opened(p, pid)) {
        names = p.names;
      } else {
        return null; // (its memory cannot be read: nothing is named from it, raw frames say why)
      }
      try {
        error = attach ? this.#checkKnown(obj, pid, bin, names, attach, spinMs) : this.#checkWalked(obj, pid, bin, names);
      } finally {
        if (binary) names.close();
      }
    } catch (err) {
      if (/** @type {any} */ (err).code !== 'ERR_V8_LAYOUT') throw err;
      error = /** @type {Error} */ (err);
    }
    if (error && !binary) {
      p.error = error;
      p.names?.close();
      p.names = null;
      p.namesError = error;
      obj.getMap('v8_layouts').delete(kernelPid);
    }
    return error;
  }

  /** selfCheck in process: v8SelfCheck's frame, recorded with the program `attach` attaches, named right. */
  #checkKnown(obj, pid, binary, names, attach, spinMs) {
    const count = () => Number(obj.getGlobalVariable('v8_fresh_count'));
    const cell = new Int32Array(new SharedArrayBuffer(4));
    const lines = checkLines();
    const at = (g, line) => g.file === __filename && g.line === line;
    // (the naming reads inferred names on V8 11, Node 20: there the caller's name is a cons string to decode)
    const callerNames = binary.version[0] > 11 ? ['selfCheck.call', '(anonymous)'] : ['selfCheck.call'];
    let seen = [];
    let external = null;
    try {
      external = externalCaller();
    } catch {
      // (no vm here, or a policy against it: the check goes without that frame)
    }
    obj.getMap('v8_stacks').clear();
    const detach = attach();
    try {
      // (a few more calls where the first left no stack of ours: a wake-up came first)
      for (let i = 0; i < 3; i++) {
        const before = count();
        const args = [cell, spinMs ? performance.now() + spinMs : 0, () => count() !== before];
        if (external) external(selfCheck.call, ...args);
        else selfCheck.call(...args);
        seen = [];
        names.epoch();
        for (const stack of this.readStacks(obj).values()) {
          // its frames' functions, innermost first (a frame's inlined ones first)
          const fns = [];
          for (const f of stack.frames) {
            if (!f.sfi) continue;
            try {
              fns.push(...names.frame(f, f.innermost === true));
            } catch (err) {
              fns.push({ name: `[JS naming failed: ${/** @type {Error} */ (err).message}]` });
            }
          }
          const k = fns.findIndex((g) => g.name === 'v8SelfCheck' && lines.own.some((l) => at(g, l)));
          const caller = fns[k + 1];
          const outer = fns[k + 2];
          const externalOk = !external || (outer?.name === 'selfCheckExternal' && outer.file === EXTERNAL_SCRIPT && outer.line === EXTERNAL_CALL_LINE);
          if (k >= 0 && caller && callerNames.includes(caller.name) && at(caller, lines.call) && externalOk) return null;
          // (what it named instead: the frames of stacks that hold v8SelfCheck's code, else any)
          if (fns.some((g) => g.file === __filename)) seen.unshift(...fns.slice(0, 3).map(frameLabel));
          else seen.push(...fns.slice(0, 1).map(frameLabel));
        }
      }
    } finally {
      detach();
    }
    const want = `v8SelfCheck ${__filename}:${lines.own.join(' or :')} called by selfCheck.call :${lines.call}, called by selfCheckExternal ${EXTERNAL_SCRIPT}:${EXTERNAL_CALL_LINE}`;
    return layoutError(pid, binary, seen.length ? `${want}: named ${seen.slice(0, 4).join(', ')}` : `the walk recorded no JavaScript frame of ${want}`);
  }

  /** selfCheck from the host: the functions of the JS frames walked so far, read through the layout, look like functions. */
  #checkWalked(obj, pid, binary, names) {
    const sfis = new Set();
    for (const stack of this.readStacks(obj).values()) {
      for (const f of stack.frames) if (f.sfi && sfis.size < CHECKED_FUNCTIONS) sfis.add(f.sfi);
    }
    if (!sfis.size) return undefined;
    names.epoch();
    let good = 0;
    const bad = [];
    for (const sfi of sfis) {
      let fn = null;
      try {
        fn = names.function(sfi);
      } catch {
        fn = null;
      }
      // (a function without a script, a builtin such as Math.sqrt, or an anonymous one says nothing)
      if (fn && (fn.name === '(anonymous)' || !fn.file) && (!fn.file || SCRIPT_NAME.test(fn.file))) continue;
      if (fn && FUNCTION_NAME.test(fn.name) && SCRIPT_NAME.test(fn.file)) good++;
      else bad.push(fn ? `${JSON.stringify(fn.name.slice(0, 40))} in ${JSON.stringify(String(fn.file).slice(0, 60))}` : `0x${sfi.toString(16)}: not a SharedFunctionInfo`);
    }
    if (good > bad.length) return null;
    return layoutError(pid, binary, `${bad.length} of the ${sfis.size} functions walked read as no function: ${bad.slice(0, 3).join(', ')}`);
  }

  /**
   * The walked stacks of `obj` (its v8_stacks map): Map(key (a BigInt) ->
   * { depth, flags, frames: [{ pc, sfi, code, slot }] }), the frames'
   * words as Numbers (stackBytesReader's frames; one batch read of the
   * bytes).
   */
  readStacks(obj) {
    const out = new Map();
    const map = obj.getMap('v8_stacks');
    const read = stackBytesReader(map.valueLayout);
    const [keys, values] = map.getBatchBytes();
    for (let i = 0; (i + 1) * map.keySize <= keys.length; i++) {
      out.set(keys.readBigUInt64LE(i * map.keySize), decodeStack(read, values.subarray(i * map.valueSize, (i + 1) * map.valueSize)));
    }
    return out;
  }

  /**
   * The walked stacks of a profiler's windows (`obj`'s walk), kept from
   * one window to the next: the walk keeps a stack once in v8_stacks,
   * whichever window sampled it, so a service's stacks are read and named
   * once, not once a window. `{ stacks: Map(key (a BigInt) -> readStacks'
   * stack), pcs (the pcs named this window), fresh (the walk's count of
   * stacks kept, bpf/v8.bpf.h's v8_fresh_count, as last taken), base (that
   * count when v8_stacks was last emptied) }`.
   */
  walkState(obj) {
    const fresh = Number(obj.getGlobalVariable('v8_fresh_count'));
    return { stacks: new Map(), pcs: new Set(), fresh, base: fresh, read: undefined };
  }

  /**
   * Starts a window of `state` (walkState's; no program attached): once
   * v8_stacks holds V8_STACKS_KEPT stacks, it and `state` are emptied, so a
   * window has room for at least that many new ones.
   */
  startWindow(obj, state) {
    state.pcs.clear();
    const count = Number(obj.getGlobalVariable('v8_fresh_count'));
    if (count - state.base < V8_STACKS_KEPT) return;
    obj.getMap('v8_stacks').clear();
    state.stacks.clear();
    state.fresh = count;
    state.base = count;
  }

  /**
   * The stacks the walk kept since the last call, read into `state.stacks`
   * and returned. Their keys come from the walk's ring of them (v8_fresh),
   * each looked up; when more came than the ring holds, or so many that
   * one batch read of the map costs less than their lookups (~11 µs each,
   * against ~1 µs a stack in the map), the whole map is read at once.
   */
  #take(obj, state) {
    const count = Number(obj.getGlobalVariable('v8_fresh_count'));
    const added = count - state.fresh;
    if (added <= 0) return [];
    const map = obj.getMap('v8_stacks');
    const read = (state.read ??= stackBytesReader(map.valueLayout));
    const out = [];
    const keep = (key, bytes) => {
      const stack = decodeStack(read, bytes);
      state.stacks.set(key, stack);
      out.push(stack);
    };
    if (added <= V8_FRESH && added * 10 < count - state.base) {
      const ring = obj.getGlobalVariable('v8_fresh');
      for (let n = state.fresh; n < count; n++) {
        const key = ring[n % ring.length];
        const bytes = state.stacks.has(key) ? undefined : map.getBytes(key);
        if (bytes) keep(key, bytes);
      }
    } else {
      const [keys, values] = map.getBatchBytes();
      for (let i = 0; (i + 1) * map.keySize <= keys.length; i++) {
        const key = keys.readBigUInt64LE(i * map.keySize);
        if (!state.stacks.has(key)) keep(key, values.subarray(i * map.valueSize, (i + 1) * map.valueSize));
      }
    }
    state.fresh = count;
    return out;
  }

  /**
   * Names the JS frames of the stacks `obj`'s walk kept since the last call
   * (`state`: walkState's) for process `pid`, as they come, so that a
   * frame whose code V8 drops before the window ends (on-stack-replacement
   * code a GC collects) keeps the line it had (lib/frames/v8_names.js's
   * seen). Returns the frames named; 0 where the naming is not from memory.
   */
  prime(obj, pid, state) {
    const added = this.#take(obj, state);
    if (!added.length) return 0;
    const p = this.process(pid);
    if (p.error || p.symbolizer || !this.opened(p, pid)) return 0;
    const frames = [];
    for (const stack of added) {
      // each pc once a window (stacks differ by one frame; most of their pcs are named already): by
      // number, a return address as itself, the innermost pc negated (one in a function's first
      // instructions is named with its return address: by both)
      for (const f of stack.frames) {
        const at = f.innermost !== true ? f.pc : f.enteredRet ? `${f.pc}:${f.enteredRet}` : -f.pc;
        if (!f.sfi || state.pcs.has(at)) continue;
        state.pcs.add(at);
        // (an interpreted frame is named from its SFI and bytecode offset: no code to lose)
        if (!p.names.interpreted(f.pc)) frames.push(f);
      }
    }
    this.namesOf(pid, frames);
    return frames.length;
  }

  /**
   * The walked stacks of a window that counted stacks `keys` (BigInts; 0:
   * none walked): `state.stacks` (walkState's) with the last ones taken,
   * and any key the ring lost (two CPUs keeping a stack at once) looked up.
   */
  windowStacks(obj, state, keys) {
    this.#take(obj, state);
    const map = obj.getMap('v8_stacks');
    for (const key of keys) {
      if (!key || state.stacks.has(key)) continue;
      const bytes = map.getBytes(key);
      if (bytes) state.stacks.set(key, decodeStack((state.read ??= stackBytesReader(map.valueLayout)), bytes));
    }
    return state.stacks;
  }

  /**
   * The walked frame of each of `addresses` (a user stack, innermost
   * first, from the stack-trace map), or undefined: matched by pc, in
   * order (the walk and the kernel's unwinder follow the same frame
   * pointers; a frame one of them lacks is skipped).
   */
  align(addresses, stack) {
    const out = new Array(addresses.length).fill(undefined); // dense: flat() drops holes
    if (!stack) return out;
    let j = 0;
    for (let i = 0; i < addresses.length; i++) {
      const a = Number(addresses[i]);
      for (let k = j; k < stack.frames.length && k < j + 8; k++) {
        if (stack.frames[k].pc === a) {
          out[i] = stack.frames[k];
          j = k + 1;
          break;
        }
      }
    }
    return out;
  }

  /**
   * The functions of walked JS frame `frame` of process `pid`, innermost
   * first (the inlined ones, then the physical one): `[{ name, file,
   * line, column, kind, inlined, label }]`; or null where it is not a JS
   * frame (sfi 0: its pc's symbol names it).
   */
  frameNames(pid, frame) {
    return this.namesOf(pid, [frame])[0];
  }

  /** Whether process `p` (this.process(pid)'s) is named from its memory: its V8Names, opened once. */
  opened(p, pid) {
    if (p.names === undefined && !p.error) {
      try {
        p.names = new V8Names(pid, binaryOf(pid));
      } catch (err) {
        p.names = null;
        p.namesError = err; // (ERR_V8_MEMORY: the privilege to read its memory)
      }
    }
    return Boolean(p.names);
  }

  /**
   * frameNames of each of `frames`, in one call to the naming: within a time
   * budget (`namingBudgetMs`, default 2000 ms; the frames past it are unnamed, and say
   * so), the caches of every process named within one byte budget (their
   * NamingCache), and no throw (a frame whose naming failed says why).
   * What went wrong is noted once in `notes` (reason -> true), for the tool.
   */
  namesOf(pid, frames) {
    const out = frames.map(() => null);
    const js = frames.map((f, i) => [f, i]).filter(([f]) => f && f.sfi);
    if (!js.length) return out;
    const p = this.process(pid);
    if (p.symbolizer) {
      const records = Buffer.alloc(js.length * FRAME_WORDS * 8);
      js.forEach(([f], n) => ['pc', 'sfi', 'code', 'slot'].forEach((k, w) => records.writeBigUInt64LE(BigInt(f[k]), (n * FRAME_WORDS + w) * 8)));
      let named;
      try {
        named = p.symbolizer.frames(records);
      } catch (err) {
        p.error ??= err;
      }
      if (named) {
        js.forEach(([f, i], n) => {
          const list = named[n]?.length ? named[n] : [{ name: rawName(f), kind: 'unnamed' }];
          out[i] = list.map((g, k) => ({ ...g, inlined: k < list.length - 1, label: frameLabel(g) }));
        });
        return out;
      }
    }
    // named from the process's memory (lib/frames/v8_names.js)
    if (this.opened(p, pid)) {
      const note = (reason) => this.notes.size < 256 && this.notes.set(`pid ${pid}: ${reason}`, true);
      // (the first process's caches are the budget of every process this names)
      if (!this.namingCache) this.namingCache = p.names.cache;
      p.names.share(this.namingCache);
      p.names.epoch();
      if (this.namingBudgetMs === undefined) this.namingBudgetMs = 2000;
      const budget = this.namingBudgetMs;
      const deadline = performance.now() + budget;
      const late = `[JS not named: past the naming pass's ${budget} ms budget]`;
      // the same frame in many stacks (a service's outer frames are in all of them) is named once
      const named = new Map();
      for (const [f, i] of js) {
        const key = `${f.innermost === true ? 'i' : 'r'}${f.pc}:${f.sfi}:${f.code}:${f.slot}:${f.enteredRet ?? ''}`;
        let list = named.get(key);
        if (!list) {
          let raw;
          if (performance.now() >= deadline) {
            // (a hostile or huge heap: the pass ends, its last frames unnamed)
            raw = [{ name: late, kind: 'unnamed', reason: `past the naming pass's ${budget} ms budget` }];
            note(`JavaScript frames left unnamed: a naming pass took more than its ${budget} ms budget`);
          } else {
            try {
              raw = p.names.frame(f, f.innermost === true);
            } catch (err) {
              const why = `naming failed: ${err.message}`;
              raw = [{ name: `[JS ${why}]`, kind: 'unnamed', reason: why }];
              note(`JavaScript frames left unnamed: ${why}`);
            }
          }
          list = raw.map((g, k) => ({ ...g, inlined: k < raw.length - 1, label: frameLabel(g) }));
          named.set(key, list);
        }
        out[i] = list;
      }
      return out;
    }
    const why = p.namesError ?? p.error;
    for (const [f, i] of js) {
      const name = why ? `[JS sfi=0x${f.sfi.toString(16)}: ${why.code ?? why.message}]` : rawName(f);
      out[i] = [{ name, kind: 'unnamed', inlined: false, label: name, ...(why && { reason: why.message }) }];
    }
    return out;
  }
}

module.exports = { V8Frames, provisionalLayout, binaryLayout, binaryOf, v8dbgSymbols, mergeRanges, rawName, frameLabel, layoutOf };
