'use strict';
// What a profile costs (docs/service.md: Profiles). Needs root (or CAP_BPF +
// CAP_PERFMON) and wrk.
//   req/s: one wrk run against bench/profile_server.js, whose profile
//          windows run for a second and pause for a second, ROUNDS times:
//          each profiled second against the unprofiled ones around it
//          (bench/harness/http_row.js), at the default 99 Hz with off-CPU
//          stacks on; and the main-thread time of each pull
//   switch: in this process, the main thread's CPU time sleeping
//          (Atomics.wait, 50 µs: two context switches of it each) with a
//          window on and off, paired, the median of ROUNDS pairs: the
//          off-CPU stacks' cost per switch of the main thread (a lower
//          bound: the scheduler may charge some of it to the next task;
//          wall time was below the noise here)
//   sample: a loop's own CPU time at 997 Hz against unprofiled, paired,
//          per sample taken (CPU time: others' load barely moves it)
//   node bench/profile_costs.js [--rounds N] [--json] [--no-http]
//   PROFILE_OPTIONS='{"offCpu":false}' node bench/profile_costs.js   # the req/s row with bpf.profile(those options)
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const bpf = require('..');
const { start, stop, waitLine, sleep, json } = require('./harness/procs');
const { pairedLoss, servedSamples } = require('./harness/http_row');
const { median } = require('./harness/numbers');

const argv = process.argv.slice(2);
const ROUNDS = Number(argv.includes('--rounds') ? argv[argv.indexOf('--rounds') + 1] : 15);

async function requestRow() {
  const server = start(process.execPath, ['--perf-basic-prof', path.join(__dirname, 'profile_server.js')]);
  let load;
  try {
    const { port } = json(await waitLine(server, /^\{"port"/, 10_000));
    load = start('wrk', ['-t1', '-c16', '-d3600s', `http://127.0.0.1:${port}/`]);
    await sleep(3000); // the server's JIT warms up
    const from = server.lines.length;
    server.stdin.write(`${ROUNDS}\n`);
    const done = json(await waitLine(server, /^\{"(done|error)"/, ROUNDS * 2500 + 60_000, from));
    if (done.error) throw new Error(done.error);
    const switches = server.lines.slice(from).map((l) => l.line).filter((l) => /^\{"t":"/.test(l)).map((l) => JSON.parse(l)).map((x) => ({ t: BigInt(x.t), on: x.on }));
    await sleep(100);
    const r = pairedLoss(servedSamples(server), switches);
    return { loss: r.loss, losses: r.losses, traced: r.traced, untraced: r.untraced, pullMs: done.pullMs, samples: done.samples };
  } finally {
    if (load) await stop(load, 'SIGINT');
    await stop(server, 'SIGTERM');
  }
}

const shared = new Int32Array(new SharedArrayBuffer(4));
/** CPU time (ns, user + system) per sleep of the main thread (two switches of it: the program runs as it leaves the CPU and as it comes back, charged to it). */
function sleeps(n) {
  const c = process.cpuUsage();
  for (let i = 0; i < n; i++) Atomics.wait(shared, 0, 0, 0.05);
  const u = process.cpuUsage(c);
  return ((u.user + u.system) * 1000) / n;
}

/** CPU time (µs, user + system) of a fixed loop: the sampling's cost is charged to the thread it interrupts. */
function cpuOfLoop(n) {
  const c = process.cpuUsage();
  let x = 0;
  for (let i = 0; i < n; i++) x = (x + Math.sqrt(i)) % 1e9;
  const u = process.cpuUsage(c);
  return { us: u.user + u.system, x };
}

/**
 * The CPU cost of one sample (two stack walks and a hash update), in this
 * process's CPU time, which other processes' load barely moves: a loop at
 * 997 Hz against the same loop unprofiled, paired; divided by the samples
 * taken. At 99 Hz that is 99 x it per busy CPU-second.
 */
async function sampleCost() {
  const profiler = bpf.profile({ frequency: 997, offCpu: false });
  const perSample = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const ended = new AbortController();
      const window = profiler.collect({ seconds: 60, signal: ended.signal });
      const on = cpuOfLoop(3e7);
      ended.abort();
      const w = await window;
      const off = cpuOfLoop(3e7);
      const samples = w.cpu.reduce((n, s) => n + s.count, 0);
      if (samples) perSample.push(((on.us - off.us) * 1000) / samples);
    }
  } finally {
    profiler.close();
  }
  return median(perSample);
}

async function switchCost() {
  const profiler = bpf.profile({ minOffCpu: 0 });
  const d = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const ended = new AbortController();
      const window = profiler.collect({ seconds: 60, signal: ended.signal });
      const on = sleeps(2000);
      ended.abort();
      await window;
      const off = sleeps(2000);
      d.push((on - off) / 2);
    }
  } finally {
    profiler.close();
  }
  return median(d);
}

(async () => {
  const row = argv.includes('--no-http') ? null : await requestRow();
  const perSwitchNs = await switchCost();
  const perSampleNs = await sampleCost();
  const loadavg = execFileSync('uptime', { encoding: 'utf8' }).trim();
  if (argv.includes('--json')) {
    console.log(JSON.stringify({ rounds: ROUNDS, loadavg, row, perSwitchNs, perSampleNs }));
    return;
  }
  if (row) {
    console.log(`| profile (99 Hz, off-CPU on) | req/s unprofiled | profiled | cost (median of ${row.losses.length} paired seconds) | pull, main thread (median; first) |`);
    console.log('|---|---:|---:|---:|---:|');
    console.log(`| hello server | ${row.untraced.toFixed(0)} | ${row.traced.toFixed(0)} | ${(row.loss * 100).toFixed(1)}% | ${median(row.pullMs).toFixed(1)} ms; ${row.pullMs[0].toFixed(0)} ms |`);
    console.log(`losses: ${row.losses.map((l) => (l * 100).toFixed(1)).join(' ')}`);
  }
  console.log(`\noff-CPU stacks: +${perSwitchNs.toFixed(0)} ns per switch of the main thread (median of ${ROUNDS} pairs)`);
  console.log(`CPU samples: +${perSampleNs.toFixed(0)} ns of CPU per sample (median of ${ROUNDS} pairs at 997 Hz): at 99 Hz, ${((perSampleNs * 99) / 1e7).toFixed(3)}% of a busy CPU`);
  console.log(loadavg);
})();
