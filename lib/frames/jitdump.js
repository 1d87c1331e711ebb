'use strict';
/**
 * JavaScript frames from V8's jitdump (`node --perf-prof` writes
 * `jit-PID.dump` in its working directory, or in `--perf-prof-path`; the
 * format is Linux perf's, tools/perf/Documentation/jitdump-specification.txt):
 * every code object V8 compiled (JIT_CODE_LOAD: address, size, name) and,
 * for optimized code, its source positions (JIT_CODE_DEBUG_INFO: address ->
 * file, line, column). A perf map names only the physical code object; the
 * source positions say where, inside it, code inlined from another function
 * runs:
 * - TurboFan code (`JS:*f`): a position in inlined code is the innermost
 *   inlined function's own (file, line, column); its name is that of the
 *   function whose source encloses it (from the other code objects of the
 *   dump). The functions between the two are not in the dump.
 * - Maglev code (`JS:+f`; Node 24 and 26 inline there first): V8 writes an
 *   inlined function's position against the outer function's script, so it
 *   cannot name it; such an address is marked as inlined code, with the
 *   flag that names it (`--no-maglev-inlining`).
 *
 * The dump belongs to the traced process (another user's, another
 * container's): it is read as hostile input. Opened through the addon's
 * readTargetFile (a path under /proc/PID/root resolved in the process's own
 * root, no link as last component, regular files only, never blocking),
 * read (never mapped) up to `MAX_BYTES`, every length checked against what
 * remains; a malformed record ends the parse (what came before is kept),
 * never a throw. What is kept is bounded too: at most MAX_CODES code
 * objects, MAX_DEBUG_ENTRIES source positions (in typed arrays; a moved
 * code object shares its original's, with the shift), MAX_NAME_BYTES of
 * names; past a bound the parse ends there, and `limited` says why.
 *
 *   const { JitDump, findJitDump } = require('node-libbpf/lib/jitdump');
 *   const dump = new JitDump(findJitDump(pid));
 *   dump.refresh();            // reads what was appended since the last call
 *   dump.frames(address);      // ['hotLoopX /app/x.js:3:18', "processImmediate node:internal/timers:525:28"] or null
 */
const fs = require('fs');
const path = require('path');
const native = require('../core/native');
const { namespacePid } = require('../host/procfs');
const { codedError } = require('../core/validate');

const MAGIC = 0x4a695444; // 'JiTD', as a little-endian u32
const HEADER_MIN = 40;
const RECORD_HEADER = 16;
const JIT_CODE_LOAD = 0;
const JIT_CODE_MOVE = 1;
const JIT_CODE_DEBUG_INFO = 2;
const MAX_BYTES = 256 * 1024 * 1024; // what is read of one dump, at most
const MAX_NAME = 4096; // a code object's or a file's name
const MAX_DEBUG_RECORD = 16 * 1024 * 1024;
const MAX_CODES = 1 << 18; // code objects kept (a move is one)
const MAX_DEBUG_ENTRIES = 1 << 20; // source positions kept, all code objects together (24 bytes each)
const MAX_NAME_BYTES = 32 * 1024 * 1024; // code objects' and files' names kept, together
const MAX_FILES = 1 << 16; // distinct file names of source positions
const ELF_HEADER_SIZE = 0x40; // V8 adds it to each debug entry's address (for perf inject)
const CHUNK = 1024 * 1024;
const GARBAGE = /[\x00-\x1f\x7f\ufffd]/; // in a file name: bytes V8 wrote from freed memory
/** The flag that makes Maglev code name its inlined functions: Maglev does not inline. */
const MAGLEV_FLAG = '--no-maglev-inlining';
const INLINED_MARK = `[holds inlined code: run node with ${MAGLEV_FLAG} to name it]`;

/**
 * A V8 code object's name: `JS:*'hotLoop /app/x.js:3:18` is `{ tier: '*',
 * fn: 'hotLoop', file: '/app/x.js', line: 3, column: 18 }` (tiers: `~`
 * interpreted, `^` Sparkplug, `+` Maglev, `*` TurboFan, `o` before them:
 * on-stack replacement, `'` after: context-specialized); null for stubs and
 * builtins.
 */
