'use strict';
/**
 * Names the JavaScript frames the BPF walk records (bpf/v8.h: pc, sfi,
 * code, slot) from the process's memory (lib/frames/v8_heap.js): function
 * name, file, line and column, and for optimized code its inlined
 * functions, innermost first.
 *
 *   const names = new V8Names(pid, { values, version, file });   // throws ERR_V8_MEMORY
 *   names.frame({ pc, sfi, code, slot }, innermost);              // [{ name, file, line, column, kind }]
 *
 * How a frame is read:
 * - pc in the interpreter (Builtins_InterpreterEntryTrampoline*,
 *   Builtins_InterpreterEnterAt*, the bytecode handlers): interpreted; the
 *   bytecode offset is `slot` (a SMI, relative to the BytecodeArray), its
 *   line from the BytecodeArray's source position table;
 * - pc inside `code`'s instructions, and the code is `sfi`'s: baseline,
 *   Maglev or TurboFan by its kind; the line from the Code's source position
 *   table at the pc's offset, inlined functions from its deoptimization data;
 * - else (the code on the stack is not the function's current code: on-stack
 *   replacement, a stale code): the function from `sfi`, with the line
 *   where it starts, and `reason` saying so.
 * Where no line is known (lazy source positions not collected), the line is
 * the function's first (`reason` says so).
 *
 * Objects are cached by address and validated on use (their instance type
 * and the fields that led to the cached value), because GC moves and reuses
 * memory: a stale cache gives a fresh read, never another function's name.
 */
const fs = require('node:fs');
const native = require('../core/native');
const { Memory, Heap, heapLayout, positionAt, baselineBytecodeOffset, splitPosition, lineOf, inliningChain } = require('./v8_heap');

/** The most bytes the naming's caches hold (as estimated), all the processes that share them together: a tool's. */
const MAX_CACHE_BYTES = 64 << 20;
/** What a cache entry is counted, beyond its strings and arrays. */
const ENTRY_BYTES = 160;
/** The most code lookups that found no code remembered in a naming pass. */
const MAX_MISSES = 1 << 16;

/**
 * One function of a frame: `kind` interpreted, baseline, maglev, turbofan,
 * compiled, builtin, unknown (no code found: the line where it starts) or
 * unnamed (`name` "[JS …]"); `reason` says why a line or name is missing;
 * `entered` (the physical function's): the sampled pc is in a function it
 * called that runs without a frame of its own (a builtin in its first
 * instructions, or one that builds none: its line is the call's, where the
 * return address is known, else where the function starts).
 * @typedef {{ name: string, file?: string, line?: number, column?: number, kind: string, inlined?: boolean, reason?: string, entered?: boolean }} JsFrame
 */

/** Interpreter address ranges of a binary (by file): [[fileOffset, end]], sorted. */
const interpreterCache = new Map();

/** The most executable mappings of a process's node looked at (a process can map its binary thousands of times). */
const MAX_EXE_MAPPINGS = 64;
/** The most interpreter address ranges of a process (its mappings x the interpreter's symbols). */
const MAX_INTERPRETER_ADDRESSES = 65536;
/** The most of /proc/PID/maps read. */
const MAX_MAPS_BYTES = 16 << 20;

/**
 * The file-offset ranges of binary `file`'s interpreter code (entry
 * trampolines and bytecode handlers: the addon's v8dbgSymbols, bounded
 * ranged reads): `known` where the caller has them already.
 */
function interpreterRanges(file, id, known = undefined) {
  if (known) return known; // (read with the v8dbg_* symbols: lib/frames/v8.js)
  if (!interpreterCache.has(id)) {
    if (interpreterCache.size >= 8) interpreterCache.clear();
    let ranges = [];
    try {
      ranges = native.v8dbgSymbols(file).interpreter;
    } catch {
      ranges = []; // no symbols: no frame is known interpreted
    }
    interpreterCache.set(id, ranges);
  }
  return interpreterCache.get(id);
}

