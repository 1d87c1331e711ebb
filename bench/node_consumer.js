'use strict';
// The benchmark's node-libbpf consumers of bench/.build/stream.bpf.o (the
// same object as the C consumer, built from __test__/bpf/stream.bpf.c).
// Started by bench/run.js (the row node-ring-typed-nocodegen runs ring-typed
// under node --disallow-code-generation-from-strings):
//
//   node bench/node_consumer.js MODE OBJ PID N
//
//   ring-typed        BPF_RB_NO_WAKEUP; the callback gets decoded objects ({ type: 'stream_event' })
//   ring-typed-wakeup default (adaptive) ring wakeups; decoded objects
//   ring-typed-number as ring-typed, with { int64: 'number' }: 64-bit fields as numbers (no BigInt
//                     to make, nor for the callback to convert)
//   ring-raw          BPF_RB_NO_WAKEUP; the callback gets Buffers
//   ring-batch        BPF_RB_NO_WAKEUP; { batch: true }: one call per batch (data, ends); a build
//                     without that option exits with "no batch API"
//   ring-batch-count  as ring-batch, a callback that only counts the batch's records (reads the
//                     first record's ts): what the library itself costs per record; no bitmap,
//                     so missing = N - received
//   perf-typed        perf buffer with the library's defaults (256 pages, 1 MiB per CPU; wakeup at a quarter)
//   perf-typed-64     perf buffer, pageCount 64 (256 KiB per CPU, the default before the batch API)
//   perf-typed-wake1  perf buffer as the C consumer: 64 pages, woken for every record (wakeupBytes 1)
//   backpressure      BPF_RB_NO_WAKEUP; decoded objects; 20 µs of work per record
//
// Prints "ready" once attached. After SIGUSR1 (the load generator is done)
// it waits until received + lost == N or nothing came for 500 ms, then
// prints one JSON line (as bench/consumer.c, plus RSS figures). cpu_s:
// process.cpuUsage() (getrusage(RUSAGE_SELF): every thread of the process,
// the addon's poller thread and V8's GC and compiler threads included) from
// "ready" to the report.
//
// A failure (e.g. typed decoding refused under
// --disallow-code-generation-from-strings) is one line on stderr, name, code
// and message, and exit status 1: the bench shows it in the row.
const fs = require('node:fs');

// one line for the harness, which shows the last lines of stderr in the row
const fail = (e) => {
  console.error(`node_consumer ${process.argv[2]}: ${e && e.name}${e && e.code ? ` ${e.code}` : ''}: ${e && e.message ? e.message.split('\n')[0] : e}`);
  process.exit(1);
};
process.on('uncaughtException', fail);

// BENCH_LIB: another build of node-libbpf (bench/run.js --patched DIR)
const bpf = require(process.env.BENCH_LIB || '..');

const [mode, objPath, pidArg, nArg] = process.argv.slice(2);
const pid = Number(pidArg);
const N = Number(nArg);
const MODES = ['ring-typed', 'ring-typed-wakeup', 'ring-typed-number', 'ring-raw', 'ring-batch', 'ring-batch-count', 'perf-typed', 'perf-typed-64', 'perf-typed-wake1', 'backpressure'];
if (!MODES.includes(mode) || !objPath || !(pid > 0) || !(N > 0)) {
  console.error(`usage: node node_consumer.js ${MODES.join('|')} OBJ PID N`);
  process.exit(2);
}

const SINK_RING = 1;
const SINK_PERF = 2;
const perf = mode.startsWith('perf');
const seen = new Uint8Array(N);
let received = 0;
let unique = 0;
let firstTs = 0n;
let lastNs = 0n;
let peakRss = 0;

