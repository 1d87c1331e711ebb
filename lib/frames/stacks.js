'use strict';
/**
 * Stacks counted in the kernel (stack ids from a BPF_MAP_TYPE_STACK_TRACE
 * map, counted in a hash map), turned into names: kernel frames from
 * /proc/kallsyms, user frames from the process's ELF files and, for
 * JavaScript, from V8's own data where the kernel walked the stack
 * (lib/frames/v8.js: no node flags), else from the perf map that
 * `node --perf-basic-prof` writes; then
 * folded (`comm;outer;...;inner count`, what flame graphs take) or printed
 * as bcc's stackcount prints them.
 *
 *   const stacks = require('node-libbpf/lib/stacks');
 *   const sym = new stacks.StackSymbolizer();
 *   const counted = stacks.symbolize(stacks.readStacks(obj), sym);   // while the process runs
 *   fs.writeFileSync('out.svg', bpf.flameGraph(stacks.foldStacks(counted)));
 */
const fs = require('fs');
const native = require('../core/native');
const { escapeText } = require('../core/format');
const { perfMapPath } = require('../host/procfs');
const jitdump = require('./jitdump');
const { V8Frames } = require('./v8');
const { SourceMaps } = require('./sourcemap');

const EFAULT = 14; // bpf/stacks.bpf.h: no stack of that kind (a kernel thread's user stack, a user-mode sample's kernel stack)

/**
 * Names addresses, caching every answer: kernel addresses once, user
 * addresses once per process. JavaScript code of a node process that runs
 * with --perf-prof is named from its jitdump (lib/frames/jitdump.js), with the
 * function inlined where the sample landed; else from its perf map, where a
 * Maglev frame (which may hold inlined functions' code, unnamed) says so and
 * which flag names them, unless the process runs with --no-maglev-inlining.
 *
 * What the traced process's data cannot give (its files not ours to read:
 * EACCES, EPERM; the process gone; a jitdump cut short) never throws: the
 * frames are unnamed, and `takeNotes()` says why, each reason once.
 */
class StackSymbolizer {
  /**
   * @param {Pick<typeof import('../core/native'), 'Symbolizer'>} [bpf] what makes the Symbolizer: the addon (default) or the package entry
   * @param {{ sourceMaps?: boolean }} [options] sourceMaps: JS frames V8's data names are put at their source-mapped place (default true)
   */
  constructor(bpf = native, { sourceMaps = true } = {}) {
    this.symbolizer = new bpf.Symbolizer();
    this.cache = new Map(); // 'k' or pid -> Map(address -> [name, innermost first])
    this.jit = new Map(); // pid -> { dump: JitDump | null, maglevInlining, error }
    this.perfMapEnds = new Map(); // pid -> the bytes of its perf map that name its JIT frames (endWindow), else all
    this.notes = new Map(); // why frames went unnamed: reason -> whether takeNotes() has returned it
    this.unreadable = new Map(); // pid -> why its user-space frames are not named (null: they are), looked at once
    // JS frames walked in the kernel and named from V8's own data (lib/frames/v8.js): they win over the perf map
    this.v8 = new V8Frames(bpf);
    // each process's scripts' source maps (lib/frames/sourcemap.js), or null: not mapped
    this.sourceMaps = sourceMaps ? new Map() : null; // pid -> SourceMaps
  }

  /**
   * The JS frames of one stack (`lists`: per walked frame, its functions
   * innermost first, or none), each at its source-mapped place (its label
   * too; the caller of each is the next one out), where source maps are on.
   */
  mapSources(pid, lists) {
    if (!this.sourceMaps) return lists;
    let maps = this.sourceMaps.get(pid);
    if (!maps) {
      if (this.sourceMaps.size >= 64) this.sourceMaps.delete(this.sourceMaps.keys().next().value);
      maps = new SourceMaps({ pid });
      this.sourceMaps.set(pid, maps);
    }
    const flat = lists.flatMap((l) => l ?? []);
    let mapped;
    try {
      // (interpreted, baseline or optimized: a JS frame to the map, which gives back its kind)
      mapped = flat.map((f, i) => (f.kind === 'unnamed' || f.kind === 'builtin' ? f : { ...maps.map({ ...f, kind: 'js' }, flat[i + 1]), kind: f.kind }));
    } catch (err) {
      // (a map is the traced process's: what it does never stops the naming)
      this.#note(pid, `source maps not read: ${/** @type {Error} */ (err).message}`);
      return lists;
    }
    let at = 0;
    return lists.map((l) => l && mapped.slice(at, (at += l.length)));
  }

