'use strict';
// What a profile costs (docs/performance.md: Profiles). Needs root (or
// CAP_BPF + CAP_PERFMON) and wrk; the pprof row needs the devDependency
// @datadog/pprof (npm install).
//   req/s rows: one wrk run against one bench/profile_server.js for all of
//          them, in turn: each row's profile windows run for a second and
//          pause for a second, ROUNDS times; each profiled second against
//          the unprofiled ones around it (bench/harness/http_row.js); and
//          the main-thread time of each pull. The rows:
//            none             no profiler (the noise)
//            pprof            @datadog/pprof's time profiler at 100 Hz (V8's CpuProfiler)
//            99               bpf.profile(): 99 Hz, off-CPU stacks on (the default:
//                             the sched_switch tracepoint, preempted intervals counted, not walked)
//            99-nooff         99 Hz, offCpu: false
//            19, 19-nooff     19 Hz, off-CPU on and off
//            99-context-switches  99 Hz, off-CPU from a context-switches
//                             perf event of the main thread (offCpuEvent)
//            99-preempted     99 Hz, preempted intervals by stack too
//                             (preempted: true, the way before)
//            99-main          99 Hz, CPU samples of the main thread only
//                             (threads: 'main': one event that follows it)
//          With --bpf-stats (sets kernel.bpf_stats_enabled to 1 for the run,
//          then back): each BPF program's runs per second and ns per run, a
//          measure the machine's load barely moves (the stats cost every
//          BPF run of the machine a little themselves)
//   switch: in this process, the main thread's CPU time sleeping
//          (Atomics.wait, 50 µs: two context switches of it each) with a
//          window on and off, paired, the median of ROUNDS pairs: the
//          off-CPU stacks' cost per switch of the main thread (a lower
//          bound: the scheduler may charge some of it to the next task;
//          wall time was below the noise here), for each offCpuEvent
//   switches: what running a program at context switches costs, on a C
//          pipe ping-pong pinned to one CPU (bench/pingpong.c, 100,000
//          round trips), CPU time per switch, ROUNDS rounds of each in
//          turn: nothing; the sched_switch tracepoint with the profile's
//          first test, one of the pair its target (every switch runs it);
//          a context-switches perf event of one of the pair (its switches
//          only, each with perf's per-task context switch); the same event
//          on this process's idle main thread (what it costs the others).
//          Programs with no work (bench/switch_costs.bpf.c): the dispatch
//   sample: a loop's own CPU time at 997 Hz against unprofiled, paired,
//          per sample taken (CPU time: others' load barely moves it), for
//          threads 'all' (an event per CPU) and 'main' (one that follows it)
//   node bench/profile_costs.js [--rounds N] [--rows none,pprof,99,...,switch,sample] [--bpf-stats] [--json]
//   (default: every row; --no-http: switch and sample only)
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const bpf = require('..');
const { start, stop, waitLine, sleep, json } = require('./harness/procs');
const { pairedLoss, servedSamples } = require('./harness/http_row');
const { median } = require('./harness/numbers');

const argv = process.argv.slice(2);
const ROUNDS = Number(argv.includes('--rounds') ? argv[argv.indexOf('--rounds') + 1] : 15);
/** The req/s rows: name -> the server's ROW (a Map: in this order). */
const HTTP_ROWS = new Map([
  ['none', 'none'],
  ['pprof', 'pprof'],
  ['99', 'bpf:{}'],
  ['99-nooff', 'bpf:{"offCpu":false}'],
  ['99-nov8', 'bpf:{"v8":false}'],
  ['19', 'bpf:{"frequency":19}'],
  ['19-nooff', 'bpf:{"frequency":19,"offCpu":false}'],
  ['99-context-switches', 'bpf:{"offCpuEvent":"context-switches"}'],
  ['99-preempted', 'bpf:{"preempted":true}'],
  ['99-main', 'bpf:{"threads":"main"}'],
]);
const OTHER_ROWS = ['switch', 'switches', 'sample'];
const ROWS = argv.includes('--rows') ? argv[argv.indexOf('--rows') + 1].split(',') : argv.includes('--no-http') ? OTHER_ROWS : [...HTTP_ROWS.keys(), ...OTHER_ROWS];
for (const r of ROWS) if (!HTTP_ROWS.has(r) && !OTHER_ROWS.includes(r)) throw new Error(`--rows: no row ${r}; the rows are ${[...HTTP_ROWS.keys(), ...OTHER_ROWS].join(', ')}`);
const STATS = '/proc/sys/kernel/bpf_stats_enabled';

