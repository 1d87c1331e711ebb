'use strict';
/**
 * What the example tracers in examples/ share (`require('node-libbpf/lib/tools')`):
 * their command line, the process they trace (`--pid N`, or a workload they
 * start), when they stop, the names of errnos and flags, the printing of one
 * record, and the latency summary printed at the end.
 */
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const util = require('util');

// `tool | head` closes stdout early: stop quietly, as command-line tools do
// (the 'exit' handlers still stop the workload).
process.stdout.on('error', (err) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(0);
});

/**
 * Parses `--pid N`, `--duration S` and `--json`, and the tool's own options
 * (exits with the usage on `--help` or a bad option).
 *
 * `extra.options`: `{ name: { type: 'string' | 'boolean', short?, default?,
 * arg?, help, parse?, conflicts? } }`, as `util.parseArgs` takes them, plus
 * `arg` (the value's name in the usage, `--goid-offset N`), `help` (its
 * line in the usage), `parse(value)` (returns the option's value, throws an
 * Error whose message says what is wrong) and `conflicts` (an option it
 * cannot be given with). `extra.pidHelp` replaces the `--pid` line.
 * `extra.positionals`: `{ name: 'PROBE...', help, min? }` allows arguments
 * after the options, returned as `opts.positionals` (at least `min`).
 * `extra` may also be the argv array (the first form of this function).
 */
