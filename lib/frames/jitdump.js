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
 * container's): it is read as hostile input. Opened without following a
 * final symbolic link, regular files only, read (never mapped) up to
 * `MAX_BYTES`, every length checked against what remains; a malformed record
 * ends the parse (what came before is kept), never a throw.
 *
 *   const { JitDump, findJitDump } = require('node-libbpf/lib/jitdump');
 *   const dump = new JitDump(findJitDump(pid));
 *   dump.refresh();            // reads what was appended since the last call
 *   dump.frames(address);      // ['hotLoopX /app/x.js:3:18', "processImmediate node:internal/timers:525:28"] or null
 */
const fs = require('fs');
const path = require('path');
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

/** Reads `fd` at any offset through a window of CHUNK bytes; never past `end`. */
class Reader {
  constructor(fd, end) {
    this.fd = fd;
    this.end = end;
    this.buf = Buffer.alloc(CHUNK);
    this.start = 0;
    this.len = 0;
  }

  /** `n` bytes at `pos` (a view valid until the next call), or null past the end. */
  at(pos, n) {
    if (n < 0 || pos + n > this.end) return null;
    if (pos >= this.start && pos + n <= this.start + this.len) return this.buf.subarray(pos - this.start, pos - this.start + n);
    if (n > this.buf.length) this.buf = Buffer.alloc(n);
    const want = Math.min(this.buf.length, this.end - pos);
    let got = 0;
    while (got < want) {
      const r = fs.readSync(this.fd, this.buf, got, want - got, pos + got);
      if (r === 0) break;
      got += r;
    }
    this.start = pos;
    this.len = got;
    return got >= n ? this.buf.subarray(0, n) : null;
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
  /** @param {string} file the dump (see `findJitDump`) */
  constructor(file) {
    this.file = file;
    this.offset = 0; // where the next record starts
    this.identity = null; // dev:ino of the file read so far
    this.codes = []; // { start, end, seq, name, info, debug: [{ addr, line, column, file }] | null }
    this.pendingDebug = new Map(); // code address -> debug entries of the next load there
    this.byStart = new Map(); // code address -> the last code object loaded there
    this.seq = 0;
    this.truncated = false; // MAX_BYTES reached
    this.malformed = null; // why parsing stopped early
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
    let fd;
    try {
      fd = fs.openSync(this.file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW);
    } catch (err) {
      throw codedError(err.code === 'ENOENT' ? 'ENOENT' : err.code === 'ELOOP' ? 'ERR_BPF_INVALID_VALUE' : err.code ?? 'EIO', `${this.file}: ${err.code === 'ELOOP' ? 'a symbolic link, not read' : err.message}`);
    }
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile()) throw codedError('ERR_BPF_INVALID_VALUE', `${this.file} is not a regular file: not read as a jitdump`);
      const identity = `${st.dev}:${st.ino}`;
      if (identity !== this.identity) this.#reset(identity);
      const end = Math.min(st.size, MAX_BYTES);
      if (st.size > MAX_BYTES) this.truncated = true;
      if (this.malformed || end <= this.offset) return this;
      const r = new Reader(fd, end);
      if (this.offset === 0) this.offset = this.#header(r);
      const before = this.codes.length;
      this.#records(r);
      if (this.codes.length !== before) this.index = this.functions = null;
      return this;
    } finally {
      fs.closeSync(fd);
    }
  }

  #reset(identity) {
    this.identity = identity;
    this.offset = 0;
    this.codes = [];
    this.pendingDebug.clear();
    this.byStart.clear();
    this.malformed = null;
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
      if (this.malformed) return;
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
    const debug = this.pendingDebug.get(start) ?? null;
    this.pendingDebug.delete(start);
    this.#add({ start, end: start + codeSize, seq: this.seq++, name: name[0], info: parseCodeName(name[0]), debug });
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
    if (!code || !(to > 0)) return;
    const shift = to - from;
    this.#add({ ...code, start: to, end: code.end + shift, seq: this.seq++, debug: code.debug?.map((d) => ({ ...d, addr: d.addr + shift })) ?? null });
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
    const stride = n > 0 && (size - 16) % n === 0 ? (size - 16) / n : 0;
    const entries = [];
    let off = 16;
    for (let i = 0; i < n; i++) {
      if (off + 17 > size) return void (this.malformed = `short JIT_CODE_DEBUG_INFO entry at offset ${pos + off}`);
      const addr = u64(b, off) - ELF_HEADER_SIZE;
      const line = b.readUInt32LE(off + 8);
      const column = b.readUInt32LE(off + 12);
      const name = cString(b, off + 16);
      if (stride > 17 && stride - 16 <= MAX_NAME + 1) {
        const nameSize = stride - 16;
        const ok = name && name[1] === off + stride && !GARBAGE.test(name[0]);
        entries.push({ addr, line, column, file: ok ? name[0] : null, nameSize });
        off += stride;
        continue;
      }
      if (!name || name[1] > size) return void (this.malformed = `bad JIT_CODE_DEBUG_INFO entry at offset ${pos + off}`);
      entries.push({ addr, line, column, file: GARBAGE.test(name[0]) ? null : name[0], nameSize: name[1] - off - 16 });
      off = name[1];
    }
    if (code > 0) this.pendingDebug.set(code, entries.filter((e) => e.addr >= code).sort((a, b) => a.addr - b.addr));
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
    const pos = c.debug && position(c.debug, address);
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
        if ((c.info.tier === '^' || c.info.tier === '~') && c.debug) for (const d of c.debug) if (d.file === f.file || d.file === null) f.last = Math.max(f.last, d.line);
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

/** The source position of the last debug entry at or before `address` (entries sorted by address). */
function position(entries, address) {
  let lo = 0;
  let hi = entries.length - 1;
  let found;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (entries[mid].addr <= address) (found = entries[mid]), (lo = mid + 1);
    else hi = mid - 1;
  }
  return found;
}

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
 * Where node process `pid` writes its jitdump, seen from here (through
 * /proc/PID/root and /proc/PID/cwd, so that a containerized process's is
 * found): `jit-NSPID.dump` in its `--perf-prof-path` (default: its working
 * directory), or null when it does not run with --perf-prof.
 * @param {number} pid
 * @param {string[]} [flags] its V8 flags (default: `nodeFlags(pid)`)
 * @returns {string | null}
 */
function findJitDump(pid, flags = nodeFlags(pid)) {
  if (!flagOn(flags, '--perf-prof')) return null;
  const dir = flagValue(flags, '--perf-prof-path') ?? '.';
  // the target's paths, resolved in its own root; no '..' out of its working directory
  if (!path.posix.isAbsolute(dir) && dir.split('/').includes('..')) return null;
  const base = path.posix.isAbsolute(dir) ? `/proc/${pid}/root${path.posix.normalize(dir)}` : `/proc/${pid}/cwd/${dir}`;
  return path.posix.normalize(`${base}/jit-${nsPid(pid)}.dump`);
}

module.exports = { JitDump, findJitDump, nodeFlags, flagOn, nsPid, parseCodeName, MAX_BYTES, MAGLEV_FLAG, INLINED_MARK };
