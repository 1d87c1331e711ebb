'use strict';
/**
 * What the example tracers in examples/ share (`require('node-libbpf/lib/tools')`):
 * their command line, the process they trace (`--pid N`, or a workload they
 * start), when they stop, the names of errnos and flags, the printing of one
 * record, and the latency summary printed at the end.
 */
const { spawn } = require('child_process');
const os = require('os');
const path = require('path');
const util = require('util');

/**
 * Parses `--pid N`, `--duration S` and `--json` (exits with the usage on
 * `--help` or a bad option).
 */
function parseArgs(description, argv = process.argv.slice(2)) {
  const usage = `usage: node ${path.relative(process.cwd(), process.argv[1])} [--pid N] [--duration S] [--json]

${description}

  --pid N        trace process N (default: start the built-in workload and trace it)
  --duration S   stop after S seconds (default: at Ctrl+C, SIGINT or SIGTERM)
  --json         print one JSON object per line instead of text`;
  let values;
  try {
    ({ values } = util.parseArgs({
      args: argv,
      options: {
        pid: { type: 'string' },
        duration: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
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
  return { pid, duration, json: values.json };
}

function usageError(message, usage) {
  console.error(`${message}\n\n${usage}`);
  process.exit(2);
}

/**
 * The process to trace: `opts.pid`, or else the workload script started as a
 * child `node [nodeArgs] script`, once it has sent its first IPC message
 * (what it does: a file name, ports). `stop()` ends the workload.
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
  return { pid: child.pid, info, child, stop };
}

/**
 * Resolves when tracing should stop: after `opts.duration` seconds, on
 * SIGINT or SIGTERM, or when the traced process exits.
 */
function untilStopped(opts, target) {
  console.error(`Tracing pid ${target.pid} ${opts.duration ? `for ${opts.duration} s` : 'until Ctrl+C'}...`);
  return new Promise((resolve) => {
    const timers = [];
    const done = (reason) => {
      timers.forEach(clearInterval);
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      target.child?.off('exit', onExit);
      resolve(reason);
    };
    const onSignal = (signal) => done(signal);
    const onExit = () => done(`pid ${target.pid} exited`);
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
    if (opts.duration) timers.push(setTimeout(() => done('duration'), opts.duration * 1000));
    if (target.child) {
      target.child.on('exit', onExit);
    } else {
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

/** Prints one record: as JSON with `--json`, else the article's line and `details(event)`. */
function printEvent(opts, event, details) {
  if (opts.json) {
    console.log(JSON.stringify(event));
  } else {
    const ms = (event.duration_ns / 1e6).toFixed(3);
    console.log(`[PID:${event.pid} TID:${event.tid} COMM:${event.comm}] ${event.syscall} took ${ms} ms ${details(event)}`);
  }
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

module.exports = {
  parseArgs,
  traceTarget,
  untilStopped,
  printEvent,
  errnoName,
  formatRet,
  flagNames,
  LatencySummary,
};