  /** The names of kernel addresses (innermost first, as given). */
  kernel(addresses) {
    return this.#names('k', addresses, (todo) => this.symbolizer.kernel(todo).map((f) => [frameName(f)])).map((f) => f[0]);
  }

  /** Reads the kernel's symbols (/proc/kallsyms) on the libuv thread pool, for `kernel()` to come: resolves once they are read. */
  loadKernel() {
    return this.symbolizer.preloadKernel();
  }

  /**
   * The names of user-space addresses of process `pid`, one per address
   * (the physical function: see `frames` for the inlined ones): `[unknown]`
   * where no symbol covers the address, and for every address once the
   * process is gone (symbolize while it runs).
   */
  user(pid, addresses) {
    return this.#user(pid, addresses).map((f) => f[f.length - 1]);
  }

  /** The frames of user-space addresses of process `pid`, innermost first: an address in JIT code that holds an inlined function's code gives two. */
  frames(pid, addresses) {
    return this.#user(pid, addresses).flat();
  }

  /**
   * The frames of each user-space address of process `pid`: one list per
   * address, innermost first, the physical function last (as pprof's
   * Location lines: the functions inlined into the last one before it).
   * @returns {string[][]}
   */
  userFrames(pid, addresses) {
    return this.#user(pid, addresses).map((f) => [...f]);
  }

  /**
   * Ends a window (an interval of counting) for processes `pids`: their
   * JIT frames are named from the perf map lines written until now, not by
   * code compiled after (the decoding's own, which can reuse a sampled
   * address; the last line for an address wins).
   * @param {Iterable<number>} pids
   */
  endWindow(pids) {
    for (const pid of pids) this.perfMapEnds.set(pid, this.symbolizer.perfMapSize(pid));
  }

  /** Symbolizes, in one call, every address not seen yet. */
  prefetch(pid, addresses) {
    this.#user(pid, addresses);
  }

  /**
   * Why frames were left unnamed since the last call (`pid 42: ...`: its
   * maps not readable, its jitdump cut short, the naming's time budget
   * spent), each distinct reason once over the symbolizer's life, unescaped:
   * for a tool to print (escapeText) as it goes, or at its end.
   * @returns {string[]}
   */
  takeNotes() {
    for (const reason of this.v8.notes?.keys() ?? []) if (!this.notes.has(reason)) this.notes.set(reason, false);
    const fresh = [...this.notes].filter(([, taken]) => !taken).map(([reason]) => reason);
    for (const reason of fresh) this.notes.set(reason, true);
    return fresh;
  }

