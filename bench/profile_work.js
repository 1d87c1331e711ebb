'use strict';
// The profile rows' CPU measure (bench/profile_costs.js, row "sample"):
// what a profiler costs the work it profiles, in CPU time, which neither
// the host's steal of this VM nor another process moves. The work is a
// fixed arithmetic loop at the bottom of a stack of DEPTH JS frames, in
// chunks, one per turn of the event loop (so that the profilers' timers
// run, as in a service: bpf.profile()'s naming, the doorbell). A fixed
// loop takes the same CPU time to ±2% here; a JSON-parsing "request" loop
// varied by ±25% (the GC), too much to see a profile's cost in.
//   node bench/profile_work.js ROW ROUNDS [SECONDS]
// ROW as bench/harness/profilers.js takes it. Sizes the work to SECONDS
// (default 1) of the main thread's CPU unprofiled, then ROUNDS times runs
// it profiled (in a window started before it and pulled after it, neither
// counted) and unprofiled, in alternating order. Prints per round
// {"round", "main": [on, off] ns (the main thread's CPU), "proc": [on,
// off] ns (the process's, every thread), "samples"}, then {"done",
// "pullMs", "programs": { name: { runs, ns } } of this process's BPF
// programs over the profiled runs (kernel.bpf_stats_enabled on)}.
const fs = require('node:fs');
const { profilerOf, programCounters } = require('./harness/profilers');

const [row, rounds, seconds = '1'] = process.argv.slice(2);
const DEPTH = 24;
const CHUNK = 200_000;

/** CHUNK turns of a fixed loop. */
function leaf(i0) {
  let x = 0;
  for (let i = i0; i < i0 + CHUNK; i++) x = (x + Math.sqrt(i)) % 1e9;
  return x;
}

/** `depth` frames of middleware above the loop (a service's stack is deep). */
function middleware(depth, i) {
  return depth === 0 ? leaf(i) : middleware(depth - 1, i) + 1;
}

const turn = () => new Promise((r) => setImmediate(r));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let sink = 0;

/** `n` chunks, one per turn of the event loop. */
async function work(n) {
  for (let i = 0; i < n; i++) {
    sink += middleware(DEPTH, i * CHUNK);
    await turn();
  }
}

/** The main thread's CPU time, ns (its schedstat: the kernel's runtime; a BPF program run in an interrupt is charged to the thread it interrupted). */
const mainNs = () => Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'latin1').split(' ')[0]);

/** CPU time of `n` chunks: { main, proc } ns. */
async function measured(n) {
  const [m, p] = [mainNs(), process.cpuUsage()];
  await work(n);
  const u = process.cpuUsage(p);
  return { main: mainNs() - m, proc: (u.user + u.system) * 1000 };
}

(async () => {
  const p = profilerOf(row);
  const pullMs = [];
  const programs = {};
  try {
    // warm the JIT, then size a batch to SECONDS of the main thread
    await work(100);
    const probe = await measured(100);
    const n = Math.max(1, Math.round((100 * Number(seconds) * 1e9) / probe.main));
    for (let r = 0; r < Number(rounds); r++) {
      const out = { round: r, main: [0, 0], proc: [0, 0], samples: 0 };
      for (const on of r % 2 ? [false, true] : [true, false]) {
        if (on) {
          p.start();
          await sleep(20); // attached, settled
        }
        const before = on ? programCounters() : {};
        const c = await measured(n);
        if (on) {
          for (const [k, v] of Object.entries(programCounters())) {
            const sum = (programs[k] ??= { runs: 0, ns: 0 });
            sum.runs += v.runs - (before[k]?.runs ?? 0);
            sum.ns += v.ns - (before[k]?.ns ?? 0);
          }
        }
        out.main[on ? 0 : 1] = c.main;
        out.proc[on ? 0 : 1] = c.proc;
        if (on) {
          const t = process.hrtime.bigint();
          out.samples = await p.stop();
          pullMs.push(Number(process.hrtime.bigint() - t) / 1e6);
        }
        await sleep(20);
      }
      process.stdout.write(`${JSON.stringify(out)}\n`);
    }
  } finally {
    p.close();
  }
  process.stdout.write(`${JSON.stringify({ done: true, pullMs, programs, sink: sink > 0 })}\n`);
})().catch((e) => {
  process.stdout.write(`${JSON.stringify({ error: e.message, code: e.code })}\n`);
  process.exitCode = 1;
});
