'use strict';
/**
 * Profiles of this process, in process (bpf/profile.bpf.c): where its
 * threads spend the CPU and where its main thread waits off it, with
 * kernel, native and JavaScript frames in one stack, for a window of N
 * seconds at a time, as pprof (Pyroscope, Parca, `go tool pprof`), folded
 * stacks or a flame graph.
 *
 *   const profiler = bpf.profile();                   // loads; samples nothing yet
 *   const w = await profiler.collect({ seconds: 10 });  // samples for 10 s
 *   fs.writeFileSync('cpu.pb.gz', w.pprof('cpu'));      // or 'offCpu'
 *   http.createServer((req, res) => profiler.handler()(req, res) || app(req, res));
 *   profiler.close();
 *
 * Nothing runs in the kernel between windows (as Go's /debug/pprof/profile):
 * a window attaches its CPU sampler (the kernel's tick, lib/service/tick.js,
 * or a cpu-clock perf event on every CPU; filtered to this process in the
 * program) and, for off-CPU stacks, tp_btf sched_switch; at
 * its end it detaches them, reads the counts and empties the maps. One
 * window at a time: a second collect() while one runs is ERR_BPF_BUSY (the
 * handler's 409).
 *
 * JavaScript frames are named from V8's own data, no node flags needed: the
 * programs walk the stack's JS frames in the kernel (bpf/v8.bpf.h) and
 * lib/frames/v8.js names them (function, file, line; inlined functions)
 * from this process's memory at the window's end. Where that fails (an
 * unknown V8), from the perf map node writes when started with
 * --perf-basic-prof (or --perf-basic-prof-only-functions with
 * --interpreted-frames-native-stack); without either, JIT frames are named
 * `[JIT code: run node with --perf-basic-prof]` and the profile says so
 * in a comment.
 */
const fs = require('node:fs');
const { isMainThread } = require('node:worker_threads');
const native = require('../core/native');
const { loadBpfProgram } = require('../core/object');
const { objectPath } = require('../core/objects');
const { codedError } = require('../core/validate');
const { escapeText } = require('../core/format');
const stacks = require('../frames/stacks');
const pprof = require('./pprof');
const { toCpuProfile } = require('./cpuprofile');
const { SourceMaps } = require('../frames/sourcemap');
const tick = require('./tick');
const labels = require('./labels');
const traceContext = require('./trace_context');
const { kernelIds, inInitialNamespace, checkOwnProc } = require('../host/pidns');

const EFAULT = 14;
const DEFAULT_FREQUENCY = 99;
const MAX_FREQUENCY = 1000;
const DEFAULT_MAX_SECONDS = 300;
/** How often a window names the JS frames of its new stacks (V8Frames.prime): on-stack-replacement code lives about a GC cycle */
const PRIME_MS = 500;
const NO_KALLSYMS = '[kernel: names need CAP_SYSLOG or kernel.perf_event_paranoid <= 1]';
const BROKEN_CHAIN = '[not code: the frame chain broke (a library without frame pointers)]';
const NO_PERF_MAP = '[JIT code: run node with --perf-basic-prof]';
const KIND_NAMES = ['cpu', 'offCpu'];
/** Where clock 'auto' takes the kernel's tick: the architectures whose interrupt entry lib/service/tick.js cuts, checked by a run. */
const TICK_ARCHES = ['x64', 'arm64'];

/**
 * This process's ids as the kernel sees them (`{ tgid, tids }`: `tids` a
 * Map of its tids here to the kernel's, null on the host, where they are
 * the same): lib/host/pidns.js translates them inside a pid namespace.
 */
function ownIds() {
  checkOwnProc(); // (ERR_BPF_PROC_MOUNT: /proc/PID would be another process)
  if (inInitialNamespace()) return { tgid: process.pid, tids: null };
  const ids = kernelIds(process.pid);
  return { tgid: ids.tgid, tids: ids.tids };
}

/** The executable mappings of this process (/proc/self/maps), sorted by start. */
function readMappings() {
  const out = [];
  for (const line of fs.readFileSync('/proc/self/maps', 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) ([0-9a-f]+) \S+ (\d+)\s*(.*)$/.exec(line);
    if (!m || !m[3].includes('x')) continue;
    const file = m[6].startsWith('/') && m[5] !== '0';
    // [vdso], [vsyscall]: the kernel's code in user space; anonymous (and [anon:...]) executable memory: JIT code
    const special = /^\[(?!anon:)/.test(m[6]);
    const path = file ? m[6].replace(/ \(deleted\)$/, '') : special ? m[6] : '[jit]';
    out.push({ start: Number.parseInt(m[1], 16), end: Number.parseInt(m[2], 16), offset: Number.parseInt(m[4], 16), path, file, jit: !file && !special });
  }
  return out.sort((a, b) => a.start - b.start);
}

/** The mapping of `maps` that holds `address`, or undefined. */
function mappingAt(maps, address) {
  let lo = 0;
  let hi = maps.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (address < maps[mid].start) hi = mid - 1;
    else if (address >= maps[mid].end) lo = mid + 1;
    else return maps[mid];
  }
  return undefined;
}

/** A JIT frame from its name: `fn file:line:column` is JavaScript. */
function jsFrame(name) {
  const js = /^(.*) (\S+):(\d+):(\d+)$/.exec(name);
  return js ? { name: js[1], kind: 'js', file: js[2], line: Number(js[3]), label: name } : { name, kind: 'jit', label: name };
}

/**
 * What a thread is, by its name (/proc/self/task/TID/comm; Node 20 and 22 name them all `node`)
 * and `thread` (its label, stacks.threadLabel: `worker…` for a node worker thread).
 */
function threadKind(tid, comm, { tgid, library, thread = comm }) {
  if (tid === tgid) return 'main';
  if (library.has(tid)) return 'node-libbpf';
  if (thread.startsWith('worker') && thread !== comm) return 'worker';
  if (comm === 'libuv-worker') return 'libuv pool';
  if (/V8Worker$/.test(comm)) return 'V8 worker';
  if (comm === 'DelayedTaskSche') return 'V8 delayed tasks';
  if (comm === 'SignalInspector' || comm === 'inspector') return 'inspector';
  return 'other';
}

function checkSeconds(seconds, max, what) {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0 || seconds > max) {
    throw codedError('ERR_BPF_INVALID_VALUE', `${what}: seconds must be a number above 0 and at most ${max}, got ${seconds}`);
  }
}

/**
 * What runs the off-CPU program (bpf/profile.bpf.c): 'sched_switch', the
 * tracepoint, runs on every switch of every task of the machine (~0.3 µs
 * each on the 2-vCPU VM of docs/performance.md); 'context-switches', a perf
 * event of the main thread alone, runs on that thread's switches only but
 * makes each of them pay perf's per-task context switch (~2.7 µs per switch
 * out and back in there): the cheaper where the machine switches more than
 * ~10 times as often as the main thread (many busy CPUs), not on a small
 * host whose main thread switches at every request. It needs the kernel's
 * sched_info (CONFIG_SCHED_INFO: /proc/PID/schedstat) and the profiler on
 * the main thread (which makes a switch at each window's end to count the
 * last interval). The default: 'sched_switch'.
 */
