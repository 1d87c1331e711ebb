'use strict';
/**
 * The in-process monitor: a Node.js process counting its own kernel-level
 * behaviour in the kernel (bpf/monitor.bpf.c), read on demand.
 *
 *   const m = bpf.monitor({ eventLoop: true });  // the default parts, and the event loop's phases
 *   m.read();                                    // a snapshot: counters and histograms since start
 *   m.close();                                   // detaches and frees everything
 *
 * Parts (each on or off; `DEFAULT_PARTS` are on unless turned off):
 *   offCpu          the main thread's time off the CPU, by syscall or
 *                   preemption, and a histogram of its blocked intervals
 *   tcpRetransmits  TCP segments retransmitted on this process's sockets
 *   eventLoop       the main thread's libuv phases, as histograms (uprobes
 *                   on their entries; opt-in: ~5 µs per loop iteration here)
 *   syscalls        per-syscall counts, errors and latency histograms
 *   files           files opened, top N by count, with errors
 *   connects        endpoints connected to, top N by count, with errors
 * syscalls, files and connects hook every syscall of the machine (the
 * raw_syscalls tracepoints): opt-in, see docs/service.md (What it costs).
 *
 * node-libbpf's own threads (bpf.libraryThreads()) are left out of what is
 * counted. Reads take no syscall for the arrays (mmapped) and one batch
 * syscall per 256 entries for the tables (files, connects, retransmits).
 */
const fs = require('node:fs');
const net = require('node:net');
const native = require('../core/native');
const { loadBpfProgram } = require('../core/object');
const { objectPath } = require('../core/objects');
const validate = require('../core/validate');
const { codedError } = validate;
const { findFunctions, socketInodes } = require('../host/procfs');
const { PHASES, choosePhasePrograms, attachPhases } = require('../host/event_loop');
const { chooseThreadStorage } = require('../core/compat');
const { kernelIds, checkOwnProc } = require('../host/pidns');
const { BUCKET_BOUNDS } = require('./monitor_metrics');
const { syscallNumber, syscallName } = require('../core/names');

const PARTS = ['syscalls', 'eventLoop', 'offCpu', 'files', 'connects', 'tcpRetransmits'];
/**
 * The parts on unless turned off: the ones that cost a busy HTTP server
 * under 3% of its requests (docs/service.md: What it costs). eventLoop's uprobes
 * cost ~5 µs per loop iteration on the 2-vCPU VM it was measured on (5
 * probe hits), syscalls puts every syscall of the machine on the slow path:
 * opt-in.
 */
const DEFAULT_PARTS = ['offCpu', 'tcpRetransmits'];

// struct syscall_counts (bpf/syscall_hist.h): count, total_ns, errors, then 66 log2 slots of µs
const HIST_SLOTS = 66;
const HIST_BYTES = 8 * (3 + HIST_SLOTS);
const OFFCPU_KINDS = ['blocked', 'idle'];
/**
 * The monitor's bounded tables in the kernel, by the part that fills them:
 * each counts the inserts it refused because it was full (a `.bss` counter
 * of bpf/monitor.bpf.c or bpf/node_syscalls.bpf.h), and the table's map.
 */
const TABLES = [
  { table: 'files', part: 'files', counter: 'files_overflows', map: 'files' },
  { table: 'connects', part: 'connects', counter: 'endpoints_overflows', map: 'endpoints' },
  { table: 'tcpRetransmits', part: 'tcpRetransmits', counter: 'retransmits_overflows', map: 'retransmits' },
  { table: 'listeningPorts', part: 'tcpRetransmits', counter: 'own_ports_overflows', map: 'own_ports' },
];
const TCP_LISTEN = 10;

/** The u64 at word `i` of `words` (a Uint32Array over little-endian u64s), as a number. */
const u64 = (words, i) => words[2 * i] + words[2 * i + 1] * 4294967296;