function parseCodeName(name) {
  const m = /^(?:JS|LazyCompile|Function|InterpretedFunction):(o?)([*~^+]?)'?(.*?) ?(\S*?):(\d+):(\d+)$/.exec(name);
  if (!m) return null;
  return { osr: m[1] === 'o', tier: m[2], fn: m[3] || '(anonymous)', file: m[4], line: Number(m[5]), column: Number(m[6]) };
}

/** Reads a file at any offset (`read(offset, length)`: a Buffer) through a window of at least CHUNK bytes; never past `end`. */
class Reader {
  constructor(read, end) {
    this.read = read;
    this.end = end;
    this.buf = Buffer.alloc(0);
    this.start = 0;
  }

  /** `n` bytes at `pos` (a view valid until the next call), or null past the end. */
  at(pos, n) {
    if (n < 0 || pos + n > this.end) return null;
    if (pos >= this.start && pos + n <= this.start + this.buf.length) return this.buf.subarray(pos - this.start, pos - this.start + n);
    this.buf = this.read(pos, Math.min(Math.max(n, CHUNK), this.end - pos));
    this.start = pos;
    return this.buf.length >= n ? this.buf.subarray(0, n) : null;
  }
}

/**
 * The source positions of one code object (JIT_CODE_DEBUG_INFO), sorted by
 * address, in typed arrays (24 bytes an entry): `file(i)` is an index into
 * the dump's `files`, -1 for a name V8 wrote as garbage. Iterates as
 * `{ addr, line, column, file, nameSize }`, at the addresses it was written
 * for (a moved code object's are `shift` away).
 */
class DebugTable {
  constructor(n) {
    this.length = n;
    this.addrs = new Float64Array(n);
    this.lines = new Uint32Array(n);
    this.columns = new Uint32Array(n);
    this.fileIds = new Int32Array(n);
    this.nameSizes = new Uint32Array(n);
  }

  /** Entry `i` as an object, its file named from `files`. */
  entry(i, files) {
    const id = this.fileIds[i];
    return { addr: this.addrs[i], line: this.lines[i], column: this.columns[i], file: id < 0 ? null : files[id], nameSize: this.nameSizes[i] };
  }

  /** The first `n` entries whose addresses are at least `min`, sorted by address. */
  from(min, n = this.length) {
    const keep = [];
    for (let i = 0; i < n; i++) if (this.addrs[i] >= min) keep.push(i);
    let sorted = true;
    for (let k = 1; k < keep.length && sorted; k++) sorted = this.addrs[keep[k - 1]] <= this.addrs[keep[k]];
    if (!sorted) keep.sort((a, b) => this.addrs[a] - this.addrs[b] || a - b);
    if (sorted && keep.length === this.length) return this;
    const out = new DebugTable(keep.length);
    keep.forEach((i, k) => {
      out.addrs[k] = this.addrs[i];
      out.lines[k] = this.lines[i];
      out.columns[k] = this.columns[i];
      out.fileIds[k] = this.fileIds[i];
      out.nameSizes[k] = this.nameSizes[i];
    });
    return out;
  }

  /** The index of the last entry at or before `address`, or -1. */
  at(address) {
    let lo = 0;
    let hi = this.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.addrs[mid] <= address) (found = mid), (lo = mid + 1);
      else hi = mid - 1;
    }
    return found;
  }
}

/** A u64 as a Number, or NaN above 2^53 (no user-space address is). */
function u64(buf, off) {
  const v = buf.readBigUInt64LE(off);
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : NaN;
}

/** A NUL-terminated string at `off` in `buf`, at most MAX_NAME bytes: [string, offset after the NUL] or null. */
function cString(buf, off) {
  const nul = buf.indexOf(0, off);
  if (nul < 0 || nul - off > MAX_NAME) return null;
  return [buf.toString('utf8', off, nul), nul + 1];
}