function checkOffCpuEvent(event) {
  if (event !== 'context-switches') return;
  if (!isMainThread) throw codedError('ERR_BPF_NOT_SUPPORTED', "profile({ offCpuEvent: 'context-switches' }): the profiler must run on the main thread (it ends each window with a switch of that thread); use 'sched_switch' in a worker");
  if (!fs.existsSync(`/proc/${process.pid}/schedstat`)) throw codedError('ERR_BPF_NOT_SUPPORTED', "profile({ offCpuEvent: 'context-switches' }): this kernel keeps no sched_info (no /proc/PID/schedstat: CONFIG_SCHED_INFO is off); use 'sched_switch'");
}

function checkOptions(options) {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw codedError('ERR_INVALID_ARG_TYPE', `profile(options): options must be an object, got ${options}`);
  }
  const known = ['frequency', 'clock', 'threads', 'offCpu', 'offCpuEvent', 'minOffCpu', 'idle', 'preempted', 'maxSeconds', 'v8', 'sourceMaps', 'traceContext'];
  const unknown = Object.keys(options ?? {}).filter((k) => !known.includes(k));
  if (unknown.length) throw codedError('ERR_BPF_UNKNOWN_NAME', `profile(): no option named ${unknown.join(', ')}; the options are ${known.join(', ')}`);
  const o = { frequency: DEFAULT_FREQUENCY, clock: 'auto', threads: 'all', offCpu: true, offCpuEvent: 'sched_switch', minOffCpu: 0.001, idle: false, preempted: false, maxSeconds: DEFAULT_MAX_SECONDS, v8: true, sourceMaps: true, traceContext: false, ...options };
  if (!OFF_CPU_EVENTS.includes(o.offCpuEvent)) {
    throw codedError('ERR_BPF_INVALID_VALUE', `profile(): offCpuEvent is what runs the off-CPU program, ${OFF_CPU_EVENTS.map((e) => `'${e}'`).join(' or ')} (default 'sched_switch'), got ${o.offCpuEvent}`);
  }
  if (o.offCpu) checkOffCpuEvent(o.offCpuEvent);
  if (typeof o.frequency !== 'number' || !Number.isInteger(o.frequency) || o.frequency < 1 || o.frequency > MAX_FREQUENCY) {
    throw codedError('ERR_BPF_INVALID_VALUE', `profile(): frequency is samples per second per CPU, an integer from 1 to ${MAX_FREQUENCY} (default ${DEFAULT_FREQUENCY}), got ${o.frequency}`);
  }
  if (!CLOCKS.includes(o.clock)) {
    throw codedError('ERR_BPF_INVALID_VALUE', `profile(): clock is what takes the CPU samples, 'auto' (default: 'tick' where it can, with the default frequency, else 'cpu-clock'), 'cpu-clock' (a perf event's timer, at the frequency asked) or 'tick' (the kernel's tick, every Nth: no interrupt of its own), got ${o.clock}`);
  }
  if (o.threads !== 'all' && o.threads !== 'main') {
    throw codedError('ERR_BPF_INVALID_VALUE', `profile(): threads is the threads CPU samples are taken of, 'all' (default: every thread of this process, on every CPU) or 'main' (the main thread alone: with cpu-clock, one event that follows it), got ${o.threads}`);
  }
  if (typeof o.minOffCpu !== 'number' || !(o.minOffCpu >= 0 && o.minOffCpu <= 60)) {
    throw codedError('ERR_BPF_INVALID_VALUE', `profile(): minOffCpu is the shortest off-CPU interval counted, in seconds (0 to 60, default 0.001), got ${o.minOffCpu}`);
  }
  if (typeof o.maxSeconds !== 'number' || !(o.maxSeconds > 0 && o.maxSeconds <= 86400)) {
    throw codedError('ERR_BPF_INVALID_VALUE', `profile(): maxSeconds is the longest window, in seconds (at most 86400, default ${DEFAULT_MAX_SECONDS}), got ${o.maxSeconds}`);
  }
  for (const k of ['offCpu', 'idle', 'preempted', 'v8', 'sourceMaps']) if (typeof o[k] !== 'boolean') throw codedError('ERR_INVALID_ARG_TYPE', `profile(): ${k} is true or false, got ${o[k]}`);
  traceContext.checkOption(o.traceContext); // (and @opentelemetry/api is there)
  return o;
}

/** One window's stacks, named: `cpu` and `offCpu` (see lib/service/pprof.js), and how to export them. */
class ProfileWindow {
  constructor(data) {
    Object.assign(this, data);
    // declarations for the type check (no-ops): the fields come from `data` (Profiler's #read)
    /** @type {number} */
    this.frequency;
    /** @type {number} */
    this.durationNs;
  }

  /** The window's `kind` ('cpu' or 'offCpu') profile as gzipped pprof (a Buffer). */
  pprof(kind = 'cpu') {
    checkKind(kind);
    return pprof.encode(this, kind);
  }

  /**
   * The window's `kind` ('cpu', 'offCpu' or 'all') as OTLP profiles (lib/service/otlp.js): an encoded ExportProfilesServiceRequest (a Buffer).
   * @param {'cpu' | 'offCpu' | 'all'} [kind]
   * @param {{ serviceName?: string, attributes?: Record<string, string | number | boolean> }} [options]
   */
  otlp(kind = 'cpu', options = {}) {
    return require('./otlp').encode(this, kind, options);
  }

  /**
   * Folded stacks (`thread;outer;...;inner value`, kernel frames marked
   * `_[k]`), as flame graph tools and Pyroscope's `format=folded` take
   * them: values are samples (cpu) or microseconds (offCpu). `labels`
   * (true, or the names of those wanted) puts the stack's request labels
   * first, as frames `name=value`, in the order asked (true: by name).
   * @param {'cpu' | 'offCpu'} [kind]
   * @param {{ labels?: boolean | string[] }} [options]
   */
  folded(kind = 'cpu', options = {}) {
    checkKind(kind);
    const which = checkFoldedLabels(options);
    const fold = (list) =>
      stacks.foldStacks(
        list.map((s) => ({
          comm: s.thread,
          user: s.frames.filter((f) => f.kind !== 'kernel').flatMap((f) => [...(f.inlined ?? []).map((i) => i.label), f.label]),
          kernel: s.frames.filter((f) => f.kind === 'kernel').map((f) => f.name),
          count: kind === 'cpu' ? s.count : Math.round(s.ns / 1000),
        })),
      );
    if (!which) return fold(this[kind]);
    // (folded by label set, each set's frames put before its lines)
    const groups = new Map();
    for (const s of this[kind]) {
      const prefix = labelFrames(s.labels, which).join(';');
      if (!groups.has(prefix)) groups.set(prefix, []);
      groups.get(prefix).push(s);
    }
    const lines = [];
    for (const [prefix, list] of groups) {
      for (const line of fold(list).split('\n')) if (line) lines.push({ line: prefix ? `${prefix};${line}` : line, count: Number(line.slice(line.lastIndexOf(' ') + 1)) });
    }
    return lines
      .sort((a, b) => b.count - a.count)
      .map((l) => l.line)
      .join('\n');
  }