/** The cumulative histogram `{ count, sum, buckets }` of the struct syscall_counts at u64 `at` of `words`. */
function histogram(words, at) {
  const buckets = new Array(BUCKET_BOUNDS.length);
  let cumulative = 0;
  for (let k = 0; k < BUCKET_BOUNDS.length; k++) {
    cumulative += u64(words, at + 3 + k);
    buckets[k] = cumulative;
  }
  return { count: u64(words, at), sum: u64(words, at + 1) / 1e9, buckets };
}

/** The text of a 16-byte IPv6 address, as RFC 5952 writes it (the longest run of zero groups is `::`). */
function ipv6Text(bytes) {
  return new net.SocketAddress({ address: bytes.toString('hex').match(/.{4}/g).join(':'), family: 'ipv6' }).address;
}

/** `host:port` of a struct node_endpoint (decoded), `[v6]:port`, or a unix path. */
function endpointName(e) {
  if (e.family === 2) return `${[...e.addr.v4].join('.')}:${e.port}`;
  if (e.family === 10) {
    const v6 = Buffer.from(e.addr.v6);
    if (v6.subarray(0, 10).every((b) => b === 0) && v6.readUInt16BE(10) === 0xffff) return `${[...v6.subarray(12)].join('.')}:${e.port}`;
    return `[${ipv6Text(v6)}]:${e.port}`;
  }
  if (e.family === 1) return `unix:${e.addr.path}`;
  return `family ${e.family}`;
}

/** The ports this process listens on (TCP, IPv4 and IPv6), from /proc/self/net/tcp{,6}. */
function listeningPorts() {
  const mine = socketInodes(process.pid);
  const ports = new Set();
  for (const file of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    let text;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && parseInt(f[3], 16) === TCP_LISTEN && mine.has(Number(f[9]))) ports.add(parseInt(f[1].split(':')[1], 16));
    }
  }
  return ports;
}

function checkOptions(options) {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw codedError('ERR_INVALID_ARG_TYPE', `monitor(options): options must be an object of parts ({ ${PARTS.join(', ')} }), got ${options}`);
  }
  const unknown = Object.keys(options ?? {}).filter((k) => !PARTS.includes(k) && k !== 'top');
  if (unknown.length) {
    throw codedError('ERR_BPF_UNKNOWN_NAME', `monitor(): no part named ${unknown.join(', ')}; the parts are ${PARTS.join(', ')} (and the option top)`);
  }
  const wrong = PARTS.filter((p) => options?.[p] !== undefined && typeof options[p] !== 'boolean');
  if (wrong.length) throw codedError('ERR_INVALID_ARG_TYPE', `monitor(): parts are turned on or off with true or false; ${wrong.map((p) => `${p}: ${options[p]}`).join(', ')}`);
  const parts = PARTS.filter((p) => options?.[p] ?? DEFAULT_PARTS.includes(p));
  const top = validate.integer('monitor()', 'top', options?.top, validate.LIMITS.top) ?? 20;
  return { parts, top };
}

/**
 * Sets `node_libbpf_tids` (bpf/node_libbpf.bpf.h) of an object not loaded
 * yet to node-libbpf's own threads, so that its programs can leave them out:
 * their kernel tids (those bpf_get_current_pid_tgid() has), also in a pid
 * namespace. `ids`: this process's `kernelIds()`, if already read.
 */
function excludeLibraryThreads(obj, ids) {
  const threads = native.libraryThreads(); // (starts them if they were not running: before reading their ids)
  let kernelTids = ids?.tids;
  if (!kernelTids || threads.some((t) => !kernelTids.has(t.tid))) kernelTids = kernelIds(process.pid).tids;
  const tids = threads.map((t) => kernelTids.get(t.tid) ?? 0);
  obj.setGlobalVariable('node_libbpf_tids', [...tids, ...new Array(8 - tids.length).fill(0)].slice(0, 8));
  return tids;
}

