'use strict';
// What a profile costs (README: Profiles). Needs root (or CAP_BPF +
// CAP_PERFMON) and wrk.
//   req/s: one wrk run against bench/profile_server.js, whose profile
//          windows run for a second and pause for a second, ROUNDS times:
//          each profiled second against the unprofiled ones around it
//          (bench/harness/http_row.js), at the default 99 Hz with off-CPU
//          stacks on; and the main-thread time of each pull
//   switch: in this process, the main thread sleeping (Atomics.wait, 50 µs:
//          two context switches of it each) with a window on and off,
//          paired, the median of ROUNDS pairs: the off-CPU stacks' cost
//          per switch of the main thread
//   node bench/profile_costs.js [--rounds N] [--json]
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
/** ns per sleep of the main thread (two switches of it). */
function sleeps(n) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) Atomics.wait(shared, 0, 0, 0.05);
  return Number(process.hrtime.bigint() - t) / n;
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
  const row = await requestRow();
  const perSwitchNs = await switchCost();
  const loadavg = execFileSync('uptime', { encoding: 'utf8' }).trim();
  if (argv.includes('--json')) {
    console.log(JSON.stringify({ rounds: ROUNDS, loadavg, row, perSwitchNs }));
    return;
  }
  console.log(`| profile (99 Hz, off-CPU on) | req/s unprofiled | profiled | cost (median of ${row.losses.length} paired seconds) | pull, main thread (median; first) |`);
  console.log('|---|---:|---:|---:|---:|');
  console.log(`| hello server | ${row.untraced.toFixed(0)} | ${row.traced.toFixed(0)} | ${(row.loss * 100).toFixed(1)}% | ${median(row.pullMs).toFixed(1)} ms; ${row.pullMs[0].toFixed(0)} ms |`);
  console.log(`\noff-CPU stacks: +${perSwitchNs.toFixed(0)} ns per switch of the main thread (median of ${ROUNDS} pairs)`);
  console.log(`losses: ${row.losses.map((l) => (l * 100).toFixed(1)).join(' ')}`);
  console.log(loadavg);
})();