  /**
   * The window's `kind` stacks as a `.cpuprofile` (the JSON object `node
   * --cpu-prof` writes: Chrome DevTools, VS Code, speedscope): the main
   * thread's by default, `{ thread: 'all' }` every thread's (each under a
   * node named after it) or `{ thread: tid }` one's. Samples are laid out
   * stack by stack, a sampling period apart (off CPU: 1 ms each): the
   * totals are right, the timeline's order is not the order they ran in
   * (lib/service/cpuprofile.js).
   * @param {'cpu' | 'offCpu'} [kind]
   * @param {{ thread?: 'main' | 'all' | number }} [options]
   */
  cpuprofile(kind = 'cpu', options = {}) {
    checkKind(kind);
    return toCpuProfile(/** @type {any} */ (this), kind, options);
  }

  /**
   * A flame graph (SVG, inferno) of the window's `kind` stacks; `labels` as folded()'s.
   * @param {'cpu' | 'offCpu'} [kind]
   * @param {any} [options]
   */
  flameGraph(kind = 'cpu', options = {}) {
    const title = kind === 'cpu' ? `CPU, ${this.frequency} Hz, ${this.durationNs / 1e9} s` : `Off CPU (main thread), ${this.durationNs / 1e9} s`;
    // (labels: the stacks' labels as their first frames, folded's option)
    const { labels: which, ...rest } = options ?? {};
    return native.flameGraph(this.folded(kind, { labels: which }), { title, countName: kind === 'cpu' ? 'samples' : 'µs', ...rest });
  }
}

function checkFoldedLabels(options) {
  if (options === null || typeof options !== 'object') throw codedError('ERR_INVALID_ARG_TYPE', `folded(kind, options): options must be an object ({ labels: true }), got ${options}`);
  const { labels: which = false } = options;
  if (which === true || which === false) return which;
  if (!Array.isArray(which) || which.some((k) => typeof k !== 'string')) throw codedError('ERR_INVALID_ARG_TYPE', `folded(kind, { labels }): labels is true, false or the names of the labels to put first (['route']), got ${which}`);
  return which;
}

/** A stack's labels as its first folded frames (`route=/a`), `;` kept out of them. */
function labelFrames(stackLabels = {}, which) {
  const names = which === true ? Object.keys(stackLabels).sort() : which;
  return names.filter((k) => stackLabels[k] !== undefined).map((k) => escapeText(`${k}=${String(stackLabels[k])}`.replace(/;/g, ':').replace(/\s+/g, ' ')));
}

function checkKind(kind) {
  if (!KIND_NAMES.includes(kind)) throw codedError('ERR_BPF_INVALID_VALUE', `a profile's kind is 'cpu' or 'offCpu', got ${kind}`);
}

// closed on garbage collection, as a BpfObject is
const forgotten = new FinalizationRegistry((obj) => {
  if (obj.closed) return;
  obj.close();
  process.emitWarning('a profiler was closed on garbage collection; close it with profiler.close() when done', 'NodeLibbpfWarning');
});

class Profiler {
  #obj;
  #options;
  #ids;
  #symbolizer;
  #busy = null; // what holds the window: 'a collect()', 'a push to URL'
  #abort = null; // ends the running window early
  #pushes = new Set();
  #v8Error = null; // why JS frames are not walked (lib/frames/v8.js), or null
  #walk = null; // the walked stacks, kept from window to window (V8Frames.walkState), or null
  #clock = 'cpu-clock'; // what takes the CPU samples: 'tick' or 'cpu-clock' ('auto' resolved)
  #clockWhy = null; // clock 'auto' where the tick could not be used: why
  #sourceMaps = null; // JS frames at their source-mapped places (lib/frames/sourcemap.js), or null: sourceMaps: false
  #labels = null; // where the programs read this thread's label id (lib/service/labels.js registration), or null
  #labelsRelease = null; // ends the word's hook (no AsyncContextFrame), or null
  #traceStop = null; // ends traceContext's labels (lib/service/trace_context.js), or null