let functions; // where this process's libuv phase functions are
/** Where this process's libuv phase functions are (found once: reading the symbols of node and its libraries takes a second). */
function phaseFunctions() {
  functions ??= findFunctions(process.pid, PHASES.map(([, fn]) => fn));
  return functions;
}

// closed on garbage collection, as a BpfObject is
const forgotten = new FinalizationRegistry((obj) => {
  if (obj.closed) return;
  obj.close();
  process.emitWarning('a monitor was closed on garbage collection; close it with m.close() when done', 'NodeLibbpfWarning');
});

class Monitor {
  #obj;
  #parts;
  #top;
  #links = [];
  #scratch = {}; // map name -> the Buffer its mapped array is read into
  #maps = {};
  #names;
  #phasesTraced = [];
  #phasesHow;
  #attached = false;
  #portsLeftOut = 0; // listening ports found at start that own_ports had no room for

  /** Not for users: `bpf.monitor(options)` makes one. */
  constructor(options) {
    const { parts, top } = checkOptions(options);
    checkOwnProc(); // (ERR_BPF_PROC_MOUNT: /proc/PID would be another process)
    this.#parts = new Set(parts);
    this.#top = top;
    this.#names = syscallName;
    const nr = (name) => syscallNumber(name) ?? -1;
    const obj = loadBpfProgram(objectPath('monitor'));
    try {
      // the kernel's ids of this process (in a container, not process.pid)
      native.libraryThreads(); // (started before their ids are read)
      const ids = kernelIds(process.pid);
      obj.setGlobalVariable('target_pid', ids.tgid);
      excludeLibraryThreads(obj, ids);
      if (this.#parts.has('files')) for (const n of ['open', 'openat', 'openat2']) obj.setGlobalVariable(`nr_${n}`, nr(n));
      if (this.#parts.has('connects')) obj.setGlobalVariable('nr_connect', nr('connect'));
      for (const n of ['epoll_wait', 'epoll_pwait', 'epoll_pwait2', 'uretprobe']) obj.setGlobalVariable(`nr_${n}`, nr(n));
      chooseThreadStorage(obj); // a syscall's start: task storage, or a hash by thread before 5.11
      // the phase programs this kernel takes (none without eventLoop)
      this.#phasesHow = choosePhasePrograms(obj, { returns: false, use: this.#parts.has('eventLoop') });
      obj.load();
      for (const name of ['syscalls', 'phases', 'loops', 'offcpu', 'offcpu_hist', 'files', 'endpoints', 'retransmits', 'own_ports']) this.#maps[name] = obj.getMap(name);
      if (this.#parts.has('tcpRetransmits')) {
        const ports = [...listeningPorts()];
        const room = this.#maps.own_ports.maxEntries;
        for (const port of ports.slice(0, room)) this.#maps.own_ports.set(port, 1);
        this.#portsLeftOut = Math.max(ports.length - room, 0);
      }
      this.#obj = obj;
      this.resume();
    } catch (err) {
      obj.close();
      throw err;
    }
    forgotten.register(this, obj, this);
  }

  /** The parts this monitor counts. */
  get parts() {
    return [...this.#parts];
  }

  /** The libuv phases traced (those found in this process's node or libuv; empty without eventLoop). */
  get phases() {
    return [...this.#phasesTraced];
  }

  /** How many keys each table of the parts on holds (`{ files: 4096, ... }`): past that, `read().tableOverflows` counts. */
  get tableSizes() {
    this.#check();
    return Object.fromEntries(TABLES.filter((t) => this.#parts.has(t.part)).map((t) => [t.table, this.#maps[t.map].maxEntries]));
  }

  /** Whether close() was called. */
  get closed() {
    return this.#obj === undefined || this.#obj.closed;
  }

  /** Whether the programs are attached (not paused). */
  get attached() {
    return this.#attached;
  }

  /**
   * Detaches every program (counting stops; what was counted stays, and
   * costs nothing). `resume()` attaches them again.
   */
  pause() {
    this.#check();
    for (const link of this.#links.splice(0)) link.detach();
    this.#attached = false;
  }

  /** Attaches the parts' programs again after `pause()`. */
  resume() {
    this.#check();
    if (this.#attached) return;
    const obj = this.#obj;
    const functions = this.#parts.has('eventLoop') ? phaseFunctions() : undefined;
    const p = this.#parts;
    try {
      if (p.has('syscalls') || p.has('files') || p.has('connects')) {
        this.#links.push(obj.attachRawTracepoint('sys_enter', 'handle_sys_enter'), obj.attachRawTracepoint('sys_exit', 'handle_sys_exit'));
      }
      // SEC("tp_btf/...") programs: attached by their section
      if (p.has('offCpu')) this.#links.push(obj.attach('handle_sched_switch'));
      if (p.has('tcpRetransmits')) this.#links.push(obj.attach('handle_inet_sock_set_state'), obj.attach('handle_tcp_retransmit_skb'));
      if (p.has('eventLoop')) {
        this.#phasesTraced = PHASES.filter(([, fn]) => functions.has(fn)).map(([phase]) => phase);
        if (this.#phasesTraced.length === 0) {
          throw codedError('ERR_BPF_UNKNOWN_NAME', `monitor(): no libuv phase function (uv__io_poll, ...) in this node binary or its libraries (stripped?): turn eventLoop off`);
        }
        this.#maps.loops.clear(); // (a phase begun before a pause did not last through it)
        this.#links.push(...attachPhases(obj, process.pid, functions, this.#phasesHow, { returns: false }));
      }
      this.#attached = true;
    } catch (err) {
      for (const link of this.#links.splice(0)) link.detach();
      throw err;
    }
  }

  #check() {
    if (this.closed) throw codedError('ERR_BPF_CLOSED', 'the monitor is closed: start another with bpf.monitor()');
  }

  /** The whole of a mapped array (as u32 words), into memory kept for the next read. */
  #mapped(name) {
    const map = this.#maps[name];
    this.#scratch[name] ??= Buffer.alloc(Math.ceil(map.valueSize / 8) * 8 * map.maxEntries);
    const bytes = map.readMapped(this.#scratch[name], 0);
    return new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  }

  /** The `top` entries of a hash map of struct node_calls (or counts), by count. */
  #table(name, keyName) {
    const rows = this.#maps[name].getBatch().map(([k, v]) => ({ key: keyName(k), ...(typeof v === 'bigint' ? { count: Number(v) } : { count: Number(v.count), errors: Number(v.errors) }) }));
    rows.sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1));
    return rows.slice(0, this.#top);
  }

  /**
   * What was counted since the monitor started, cumulative (counters only
   * grow): for each part on, `{ syscalls: [{ syscall, count, errors,
   * duration: histogram }], eventLoop: [{ phase, duration }], offCpu: {
   * reasons: [{ reason, count, seconds }], blocked, idle }, files: [{ path,
   * count, errors }], connects: [{ endpoint, count, errors }],
   * tcpRetransmits: [{ endpoint, segments }], tableOverflows: { files,
   * connects, tcpRetransmits, listeningPorts } }`. `tableOverflows` counts,
   * for the parts on, the inserts a table in the kernel refused because it
   * was full (`m.tableSizes` keys): those calls or segments went uncounted
   * (for a listening port, its accepted connections' retransmits). A
   * histogram is `{ count, sum (seconds), buckets }`, `buckets[k]` the count at or below
   * `Monitor.BUCKET_BOUNDS[k]` seconds (cumulative, every bound always).
   */
  read() {
    this.#check();
    const out = {};
    const p = this.#parts;
    if (p.has('syscalls')) {
      const words = this.#mapped('syscalls');
      const stride = HIST_BYTES / 8;
      out.syscalls = [];
      for (let nr = 0, at = 0; at < words.length / 2; nr++, at += stride) {
        if (u64(words, at) === 0) continue;
        const duration = histogram(words, at);
        out.syscalls.push({ syscall: this.#names(nr) ?? `syscall_${nr}`, count: duration.count, errors: u64(words, at + 2), duration });
      }
    }
    if (p.has('eventLoop')) {
      const words = this.#mapped('phases');
      out.eventLoop = this.#phasesTraced.map((phase) => ({ phase, duration: histogram(words, (PHASES.findIndex(([name]) => name === phase) * HIST_BYTES) / 8) }));
    }
    if (p.has('offCpu')) {
      const words = this.#mapped('offcpu');
      const reasons = [];
      const syscalls = this.#maps.offcpu.maxEntries - 2;
      for (let i = 0; i < this.#maps.offcpu.maxEntries; i++) {
        const count = u64(words, 2 * i);
        if (count === 0) continue;
        const reason = i === syscalls ? 'preempted' : i === syscalls + 1 ? 'other' : (this.#names(i) ?? `syscall_${i}`);
        reasons.push({ reason, count, seconds: u64(words, 2 * i + 1) / 1e9 });
      }
      const hist = this.#mapped('offcpu_hist');
      out.offCpu = { reasons, ...Object.fromEntries(OFFCPU_KINDS.map((kind, i) => [kind, histogram(hist, (i * HIST_BYTES) / 8)])) };
    }
    if (p.has('files')) out.files = this.#table('files', (k) => k.filename).map(({ key, ...r }) => ({ path: key, ...r }));
    if (p.has('connects')) out.connects = this.#table('endpoints', endpointName).map(({ key, ...r }) => ({ endpoint: key, ...r }));
    if (p.has('tcpRetransmits')) out.tcpRetransmits = this.#table('retransmits', endpointName).map(({ key, count }) => ({ endpoint: key, segments: count }));
    const tables = TABLES.filter((t) => p.has(t.part));
    if (tables.length) {
      out.tableOverflows = Object.fromEntries(
        tables.map((t) => [t.table, Number(this.#obj.getGlobalVariable(t.counter)) + (t.table === 'listeningPorts' ? this.#portsLeftOut : 0)]),
      );
    }
    return out;
  }

  /**
   * Registers this monitor's metrics (`node_libbpf_*`) in a prom-client
   * registry (`require('prom-client').register`); each scrape reads the
   * kernel's counts once. Returns the metric names.
   */
  registerPrometheus(registry) {
    return require('./prometheus').registerPrometheus(this, registry);
  }

  /**
   * An OpenTelemetry `MetricProducer` of this monitor's metrics
   * (`node_libbpf.*`), for a MetricReader's `metricProducers` option
   * (the Prometheus exporter's, a PeriodicExportingMetricReader's).
   */
  metricProducer() {
    return require('./opentelemetry').metricProducer(this);
  }

  /** Detaches and frees everything (at once; the kernel's part on a background thread). Idempotent. */
  close() {
    if (this.closed) return;
    forgotten.unregister(this);
    this.#attached = false;
    this.#links = [];
    this.#obj.close();
  }

  /** `close()`, resolved once the kernel has released the monitor's programs and links. */
  closeAsync() {
    if (this.closed) return Promise.resolve();
    forgotten.unregister(this);
    this.#attached = false;
    this.#links = [];
    return this.#obj.closeAsync();
  }
}

Monitor.BUCKET_BOUNDS = BUCKET_BOUNDS;
Monitor.PARTS = PARTS;
Monitor.DEFAULT_PARTS = DEFAULT_PARTS;
Monitor.TABLES = TABLES.map((t) => ({ table: t.table, part: t.part }));

/** Starts monitoring this process: `options` turns parts on or off (see the module's comment). */
function monitor(options) {
  return new Monitor(options);
}

module.exports = { monitor, Monitor, excludeLibraryThreads, endpointName, BUCKET_BOUNDS, PARTS, DEFAULT_PARTS, TABLES };