function parseArgs(description, extra = {}, argv = process.argv.slice(2)) {
  if (Array.isArray(extra)) [extra, argv] = [{}, extra];
  const own = extra.options ?? {};
  const flag = (name, o) => `${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.arg ?? 'VALUE'}` : ''}`;
  const line = (left, help) => `  ${left.padEnd(20)} ${help}`;
  const usage = [
    `usage: node ${process.argv[1] ? path.relative(process.cwd(), process.argv[1]) : 'SCRIPT'} [--pid N] ${Object.entries(own)
      .map(([name, o]) => `[${flag(name, o)}] `)
      .join('')}[--duration S] [--json]${extra.positionals ? ` ${extra.positionals.name}` : ''}`,
    '',
    description,
    '',
    line('--pid N', extra.pidHelp ?? 'trace process N (default: start the built-in workload and trace it)'),
    ...Object.entries(own).map(([name, o]) => line(flag(name, o), o.help ?? '')),
    line('--duration S', 'stop after S seconds (default: at Ctrl+C, SIGINT or SIGTERM)'),
    line('--json', 'print one JSON object per line instead of text'),
    ...(extra.positionals?.help ? [line(extra.positionals.name, extra.positionals.help)] : []),
  ].join('\n');
  const parserOptions = {};
  for (const [name, o] of Object.entries(own)) {
    const dflt = o.default ?? (o.type === 'boolean' ? false : undefined);
    parserOptions[name] = { type: o.type, ...(o.short && { short: o.short }), ...(dflt !== undefined && { default: dflt }) };
  }
  let values, positionals;
  try {
    ({ values, positionals } = util.parseArgs({
      args: argv,
      allowPositionals: Boolean(extra.positionals),
      options: {
        pid: { type: 'string' },
        duration: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        ...parserOptions,
      },
    }));
  } catch (err) {
    usageError(err.message, usage);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const pid = values.pid === undefined ? undefined : Number(values.pid);
  if (pid !== undefined && !(Number.isInteger(pid) && pid > 0)) usageError(`--pid: not a process id: ${values.pid}`, usage);
  const duration = values.duration === undefined ? undefined : Number(values.duration);
  if (duration !== undefined && !(duration > 0)) usageError(`--duration: not a number of seconds: ${values.duration}`, usage);
  const opts = { pid, duration, json: values.json };
  for (const [name, o] of Object.entries(own)) {
    let value = values[name];
    const given = (v) => v !== undefined && v !== false;
    if (given(value) && o.conflicts && given(values[o.conflicts])) usageError(`--${name} and --${o.conflicts} do not go together`, usage);
    if (value !== undefined && o.parse && value !== o.default) {
      try {
        value = o.parse(value);
      } catch (err) {
        usageError(`--${name}: ${err.message}`, usage);
      }
    }
    opts[camelCase(name)] = value;
  }
  if (extra.positionals) {
    if (positionals.length < (extra.positionals.min ?? 0)) usageError(`missing ${extra.positionals.name}`, usage);
    opts.positionals = positionals;
  }
  return opts;
}

/** A number of seconds above 0, for an option's `parse`. */
function seconds(value) {
  const n = Number(value);
  if (!(n > 0)) throw new Error(`not a number of seconds: ${value}`);
  return n;
}

/**
 * The option `-i S, --interval S` (`opts.interval`): print every S seconds
 * (see `untilStopped`); `when` says in the usage what happens without it.
 */
function intervalOption(when = 'only at the end') {
  return { type: 'string', short: 'i', arg: 'S', help: `print every S seconds (default: ${when})`, parse: seconds };
}

/** `goid-offset` -> `goidOffset`, the key of an option in what parseArgs returns. */
function camelCase(name) {
  return name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
}

function usageError(message, usage) {
  console.error(`${message}\n\n${usage}`);
  process.exit(2);
}

/**
 * The process to trace: `opts.pid`, or else the workload script started as a
 * child `node [nodeArgs] script`, once it has sent its first IPC message
 * (what it does: a file name, ports). A workload that starts the process to
 * trace itself (a bash on a pseudo-terminal, a Go program) names it in that
 * message as `pid`; it must end that process when it is killed or its
 * parent goes away. `stop()` ends the workload.
 */
async function traceTarget(opts, workloadScript, nodeArgs = []) {
  if (opts.pid !== undefined) {
    try {
      process.kill(opts.pid, 0);
    } catch (err) {
      throw new Error(`--pid ${opts.pid}: ${err.code === 'ESRCH' ? 'no such process' : err.message}`);
    }
    return { pid: opts.pid, info: undefined, child: undefined, stop() {} };
  }

  // the workload's stdout goes to our stderr: our stdout is the trace
  const child = spawn(process.execPath, [...nodeArgs, workloadScript], { stdio: ['ignore', 2, 2, 'ipc'] });
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
    if (child.connected) child.disconnect();
  };
  process.once('exit', stop);
  const info = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`workload ${workloadScript} exited (${signal ?? code}) before it was ready`)));
  }).catch((err) => {
    stop();
    throw err;
  });
  console.error(`workload: pid ${child.pid} ${path.relative(process.cwd(), workloadScript)} ${JSON.stringify(info)}`);
  return { pid: Number.isInteger(info?.pid) ? info.pid : child.pid, info, child, stop };
}

/**
 * Resolves when tracing should stop: after `opts.duration` seconds, on
 * SIGINT or SIGTERM, or when the traced process exits. A target without a
 * `pid` is system-wide (`what` says what is traced: `every bash`). Until
 * then `onInterval()` runs every `opts.interval` seconds, if both are given.
 */
function untilStopped(opts, target, onInterval) {
  const what = target.pid === undefined ? target.what ?? 'every process' : `pid ${target.pid}`;
  console.error(`Tracing ${what} ${opts.duration ? `for ${opts.duration} s` : 'until Ctrl+C'}...`);
  return new Promise((resolve) => {
    const timers = [];
    let signals = 0;
    const done = (reason) => {
      timers.forEach(clearInterval);
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      target.child?.off('exit', onExit);
      // stopping (draining, printing the summary): a signal now does not cut
      // that short; a second one, counting the one that stopped it, exits
      const late = (signal) => ++signals >= 2 && process.exit(128 + os.constants.signals[signal]);
      process.on('SIGINT', late).on('SIGTERM', late);
      resolve(reason);
    };
    const onSignal = (signal) => {
      signals++;
      done(signal);
    };
    const onExit = () => done(`pid ${target.pid} exited`);
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
    if (opts.duration) timers.push(setTimeout(() => done('duration'), opts.duration * 1000));
    if (opts.interval && onInterval) timers.push(setInterval(onInterval, opts.interval * 1000));
    if (target.child) {
      target.child.on('exit', onExit);
    } else if (target.pid !== undefined) {
      // a process that is not our child: look every half second
      timers.push(setInterval(() => {
        try {
          process.kill(target.pid, 0);
        } catch {
          onExit();
        }
      }, 500));
    }
  });
}

/**
 * Closes `buffers` once they have delivered what the kernel had queued (no
 * record for `quietMs`, at most `maxMs`). Stop the kernel side first (a
 * global the programs check, or `obj.detachAll()`): counts the kernel keeps
 * in maps then match the records delivered.
 */
async function drain(buffers, { quietMs = 50, maxMs = 2000 } = {}) {
  const received = () => buffers.reduce((sum, b) => sum + b.received + b.lost, 0);
  const end = Date.now() + maxMs;
  let last = -1;
  while (received() !== last && Date.now() < end) {
    last = received();
    await new Promise((resolve) => setTimeout(resolve, quietMs));
  }
  for (const b of buffers) b.close();
}

/** Prints one record: as JSON with `--json`, else the article's line and `details(event)`. */
function printEvent(opts, event, details) {
  if (opts.json) {
    console.log(JSON.stringify(event));
  } else {
    const ms = (event.duration_ns / 1e6).toFixed(3);
    console.log(`[PID:${event.pid} TID:${event.tid} COMM:${event.comm}] ${event.syscall} took ${ms} ms ${details(event)}`);
  }
}

/**
 * Where the functions `names` of process `pid` are, for uprobes: its
 * executable first, then the ELF files it has mapped (a Node.js built with
 * a shared libuv). A Map of the names found to `{ binary, fileOffset,
 * module }`: `binary` is the path to attach to, as the process sees it
 * (`/proc/PID/exe`, `/proc/PID/root/...`), `module` the file's name.
 * Names not in the map are in none of those files (inlined or stripped).
 */
function findFunctions(bpf, pid, names) {
  const found = new Map();
  const files = [[`/proc/${pid}/exe`, fs.readlinkSync(`/proc/${pid}/exe`)]];
  const seen = new Set([files[0][1]]);
  for (const line of fs.readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
    const file = line.split(/\s+/).slice(5).join(' ');
    if (file.startsWith('/') && !seen.has(file)) {
      seen.add(file);
      files.push([`/proc/${pid}/root${file}`, file]);
    }
  }
  for (const [binary, module] of files) {
    let symbols;
    try {
      symbols = bpf.elfSymbols(binary);
    } catch {
      continue; // not an ELF file (a font, a locale archive)
    }
    for (const s of symbols) {
      if (names.includes(s.name) && !found.has(s.name) && s.fileOffset !== undefined) {
        found.set(s.name, { binary, fileOffset: Number(s.fileOffset), module });
      }
    }
    if (found.size === names.length) break;
  }
  return found;
}

/**
 * The inodes of the sockets process `pid` has open (its /proc/PID/fd links
 * `socket:[INODE]`), as numbers: what a BPF program reads from a socket to
 * tell whose it is. Empty when the process is gone.
 */
function socketInodes(pid) {
  const inodes = new Set();
  let fds;
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(Number(m[1]));
    } catch {} // closed meanwhile
  }
  return inodes;
}

// bpf_ktime_get_ns() and process.hrtime() both read CLOCK_MONOTONIC
const MONOTONIC_TO_EPOCH_NS = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();

/** The wall-clock time (a Date) of a `bpf_ktime_get_ns()` timestamp (bigint or number, ns). */
function wallClock(ktimeNs) {
  const ns = typeof ktimeNs === 'number' ? BigInt(Math.round(ktimeNs)) : ktimeNs;
  return new Date(Number((ns + MONOTONIC_TO_EPOCH_NS) / 1_000_000n));
}

/** `HH:MM:SS` (local time) of a Date, as bcc's tools print it; `ms`: with milliseconds. */
function formatTime(date, { ms = false } = {}) {
  const two = (n) => String(n).padStart(2, '0');
  const hms = `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
  return ms ? `${hms}.${String(date.getMilliseconds()).padStart(3, '0')}` : hms;
}

