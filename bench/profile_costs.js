'use strict';
// The profile's costs (README: Profiles), in process, run as root with
// --perf-basic-prof: `node --perf-basic-prof bench/profile_costs.js`.
//   switch: the main thread sleeps N times (Atomics.wait, 50 µs): the time
//           per sleep with off-CPU stacks on, minus without (each sleep is
//           two context switches of the main thread)
//   pull:   the main thread's time to read and name a window's stacks and
//           encode its pprof (the window's own time is not counted)
const bpf = require('..');

const N = 20000;
const shared = new Int32Array(new SharedArrayBuffer(4));
function sleeps() {
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) Atomics.wait(shared, 0, 0, 0.05);
  return Number(process.hrtime.bigint() - t) / N;
}
function hot(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) for (let i = 0; i < 1000; i++) x = (x + Math.sqrt(i)) % 1e9;
  return x;
}

async function main() {
  const p = bpf.profile({ minOffCpu: 0 });
  const rows = [];
  for (let round = 0; round < 3; round++) {
    const off = sleeps();
    const window = p.collect({ seconds: 60 });
    const on = sleeps();
    await new Promise((r) => setImmediate(r));
    rows.push({ off, on });
    // end the window early: a second profiler is not needed, collect() ends on close
    p.close();
    await window.catch(() => {});
    break;
  }
  const q = bpf.profile();
  const t = setInterval(() => hot(30), 40);
  const pulls = [];
  for (let i = 0; i < 3; i++) {
    const w0 = process.hrtime.bigint();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 2000);
    const cpuBefore = process.cpuUsage();
    const w = await q.collect({ seconds: 5, signal: ac.signal });
    const readMs = Number(process.hrtime.bigint() - w0) / 1e6 - w.durationNs / 1e6;
    const t1 = process.hrtime.bigint();
    const body = w.pprof('cpu');
    const encodeMs = Number(process.hrtime.bigint() - t1) / 1e6;
    pulls.push({ readMs: +readMs.toFixed(1), encodeMs: +encodeMs.toFixed(1), stacks: w.cpu.length, bytes: body.length, cpuMs: +((process.cpuUsage(cpuBefore).user) / 1000).toFixed(0) });
  }
  clearInterval(t);
  q.close();
  const r = rows[0];
  console.log(JSON.stringify({ sleepNs: { off: Math.round(r.off), on: Math.round(r.on), perSwitch: Math.round((r.on - r.off) / 2) }, pulls }, null, 1));
}

main();