  /** Notes `reason` about process `pid` (once). */
  #note(pid, reason) {
    const key = `pid ${pid}: ${reason}`;
    if (!this.notes.has(key) && this.notes.size < MAX_NOTES) this.notes.set(key, false);
  }

  /** What the JIT naming of process `pid` has: `{ dump, maglevInlining, error }` (`dump`: a JitDump, or null without --perf-prof). */
  jitOf(pid) {
    if (!this.jit.has(pid)) {
      let entry;
      try {
        const flags = jitdump.nodeFlags(pid);
        let dump = null;
        const file = jitdump.findJitDump(pid, flags);
        if (file) dump = new jitdump.JitDump(file);
        const maglevInlining = !jitdump.flagOn(flags, '--no-maglev-inlining') && !jitdump.flagOn(flags, '--no-maglev');
        entry = { dump, maglevInlining, error: null };
      } catch (err) {
        // (its /proc entries gone, or not ours to read: the perf map alone names its JIT frames)
        entry = { dump: null, maglevInlining: false, error: err };
        this.#note(pid, `its jitdump not looked for: ${err.message}`);
      }
      this.jit.set(pid, entry);
    }
    return this.jit.get(pid);
  }

  /**
   * Notes, once per process, that its files are not ours to read: another
   * user's process, or a non-dumpable one, without CAP_SYS_PTRACE (its
   * binaries through /proc/PID/root and map_files refused, its frames
   * [unknown] but what its perf map names).
   */
  #lookAt(pid) {
    if (this.unreadable.has(pid)) return;
    if (this.unreadable.size >= MAX_NOTES) this.unreadable.clear();
    let why = null;
    try {
      fs.readlinkSync(`/proc/${pid}/exe`);
    } catch (err) {
      // (gone: said by the frames, [unknown] once it is)
      if (err.code !== 'ENOENT' && err.code !== 'ESRCH') why = `/proc/${pid}/exe: ${err.code ?? err.message} (another user's process, or a non-dumpable one: run as root, or with CAP_SYS_PTRACE)`;
    }
    this.unreadable.set(pid, why);
    if (why) this.#note(pid, `its user-space frames are not named: ${why}`);
  }

  #user(pid, addresses) {
    return this.#names(pid, addresses, (todo) => {
      this.#lookAt(pid);
      let found;
      try {
        found = this.symbolizer.process(pid, todo, this.perfMapEnds.get(pid));
      } catch (err) {
        // gone (ENOENT), or not ours to read (EACCES, EPERM: another user's process, a non-dumpable one): unnamed
        if (err.code !== 'ENOENT' && !this.unreadable.get(pid)) this.#note(pid, `its user-space frames are not named: ${err.message}`);
        return todo.map(() => [frameName({})]);
      }
      const jit = this.jitOf(pid);
      if (jit.dump) {
        try {
          jit.dump.refresh();
        } catch (err) {
          jit.error ??= err; // said once by the tool; the perf map still names what it can
          this.#note(pid, `its jitdump is not read: ${err.message}: inlined JavaScript functions are not named`);
        }
        const d = jit.dump;
        if (d.limited) this.#note(pid, `${d.file}: read up to ${d.limited}: code compiled later is named from the perf map alone`);
        if (d.malformed) this.#note(pid, `${d.file}: read up to a malformed record (${d.malformed})`);
        if (d.truncated) this.#note(pid, `${d.file}: only its first ${jitdump.MAX_BYTES >> 20} MiB read: code compiled later is named from the perf map alone`);
      }
      return found.map((frame, i) => {
        const inDump = jit.dump?.frames(todo[i]);
        if (inDump) return inDump;
        const name = frameName(frame);
        // V8 writes its jitdump through a stdio buffer: code not in it yet may be, next time
        if (jit.dump && name === '[unknown]') return Object.assign([name], { retry: true });
        // a perf map's Maglev frame: whether it holds inlined code is not known
        if (jit.maglevInlining && /^JS:o?\+/.test(frame?.name ?? '')) return [`${name} ${MAY_HOLD_INLINED}`];
        return [name];
      });
    });
  }

  #names(key, addresses, lookup) {
    if (!this.cache.has(key)) this.cache.set(key, new Map());
    const known = this.cache.get(key);
    const todo = [...new Set(addresses.filter((a) => !known.has(a)))];
    const fresh = new Map();
    if (todo.length) lookup(todo).forEach((frames, i) => (frames.retry ? fresh : known).set(todo[i], frames));
    return addresses.map((a) => known.get(a) ?? fresh.get(a));
  }
}

/** The most distinct notes kept (a reason names a pid: a system-wide count of many processes). */
const MAX_NOTES = 256;

/** What a perf map's Maglev frame says, as the target may inline there (Node 24 and 26 do, first). */
const MAY_HOLD_INLINED = `[may hold inlined code: run node with ${jitdump.MAGLEV_FLAG} to name it]`;