const ERRNO_NAMES = new Map();
for (const [name, value] of Object.entries(os.constants.errno)) {
  if (!ERRNO_NAMES.has(value)) ERRNO_NAMES.set(value, name);
}

/** The name of an errno: `errnoName(115)` is `EINPROGRESS`. */
function errnoName(errno) {
  return ERRNO_NAMES.get(errno) ?? `errno ${errno}`;
}

/** A syscall's return value: `3`, or `-115 EINPROGRESS` for an error. */
function formatRet(ret) {
  return ret < 0 && ret >= -4095 ? `${ret} ${errnoName(-ret)}` : String(ret);
}

/**
 * The names of the bits set in `value`, from `{ NAME: bits }` (tried in
 * order; a multi-bit entry matches only whole): `PROT_READ|PROT_WRITE`.
 * Unknown bits are shown in hex; 0 is `zero`.
 */
function flagNames(value, names, zero = '0') {
  const set = [];
  let rest = value;
  for (const [name, bits] of Object.entries(names)) {
    if (bits !== 0 && (rest & bits) === bits) {
      set.push(name);
      rest &= ~bits;
    }
  }
  if (rest) set.push(`0x${(rest >>> 0).toString(16)}`);
  return set.length ? set.join('|') : zero;
}

/** Per-syscall latencies, printed as a table (count, p50, p99, max in µs) or JSON. */
class LatencySummary {
  /** `syscalls`: the names that get a row even when they were not seen. */
  constructor(syscalls = []) {
    this.durations = new Map(syscalls.map((name) => [name, []]));
  }