// The time at the first 16 records, every 4096th and the Nth (the last
// stamp is the end of delivery; when records were lost, up to 4095 records
// before it: under 1% of a run's time here). Not a setImmediate() from the
// callback once per batch, nor a 1 ms timer: V8 compiles the callback
// before it has seen a rarely taken call run, and that call then undid the
// compiled loop in every run (a deoptimization, then ~10 ms of compiling
// again); the timer's wakeups cost 2-5 ns per record. The first 16 records
// run the stamp while V8 still collects type feedback.
// The CPU used when half and nine tenths of N had come (warm_ns: the CPU
// per record between the two, once V8 has compiled the callback and the
// library's loop), looked at with each stamp: every 4096 records, as
// consumer.c looks at it once per consume. Not from a timer: its wakeups
// are charged to the consumer (a 20 ms interval cost an idle Node ~290 µs
// of CPU per tick on the 2026-11-28 VM; in a run, where the main thread
// wakes for the records anyway, the difference was within the spread).
// No branch that runs only at the marks: markRecv/markUs[k]
// are written at every stamp and k moves on (branch-free) once a mark is
// passed, so the compiled callback never meets a path it has not seen.
const markAt = [Infinity, Infinity, Infinity];
const markRecv = [0, 0, 0];
const markUs = [0, 0, 0];
let markK = 0;
const stamp = () => {
  lastNs = process.hrtime.bigint();
  const c = process.cpuUsage();
  markRecv[markK] = received;
  markUs[markK] = c.user + c.system;
  markK += +(received >= markAt[markK]);
};
const count = (seq, ts) => {
  if (received++ === 0) firstTs = ts;
  if (received <= 16 || (received & 4095) === 0 || received === N) stamp();
  if (seq < N && seen[seq] === 0) {
    seen[seq] = 1;
    unique++;
  }
};
markAt[0] = N * 0.5;
markAt[1] = N * 0.9;

const obj = bpf.loadBpfProgram(objPath);
obj.setGlobalVariable('target_pid', pid);
obj.setGlobalVariable('sink', perf ? SINK_PERF : SINK_RING);
obj.setGlobalVariable('no_wakeup', mode !== 'ring-typed-wakeup');
obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_enter_getppid');

let buffer;
switch (mode) {
  case 'ring-typed':
  case 'ring-typed-wakeup':
    buffer = obj.getMap('events').openRingBuffer((e) => count(Number(e.seq), e.ts), { type: 'stream_event' });
    break;
  case 'ring-typed-number':
    buffer = obj.getMap('events').openRingBuffer((e) => count(e.seq, e.ts), { type: 'stream_event', int64: 'number' });
    break;
  case 'ring-raw':
    buffer = obj.getMap('events').openRingBuffer((b) => count(b.readUInt32LE(16) + b.readUInt32LE(20) * 4294967296, received === 0 ? b.readBigUInt64LE(8) : 0n));
    break;
  case 'ring-batch':
    buffer = obj.getMap('events').openRingBuffer((data, ends) => {
      if (!(ends instanceof Uint32Array)) {
        console.error('no batch API: this build of node-libbpf ignores { batch: true }');
        process.exit(3);
      }
      const dv = new DataView(data.buffer, data.byteOffset, data.length);
      let start = 0;
      for (let i = 0; i < ends.length; i++) {
        count(dv.getUint32(start + 16, true) + dv.getUint32(start + 20, true) * 4294967296, received === 0 ? dv.getBigUint64(start + 8, true) : 0n);
        start = ends[i];
      }
    }, { batch: true });
    break;
  case 'ring-batch-count':
    buffer = obj.getMap('events').openRingBuffer((data, ends) => {
      if (received === 0) firstTs = data.readBigUInt64LE(8);
      received += ends.length;
      unique = received;
      stamp();
    }, { batch: true });
    break;
  case 'perf-typed':
    // BENCH_PERF_PAGES: try another pageCount with the other defaults
    buffer = obj.getMap('perf_events').openPerfBuffer((cpu, e) => count(Number(e.seq), e.ts), { type: 'stream_event', ...(process.env.BENCH_PERF_PAGES ? { pageCount: Number(process.env.BENCH_PERF_PAGES) } : {}) });
    break;
  case 'perf-typed-64':
    buffer = obj.getMap('perf_events').openPerfBuffer((cpu, e) => count(Number(e.seq), e.ts), { type: 'stream_event', pageCount: 64 });
    break;
  case 'perf-typed-wake1':
    buffer = obj.getMap('perf_events').openPerfBuffer((cpu, e) => count(Number(e.seq), e.ts), { type: 'stream_event', pageCount: 64, wakeupBytes: 1 });
    break;
  case 'backpressure': {
    const hr = process.hrtime.bigint;
    buffer = obj.getMap('events').openRingBuffer((e) => {
      count(Number(e.seq), e.ts);
      const until = hr() + 20_000n; // 20 µs of work
      while (hr() < until);
      if ((received & 4095) === 0) peakRss = Math.max(peakRss, process.memoryUsage.rss());
    }, { type: 'stream_event' });
    break;
  }
}

