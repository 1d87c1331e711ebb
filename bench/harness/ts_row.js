'use strict';
// One row of bench/profile_ts.js: the TypeScript compiler transpiling lib/
// in a loop (__test__/fixtures/real/ts_work.js, a file a turn of the event
// loop, as the real-programs suite runs it), profiled by ROW the way a
// service is pulled: a window of SECONDS, then its profile made and
// encoded (the pull), against SECONDS unprofiled.
//   node bench/harness/ts_row.js ROW ROUNDS SECONDS [back-to-back]
// ROW: none, pprof (@datadog/pprof's time profiler at 100 Hz: time.start,
// then time.stop and encode) or bpf:OPTIONS (one bpf.profile(OPTIONS) for
// the run; a window is collect({ seconds, signal }) ended at SECONDS, then
// pprof('cpu')). Warms up (45 files, then 5 s), prints {"ready": µs of
// CLOCK_MONOTONIC} (a .cpuprofile's clock), then ROUNDS pairs, profiled
// first in even rounds: per round {"round", "at" (its start, µs), "on": {
// files, ms, cpuMs }, "off": { ... }, "window": { primeMs, primes, pullMs,
// encodeMs, samples, and primeCpuMs, pullCpuMs, encodeCpuMs }} (ms: wall;
// cpuMs: the main thread's CPU from its schedstat, a tick behind at most
// at each end; primeMs: the window's V8Frames.prime calls, timed one by
// one; pullMs: from the window's end until collect() resolved, its naming
// and reading; encodeMs: pprof('cpu')). back-to-back: ROUNDS windows in
// a row and no unprofiled period (for `node --cpu-prof`: the top functions
// of a profiled workload). Then {"done"} and the process ends by itself
// (--cpu-prof writes its profile at a natural exit).
const fs = require('node:fs');
const path = require('node:path');
const { V8Frames } = require('../../lib/frames/v8');
const { step } = require('../../__test__/fixtures/real/ts_work');

const [row, roundsText, secondsText, mode] = process.argv.slice(2);
const ROUNDS = Number(roundsText);
const SECONDS = Number(secondsText);
const BACK_TO_BACK = mode === 'back-to-back';

const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const now = () => Number(process.hrtime.bigint()) / 1e6;
/** The main thread's CPU time, ms (its schedstat: the kernel's runtime, a tick behind at most). */
const mainCpuMs = () => Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'latin1').split(' ')[0]) / 1e6;

// the naming's steps during a window, timed where they run (the main thread, synchronously)
let primeMs = 0;
let primeCpuMs = 0;
let primes = 0;
const prime = V8Frames.prototype.prime;
V8Frames.prototype.prime = function timedPrime(...args) {
  const [t, c] = [now(), mainCpuMs()];
  try {
    return prime.apply(this, args);
  } finally {
    primeMs += now() - t;
    primeCpuMs += mainCpuMs() - c;
    primes++;
  }
};

/** The row's profiler: { start(), async stop() -> { pullMs, encodeMs, samples } }. */
function profilerOf() {
  if (row === 'none') return { start() {}, async stop() { return { pullMs: 0, encodeMs: 0, samples: 0 }; }, close() {} };
  if (row === 'pprof') {
    const { time, encode } = require('@datadog/pprof');
    return {
      start: () => time.start({ intervalMicros: 10_000 }),
      async stop() {
        const [t, c] = [now(), mainCpuMs()];
        const p = time.stop();
        const [made, madeCpu] = [now(), mainCpuMs()];
        await encode(p);
        return { pullMs: made - t, pullCpuMs: madeCpu - c, encodeMs: now() - made, encodeCpuMs: mainCpuMs() - madeCpu, samples: p.sample.reduce((n, s) => n + Number(s.value[0]), 0) };
      },
      close() {},
    };
  }
  if (!row.startsWith('bpf:')) throw new Error(`row ${row}: none, pprof or bpf:OPTIONS`);
  const profiler = require('../..').profile(JSON.parse(row.slice(4)));
  let ended;
  let window;
  return {
    start() {
      ended = new AbortController();
      window = profiler.collect({ seconds: 300, signal: ended.signal }); // (maxSeconds: ended at SECONDS)
    },
    async stop() {
      const [t, c] = [now(), mainCpuMs()];
      ended.abort();
      const w = await window;
      const [made, madeCpu] = [now(), mainCpuMs()];
      w.pprof('cpu');
      return { pullMs: made - t, pullCpuMs: madeCpu - c, encodeMs: now() - made, encodeCpuMs: mainCpuMs() - madeCpu, samples: w.cpu.reduce((n, s) => n + s.count, 0) };
    },
    close: () => profiler.close(),
  };
}

const turn = () => new Promise((r) => setImmediate(r));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Files transpiled, a turn of the event loop each, until `until()`. */
async function work(until) {
  let files = 0;
  while (!until()) {
    step();
    files++;
    await turn();
  }
  return files;
}

/** A period of SECONDS, profiled (a window and its pull) or not. */
async function period(p, on) {
  const [t, c] = [now(), mainCpuMs()];
  let window;
  if (on) {
    primeMs = 0;
    primeCpuMs = 0;
    primes = 0;
    p.start();
  }
  const files = await work(() => now() - t >= SECONDS * 1000);
  // (the pull's time is the period's: the files per second profiled pay for it)
  if (on) window = { ...(await p.stop()), primeMs, primeCpuMs, primes };
  return { files, ms: now() - t, cpuMs: mainCpuMs() - c, window };
}

(async () => {
  const p = profilerOf();
  try {
    for (let i = 0; i < 45; i++) step();
    const warm = now();
    await work(() => now() - warm >= 5000);
    say({ ready: String(process.hrtime.bigint() / 1000n) });
    for (let r = 0; r < ROUNDS; r++) {
      const out = { round: r, at: String(process.hrtime.bigint() / 1000n) };
      for (const on of BACK_TO_BACK ? [true] : r % 2 ? [false, true] : [true, false]) {
        const { window, ...x } = await period(p, on);
        out[on ? 'on' : 'off'] = x;
        if (window) out.window = window;
        if (!BACK_TO_BACK) await sleep(20);
      }
      say(out);
    }
  } finally {
    p.close();
  }
  say({ done: true });
})().catch((e) => {
  say({ error: e.message, code: e.code });
  process.exitCode = 1;
});