/** A stat's st_dev as /proc/PID/maps shows it: `major:minor`, in hex (glibc's gnu_dev_major/minor). */
function devOf(dev) {
  const d = BigInt(dev);
  const major = ((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn);
  const minor = (d & 0xffn) | ((d >> 12n) & ~0xffn);
  return `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}`;
}

const MAPS_LINE = /^([0-9a-f]+)-([0-9a-f]+) \S\S(\S)\S ([0-9a-f]+) ([0-9a-f]+:[0-9a-f]+) (\d+)/;

/**
 * The executable mappings of process `pid`'s node (`binary`: binaryOf's),
 * found by its device and inode (a path in /proc/PID/maps can lie: the
 * process names its files, and a deleted binary's lines end in ` (deleted)`):
 * [{ start, end, offset }], at most MAX_EXE_MAPPINGS, in address order; the
 * array's `dropped` counts those left out. /proc/PID/maps is read up to
 * MAX_MAPS_BYTES.
 */
function exeMappings(pid, binary) {
  const out = /** @type {{ start: number, end: number, offset: number }[] & { dropped?: number }} */ ([]);
  out.dropped = 0;
  let text = '';
  try {
    text = native.readTargetFile(`/proc/${pid}/maps`, { length: MAX_MAPS_BYTES }).toString('latin1');
  } catch {
    return out;
  }
  const dev = binary.stat ? devOf(binary.stat.dev) : undefined;
  const ino = binary.stat ? String(binary.stat.ino) : undefined;
  // (by path only where no line has its device and inode: an overlayfs before Linux 6.x shows the layer's)
  const byPath = /** @type {typeof out} */ ([]);
  byPath.dropped = 0;
  const paths = binary.exe ? [` ${binary.exe}`, ` ${binary.exe} (deleted)`] : [];
  for (let at = 0; at < text.length; ) {
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    const line = text.slice(at, end);
    at = end + 1;
    const m = MAPS_LINE.exec(line);
    if (!m || m[3] !== 'x') continue;
    const list = m[5] === dev && m[6] === ino ? out : paths.some((p) => line.endsWith(p)) ? byPath : undefined;
    if (!list) continue;
    if (list.length >= MAX_EXE_MAPPINGS) list.dropped = (list.dropped ?? 0) + 1;
    else list.push({ start: parseInt(m[1], 16), end: parseInt(m[2], 16), offset: parseInt(m[4], 16) });
  }
  return out.length ? out : byPath;
}

/**
 * Where process `pid`'s node (`binary`: V8Names's) has its code: `{ exe:
 * its executable mappings, interpreter: the interpreter's code in them }`,
 * each a sorted list of [start, end) addresses, at most MAX_EXE_MAPPINGS
 * and MAX_INTERPRETER_ADDRESSES; `note` says what was left out, if anything.
 */
function interpreterAddresses(pid, binary) {
  const fileRanges = interpreterRanges(binary.file, binary.id, binary.interpreter?.length ? binary.interpreter : undefined);
  const interpreter = [];
  const exe = [];
  const mappings = exeMappings(pid, binary);
  let dropped = 0;
  for (const m of mappings) {
    exe.push([m.start, m.end]);
    for (const [s, e] of fileRanges) {
      if (s < m.offset || e > m.offset + (m.end - m.start)) continue;
      if (interpreter.length >= MAX_INTERPRETER_ADDRESSES) dropped++;
      else interpreter.push([m.start + s - m.offset, m.start + e - m.offset]);
    }
  }
  interpreter.sort((a, b) => a[0] - b[0]);
  const notes = [];
  if (mappings.dropped) notes.push(`${mappings.dropped} more executable mappings of its node than the ${MAX_EXE_MAPPINGS} looked at`);
  if (dropped) notes.push(`${dropped} interpreter ranges past the ${MAX_INTERPRETER_ADDRESSES} kept`);
  return { exe, interpreter, ...(notes.length && { note: `JavaScript frames may be misread: ${notes.join('; ')}` }) };
}

/**
 * The byte budget of the naming's caches (V8Names's functions, scripts,
 * line ends, codes, named pcs): each entry counted by its estimated size,
 * the least recently used evicted first, across every V8Names that shares
 * it (a V8Frames shares one among the processes it names).
 */
class NamingCache {
  /** @param {number} [max] the budget, in bytes */
  constructor(max = MAX_CACHE_BYTES) {
    this.max = max;
    this.bytes = 0;
    /** @type {Map<object, [Map<any, any>, any, number]>} each entry cached -> its map, key and bytes, least recently used first */
    this.order = new Map();
  }

  /** The entry cached as `key` in `map` (now the most recently used), or undefined. */
  get(map, key) {
    const entry = map.get(key);
    const rec = entry === undefined ? undefined : this.order.get(entry);
    if (rec) {
      this.order.delete(entry);
      this.order.set(entry, rec);
    }
    return entry;
  }

  /** Caches `entry` (an object) as `key` in `map`, counted `bytes`: past the budget, the least recently used go. */
  set(map, key, entry, bytes) {
    this.delete(map, key);
    map.set(key, entry);
    this.order.set(entry, [map, key, bytes]);
    this.bytes += bytes;
    for (const [e, [m, k]] of this.order) {
      if (this.bytes <= this.max || e === entry) break;
      this.delete(m, k);
    }
  }

  /** Forgets the entry cached as `key` in `map`. */
  delete(map, key) {
    const entry = map.get(key);
    if (entry === undefined) return;
    map.delete(key);
    const rec = this.order.get(entry);
    if (rec) this.bytes -= rec[2];
    this.order.delete(entry);
  }

  /** Forgets every entry of `maps` (a V8Names closed, or moved to another budget). */
  forget(maps) {
    for (const [e, [m, , b]] of this.order) {
      if (!maps.includes(m)) continue;
      this.order.delete(e);
      this.bytes -= b;
    }
    for (const m of maps) m.clear();
  }
}

class V8Names {
  /**
   * @param {number} pid the process (as this process sees it)
   * @param {{ values: Map<string, number>, version: number[], file: string, exe: string, id: string, interpreter?: number[][], bytecodeSizes?: Buffer|null }} binary
   *   its node's v8dbg_* values and V8 version, the binary (through /proc/PID/root), its path in the process, an id
   */
  constructor(pid, binary) {
    this.pid = pid;
    this.layout = heapLayout(binary.values, binary.version);
    this.mem = new Memory(pid); // throws ERR_V8_MEMORY
    this.heap = new Heap(this.mem, this.layout);
    this.binary = binary;
    this.ranges = null; // runtime address ranges of the interpreter
    /** @type {number[][]} the node binary's executable mappings ([start, end]), with ranges */
    this.exeRanges = [];
    // (the caches: entries within the byte budget of `cache`, shared with other processes' by `share`)
    this.sfis = new Map(); // sfi -> { nos, script, info }
    this.scripts = new Map(); // script -> { nameObj, endsObj, info }
    this.lineEnds = new Map(); // `${line_ends}:${source}` -> { stamp, ends, refused }: scripts of one source share it
    this.codes = new Map(); // pc -> { addr }: the Code found there
    this.seen = new Map(); // looked-up pc -> { sfi, code, start, out }: compiled frames named while their code lived
    this.misses = new Set(); // pcs where a naming pass found no code (each scan reads up to 256 KiB)
    this.cache = new NamingCache();
    this.stats = { frames: 0, named: 0, lines: 0 };
  }

  /** Keeps this process's caches within budget `cache` (shared with other V8Names): what it cached so far is dropped. */
  share(cache) {
    if (cache === this.cache) return;
    this.cache.forget(this.#maps());
    this.cache = cache;
  }

  #maps() {
    return [this.sfis, this.scripts, this.lineEnds, this.codes, this.seen];
  }

  close() {
    this.mem.close();
    this.cache.forget(this.#maps());
    this.misses.clear();
  }

  /** Whether `pc` is in the interpreter's code. */
  interpreted(pc) {
    if (!this.ranges) ({ interpreter: this.ranges, exe: this.exeRanges } = interpreterAddresses(this.pid, this.binary));
    let lo = 0;
    let hi = this.ranges.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const [s, e] = this.ranges[mid];
      if (pc < s) hi = mid - 1;
      else if (pc >= e) lo = mid + 1;
      else return true;
    }
    return false;
  }

  /** Whether `pc` is in the node binary's own code (its executable mappings: builtins, C++), where no V8 heap Code is. */
  inBinary(pc) {
    if (!this.ranges) this.interpreted(pc);
    return this.exeRanges.some(([s, e]) => pc >= s && pc < e);
  }

  /** Starts a naming pass: memory read from here on is fresh. */
  epoch() {
    this.mem.epoch();
    this.misses.clear();
  }

  /**
   * SFI `sfi`'s { name, file, lineEnds, start, bytecode, script } (cached,
   * validated; lineEnds read through the cache of line ends at each use), or
   * null: not an SFI.
   */
  function(sfi) {
    const h = this.heap;
    const L = this.layout;
    const cached = this.cache.get(this.sfis, sfi);
    // valid while the object at the address is an SFI with the same name and script fields
    const nos = h.field(sfi, L.sfiName);
    const script = h.field(sfi, L.sfiScript);
    if (nos === null || h.type(sfi) !== L.types.sfi) {
      this.cache.delete(this.sfis, sfi);
      return null;
    }
    // (its bytecode may be flushed or replaced since: an interpreted frame reads it afresh, h.bytecode)
    if (cached && cached.nos === nos && cached.script === script) return cached.info;
    const s = h.sfi(sfi);
    if (!s) return null;
    const sc = s.script ? this.script(s.script) : { name: null };
    const names = this;
    const info = {
      name: s.name || '(anonymous)',
      file: sc.name,
      start: s.start,
      bytecode: s.bytecode,
      script: s.script,
      /** @type {Int32Array | null} */
      get lineEnds() {
        return (s.script && names.lineEndsOf(s.script)?.ends) || null;
      },
    };
    this.cache.set(this.sfis, sfi, { nos, script, info }, ENTRY_BYTES + 2 * (info.name.length + (info.file?.length ?? 0)));
    return info;
  }

  /** Script `script`'s { name } (cached, validated). */
  script(script) {
    const h = this.heap;
    const L = this.layout;
    const nameObj = h.field(script, L.scriptName);
    const endsObj = h.field(script, L.scriptLineEnds);
    const cached = this.cache.get(this.scripts, script);
    if (cached && cached.nameObj === nameObj && cached.endsObj === endsObj && h.type(script) === L.types.script) return cached.info;
    const info = { name: h.scriptName(script) };
    this.cache.set(this.scripts, script, { nameObj, endsObj, info }, ENTRY_BYTES + 2 * (info.name?.length ?? 0));
    return info;
  }

  /**
   * Script `script`'s line ends (cached, validated): `{ ends, refused }`,
   * ends its own line_ends table where that rises strictly, else computed
   * from its source, once a source object (scripts of one source share
   * them); `refused`: its own table did not rise. Null: neither read.
   */
  lineEndsOf(script) {
    const h = this.heap;
    const L = this.layout;
    const endsObj = h.field(script, L.scriptLineEnds);
    const src = h.field(script, L.scriptSource);
    if (endsObj === null || src === null || h.type(script) !== L.types.script) return null;
    const key = `${endsObj}:${src}`;
    // (valid while the objects there have the same types and lengths)
    const stamp = `${h.type(endsObj)}:${h.smiField(endsObj, L.arrayLength)}:${h.type(src)}:${h.isObject(src) ? h.mem.i32(src - 1 + L.stringLength) : null}`;
    const cached = this.cache.get(this.lineEnds, key);
    if (cached && cached.stamp === stamp) return cached;
    const own = h.ownLineEnds(script);
    const computed = own.ends ? null : h.sourceLines(src);
    const entry = { stamp, ends: own.ends ?? computed?.ends ?? null, refused: own.refused, why: computed?.why ?? null };
    this.cache.set(this.lineEnds, key, entry, ENTRY_BYTES + (entry.ends?.byteLength ?? 0));
    return entry;
  }

  /** The Code holding `pc` (cached by pc, validated: still a Code covering it; where none is, not looked for again this pass), or null. */
  codeAt(pc) {
    const h = this.heap;
    const cached = this.cache.get(this.codes, pc);
    if (cached) {
      const c = h.code(cached.addr);
      if (c && c.start <= pc && pc < c.start + c.size) return { addr: cached.addr, ...c };
      this.cache.delete(this.codes, pc);
    }
    if (this.misses.has(pc)) return null;
    const found = h.codeAt(pc);
    if (found) this.cache.set(this.codes, pc, { addr: found.addr }, ENTRY_BYTES);
    else if (this.misses.size < MAX_MISSES) this.misses.add(pc);
    return found;
  }

  /** A named frame of function `fn` at source position `position` (or its start). */
  named(fn, kind, position, reason, startLine = true) {
    const lines = fn.script ? this.lineEndsOf(fn.script) : null;
    const ends = lines?.ends ?? null;
    let where = position === null ? null : lineOf(ends, position);
    let why = reason;
    if (!where && fn.start !== null && startLine) {
      where = lineOf(ends, fn.start);
      why ??= 'no source position for the pc: the line where the function starts';
    }
    // (a table of line ends that does not rise, with no source to compute them from: no line, and why)
    if (!where && lines?.refused) why ??= "no line: the script's line ends as read do not rise (garbage), and its source could not be read";
    // (a source past the bytes read for its lines, or unreadable: the frame says which)
    if (!where && lines?.why) why ??= lines.why;
    // (a position past the script's line ends as read, or no start: a frame without a line says why)
    if (!where) why ??= "no line: the position is outside the script's line ends as read";
    const out = { name: fn.name, file: fn.file ?? undefined, line: where?.line, column: where?.column, kind };
    if (why) out.reason = why;
    return out;
  }

  /**
   * The functions of walked JS frame `frame` ({ pc, sfi, code, slot }:
   * bigints), innermost first, or an unnamed frame saying why.
   * `innermost`: whether pc is the sampled ip (else a return address).
   */
  frame(frame, innermost = false) {
    this.stats.frames++;
    const L = this.layout;
    const unnamed = (reason) => [{ name: `[JS ${reason}]`, kind: 'unnamed', reason }];
    if (L.unknown) return unnamed(L.unknown);
    const num = (v) => (typeof v === 'bigint' ? (v < 2n ** 53n ? Number(v) : 0) : Number(v));
    const pc = num(frame.pc);
    const sfi = num(frame.sfi);
    const fn = this.function(sfi);
    if (!fn) return unnamed(`sfi=0x${sfi.toString(16)}: not a SharedFunctionInfo (moved or freed)`);
    this.stats.named++;
    /** @type {JsFrame[]} */
    let out;
    if (!fn.script) {
      // no script: a builtin (Math.sqrt, Array.prototype.map) or API function
      // (a script without a name, code of eval or new Function, is named as any: its lines and what it inlined)
      out = [{ name: fn.name, kind: 'builtin' }];
    } else {
      out = this.framesAt(fn, sfi, frame.slot, num(frame.code), pc, innermost);
      // the sample in the first instructions of a function this one called (a builtin such as Math.sqrt),
      // before that set up its frame: this one is at the call, the return address above it (bpf/v8.h's
      // entered_ret); `entered` says the sampled pc is the callee's
      const ret = innermost && frame.enteredRet ? num(frame.enteredRet) : 0;
      const lineless = (list) => !list[list.length - 1].line || list[list.length - 1].reason;
      const entered = (list) => list.map((g, i) => (i === list.length - 1 ? { ...g, entered: true } : g));
      if (ret && lineless(out)) {
        const atCall = this.framesAt(fn, sfi, frame.slot, num(frame.code), ret, false);
        if (!lineless(atCall)) out = entered(atCall);
      }
      // (a builtin that runs without a frame of its own, past its first instructions: the sampled pc is
      // in node's builtins on this function's frame, which is at a call it made; its line is where it starts)
      if (innermost && !out[out.length - 1].entered && this.inBinary(pc) && !this.interpreted(pc)) out = entered(out);
    }
    if (out[0].line) this.stats.lines++;
    return out;
  }

  /** The functions of a JS frame of function `fn` (a script's: `sfi`; its `slot` and `code` as walked) at `pc`, innermost first. */
  framesAt(fn, sfi, slot, code, pc, innermost) {
    if (this.interpreted(pc)) return [this.interpretedFrame(fn, { slot, sfiAddr: sfi })];
    return this.compiledFrame(fn, sfi, code, pc, innermost);
  }

  /** An interpreted frame: its line from the bytecode offset. */
  interpretedFrame(fn, frame) {
    const h = this.heap;
    const raw = typeof frame.slot === 'bigint' ? frame.slot : BigInt(frame.slot);
    const offset = h.smi(raw);
    const bytecode = h.bytecode(frame.sfiAddr);
    if (offset === null || !bytecode) return this.named(fn, 'interpreted', null, offset === null ? 'the bytecode offset slot is not a SMI' : null);
    const table = h.bytecodePositions(bytecode);
    if (!table) return this.named(fn, 'interpreted', null, 'no source positions collected for its bytecode (lazy source positions): the line where the function starts');
    const pos = splitPosition(positionAt(table, offset - (this.layout.bytecodeData - 1), this.layout.positionCodeShift));
    return this.named(fn, 'interpreted', pos ? pos.offset : null, null);
  }

  /** A frame of compiled code (baseline, Maglev, TurboFan), with its inlined functions. */
  compiledFrame(fn, sfi, codeAddr, pc, innermost) {
    const h = this.heap;
    const L = this.layout;
    const at = innermost ? pc : pc - 1; // (a return address: the call is before it)
    // (named before from the same code, still there: a Code's positions and inlining never change)
    const seen = this.cache.get(this.seen, at);
    if (seen && seen.sfi === sfi) {
      const c = h.code(seen.code);
      if (c && c.start === seen.start && at < c.start + c.size) return seen.out;
    }
    let code = codeAddr ? h.code(codeAddr) : null;
    if (code && h.streamMap === undefined) h.learnStreamMap(null, code);
    if (!code || at < code.start || at >= code.start + code.size) {
      // the code on the stack is not the function's current one (leaptiering without
      // the dispatch table, on-stack replacement, replaced code): find it from the pc
      // (not in the node binary: its embedded builtins are no heap Code)
      // (V8's profiler gives such a sample the line where the function starts, as here; the reason says so)
      if (this.inBinary(at)) return [this.named(fn, 'unknown', null, "the pc is in the node binary's builtins, not in the function's code: the line where the function starts")];
      code = this.codeAt(at);
      if (!code) {
        // collected since the sample (on-stack-replacement code a GC dropped): what it was named
        // while it lived (V8Frames.prime names a window's frames as they come), else no line
        if (seen && seen.sfi === sfi) return seen.out;
        return [this.named(fn, 'unknown', null, 'no code holds the pc any more (collected since the sample): no line', false)];
      }
    } else code = { addr: codeAddr, ...code };
    const out = this.compiledLines(fn, sfi, code, at);
    if (!out) {
      // the code there now is another function's: the pc's own was collected and its memory reused
      if (seen && seen.sfi === sfi) return seen.out;
      return [this.named(fn, 'unknown', null, "the code at the pc is not the function's, or was collected since the sample: no line", false)];
    }
    const bytes = out.reduce((n, /** @type {JsFrame} */ f) => n + ENTRY_BYTES + 2 * (f.name.length + (f.file?.length ?? 0) + (f.reason?.length ?? 0)), ENTRY_BYTES);
    this.cache.set(this.seen, at, { sfi, code: code.addr, start: code.start, out }, bytes);
    return out;
  }

  /**
   * A baseline (Sparkplug) frame at pc offset `at - code.start` of `code`
   * (the function's: its BytecodeArray `ba`): the bytecode it runs (the
   * Code's bytecode offset table along the bytecodes), then its line as an
   * interpreted frame's.
   */
  baselineFrame(fn, ba, code, at) {
    const h = this.heap;
    const sizes = this.binary.bytecodeSizes;
    if (!sizes) return this.named(fn, 'baseline', null, "baseline code, and no Bytecodes::kBytecodeSizes in the node binary's symbols: the line where the function starts");
    const bytecodes = h.bytecodes(ba);
    const table = h.byteArray(code.positionsObj);
    const offset = bytecodes && table ? baselineBytecodeOffset(table, bytecodes, sizes, at - code.start) : null;
    if (offset === null) return this.named(fn, 'baseline', null, 'baseline code whose bytecode offset table could not be read: the line where the function starts');
    if (offset < 0) return this.named(fn, 'baseline', fn.start, null); // (the prologue: the function's entry, as V8 says)
    const positions = h.bytecodePositions(ba);
    if (!positions) return this.named(fn, 'baseline', null, 'no source positions collected for its bytecode (lazy source positions): the line where the function starts');
    const pos = splitPosition(positionAt(positions, offset, this.layout.positionCodeShift));
    return this.named(fn, 'baseline', pos ? pos.offset : null, null);
  }

  /** The functions at `at` in compiled `code` (h.code's, with addr) of function `fn` (`sfi`), innermost first; null: the code is not `sfi`'s. */
  compiledLines(fn, sfi, code, at) {
    const h = this.heap;
    const L = this.layout;
    const kind = code.kind === L.codeKindBaseline ? 'baseline' : code.kind === L.codeKindBaseline + 1 ? 'maglev' : code.kind === L.codeKindBaseline + 2 ? 'turbofan' : 'compiled';
    if (kind === 'baseline') {
      // the code is sfi's: its BytecodeArray is the function's (else another function's code took the memory)
      const ba = h.type(code.deopt) === L.types.bytecode ? code.deopt : null;
      if (ba === null || ba !== h.bytecode(sfi)) return null;
      return [this.baselineFrame(fn, ba, code, at)];
    }
    // the code is sfi's: its deopt data names it
    const deoptSfi = h.isObject(code.deopt) ? h.field(code.deopt, L.arrayData + L.deoptSfi * 8) : null;
    const owner = deoptSfi !== null && h.type(deoptSfi) !== L.types.sfi && h.isObject(deoptSfi) ? h.field(deoptSfi, 8) : deoptSfi;
    if (owner !== sfi) return null;
    const table = h.byteArray(code.positionsObj);
    // (a table that is no byte array any more: the code was collected since the sample, its memory not yet reused)
    if (!table && h.isObject(code.positionsObj)) return null;
    const raw = table ? positionAt(table, at - code.start, L.positionCodeShift) : null;
    const pos = splitPosition(raw);
    if (!pos) return [this.named(fn, kind, null, table ? null : 'no source positions for its code')];
    if (pos.inlining < 0) return [this.named(fn, kind, pos.offset, null)];
    // inlined: innermost first, up the inlining positions to the physical function
    const inl = h.inlining(code.deopt);
    if (!inl) return [this.named(fn, kind, null, 'unreadable inlining data')];
    const { chain, outer, cut } = inliningChain(raw, inl.positions);
    const out = [];
    for (const { id, offset } of chain) {
      const inner = inl.sfis[id] !== null ? this.function(inl.sfis[id]) : null;
      out.push(inner ? { ...this.named(inner, kind, offset, null), inlined: true } : { name: '[JS inlined: unreadable]', kind: 'unnamed', inlined: true });
    }
    // (a cycle or too deep: the list ends with a frame that says it was cut, the physical function without its line)
    if (cut) out.push({ name: `[JS inlined frames cut: ${cut}]`, kind: 'unnamed', inlined: true, reason: cut });
    out.push(this.named(fn, kind, cut ? null : outer ? outer.offset : null, cut ? `the inlined frames were cut (${cut}): the line where the function starts` : null));
    return out;
  }
}

module.exports = { V8Names, NamingCache, interpreterRanges, interpreterAddresses, MAX_CACHE_BYTES };