/**
 * A frame's name: the function, without a JIT frame's tier marker (`~`
 * interpreted, `^` Sparkplug, `+` Maglev, `*` TurboFan; Node 26 marks
 * on-stack-replaced code with an `o` before it: `JS:o*hotLoop`, and
 * context-specialized code with a `'` after it: `JS:+'processImmediate`):
 * `JS:*hotLoop file.js:3:18` is `hotLoop file.js:3:18`, `JS:~ file.js:9:5`
 * is `(anonymous) file.js:9:5`; or `[unknown]`.
 */
function frameName(frame) {
  if (!frame?.name) return '[unknown]';
  const js = /^(?:JS|LazyCompile|Function|Script|Builtin|Eval|RegExp|InterpretedFunction):o?[*~^+]?'?(.*)$/.exec(frame.name);
  if (!js) return withoutParameters(frame.name);
  return js[1] === '' || js[1].startsWith(' ') ? `(anonymous)${js[1]}` : js[1];
}

/** A demangled C++ name without its parameter list: `v8::Function::Call(v8::Local<v8::Context>, ...) const` is `v8::Function::Call`. */
function withoutParameters(name) {
  const end = name.replace(/ const$/, '');
  if (!end.endsWith(')') || end.endsWith('(anonymous namespace)')) return name;
  let depth = 0;
  for (let i = end.length - 1; i > 0; i--) {
    if (end[i] === ')') depth++;
    else if (end[i] === '(' && --depth === 0) return end.slice(0, i);
  }
  return name;
}

/**
 * Every counted stack of an object whose `counts` hash map is keyed by
 * `{ pid, kernel_stack, user_stack, comm }` (stack ids in the `stacks`
 * map, or -errno; see bpf/stackcount.h) with a count as value:
 * `[{ pid, comm, count, kernel: [address], user: [address], lost, cgroup? }]`,
 * innermost frame first. `lost`: a stack the kernel could not keep (its
 * map was full). `del`: empty the counts as they are
 * read (for interval reports). `cgroup`: the key's cgroup id, where it
 * has one (not 0: bpf/filter.bpf.h's per_container). `v8`: the stack's JS
 * frames as the kernel walked them (the key's v8_stack in the object's
 * v8_stacks map, bpf/v8.bpf.h; lib/frames/v8.js), where it has them;
 * `options.v8` gives the walked stacks already read.
 */
function readStacks(obj, { counts = 'counts', stacks = 'stacks', del = false, v8 = undefined } = {}) {
  // 64-bit fields as BigInt: the key's v8_stack is a hash (counts and cgroup ids are numbers below)
  const countMap = obj.getMap(counts);
  const entries = del ? countMap.lookupAndDeleteBatch() : countMap.getBatch();
  // the JS frames the kernel walked (bpf/v8.bpf.h), where the object walks them
  const walked = v8 ?? (hasMap(obj, 'v8_stacks') ? new V8Frames().readStacks(obj) : new Map());
  const stack = stackReader(obj, stacks);
  return entries.map(([key, count]) => ({
    pid: key.pid,
    comm: key.comm,
    count: Number(count),
    kernel: stack(key.kernel_stack),
    user: stack(key.user_stack),
    lost: lostStack(key.kernel_stack) || lostStack(key.user_stack),
    ...(key.cgroup && { cgroup: Number(key.cgroup) }),
    ...(key.v8_stack && walked.has(key.v8_stack) && { v8: walked.get(key.v8_stack) }),
  }));
}

/**
 * The addresses of a stack key of `obj`'s `name` map (bpf/stacks.bpf.h: a
 * hash map of stacks by a 64-bit hash), innermost first, up to the 0 after
 * the last; [] for -errno. Cached per key.
 */
function stackReader(obj, name = 'stacks') {
  const map = obj.getMap(name);
  const cache = new Map();
  return (id) => {
    if (id < 0) return [];
    if (!cache.has(id)) {
      const ips = map.get(id)?.ips ?? [];
      const end = ips.indexOf(0n);
      cache.set(id, end < 0 ? ips : ips.slice(0, end));
    }
    return cache.get(id);
  };
}

/** Whether stack key `id` (bpf/stacks.bpf.h's stack_id, a BigInt) is a stack that was not kept: not -EFAULT (no stack). */
function lostStack(id) {
  return id < 0 && Number(id) !== -EFAULT;
}