/** The code objects and source positions of one jitdump file, read as it grows. */
class JitDump {
  /**
   * @param {string} file the dump (see `findJitDump`): a path here, or under
   *   /proc/PID/root (resolved in that process's root)
   */
  constructor(file) {
    this.file = file;
    this.offset = 0; // where the next record starts
    this.identity = null; // dev:ino of the file read so far
    this.codes = []; // { start, end, seq, name, info, debug: DebugTable | null, shift: where debug's addresses are now, less where they were written }
    this.pendingDebug = new Map(); // code address -> debug entries of the next load there
    this.byStart = new Map(); // code address -> the last code object loaded there
    this.files = []; // the file names of source positions (DebugTable's file ids)
    this.fileIds = new Map(); // file name -> its id
    this.entries = 0; // source positions kept
    this.nameBytes = 0; // bytes of names kept
    this.seq = 0;
    this.truncated = false; // MAX_BYTES reached
    this.malformed = null; // why parsing stopped early
    this.limited = null; // which bound ended the parse (MAX_CODES, MAX_DEBUG_ENTRIES, MAX_NAME_BYTES)
    this.index = null;
    this.functions = null;
  }

  /**
   * Reads the records appended since the last call. Throws a coded error
   * only when the file cannot be opened or is no jitdump (ENOENT,
   * ERR_BPF_INVALID_VALUE); a malformed record ends the parse quietly
   * (`malformed` says why).
   */
  refresh() {
    if (typeof native.statTargetFile !== 'function' || typeof native.readTargetFile !== 'function') {
      throw codedError('ERR_BPF_NOT_SUPPORTED', `${this.file}: this addon cannot read another process's files (no readTargetFile): rebuild it (npm run build:addon)`);
    }
    const st = native.statTargetFile(this.file); // ENOENT, EPERM, ERR_BPF_INVALID_OBJECT (a link, a FIFO, a directory)
    const identity = `${st.dev}:${st.ino}`;
    if (identity !== this.identity) this.#reset(identity);
    const end = Math.min(st.size, MAX_BYTES);
    if (st.size > MAX_BYTES) this.truncated = true;
    if (this.malformed || this.limited || end <= this.offset) return this;
    const r = new Reader((offset, length) => native.readTargetFile(this.file, { offset, length }), end);
    if (this.offset === 0) this.offset = this.#header(r);
    const before = this.codes.length;
    this.#records(r);
    if (this.codes.length !== before) this.index = this.functions = null;
    return this;
  }