// perf: the kernel's PERF_RECORD_LOST counts are in buffer.lost (perf_errors counts the same drops)
const kernelLost = () => (perf ? 0 : Number(obj.getGlobalVariable('ring_full')));
// Read once before the count starts: the first Buffer the addon returns in
// a process makes V8 drop the compiled code that reads typed arrays, once
// (--trace-deopt: "code dependencies"). Read first after SIGUSR1, it threw
// away the compiled callback while the last records were being delivered.
kernelLost();
// per thread (BENCH_THREADS=1): CPU ticks, CPU ms (schedstat) and minor page faults from
// /proc/self/task/*/stat, to tell the poller's share from the main thread's
const threads = () => {
  const out = {};
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields 10 (minflt), 14 (utime), 15 (stime) of stat(5), from field 3 here;
      // schedstat's first field: time on a CPU, in ns
      const ns = Number(fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      out[`${comm}:${tid}`] = { minflt: Number(f[7]), ticks: Number(f[11]) + Number(f[12]), ns };
    } catch {
      // the thread ended
    }
  }
  return out;
};
// the stdout stream is made at its first use: before the CPU count starts
process.stdout;
const threadsAtReady = process.env.BENCH_THREADS ? threads() : null;
const rssAtReady = process.memoryUsage.rss();
const cpuAtReady = process.cpuUsage();
peakRss = rssAtReady;
process.stdout.write('ready\n');

let finishing = false;
process.on('SIGUSR1', () => {
  if (finishing) return;
  finishing = true;
  let last = -1;
  let quietSince = Date.now();
  const check = () => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
    if (received !== last) {
      last = received;
      quietSince = Date.now();
    }
    const lost = buffer.lost + kernelLost();
    if (received + lost >= N || Date.now() - quietSince > 500) {
      // VmHWM: the peak RSS of the whole process, whatever sampled it
      const hwm = Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
      /** @type {{ [field: string]: any }} */
      const out = {
        received,
        lost,
        missing: N - unique,
        first_ts: Number(firstTs),
        last_ns: Number(lastNs),
        cpu_s: (() => {
          const c = process.cpuUsage(cpuAtReady);
          return (c.user + c.system) / 1e6;
        })(),
        ...(perf ? { perf_errors: Number(obj.getGlobalVariable('perf_errors')) } : { ring_full: Number(obj.getGlobalVariable('ring_full')) }),
        warm_ns: markK >= 2 && markRecv[1] > markRecv[0] ? +(((markUs[1] - markUs[0]) * 1000) / (markRecv[1] - markRecv[0])).toFixed(1) : null,
        rss_ready_mb: +(rssAtReady / 2 ** 20).toFixed(1),
        rss_growth_mb: +((Math.max(peakRss, hwm) - rssAtReady) / 2 ** 20).toFixed(1),
      };
      if (threadsAtReady) {
        const now = threads();
        out.threads = Object.fromEntries(
          Object.entries(now).map(([k, v]) => /** @type {[string, { minflt: number, ticks: number, ms: number }]} */ ([k, { minflt: v.minflt - (threadsAtReady[k]?.minflt ?? 0), ticks: v.ticks - (threadsAtReady[k]?.ticks ?? 0), ms: +((v.ns - (threadsAtReady[k]?.ns ?? 0)) / 1e6).toFixed(1) }])).filter(([, v]) => v.ms > 0.1 || v.minflt > 0),
        );
      }
      buffer.close();
      obj.close();
      process.stdout.write(`${JSON.stringify(out)}\n`);
      return;
    }
    setTimeout(check, 20);
  };
  check();
});