/** Whether `obj` has a map named `name`. */
function hasMap(obj, name) {
  try {
    obj.getMap(name);
    return true;
  } catch {
    return false;
  }
}

/**
 * The user frames of each of `entries` (readStacks'), innermost first, as
 * flat lists of names: a JS frame the kernel walked named from V8's data
 * (its inlined functions first), else the symbolizer's name of its address.
 * `inlined`: entry -> the indices of the names that are functions V8 inlined
 * into the frame after them (absent: none); `frameless`: entry -> the
 * indices of native names that ran without a frame of their own, called by
 * the JS frame after them (a builtin, on its caller's frame).
 */
function userNames(entries, symbolizer) {
  const out = new Map(); // entry -> [name]
  const inlined = new Map(); // entry -> [index]
  const framelessOf = new Map(); // entry -> [index]
  const byPid = new Map(); // pid -> [[entry, aligned]]
  for (const e of entries) {
    if (e.lost) out.set(e, ['[lost stack]']);
    else if (e.v8 && symbolizer.v8) {
      if (!byPid.has(e.pid)) byPid.set(e.pid, []);
      byPid.get(e.pid).push([e, symbolizer.v8.align(e.user, e.v8)]);
    }
  }
  for (const [pid, list] of byPid) {
    const named = symbolizer.v8.namesOf(pid, list.flatMap(([, aligned]) => aligned));
    let at = 0;
    for (const [e, aligned] of list) {
      const js = symbolizer.mapSources ? symbolizer.mapSources(pid, named.slice(at, at + aligned.length)) : named.slice(at, at + aligned.length);
      at += aligned.length;
      const native = symbolizer.userFrames ? symbolizer.userFrames(e.pid, e.user) : symbolizer.user(e.pid, e.user).map((n) => [n]);
      // a frame V8's data could not name loses to the perf map's name, and wins over none
      const useJs = (i) => js[i] && (js[i][0].kind !== 'unnamed' || native[i].every((n) => n === '[unknown]'));
      // (entered: the sampled pc is in a function the JS frame called that runs without a frame of its own,
      // named by its symbol above it; it runs no code V8 inlined: no mark)
      const entered = (i) => (js[i][js[i].length - 1].entered ? native[i].map((n) => n.replace(` ${MAY_HOLD_INLINED}`, '')) : []);
      const names = [];
      const marks = [];
      const frameless = [];
      for (let i = 0; i < e.user.length; i++) {
        if (!useJs(i)) {
          names.push(...native[i]);
          continue;
        }
        for (const n of entered(i)) frameless.push(names.push(n) - 1);
        // (every function of the frame but its last, the physical one, was inlined into the next)
        for (let j = 0; j < js[i].length - 1; j++) marks.push(names.length + j);
        names.push(...js[i].map((f) => f.label));
      }
      out.set(e, names);
      if (marks.length) inlined.set(e, marks);
      if (frameless.length) framelessOf.set(e, frameless);
    }
  }
  for (const e of entries) {
    if (!out.has(e)) out.set(e, symbolizer.frames ? symbolizer.frames(e.pid, e.user) : symbolizer.user(e.pid, e.user));
  }
  return { names: out, inlined, frameless: framelessOf };
}

/** The C++ function a node worker thread runs its event loop under (Node 20-26). */
const WORKER_RUN = /^node::worker::Worker::Run\b/;

/**
 * A thread's label from its comm and its user frames' names: a node worker
 * thread (its stack runs under node::worker::Worker::Run) is `worker NAME`,
 * NAME the `name` given to `new Worker`, which node 24 on makes the thread's
 * comm (at most 15 bytes); `worker` where node gives the thread none of its
 * own (Node 20 and 22 name every thread `node`; 24 on, an unnamed worker
 * `WorkerThread`). Any other thread: its comm.
 * @param {string} comm
 * @param {string[]} names
 */
function threadLabel(comm, names) {
  if (!names.some((n) => WORKER_RUN.test(n))) return comm;
  return comm === 'node' || comm === 'WorkerThread' ? 'worker' : `worker ${comm}`;
}