  #reset(identity) {
    this.identity = identity;
    this.offset = 0;
    this.codes = [];
    this.pendingDebug.clear();
    this.byStart.clear();
    this.files = [];
    this.fileIds.clear();
    this.entries = this.nameBytes = 0;
    this.malformed = this.limited = null;
    this.truncated = false;
    this.index = this.functions = null;
  }

  #header(r) {
    const h = r.at(0, HEADER_MIN);
    if (!h || h.readUInt32LE(0) !== MAGIC) throw codedError('ERR_BPF_INVALID_VALUE', `${this.file}: not a jitdump (no little-endian 'JiTD' header)`);
    const size = h.readUInt32LE(8);
    if (size < HEADER_MIN || size > 4096) throw codedError('ERR_BPF_INVALID_VALUE', `${this.file}: jitdump header of ${size} bytes`);
    return size;
  }

  #records(r) {
    for (;;) {
      const head = r.at(this.offset, RECORD_HEADER);
      if (!head) return; // the end (or a record still being written)
      const id = head.readUInt32LE(0);
      const size = head.readUInt32LE(4);
      if (size < RECORD_HEADER) return void (this.malformed = `record of ${size} bytes at offset ${this.offset}`);
      if (this.offset + size > r.end) return; // not all there yet
      const body = this.offset + RECORD_HEADER;
      const bodySize = size - RECORD_HEADER;
      if (id === JIT_CODE_LOAD) this.#load(r, body, bodySize);
      else if (id === JIT_CODE_MOVE) this.#move(r, body, bodySize);
      else if (id === JIT_CODE_DEBUG_INFO) this.#debugInfo(r, body, bodySize);
      if (this.malformed || this.limited) return;
      this.offset += size;
    }
  }

  #load(r, pos, size) {
    // pid u32, tid u32, vma u64, code_addr u64, code_size u64, code_index u64, name, code
    const b = r.at(pos, Math.min(size, 40 + MAX_NAME + 1));
    if (!b || b.length < 41) return void (this.malformed = `short JIT_CODE_LOAD at offset ${pos}`);
    const start = u64(b, 16);
    const codeSize = u64(b, 24);
    const name = cString(b, 40);
    if (!name || !(codeSize > 0) || !(start > 0) || 40 + (name[1] - 40) + codeSize > size) return void (this.malformed = `bad JIT_CODE_LOAD at offset ${pos}`);
    if (this.nameBytes + name[0].length > MAX_NAME_BYTES) return void (this.limited = `names of more than ${MAX_NAME_BYTES >> 20} MiB`);
    if (!this.#room()) return;
    this.nameBytes += name[0].length;
    const debug = this.pendingDebug.get(start) ?? null;
    this.pendingDebug.delete(start);
    this.#add({ start, end: start + codeSize, seq: this.seq++, name: name[0], info: parseCodeName(name[0]), debug, shift: 0 });
  }

  /** Whether one more code object is kept (else `limited` says why). */
  #room() {
    if (this.codes.length < MAX_CODES) return true;
    this.limited = `more than ${MAX_CODES} code objects`;
    return false;
  }

  #add(code) {
    this.codes.push(code);
    this.byStart.set(code.start, code);
  }

  #move(r, pos, size) {
    // pid u32, tid u32, vma u64, old_code_addr u64, new_code_addr u64, code_size u64, code_index u64
    const b = size >= 48 && r.at(pos, 48);
    if (!b) return void (this.malformed = `short JIT_CODE_MOVE at offset ${pos}`);
    const from = u64(b, 16);
    const to = u64(b, 24);
    const code = this.byStart.get(from);
    if (!code || !(to > 0) || !this.#room()) return;
    const shift = to - from;
    // (the source positions shared, not copied: the move's shift added to the code's own)
    this.#add({ ...code, start: to, end: code.end + shift, seq: this.seq++, shift: code.shift + shift });
  }

  #debugInfo(r, pos, size) {
    // code_addr u64, nr_entry u64, then per entry: addr u64, line u32, column u32, file name
    if (size > MAX_DEBUG_RECORD) return; // skipped
    const b = size >= 16 && r.at(pos, size);
    if (!b) return void (this.malformed = `short JIT_CODE_DEBUG_INFO at offset ${pos}`);
    const code = u64(b, 0);
    const n = u64(b, 8);
    if (!(n <= size / 17)) return void (this.malformed = `JIT_CODE_DEBUG_INFO of ${n} entries in ${size} bytes at offset ${pos}`);
    // Node 24's V8 writes some entries' file names from freed memory (garbage, NULs inside,
    // of the right length): where every entry has the same size, each is read at that
    // stride and a garbage name is null, its length kept
    if (this.entries + n > MAX_DEBUG_ENTRIES) return void (this.limited = `more than ${MAX_DEBUG_ENTRIES} source positions`);
    const stride = n > 0 && (size - 16) % n === 0 ? (size - 16) / n : 0;
    const entries = new DebugTable(n);
    const last = { start: -1, end: -1, id: -1 }; // the previous entry's name: most entries share it
    let off = 16;
    for (let i = 0; i < n; i++) {
      if (off + 17 > size) return void (this.malformed = `short JIT_CODE_DEBUG_INFO entry at offset ${pos + off}`);
      entries.addrs[i] = u64(b, off) - ELF_HEADER_SIZE;
      entries.lines[i] = b.readUInt32LE(off + 8);
      entries.columns[i] = b.readUInt32LE(off + 12);
      const nul = b.indexOf(0, off + 16);
      const name = nul >= 0 && nul - off - 16 <= MAX_NAME ? [off + 16, nul + 1] : null;
      let ok;
      if (stride > 17 && stride - 16 <= MAX_NAME + 1) {
        entries.nameSizes[i] = stride - 16;
        ok = name && name[1] === off + stride;
        off += stride;
      } else {
        if (!name || name[1] > size) return void (this.malformed = `bad JIT_CODE_DEBUG_INFO entry at offset ${pos + off}`);
        entries.nameSizes[i] = name[1] - off - 16;
        ok = true;
        off = name[1];
      }
      entries.fileIds[i] = ok ? this.#fileId(b, name[0], name[1] - 1, last) : -1;
      if (this.limited) return;
    }
    if (code > 0) {
      const kept = entries.from(code);
      this.entries += kept.length - (this.pendingDebug.get(code)?.length ?? 0);
      this.pendingDebug.set(code, kept);
    }
  }

  /** The id of the file name at bytes [start, end) of `b` (-1: garbage), `last` the previous one's (reused, not decoded again). */
  #fileId(b, start, end, last) {
    if (last.id >= 0 && end - start === last.end - last.start && b.compare(b, last.start, last.end, start, end) === 0) {
      last.start = start;
      last.end = end;
      return last.id;
    }
    const file = b.toString('utf8', start, end);
    let id = GARBAGE.test(file) ? -1 : this.fileIds.get(file);
    if (id === undefined) {
      if (this.files.length >= MAX_FILES || this.nameBytes + file.length > MAX_NAME_BYTES) {
        this.limited = `more than ${MAX_FILES} file names or ${MAX_NAME_BYTES >> 20} MiB of names`;
        return -1;
      }
      id = this.files.length;
      this.files.push(file);
      this.fileIds.set(file, id);
      this.nameBytes += file.length;
    }
    Object.assign(last, { start, end, id });
    return id;
  }

  /**
   * The code object that holds `address` (the last compiled there), or undefined.
   * @param {number} address
   */
  code(address) {
    if (!this.index) {
      this.index = [...this.codes].sort((a, b) => a.start - b.start || a.seq - b.seq);
      this.maxSize = this.index.reduce((m, c) => Math.max(m, c.end - c.start), 0);
    }
    const idx = this.index;
    let lo = 0;
    let hi = idx.length - 1;
    let last = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (idx[mid].start <= address) (last = mid), (lo = mid + 1);
      else hi = mid - 1;
    }
    let best;
    for (let i = last; i >= 0 && idx[i].start > address - this.maxSize; i--) {
      const c = idx[i];
      if (address < c.end && (!best || c.seq > best.seq)) best = c;
    }
    return best;
  }

  /**
   * The frames at `address`, innermost first (names as lib/frames/stacks.js
   * frameName gives them: `hotLoop /app/x.js:3:18`): the physical function,
   * below the innermost function inlined there when the source positions
   * name it; `[inlined code at FILE:LINE:COL]` where no compiled function
   * encloses the position, or a Maglev frame marked INLINED_MARK. null: no
   * JavaScript code object of the dump holds `address`.
   * @param {number | bigint} address
   * @returns {string[] | null}
   */
  frames(address) {
    if (typeof address === 'bigint') address = address <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(address) : NaN;
    const c = this.code(address);
    if (!c?.info) return null;
    const own = `${c.info.fn} ${c.info.file}:${c.info.line}:${c.info.column}`;
    const at = c.debug ? c.debug.at(address - c.shift) : -1;
    const pos = at >= 0 ? c.debug.entry(at, this.files) : null;
    if (!pos) return [own];
    if (pos.file === null) {
      // most inlined code comes from the same file; a function of that file must enclose
      // the position, up to the last line of its own (unoptimized) code
      const file = this.#fileOfSize(pos.nameSize, c.info.file) ?? c.info.file;
      const f = this.#functionsOf(file).find((g) => !before(pos, g) && g.last && pos.line <= g.last);
      if (!f) return c.info.tier === '+' || c.info.tier === '*' ? [`${own} [holds inlined code: no file name in the jitdump]`] : [own];
      pos.file = file;
    }
    const fn = this.#enclosing(pos);
    if (fn && sameFunction(fn, c.info)) return [own];
    if (c.info.tier === '+') {
      // Maglev: an inlined position is given against the outer script; it says only that it is not the function's own
      if (pos.file === c.info.file && !before(pos, c.info) && !(fn && this.#outside(pos, c.info))) return [own];
      return [`${own} ${INLINED_MARK}`];
    }
    if (c.info.tier !== '*') return [own];
    const inner = fn ? `${fn.fn} ${fn.file}:${fn.line}:${fn.column}` : `[inlined code at ${pos.file}:${pos.line}:${pos.column}]`;
    return [inner, own];
  }

  /** Every JavaScript function the dump names, by file: [{ fn, file, line, column, last }] (`last`: the last line its unoptimized code has a position on). */
  #functionsOf(file) {
    if (!this.functions) {
      this.functions = new Map();
      const seen = new Map();
      for (const c of this.codes) {
        if (!c.info) continue;
        const key = `${c.info.file}:${c.info.line}:${c.info.column}`;
        let f = seen.get(key);
        if (!f) {
          f = { fn: c.info.fn, file: c.info.file, line: c.info.line, column: c.info.column, last: 0 };
          seen.set(key, f);
          if (!this.functions.has(f.file)) this.functions.set(f.file, []);
          this.functions.get(f.file).push(f);
        }
        // Sparkplug and interpreter code inline nothing: its positions are the function's own
        if ((c.info.tier === '^' || c.info.tier === '~') && c.debug) {
          const own = this.fileIds.get(f.file) ?? -1;
          for (let i = 0; i < c.debug.length; i++) if (c.debug.fileIds[i] === own || c.debug.fileIds[i] === -1) f.last = Math.max(f.last, c.debug.lines[i]);
        }
      }
      for (const list of this.functions.values()) list.sort((a, b) => b.line - a.line || b.column - a.column);
    }
    return this.functions.get(file) ?? [];
  }

  /**
   * The file of a debug entry whose name V8 wrote as garbage, from its size:
   * the code's own file if it has that size, else the one file of the dump
   * with functions that has; null if none or several.
   */
  #fileOfSize(nameSize, ownFile) {
    if (Buffer.byteLength(ownFile) + 1 === nameSize) return ownFile;
    this.#functionsOf(ownFile);
    const files = [...this.functions.keys()].filter((f) => Buffer.byteLength(f) + 1 === nameSize);
    return files.length === 1 ? files[0] : null;
  }

  /** The innermost function that encloses source position `pos`, or undefined. */
  #enclosing(pos) {
    return this.#functionsOf(pos.file).find((f) => !before(pos, f) && !(f.last && pos.line > f.last));
  }

  /** Whether `pos` is past the end of function `info`'s own code (when that is known). */
  #outside(pos, info) {
    const f = this.#functionsOf(info.file).find((g) => sameFunction(g, info));
    return Boolean(f?.last && pos.line > f.last);
  }
}