/** Lower quartile, median, upper quartile of the finite xs. */
function quartiles(xs) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))];
  return s.length ? [at(0.25), at(0.5), at(0.75)] : [NaN, NaN, NaN];
}

/** The req/s rows `names`, in turn, against one server under one wrk run. */
async function requestRows(names) {
  const server = start(process.execPath, ['--perf-basic-prof', path.join(__dirname, 'profile_server.js')]);
  let load;
  const out = new Map();
  try {
    const { port } = json(await waitLine(server, /^\{"port"/, 10_000));
    load = start('wrk', ['-t1', '-c16', '-d3600s', `http://127.0.0.1:${port}/`]);
    await sleep(3000); // the server's JIT warms up
    for (const name of names) {
      const from = server.lines.length;
      server.stdin.write(`${ROUNDS} ${HTTP_ROWS.get(name)}\n`);
      const done = json(await waitLine(server, /^\{"(done|error)"/, ROUNDS * 2500 + 60_000, from));
      if (done.error) throw new Error(`row ${name}: ${done.error}`);
      const switches = server.lines.slice(from).map((l) => l.line).filter((l) => /^\{"t":"/.test(l)).map((l) => JSON.parse(l)).map((x) => ({ t: BigInt(x.t), on: x.on }));
      await sleep(100);
      const r = pairedLoss(servedSamples(server), switches);
      out.set(name, { loss: r.loss, quartiles: quartiles(r.losses), losses: r.losses, traced: r.traced, untraced: r.untraced, pullMs: done.pullMs, samples: done.samples, programs: done.programs, seconds: ROUNDS });
    }
    return out;
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
async function sampleCost(threads) {
  const profiler = bpf.profile({ frequency: 997, offCpu: false, threads });
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

/** The switches row: { variant: [first quartile, median] of CPU ns per switch }. */
async function switchesCost() {
  const { buildAll, built } = require('./harness/build');
  const { loadBpfProgram } = require('../lib/core/object');
  buildAll();
  const once = (attach) =>
    new Promise((resolve, reject) => {
      const child = require('node:child_process').spawn(built('pingpong'), ['100000', '0', '300'], { stdio: ['ignore', 'pipe', 'inherit'] });
      const obj = loadBpfProgram(built('switch_costs.bpf.o'));
      obj.setGlobalVariable('target_pid', child.pid);
      obj.load();
      const links = attach(obj, child.pid);
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.on('exit', (code) => {
        for (const l of links) l.detach();
        obj.close();
        if (code === 0) resolve(JSON.parse(out).cpuNsPerSwitch);
        else reject(new Error(`pingpong exited ${code}`));
      });
    });
  const variants = {
    nothing: () => [],
    'sched_switch (first test)': (obj) => [obj.attach('first_test')],
    'context-switches event of one of the pair': (obj, pid) => [obj.attachPerfEvent('own_switch', { event: 'context-switches', period: 1, pid })],
    'context-switches event of an idle thread': (obj) => [obj.attachPerfEvent('own_switch', { event: 'context-switches', period: 1, pid: process.pid })],
  };
  const runs = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let i = 0; i < ROUNDS; i++) for (const [k, attach] of Object.entries(variants)) runs[k].push(await once(attach));
  return Object.fromEntries(Object.entries(runs).map(([k, xs]) => [k, [quartiles(xs)[0], quartiles(xs)[1]]]));
}

async function switchCost(offCpuEvent) {
  const profiler = bpf.profile({ minOffCpu: 0, offCpuEvent });
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

const pct = (x) => `${(x * 100).toFixed(1)}%`;

(async () => {
  const stats = argv.includes('--bpf-stats') ? fs.readFileSync(STATS, 'utf8').trim() : null;
  if (stats !== null) fs.writeFileSync(STATS, '1');
  let rows;
  const result = { rounds: ROUNDS };
  try {
    const httpNames = ROWS.filter((r) => HTTP_ROWS.has(r));
    rows = httpNames.length ? await requestRows(httpNames) : new Map();
    if (ROWS.includes('switch')) result.perSwitchNs = { 'context-switches': await switchCost('context-switches'), sched_switch: await switchCost('sched_switch') };
    if (ROWS.includes('switches')) result.switches = await switchesCost();
    if (ROWS.includes('sample')) result.perSampleNs = { all: await sampleCost('all'), main: await sampleCost('main') };
  } finally {
    if (stats !== null) fs.writeFileSync(STATS, stats);
  }
  result.loadavg = execFileSync('uptime', { encoding: 'utf8' }).trim();
  if (argv.includes('--json')) {
    console.log(JSON.stringify({ ...result, rows: Object.fromEntries(rows) }));
    return;
  }
  const names = [...rows.keys()];
  if (names.length) {
    console.log(`| profile (hello server, wrk -t1 -c16) | req/s unprofiled | profiled | cost, median (quartiles) of ${ROUNDS} paired seconds | / pprof's | samples per window | pull, main thread (median; first) |${stats !== null ? ' BPF programs: runs/s, ns/run |' : ''}`);
    console.log(`|---|---:|---:|---:|---:|---:|---:|${stats !== null ? '---|' : ''}`);
    const peer = rows.get('pprof')?.loss;
    for (const name of names) {
      const r = rows.get(name);
      const progs = Object.entries(r.programs ?? {})
        .filter(([, c]) => c.runs > 0)
        .map(([n, c]) => `${n} ${(c.runs / r.seconds).toFixed(0)}/s, ${(c.ns / c.runs).toFixed(0)} ns`)
        .join('; ');
      const vs = name !== 'pprof' && name !== 'none' && Number.isFinite(peer) && peer > 0 ? `${(r.loss / peer).toFixed(2)}x` : '';
      console.log(`| ${name} | ${r.untraced.toFixed(0)} | ${r.traced.toFixed(0)} | ${pct(r.loss)} (${r.quartiles.map(pct).join(' .. ')}) | ${vs} | ${median(r.samples).toFixed(0)} | ${median(r.pullMs).toFixed(1)} ms; ${r.pullMs[0].toFixed(0)} ms |${stats !== null ? ` ${progs || '—'} |` : ''}`);
    }
  }
  if (result.perSwitchNs) {
    for (const [ev, ns] of Object.entries(result.perSwitchNs)) console.log(`\noff-CPU stacks (offCpuEvent ${ev}): +${ns.toFixed(0)} ns per switch of the main thread (median of ${ROUNDS} pairs)`);
  }
  if (result.switches) {
    console.log(`\n| a C pipe ping-pong on one CPU (${ROUNDS} rounds) | CPU ns per switch, first quartile; median | added (median) |`);
    console.log('|---|---:|---:|');
    const base = result.switches.nothing[1];
    for (const [k, [q1, m]] of Object.entries(result.switches)) console.log(`| ${k} | ${q1.toFixed(0)}; ${m.toFixed(0)} | ${k === 'nothing' ? '' : `${(m - base).toFixed(0)} ns`} |`);
  }
  for (const [threads, ns] of Object.entries(result.perSampleNs ?? {})) {
    console.log(`CPU samples (threads: '${threads}'): +${ns.toFixed(0)} ns of CPU per sample (median of ${ROUNDS} pairs at 997 Hz): at 99 Hz, ${((ns * 99) / 1e7).toFixed(3)}% of a busy CPU`);
  }
  console.log(result.loadavg);
})();