/**
 * Names the frames of `readStacks` entries (innermost first) and merges the
 * stacks that name the same frames: `[{ pid, comm, count, kernel: [name],
 * user: [name], inlined?, frameless?, cgroup? }]`, most counted first;
 * `comm` a worker thread's label (threadLabel); `inlined` the indices in
 * `user` of the functions V8 inlined into the frame after them; `frameless`
 * those of native functions that ran without a frame of their own, on the
 * frame of the JS function after them (a builtin it called: V8's profiler
 * charges such a sample to that function's caller). A lost stack has one
 * frame, `[lost stack]`.
 */
function symbolize(entries, symbolizer) {
  const byPid = new Map();
  for (const e of entries) {
    if (!byPid.has(e.pid)) byPid.set(e.pid, []);
    for (const a of e.user) byPid.get(e.pid).push(a);
  }
  for (const [pid, addresses] of byPid) symbolizer.prefetch(pid, addresses);
  const merged = new Map();
  const users = userNames(entries, symbolizer);
  for (const e of entries) {
    const user = users.names.get(e);
    const stack = {
      pid: e.pid,
      comm: threadLabel(e.comm, user),
      kernel: symbolizer.kernel(e.kernel),
      user,
      ...(users.inlined.has(e) && { inlined: users.inlined.get(e) }),
      ...(users.frameless.has(e) && { frameless: users.frameless.get(e) }),
      ...(e.cgroup && { cgroup: e.cgroup }),
    };
    const key = JSON.stringify([stack.pid, stack.comm, stack.cgroup, stack.kernel, stack.user, stack.frameless]);
    const seen = merged.get(key);
    if (seen) seen.count += e.count;
    else merged.set(key, { ...stack, count: e.count });
  }
  return [...merged.values()].sort((a, b) => b.count - a.count);
}

/**
 * Folded stacks, one line per stack, root first: `comm;user frames;kernel
 * frames count` (`container;comm;...` where a stack has a `container`),
 * kernel frames marked `_[k]` (as flamegraph.pl and inferno color them),
 * control characters escaped (lib/core/format.js `escapeText`);
 * the same line twice is counted once.
 */
function foldStacks(stacks) {
  const lines = new Map();
  for (const s of stacks) {
    const frames = [...(s.container === undefined ? [] : [s.container]), s.comm, ...[...s.user].reverse(), ...[...s.kernel].reverse().map((f) => `${f}_[k]`)];
    const line = frames.map((f) => escapeText(f.replace(/;/g, ':').replace(/\s+/g, ' '))).join(';');
    lines.set(line, (lines.get(line) ?? 0) + s.count);
  }
  return [...lines]
    .sort((a, b) => b[1] - a[1])
    .map(([line, count]) => `${line} ${count}`)
    .join('\n');
}

/**
 * One stack as bcc's stackcount prints it: kernel frames, `--`, user
 * frames (innermost first), the thread (and its `container`, where the
 * stack has one: lib/host/cgroup.js containerLabel) and its count; names and
 * `comm` with their control characters escaped.
 */
function formatStack(s) {
  const lines = s.kernel.map((f) => `    ${escapeText(f)}`);
  if (s.kernel.length && s.user.length) lines.push('    --');
  lines.push(...s.user.map((f) => `    ${escapeText(f)}`));
  lines.push(`    ${escapeText(s.comm)} [${s.pid}]${s.container === undefined ? '' : ` ${escapeText(s.container)}`}`, `      ${s.count}`);
  return lines.join('\n');
}

/**
 * Whether process `pid` has a perf map (`node --perf-basic-prof` writes
 * one): /tmp/perf-PID.map, in a container /tmp/perf-NSPID.map of its own
 * /tmp (lib/host/procfs.js perfMapPath).
 */
function hasPerfMap(pid) {
  try {
    return fs.existsSync(perfMapPath(pid));
  } catch {
    return false; // gone
  }
}

module.exports = { StackSymbolizer, threadLabel, frameName, readStacks, stackReader, lostStack, symbolize, foldStacks, formatStack, hasPerfMap };