const sameFunction = (a, b) => a.file === b.file && a.line === b.line && a.column === b.column;
const before = (pos, f) => pos.line < f.line || (pos.line === f.line && pos.column < f.column);

/** A file of process `pid`, at most `max` bytes, or '' (gone, not readable). */
function readProc(pid, name, max = 128 * 1024) {
  let fd;
  try {
    fd = fs.openSync(`/proc/${pid}/${name}`, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    const buf = Buffer.alloc(max);
    let got = 0;
    while (got < max) {
      const r = fs.readSync(fd, buf, got, max - got, null);
      if (r === 0) break;
      got += r;
    }
    return buf.toString('utf8', 0, got);
  } catch {
    return '';
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * The V8 flags of node process `pid`: its command line's options before the
 * script, then NODE_OPTIONS from its environment (split on spaces).
 * @param {number} pid
 * @returns {string[]}
 */
function nodeFlags(pid) {
  const argv = readProc(pid, 'cmdline').split('\0').slice(1);
  const flags = [];
  for (const a of argv) {
    if (!a.startsWith('-')) break;
    flags.push(a);
  }
  const env = readProc(pid, 'environ', 1024 * 1024).split('\0').find((e) => e.startsWith('NODE_OPTIONS='));
  if (env) flags.push(...env.slice('NODE_OPTIONS='.length).split(/\s+/).filter(Boolean));
  return flags;
}

/** The value of V8 flag `name` (`--perf-prof-path=DIR` or `--perf_prof_path DIR`) in `flags`, or undefined. */
function flagValue(flags, name) {
  const forms = [name, name.replace(/-/g, '_').replace(/^__/, '--')];
  let value;
  flags.forEach((f, i) => {
    for (const form of forms) {
      if (f.startsWith(`${form}=`)) value = f.slice(form.length + 1);
      else if (f === form && i + 1 < flags.length) value = flags[i + 1];
    }
  });
  return value;
}

/**
 * Whether boolean V8 flag `name` (`--perf-prof`) is on in `flags` (the last mention wins).
 * @param {string[]} flags
 * @param {string} name
 */
function flagOn(flags, name) {
  const neg = name.replace(/^--/, '--no-');
  let on = false;
  for (const f of flags) {
    const u = f.replace(/_/g, '-');
    if (u === name) on = true;
    else if (u === neg) on = false;
  }
  return on;
}

/**
 * The pid of process `pid` in its own PID namespace (the last NSpid of /proc/PID/status).
 * @param {number} pid
 * @returns {number}
 */
function nsPid(pid) {
  return namespacePid(pid);
}

/**
 * Where node process `pid` writes its jitdump, seen from here:
 * `/proc/PID/root/DIR/jit-NSPID.dump` (resolved in its own root by
 * readTargetFile, so that a containerized process's is found and a link it
 * planted on the way leads nowhere outside it), DIR its `--perf-prof-path`
 * (default: its working directory, as its root sees it); or null when it
 * does not run with --perf-prof, or its working directory is outside its
 * root (or gone).
 * @param {number} pid
 * @param {string[]} [flags] its V8 flags (default: `nodeFlags(pid)`)
 * @returns {string | null}
 */
function findJitDump(pid, flags = nodeFlags(pid)) {
  if (!flagOn(flags, '--perf-prof')) return null;
  const dir = flagValue(flags, '--perf-prof-path') ?? '.';
  // the target's paths, resolved in its own root; no '..' out of its working directory
  if (!path.posix.isAbsolute(dir) && dir.split('/').includes('..')) return null;
  const inRoot = path.posix.isAbsolute(dir) ? dir : workingDirectory(pid) && `${workingDirectory(pid)}/${dir}`;
  if (!inRoot) return null;
  return path.posix.normalize(`/proc/${pid}/root/${path.posix.normalize(inRoot)}/jit-${nsPid(pid)}.dump`);
}

/** Process `pid`'s working directory as its own root sees it, or null (outside its root, deleted, gone). */
function workingDirectory(pid) {
  try {
    const root = fs.readlinkSync(`/proc/${pid}/root`);
    const cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
    if (!cwd.startsWith('/') || cwd.endsWith(' (deleted)')) return null;
    if (root === '/') return cwd;
    return cwd === root ? '/' : cwd.startsWith(`${root}/`) ? cwd.slice(root.length) : null;
  } catch {
    return null;
  }
}

module.exports = { JitDump, findJitDump, nodeFlags, flagOn, nsPid, parseCodeName, MAX_BYTES, MAX_CODES, MAX_DEBUG_ENTRIES, MAGLEV_FLAG, INLINED_MARK };