  add(syscall, durationNs) {
    if (!this.durations.has(syscall)) this.durations.set(syscall, []);
    this.durations.get(syscall).push(durationNs);
  }

  /** One row per syscall: `{ syscall, count, p50_us, p99_us, max_us }` (null when not seen). */
  rows() {
    return [...this.durations].map(([syscall, durations]) => {
      const sorted = Float64Array.from(durations).sort();
      // nearest rank: the smallest value with p% of the values at or below it
      const us = (p) => (sorted.length ? round(sorted[Math.ceil((p / 100) * sorted.length) - 1] / 1000) : null);
      return { syscall, count: sorted.length, p50_us: us(50), p99_us: us(99), max_us: us(100) };
    });
  }

  print(opts) {
    const rows = this.rows();
    if (opts.json) {
      console.log(JSON.stringify({ summary: rows }));
      return;
    }
    const cell = (v) => (v === null ? '-' : v.toFixed(1));
    console.log(`\n${'syscall'.padEnd(10)}${'count'.padStart(8)}${'p50 µs'.padStart(12)}${'p99 µs'.padStart(12)}${'max µs'.padStart(12)}`);
    for (const r of rows) {
      console.log(`${r.syscall.padEnd(10)}${String(r.count).padStart(8)}${cell(r.p50_us).padStart(12)}${cell(r.p99_us).padStart(12)}${cell(r.max_us).padStart(12)}`);
    }
  }
}

function round(us) {
  return Math.round(us * 1000) / 1000;
}

/**
 * The whole of a syscall latency tracer, as the article's three examples
 * are: the object `bpf/.output/<object>.bpf.o` with `handle_enter_<name>`
 * and `handle_exit_<name>` programs per syscall and a ring or perf buffer
 * map `events` of struct `type`, a `target_pid` global, and `toEvent`
 * (record -> what to print, with `syscall` and `duration_ns`) and `details`
 * (event -> the text after "took N ms"). Prints one line per call and the
 * latency summary at the end.
 */
async function traceSyscalls({ description, object, workload, nodeArgs = [], syscalls, buffer, type, toEvent, details }) {
  const bpf = require('..');
  const opts = parseArgs(description);
  const target = await traceTarget(opts, path.join(__dirname, '..', 'examples', 'workloads', workload), nodeArgs);
  const summary = new LatencySummary(syscalls);
  let obj, events;
  try {
    obj = bpf.loadBpfProgram(path.join(__dirname, '..', 'bpf', '.output', `${object}.bpf.o`));
    obj.setGlobalVariable('target_pid', target.pid);
    for (const name of syscalls) {
      obj.attachTracepoint('syscalls', `sys_enter_${name}`, obj.programs[`handle_enter_${name}`]);
      obj.attachTracepoint('syscalls', `sys_exit_${name}`, obj.programs[`handle_exit_${name}`]);
    }
    const onRecord = (record) => {
      const event = toEvent(record);
      summary.add(event.syscall, event.duration_ns);
      printEvent(opts, event, details);
    };
    // durations, returns and user-space addresses as numbers: exact, far below 2^53
    const options = { type, int64: 'number' };
    const map = obj.getMap('events');
    events =
      buffer === 'perf'
        ? map.openPerfBuffer((cpu, record) => onRecord(record), { ...options, lost: (cpu, n) => console.error(`lost ${n} records on CPU ${cpu}`) })
        : map.openRingBuffer(onRecord, { ...options, lost: (n) => console.error(`lost ${n} records`) });
    await untilStopped(opts, target);
  } finally {
    events?.close();
    obj?.close();
    target.stop();
  }
  summary.print(opts);
}

module.exports = {
  traceSyscalls,
  parseArgs,
  seconds,
  intervalOption,
  traceTarget,
  untilStopped,
  drain,
  printEvent,
  findFunctions,
  socketInodes,
  wallClock,
  formatTime,
  errnoName,
  formatRet,
  flagNames,
  LatencySummary,
};