  /**
   * The tick's hrtimer functions (lib/service/tick.js), or none for cpu-clock.
   * 'auto' takes the tick where it can (x86_64 and arm64, where its kernel
   * stacks are cut at the interrupt's entry: __test__/tick.test.js, on the
   * host and in the arm64 row of test:kernels) unless a frequency was asked
   * for (`asked`: the tick gives a whole fraction of CONFIG_HZ, cpu-clock
   * that frequency).
   */
  #tickFunctions(asked) {
    const { clock } = this.#options;
    if (clock === 'tick') return tick.tickFunctions();
    if (clock !== 'auto' || asked || !TICK_ARCHES.includes(process.arch)) return [];
    try {
      return tick.tickFunctions();
    } catch (err) {
      this.#clockWhy = err.message;
      return [];
    }
  }

  /** Not for users: `bpf.profile(options)` makes one. */
  constructor(options) {
    this.#options = checkOptions(options);
    const syscalls = native.syscallNames(process.arch === 'arm64' ? 'arm64' : 'x86_64');
    this.#ids = ownIds();
    const tickFns = this.#tickFunctions(options?.frequency !== undefined);
    this.#clock = tickFns.length ? 'tick' : 'cpu-clock';
    const obj = loadBpfProgram(objectPath('profile'));
    try {
      obj.setGlobalVariable('target_pid', this.#ids.tgid);
      obj.setGlobalVariable('min_offcpu_ns', BigInt(Math.round(this.#options.minOffCpu * 1e9)));
      obj.setGlobalVariable('offcpu_idle', this.#options.idle);
      obj.setGlobalVariable('offcpu_preempted', this.#options.preempted);
      for (const n of ['epoll_wait', 'epoll_pwait', 'epoll_pwait2']) obj.setGlobalVariable(`nr_${n}`, syscalls.indexOf(n));
      // only the off-CPU program that runs is loaded (each is verified with its V8 walk)
      obj.programs.handle_switch.autoload = this.#options.offCpu && this.#options.offCpuEvent === 'context-switches';
      obj.programs.handle_sched_switch.autoload = this.#options.offCpu && this.#options.offCpuEvent === 'sched_switch';
      // and only the CPU sampler of the clock asked for
      obj.programs.handle_sample.autoload = this.#clock !== 'tick';
      obj.programs.handle_tick.autoload = this.#clock === 'tick';
      if (this.#clock === 'tick') {
        obj.setGlobalVariable('tick_fns', tickFns);
        obj.setGlobalVariable('tick_period_ns', BigInt(Math.round(1e9 / this.#options.frequency)));
        obj.setGlobalVariable('tick_main_only', this.#options.threads === 'main');
      }
      obj.load();
    } catch (err) {
      obj.close();
      throw err;
    }
    this.#obj = obj;
    // request labels: this thread's id read at each sample (bpf/labels.bpf.h); the CPED slot calibrated, else the word
    try {
      this.#labels = labels.registration(native);
      obj.getMap('labels_threads').set(this.#kernelTid(this.#labels.tid), { addr: this.#labels.addr, kind: this.#labels.kind === 'cped' ? 1 : 2, table_off: this.#labels.tableOffset });
      if (this.#labels.kind === 'word') this.#labelsRelease = labels.useWord();
    } catch (err) {
      obj.close();
      throw err;
    }
    this.#symbolizer = new stacks.StackSymbolizer(native);
    if (this.#options.sourceMaps) this.#sourceMaps = new SourceMaps({ pid: process.pid });
    // this process's V8 layout: the programs walk its JS frames (bpf/v8.bpf.h); v8: false leaves them to the perf map
    try {
      if (this.#options.v8) this.#v8Error = this.#symbolizer.v8.watch(obj, process.pid, this.#ids.tgid) ?? this.#selfCheck(obj);
      else this.#v8Error = codedError('ERR_V8_OFF', 'profile({ v8: false })');
      if (!this.#v8Error) this.#walk = this.#symbolizer.v8.walkState(obj);
    } catch (err) {
      obj.close();
      throw err;
    }
    forgotten.register(this, obj, this);
    // OpenTelemetry's active span on the samples (lib/service/trace_context.js)
    const traced = traceContext.checkOption(this.#options.traceContext);
    if (traced) this.#traceStop = traceContext.start(traced);
  }

  /**
   * The V8 layout checked on a frame of ours before anything is named with
   * it (V8Frames.selfCheck): the walk records a function of lib/frames/v8.js
   * as it waits 1 ms (the off-CPU program), or spins (the CPU sampler, at
   * 10 kHz on the main thread: 20 ms at most; the tick's: 50 ms). Null, or
   * the ERR_V8_LAYOUT that says its frames are left unnamed.
   */
  #selfCheck(obj) {
    const o = this.#options;
    const detachOf = (link) => () => link.detach();
    let attach;
    let spinMs = 0;
    if (o.offCpu && o.offCpuEvent === 'sched_switch') {
      attach = () => detachOf(obj.attach('handle_sched_switch'));
    } else if (o.offCpu) {
      attach = () => {
        obj.setGlobalVariable('off', { ...obj.getGlobalVariable('off'), start_ns: 0n, nvcsw: 0n, nivcsw: 0n });
        obj.setGlobalVariable('flushing', 0);
        return detachOf(obj.attachPerfEvent('handle_switch', { event: 'context-switches', period: 1, pid: process.pid }));
      };
    } else if (this.#clock !== 'tick') {
      spinMs = 20;
      attach = () => detachOf(obj.attachPerfEvent('handle_sample', { event: 'cpu-clock', period: 100000, pid: process.pid }));
    } else {
      spinMs = 50;
      attach = () => detachOf(obj.attach('handle_tick'));
    }
    const error = this.#symbolizer.v8.selfCheck(obj, process.pid, { kernelPid: this.#ids.tgid, attach, spinMs });
    // (the check's interval off the CPU is no window's)
    obj.setGlobalVariable('off', { ...obj.getGlobalVariable('off'), start_ns: 0n });
    return error;
  }

  /** The options in force (defaults filled in). */
  get options() {
    return { ...this.#options };
  }

  /** Whether close() was called. */
  get closed() {
    return this.#obj === undefined || this.#obj.closed;
  }

  /** Whether a window is being collected (by collect(), the handler or a push). */
  get busy() {
    return this.#busy !== null;
  }

  #check() {
    if (this.closed) throw codedError('ERR_BPF_CLOSED', 'the profiler is closed: start another with bpf.profile()');
  }

  /**
   * Samples for `seconds` (a window), then resolves to a ProfileWindow of
   * its on-CPU and off-CPU stacks. `signal` (an AbortSignal) ends the window
   * early (what was counted until then is kept). Rejects with ERR_BPF_BUSY
   * while another window runs, ERR_BPF_INVALID_VALUE for seconds not in
   * (0, maxSeconds].
   * @param {{ seconds?: number, signal?: AbortSignal }} [options]
   */
  async collect({ seconds, signal } = {}) {
    return this.#collect({ seconds, signal }, 'a collect()');
  }

  async #collect({ seconds, signal }, who) {
    this.#check();
    checkSeconds(seconds, this.#options.maxSeconds, 'profiler.collect()');
    if (this.#busy) throw codedError('ERR_BPF_BUSY', `profiler.collect(): ${this.#busy} is collecting a window; one window at a time (wait for it, or start another profiler)`);
    this.#busy = who;
    // (a request's labels are kept until the window is read)
    labels.holdFor(seconds * 1000);
    const links = [];
    const obj = this.#obj;
    let startNs;
    let startHr;
    try {
      for (const map of this.#windowMaps()) obj.getMap(map).clear();
      const walk = this.#walk;
      if (walk) this.#symbolizer.v8.startWindow(obj, walk);
      const periodNs = Math.round(1e9 / this.#options.frequency);
      startNs = BigInt(Date.now()) * 1000000n;
      startHr = process.hrtime.bigint();
      if (this.#clock === 'tick') {
        // the kernel's tick on every CPU, filtered in the kernel (lib/service/tick.js)
        links.push(obj.attach('handle_tick'));
      } else {
        // every CPU, filtered in the kernel: a perf event for a pid samples only its main thread
        // (threads: 'main': one event that follows the main thread, pid its tid here, on whichever CPU)
        links.push(obj.attachPerfEvent('handle_sample', { event: 'cpu-clock', period: periodNs, ...(this.#options.threads === 'main' && { pid: process.pid }) }));
      }
      const switches = this.#options.offCpu && this.#options.offCpuEvent === 'context-switches';
      if (switches) {
        // no interval open from an earlier window (one that ended by an error)
        obj.setGlobalVariable('off', { ...obj.getGlobalVariable('off'), start_ns: 0n, nvcsw: 0n, nivcsw: 0n });
        obj.setGlobalVariable('flushing', 0);
        // the main thread's own switches, on whichever CPU (pid: its tid here)
        links.push(obj.attachPerfEvent('handle_switch', { event: 'context-switches', period: 1, pid: process.pid }));
      } else if (this.#options.offCpu) links.push(obj.attach('handle_sched_switch'));
      // JS frames named as they come (new stacks only): code V8 drops before the window ends keeps its lines
      const prime = walk ? setInterval(() => {
        try {
          this.#symbolizer.v8.prime(obj, process.pid, walk);
        } catch {
          // (closed meanwhile: the window's end names what is left, or says why)
        }
      }, PRIME_MS) : undefined;
      await new Promise((resolve) => {
        const timer = setTimeout(done, seconds * 1000);
        const abort = () => done();
        function done() {
          clearTimeout(timer);
          clearInterval(prime);
          signal?.removeEventListener('abort', abort);
          resolve();
        }
        this.#abort = done;
        if (signal?.aborted) done();
        else signal?.addEventListener('abort', abort, { once: true });
      });
      this.#abort = null;
      // the interval the main thread came back from last is counted at its next switch: one now
      if (switches && !this.closed) this.#flushOffCpu();
      for (const link of links.splice(0)) link.detach();
      // the perf map as the samples saw it: what is written from here on came after them
      this.#symbolizer.endWindow([process.pid]);
      // the kernel's symbols read on the thread pool (the first window: ~45 ms the event loop keeps),
      // now that no sample is taken beside it
      await this.#symbolizer.loadKernel();
      if (this.closed) throw codedError('ERR_BPF_CLOSED', 'profiler.collect(): the profiler was closed during the window');
      const durationNs = Number(process.hrtime.bigint() - startHr);
      return new ProfileWindow(this.#read({ startNs, durationNs, periodNs }));
    } finally {
      this.#abort = null;
      for (const link of links) link.detach();
      this.#busy = null;
    }
  }

  /** The maps a window empties: the counts and the stacks they name (v8_stacks only where nothing keeps the walked stacks from window to window: this.#walk). */
  #windowMaps() {
    return ['counts', 'offcpu', 'stacks', 'chains', ...(this.#walk ? [] : ['v8_stacks'])];
  }

  /**
   * Ends the off-CPU intervals of a window of handle_switch: the main thread
   * (this one) sleeps for 20 µs, a switch off the CPU, at which the program
   * counts the interval it came back from last and starts none (flushing).
   * A sleep that did not leave the CPU (no switch seen) is tried again.
   */
  #flushOffCpu() {
    const obj = this.#obj;
    obj.setGlobalVariable('flushing', 1);
    const before = obj.getGlobalVariable('flushed');
    for (let i = 0; i < 5 && obj.getGlobalVariable('flushed') === before; i++) Atomics.wait(FLUSH_WORD, 0, 0, 0.02 * 2 ** i);
  }

  /** The window's counts, named, and the maps emptied for the next. */
  #read({ startNs, durationNs, periodNs: asked }) {
    const obj = this.#obj;
    // (clock 'tick': a sample stands for tick_every ticks, at the kernel's CONFIG_HZ)
    const clock = this.#clock === 'tick' ? tick.tickPeriod(Number(obj.getGlobalVariable('tick_ns')), Number(obj.getGlobalVariable('tick_every')), asked) : { periodNs: asked, frequency: this.#options.frequency };
    const periodNs = clock.periodNs;
    const cpuRows = obj.getMap('counts').getBatch();
    const offRows = obj.getMap('offcpu').getBatch();
    const walked = this.#walk ? this.#symbolizer.v8.windowStacks(obj, this.#walk, [...cpuRows, ...offRows].map(([k]) => k.v8_stack)) : this.#symbolizer.v8.readStacks(obj);
    const chainMap = obj.getMap('chains');
    const dropped = { samples: Number(obj.getGlobalVariable('dropped_samples')), offCpu: Number(obj.getGlobalVariable('dropped_offcpu')) };
    // (preempted: false) the main thread's preempted intervals, counted without their stacks
    const preempted = this.#options.preempted ? undefined : { count: Number(obj.getGlobalVariable('preempted_count')), ns: Number(obj.getGlobalVariable('preempted_ns')) };
    const stack = stacks.stackReader(obj);
    // each row's stacks (user, kernel) are added below
    const rows = /** @type {{ k: any, count: number, ns?: number, kind: 'cpu' | 'offCpu', user?: bigint[], kernel?: bigint[], js?: any[], walked?: any[] }[]} */ ([...cpuRows.map(([k, v]) => ({ k, count: Number(v), kind: 'cpu' })), ...offRows.map(([k, v]) => ({ k, count: Number(v.count), ns: Number(v.total_ns), kind: 'offCpu' }))]);
    const userAddrs = new Set();
    const kernelAddrs = new Set();
    for (const r of rows) {
      r.user = stack(r.k.user_stack);
      r.kernel = stack(r.k.kernel_stack);
      // off CPU in a library without frame pointers: the frames recovered above it (bpf/profile.bpf.c recover_chain)
      const chain = r.k.user_chain ? chainMap.get(r.k.user_chain)?.ips?.filter((a) => a !== 0n) : undefined;
      if (chain && chain.length > r.user.length) r.user = [...r.user.slice(0, 1), ...chain];
      for (const a of r.user) userAddrs.add(a);
      for (const a of r.kernel) kernelAddrs.add(a);
    }
    // JS frames walked in the kernel, named from V8's data (one call for the window): they win over the perf map
    const aligned = rows.map((r) => this.#symbolizer.v8.align(r.user, walked.get(r.k.v8_stack)));
    const jsNames = this.#symbolizer.v8.namesOf(process.pid, aligned.flat());
    let at = 0;
    for (const [i, r] of rows.entries()) {
      r.js = jsNames.slice(at, at + aligned[i].length);
      r.walked = aligned[i];
      at += aligned[i].length;
    }
    // JIT code moves and the perf map grows: user names are looked up afresh every window
    this.#symbolizer.cache.delete(process.pid);
    const perfMap = stacks.hasPerfMap(process.pid);
    const maps = readMappings();
    const userList = [...userAddrs];
    const kernelList = [...kernelAddrs];
    // per address: the functions inlined there (innermost first), then the physical one; JIT code
    // named by the perf map as it was at the window's end (endWindow above)
    const userNames = new Map(userList.length ? this.#symbolizer.userFrames(process.pid, userList).map((n, i) => [userList[i], n]) : []);
    const kernelNames = new Map(kernelList.length ? this.#symbolizer.kernel(kernelList).map((n, i) => [kernelList[i], n]) : []);
    const frames = new Map(); // 'u'/'k' + address -> frame
    const userFrame = (a) => {
      const key = `u${a}`;
      if (frames.has(key)) return frames.get(key);
      const address = Number(a);
      const mapping = mappingAt(maps, address);
      const names = userNames.get(a);
      let name = names[names.length - 1];
      let frame;
      if (mapping?.jit) {
        // JIT code (or an anonymous executable mapping): the perf map (or jitdump) names it
        if (name === '[unknown]') name = perfMap ? '[unknown JIT code]' : NO_PERF_MAP;
        frame = jsFrame(name);
        // functions inlined at this address (lib/frames/stacks.js names them from --perf-prof's jitdump), innermost first
        if (names.length > 1) frame.inlined = names.slice(0, -1).map(jsFrame);
      } else {
        // (outside every executable mapping: not a return address; the frame-pointer chain broke in code without them)
        if (name === '[unknown]') name = mapping ? `[unknown in ${mapping.path.split('/').pop()}]` : BROKEN_CHAIN;
        frame = { name, kind: 'native', module: mapping?.path, label: name };
      }
      frame.address = address;
      frame.mapping = mapping;
      frames.set(key, frame);
      return frame;
    };
    // a JS frame named from V8's data: one per function and place (interpreted frames share their pc, the interpreter's)
    const v8Frame = (a, names, walkedFrame) => {
      const physical = names[names.length - 1];
      const key = `v${a}:${walkedFrame.sfi}:${walkedFrame.code}:${walkedFrame.slot}`;
      if (frames.has(key)) return frames.get(key);
      const js = (g) => ({ name: g.name, kind: 'js', tier: g.kind, label: g.label, ...(g.file && { file: g.file, line: g.line ?? 0, column: g.column ?? 0 }), ...(g.reason && { reason: g.reason }) });
      const frame = /** @type {any} */ ({ ...js(physical), address: Number(a), mapping: mappingAt(maps, Number(a)) });
      if (names.length > 1) frame.inlined = names.slice(0, -1).map(js);
      frames.set(key, frame);
      return frame;
    };
    const kernelFrame = (a) => {
      const key = `k${a}`;
      if (!frames.has(key)) {
        // /proc/kallsyms shows addresses only to CAP_SYSLOG (or with kernel.perf_event_paranoid <= 1)
        const name = kernelNames.get(a) === '[unknown]' ? NO_KALLSYMS : kernelNames.get(a);
        frames.set(key, { name, kind: 'kernel', address: Number(a), mapping: KERNEL_MAPPING, label: name });
      }
      return frames.get(key);
    };
    const library = new Set(native.libraryThreads().map((t) => this.#kernelTid(t.tid)));
    // request labels: the id each stack was taken under (bpf/labels.bpf.h), resolved now (a lazy record's too)
    const labelled = labels.resolveIds(rows.map((r) => r.k.label_id ?? 0));
    const out = { cpu: [], offCpu: [] };
    for (const r of rows) {
      const lost = stacks.lostStack;
      // a frame V8's data could not name loses to the perf map's name, and wins over none
      // (the indices in userFrames of native frames that ran on the JS frame after them: `entered`)
      const frameless = [];
      let at = 0;
      const named = (a, i) => {
        if (!r.js[i]) return [userFrame(a)];
        const w = r.walked[i];
        // entered: the sample is in a function the JS frame called that runs without a frame of its own
        // (its symbol above it); the JS frame is at the call (or where it starts, with no return address)
        if (r.js[i][r.js[i].length - 1].entered) {
          frameless.push(at);
          return [userFrame(a), v8Frame(w.enteredRet || a, r.js[i], w)];
        }
        if (r.js[i][0].kind !== 'unnamed') return [v8Frame(a, r.js[i], w)];
        const f = userFrame(a);
        return [f.kind === 'js' ? f : v8Frame(a, r.js[i], w)];
      };
      const userFrames = lost(r.k.user_stack) ? [LOST] : r.user.flatMap((a, i) => {
        const f = named(a, i);
        at += f.length;
        return f;
      });
      // (off CPU: without the tracing frames the stack was taken in: __traceiter_sched_switch, bpf_trace_run4, the program)
      // (clock 'tick': without the tick's interrupt, up to its entry: what it interrupted, or none in user space)
      const kernel = r.kind === 'offCpu' ? r.kernel.slice(Math.max(0, r.kernel.findIndex((a) => !TRACING_FRAME.test(kernelNames.get(a) ?? '')))) : this.#clock === 'tick' ? tick.interrupted(r.kernel, kernelNames) : r.kernel;
      const kernelFrames = lost(r.k.kernel_stack) ? [LOST] : kernel.map(kernelFrame);
      const tid = this.#localTid(r.k.tid);
      // (a node worker thread: `worker NAME`, by the function its stack runs under)
      const thread = stacks.threadLabel(r.k.comm, userFrames.map((f) => f.name));
      out[r.kind].push({
        tid,
        thread,
        threadKind: threadKind(r.k.tid, r.k.comm, { tgid: this.#ids.tgid, library, thread }),
        count: r.count,
        ...(r.kind === 'offCpu' && { ns: r.ns, state: r.k.preempted ? 'preempted' : 'blocked' }),
        frames: [...kernelFrames, ...userFrames],
        ...(frameless.length && { frameless: frameless.map((k) => kernelFrames.length + k) }),
        labels: r.k.label_id ? (labelled.labels.get(r.k.label_id) ?? {}) : {},
      });
    }
    const mapped = this.#mapSources(out);
    for (const map of this.#windowMaps()) obj.getMap(map).clear();
    obj.setGlobalVariable('dropped_samples', 0n);
    const v8Dropped = Number(obj.getGlobalVariable('v8_dropped'));
    obj.setGlobalVariable('v8_dropped', 0n);
    obj.setGlobalVariable('dropped_offcpu', 0n);
    obj.setGlobalVariable('preempted_count', 0n);
    obj.setGlobalVariable('preempted_ns', 0n);
    const notes = [
      `node-libbpf profile of pid ${process.pid} (${process.title}, node ${process.version}): ${this.#clock === 'tick' ? `the kernel's tick${clock.hz ? ` (${clock.hz} Hz), every ${Math.round((periodNs * clock.hz) / 1e9)}` : ''}: ${+clock.frequency.toFixed(1)} Hz` : `cpu-clock at ${this.#options.frequency} Hz`} ${this.#options.threads === 'main' ? 'of the main thread' : 'on every CPU'}; off-CPU: the main thread (${this.#options.offCpuEvent}), intervals of ${this.#options.minOffCpu * 1000} ms or more${this.#options.idle ? '' : ', idle epoll waits left out'}${this.#options.preempted ? '' : ', preempted ones without stacks'}`,
    ];
    if (preempted) notes.push(`the main thread was preempted (runnable, waiting for a CPU) ${preempted.count} times for ${this.#options.minOffCpu * 1000} ms or more, ${(preempted.ns / 1e6).toFixed(1)} ms in all: not by stack (profile({ preempted: true }) walks them)`);
    if (this.#clockWhy) notes.push(`cpu-clock, not the kernel's tick (clock 'auto'): ${this.#clockWhy.replace(/^profile\(\{ clock: 'tick' \}\): /, '').replace(/; use clock 'cpu-clock'.*$/, '')}`);
    if (this.#clock === 'tick' && !clock.hz) {
      notes.push(
        obj.getGlobalVariable('ticks_seen')
          ? "the kernel's tick: its period is not known yet (no CPU was busy for two ticks in a row), so no CPU sample"
          : "the kernel's tick: none was seen (a kernel whose tick is no hrtimer: low-resolution timers?), so no CPU sample; clock 'cpu-clock' samples everywhere",
      );
    }
    if (this.#v8Error) notes.push(`JavaScript frames are not named from V8's data: ${this.#v8Error.message}`);
    if (!perfMap && (this.#v8Error || !this.#symbolizer.v8.names)) notes.push(`no perf map (/tmp/perf-${process.pid}.map): JavaScript frames are unnamed; run node with --perf-basic-prof (or --perf-basic-prof-only-functions --interpreted-frames-native-stack)`);
    if (v8Dropped) notes.push(`${v8Dropped} stacks' JavaScript frames not kept, their table was full: named from the perf map, if any`);
    if (mapped.failed) notes.push(`${mapped.failed} JavaScript frames not at their source-mapped places: ${mapped.reason}`);
    if (this.#labels?.kind === 'word' && labels.size()) notes.push(`request labels: through an async_hooks hook (${this.#labels.why}; Node 24 on, or 22 with --experimental-async-context-frame, read them from V8 with no hook)`);
    if (labelled.expired) notes.push(`${labelled.expired} label ids of the window's stacks were no longer known (not entered nor sampled for ${labels.PRUNE_MS / 60000} minutes): those stacks have no labels`);
    if (labelled.failed.length) notes.push(`${labelled.failed.length} lazy label records failed to resolve, their stacks without their labels: ${labelled.failed[0]}`);
    if (dropped.samples || dropped.offCpu) notes.push(`not counted, their table was full: ${dropped.samples} CPU samples, ${dropped.offCpu} off-CPU intervals`);
    return { startNs, durationNs, periodNs, frequency: clock.frequency, perfMap, dropped, ...(preempted && { preempted }), notes, ...out };
  }

  /**
   * The JS frames of `out`'s stacks at their original places (source
   * maps), in place: each frame once (frames are shared among stacks; the
   * caller it is first seen under names it). Returns how many frames a map
   * could not place, and the first reason.
   */
  #mapSources(out) {
    const result = { failed: 0, reason: '' };
    if (!this.#sourceMaps) return result;
    const done = new Map(); // frame -> mapped
    for (const s of [...out.cpu, ...out.offCpu]) {
      s.frames = s.frames.map((f, i) => {
        if (f.kind !== 'js') return f;
        if (done.has(f)) return done.get(f);
        const next = s.frames[i + 1];
        let m = f;
        try {
          m = this.#sourceMaps.map(f, next?.inlined?.[0] ?? next);
        } catch (err) {
          // (a map the checks let through that trace-mapping could not read: the generated place stays)
          m = { ...f, reason: `source map: ${err.message}` };
        }
        // (a frame the map could not place: a reason of its own, no generated place)
        const pairs = [[f, m], ...(f.inlined ?? []).map((g, k) => [g, m.inlined?.[k] ?? g])];
        for (const [g, h] of pairs) {
          if (h === g || h.generated || h.reason === g.reason) continue;
          result.failed++;
          result.reason ||= h.reason;
        }
        done.set(f, m);
        return m;
      });
    }
    return result;
  }

  #localTid(kernelTid) {
    if (!this.#ids.tids) return kernelTid;
    for (const [local, k] of this.#ids.tids) if (k === kernelTid) return local;
    return kernelTid;
  }

  #kernelTid(localTid) {
    return this.#ids.tids ? (this.#ids.tids.get(localTid) ?? localTid) : localTid;
  }

  /**
   * A request handler for a service's own HTTP server, Go's convention
   * (what Parca and Pyroscope scrape): `GET {prefix}/profile?seconds=N`
   * (CPU) and `{prefix}/offcpu?seconds=N` (the main thread off the CPU)
   * answer a gzipped pprof of the next N seconds (default 30);
   * `&format=cpuprofile` a `.cpuprofile` (JSON: Chrome DevTools, VS Code,
   * speedscope) of the main thread, `&thread=all` (or a tid) of others. Returns
   * `(req, res) => boolean`: true if it answered the request (its path was
   * one of those). Bad `seconds`, `format` or `thread`: 400; a window
   * already running: 409.
   */
  handler({ prefix = '/debug/pprof', defaultSeconds = 30 } = {}) {
    const routes = /** @type {Record<string, 'cpu' | 'offCpu'>} */ ({ [`${prefix}/profile`]: 'cpu', [`${prefix}/offcpu`]: 'offCpu' });
    return (req, res) => {
      const url = new URL(req.url, 'http://localhost');
      const kind = routes[url.pathname];
      if (!kind) return false;
      const fail = (status, message) => {
        res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(`${message}\n`);
      };
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.setHeader('allow', 'GET, HEAD');
        fail(405, `${url.pathname}: GET it`);
        return true;
      }
      const text = url.searchParams.get('seconds');
      const seconds = text === null ? defaultSeconds : /^\s*$/.test(text) ? NaN : Number(text);
      if (!(seconds > 0 && seconds <= this.#options.maxSeconds)) {
        fail(400, `${url.pathname}: seconds must be a number above 0 and at most ${this.#options.maxSeconds}, got ${JSON.stringify(text)}`);
        return true;
      }
      const format = url.searchParams.get('format') ?? 'pprof';
      if (format !== 'pprof' && format !== 'cpuprofile') {
        fail(400, `${url.pathname}: format is pprof (default) or cpuprofile, got ${JSON.stringify(format)}`);
        return true;
      }
      const threadText = url.searchParams.get('thread') ?? 'main';
      const thread = /^[1-9]\d{0,9}$/.test(threadText) ? Number(threadText) : threadText;
      if (format === 'cpuprofile' && thread !== 'main' && thread !== 'all' && typeof thread !== 'number') {
        fail(400, `${url.pathname}: thread is main (default), all or a thread id, got ${JSON.stringify(threadText)}`);
        return true;
      }
      if (this.closed) {
        fail(503, `${url.pathname}: the profiler is closed`);
        return true;
      }
      if (this.#busy) {
        fail(409, `${url.pathname}: ${this.#busy} is collecting a window; one at a time: try again later`);
        return true;
      }
      const ended = new AbortController();
      const gone = () => {
        if (!res.writableFinished) ended.abort();
      };
      res.on('close', gone);
      this.#collect({ seconds, signal: ended.signal }, `a pull of ${url.pathname}`).then(
        (w) => {
          res.off('close', gone);
          if (ended.signal.aborted) return;
          const name = kind === 'cpu' ? 'profile' : 'offcpu';
          const cpuprofile = format === 'cpuprofile';
          const body = cpuprofile ? Buffer.from(JSON.stringify(w.cpuprofile(kind, { thread: /** @type {any} */ (thread) }))) : w.pprof(kind);
          const type = cpuprofile ? 'application/json' : 'application/octet-stream';
          res.writeHead(200, { 'content-type': type, 'content-disposition': `attachment; filename="${name}.${cpuprofile ? 'cpuprofile' : 'pb.gz'}"`, 'content-length': body.length });
          res.end(req.method === 'HEAD' ? undefined : body);
        },
        (err) => {
          res.off('close', gone);
          if (!res.headersSent) fail(err.code === 'ERR_BPF_BUSY' ? 409 : 500, `${url.pathname}: ${err.message}`);
        },
      );
      return true;
    };
  }

  /**
   * Pushes a profile every `every` seconds (a window each) to Pyroscope's
   * `POST {url}/ingest` (its HTTP API, format=pprof: multipart/form-data
   * with the profile in the field `profile` and, for the off-CPU one, its
   * types in `sample_type_config`; `name` is `name{labels}`, `from` and
   * `until` are unix seconds). Returns `{ stop(): Promise, pushed, errors }`;
   * `onError(err)` hears failed windows and pushes (default: a warning).
   * The profiler is busy meanwhile: pulls answer 409. `otlp`: OTLP/HTTP
   * too (or instead: without `url`), one request a window
   * (lib/service/otlp.js: `name` its service.name, `labels` resource attributes).
   * @param {{ url?: string, otlp?: string, name?: string, labels?: Record<string, string>, every?: number, kinds?: string[], headers?: Record<string, string>, onError?: (err: Error) => void }} [options]
   */
  push({ url, otlp, name, labels = {}, every = 15, kinds = KIND_NAMES, headers = {}, onError } = {}) {
    this.#check();
    let base;
    const otlpUrl = otlp === undefined ? undefined : require('./otlp').endpoint(otlp);
    try {
      base = url === undefined && otlpUrl ? undefined : new URL(url);
    } catch {
      throw codedError('ERR_BPF_INVALID_VALUE', `profiler.push(): url must be Pyroscope's address (http://pyroscope:4040), or otlp an OTLP/HTTP endpoint (http://collector:4318), got ${url}`);
    }
    if (typeof name !== 'string' || !/^[A-Za-z0-9_.\-/]+$/.test(name)) {
      throw codedError('ERR_BPF_INVALID_VALUE', `profiler.push(): name must be the application's name (letters, digits, _ . - /), got ${name}`);
    }
    for (const [k, v] of Object.entries(labels)) {
      // (Pyroscope's name{labels}; OTLP's resource attributes take any name: checked by otlp.js)
      if (base && (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) || /[{},=]/.test(String(v)))) {
        throw codedError('ERR_BPF_INVALID_VALUE', `profiler.push(): label ${k}=${v}: names are identifiers, values have no { } , =`);
      }
    }
    if (otlpUrl) require('./otlp').checkOptions({ serviceName: name, attributes: labels }, 'profiler.push()');
    checkSeconds(every, this.#options.maxSeconds, 'profiler.push(): every');
    for (const k of kinds) checkKind(k);
    if (this.#busy) throw codedError('ERR_BPF_BUSY', `profiler.push(): ${this.#busy} is collecting a window; one at a time`);
    const appName = `${name}{${Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(',')}}`;
    const where = (base ?? otlpUrl).origin;
    const report = onError ?? ((err) => process.emitWarning(`profiler.push() to ${where}: ${err.message}`, 'NodeLibbpfWarning'));
    const ingest = base && new URL('ingest', base.href.endsWith('/') ? base : `${base.href}/`);
    const state = { pushed: 0, errors: 0, stopped: false };
    const stopper = new AbortController();
    const send = async (w, kind) => {
      const q = new URL(ingest);
      const from = Math.floor(Number(w.startNs / 1000000n) / 1000);
      q.search = new URLSearchParams({
        name: appName,
        from: String(from),
        until: String(Math.max(from + 1, Math.round(Number(w.startNs / 1000000n) / 1000 + w.durationNs / 1e9))),
        format: 'pprof',
        sampleRate: String(Math.round(w.frequency)),
        spyName: 'node-libbpf',
      }).toString();
      const form = new FormData();
      form.append('profile', new Blob([w.pprof(kind)], { type: 'application/octet-stream' }), 'profile.pprof');
      if (kind === 'offCpu') form.append('sample_type_config', new Blob([JSON.stringify(OFFCPU_SAMPLE_TYPES)], { type: 'application/json' }), 'sample_type_config.json');
      let res;
      try {
        res = await fetch(q, { method: 'POST', body: form, headers, signal: AbortSignal.timeout(30000) });
      } catch (err) {
        const e = codedError('ERR_BPF_PUSH', `POST ${q.origin}${q.pathname}: ${err.cause?.message ?? err.message}`);
        e.cause = err;
        throw e;
      }
      await res.arrayBuffer();
      if (!res.ok) throw codedError('ERR_BPF_PUSH', `POST ${q.origin}${q.pathname}: HTTP ${res.status}`);
      state.pushed++;
    };
    const loop = (async () => {
      while (!state.stopped && !this.closed) {
        let w;
        try {
          w = await this.#collect({ seconds: every, signal: stopper.signal }, `a push to ${where}`);
        } catch (err) {
          if (this.closed) break;
          state.errors++;
          report(err);
          await new Promise((r) => setTimeout(r, 1000));
          continue;
        }
        for (const kind of base ? kinds : []) {
          try {
            await send(w, kind);
          } catch (err) {
            state.errors++;
            report(err);
          }
        }
        if (otlpUrl && kinds.length) {
          try {
            await require('./otlp').post(otlpUrl, w.otlp(new Set(kinds).size > 1 ? 'all' : kinds[0] === 'offCpu' ? 'offCpu' : 'cpu', { serviceName: name, attributes: labels }), headers);
            state.pushed++;
          } catch (err) {
            state.errors++;
            report(err);
          }
        }
      }
    })();
    const handle = {
      get pushed() {
        return state.pushed;
      },
      get errors() {
        return state.errors;
      },
      /** Ends the running window, pushes it, and resolves when the loop is done. */
      stop: () => {
        state.stopped = true;
        stopper.abort();
        this.#pushes.delete(handle);
        return loop;
      },
    };
    this.#pushes.add(handle);
    return handle;
  }

  /** Ends any window and push, detaches and frees everything. Idempotent. */
  close() {
    if (this.closed) return;
    forgotten.unregister(this);
    for (const p of this.#pushes) p.stop();
    this.#abort?.();
    this.#labelsRelease?.();
    this.#obj.close();
    this.#symbolizer.v8.close(); // (the /proc/PID/mem the naming keeps open)
    this.#traceStop?.();
  }
}

// the labels' functions, the module's own (lib/service/labels.js): a service wraps its handlers before any profiler exists
Object.assign(Profiler.prototype, { withLabels: labels.withLabels, setLabels: labels.setLabels, getLabels: labels.getLabels });

const OFF_CPU_EVENTS = ['sched_switch', 'context-switches'];
const CLOCKS = ['auto', 'cpu-clock', 'tick'];
const FLUSH_WORD = new Int32Array(new SharedArrayBuffer(4));
// (sched_switch's stacks are taken in the tracepoint; handle_switch's in perf's switch-out hook)
const TRACING_FRAME = /^(bpf_prog_|bpf_trace_run|__traceiter_|__bpf_trace_|bpf_dispatcher|perf_event_task_sched_out|__perf_event_task_sched_out|___perf_sw_event|__perf_sw_event_sched|perf_swevent_|perf_event_output|bpf_overflow_handler|__perf_event_overflow|perf_trace_run_bpf_submit)/;
const KERNEL_MAPPING = { start: 0, end: 0, offset: 0, path: '[kernel]', file: false };
const LOST = { name: '[lost stack]', kind: 'lost', label: '[lost stack]' };
/** Pyroscope's sample type configuration of the off-CPU profile (its ingest API, format=pprof). */
const OFFCPU_SAMPLE_TYPES = {
  off_cpu: { units: 'samples', aggregation: 'sum', 'display-name': 'off_cpu_nanoseconds', sampled: false },
  intervals: { units: 'samples', aggregation: 'sum', 'display-name': 'off_cpu_intervals', sampled: false },
};

/** Starts a profiler of this process (loads its programs; windows sample). */
function profile(options) {
  return new Profiler(options);
}

module.exports = { profile, Profiler, ProfileWindow, threadKind, DEFAULT_FREQUENCY, MAX_FREQUENCY, OFFCPU_SAMPLE_TYPES };
