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
//            99-tick          clock: 'tick': the kernel's tick samples (every
//                             3rd at CONFIG_HZ 250: 83 Hz), no timer of its own
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
//   sample: what a sample costs in CPU time, which others' load and the
//          host's steal barely move: bench/profile_work.js's fixed loop
//          under 24 JS frames, ROUNDS pairs of ~1 s profiled and not, in
//          one process per profiler at ~1 kHz (where a sample's cost is
//          well above the noise): none, @datadog/pprof, bpf.profile()'s
//          default, v8: false, threads: 'main', clock: 'tick' (at 250 Hz,
//          every tick at CONFIG_HZ 250), and a cpu-clock event whose
//          program only counts (what the timer's interrupt alone costs)
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
  ['99-tick', 'bpf:{"clock":"tick"}'],
]);
const OTHER_ROWS = ['switch', 'switches', 'sample'];
const ROWS = argv.includes('--rows') ? argv[argv.indexOf('--rows') + 1].split(',') : argv.includes('--no-http') ? OTHER_ROWS : [...HTTP_ROWS.keys(), ...OTHER_ROWS];
for (const r of ROWS) if (!HTTP_ROWS.has(r) && !OTHER_ROWS.includes(r)) throw new Error(`--rows: no row ${r}; the rows are ${[...HTTP_ROWS.keys(), ...OTHER_ROWS].join(', ')}`);
const STATS = '/proc/sys/kernel/bpf_stats_enabled';
/** The server on CPU 0 and wrk on CPU 1 (--no-pin: where the scheduler puts them). */
const PIN = !argv.includes('--no-pin') && require('node:os').availableParallelism() >= 2;

/** Lower quartile, median, upper quartile of the finite xs. */
function quartiles(xs) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))];
  return s.length ? [at(0.25), at(0.5), at(0.75)] : [NaN, NaN, NaN];
}

/** The req/s rows `names`, in turn, against one server under one wrk run. */
async function requestRows(names) {
  // pinned: the server (and every thread of it: the profiler's too) on CPU 0, the load on CPU 1
  /** @type {(cpu: number, cmd: string, args: string[]) => [string, string[]]} */
  const pin = (cpu, cmd, args) => (PIN ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, args]);
  const server = start(...pin(0, process.execPath, ['--perf-basic-prof', path.join(__dirname, 'profile_server.js')]));
  let load;
  const out = new Map();
  try {
    const { port } = json(await waitLine(server, /^\{"port"/, 10_000));
    load = start(...pin(1, 'wrk', ['-t1', '-c16', '-d3600s', `http://127.0.0.1:${port}/`]));
    await sleep(3000); // the server's JIT warms up
    for (const name of names) {
      const from = server.lines.length;
      server.stdin.write(`${ROUNDS} ${HTTP_ROWS.get(name)}\n`);
      const done = json(await waitLine(server, /^\{"(done|error)"/, ROUNDS * 2500 + 60_000, from));
      if (done.error) throw new Error(`row ${name}: ${done.error}`);
      const switches = server.lines.slice(from).map((l) => l.line).filter((l) => /^\{"t":"/.test(l)).map((l) => JSON.parse(l)).map((x) => ({ t: BigInt(x.t), on: x.on }));
      await sleep(100);
      const r = pairedLoss(servedSamples(server), switches);
      out.set(name, { loss: r.loss, quartiles: quartiles(r.losses), losses: r.losses, traced: r.traced, untraced: r.untraced, cpu: Object.fromEntries(Object.entries(r.cpu).map(([k, c]) => [k, { ...c, quartiles: quartiles(c.costs) }])), pullMs: done.pullMs, stallMs: done.stallMs, samples: done.samples, programs: done.programs, seconds: ROUNDS });
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

/** The sample rows: name -> the profiler (bench/harness/profilers.js), at about 1 kHz, where a sample's cost is well above the noise. */
const SAMPLE_ROWS = new Map([
  ['none', 'none'],
  ['pprof 1000 Hz', 'pprof:1000'],
  ['bpf 997 Hz (off CPU on, V8 walk)', 'bpf:{"frequency":997}'],
  ['bpf 997 Hz, v8: false', 'bpf:{"frequency":997,"v8":false}'],
  ["bpf 997 Hz, threads: 'main'", 'bpf:{"frequency":997,"threads":"main"}'],
  ["bpf clock: 'tick', 250 Hz (CONFIG_HZ here)", 'bpf:{"frequency":250,"clock":"tick"}'],
  ['cpu-clock 997 Hz, a program that only counts (the interrupt alone)', 'interrupt:997'],
]);

/**
 * What a sample costs, in CPU time: bench/profile_work.js's fixed loop under
 * 24 JS frames, profiled and not, ROUNDS pairs in one process per row; the
 * added CPU time of the main thread and of the process over the samples
 * taken (median of the pairs). { name: { main, proc (ns per sample),
 * samples (median per round), pullMs, programs } }.
 */
async function sampleCosts() {
  const out = {};
  for (const [name, row] of SAMPLE_ROWS) {
    const child = start(process.execPath, [path.join(__dirname, 'profile_work.js'), row, String(ROUNDS)]);
    const done = json(await waitLine(child, /^\{"(done|error)"/, ROUNDS * 10_000 + 60_000));
    await stop(child, 'SIGTERM');
    if (done.error) throw new Error(`sample row ${name}: ${done.error}`);
    const rounds = child.lines.map((l) => l.line).filter((l) => l.startsWith('{"round"')).map((l) => JSON.parse(l));
    const per = (k) => median(rounds.map((r) => (r[k][0] - r[k][1]) / r.samples));
    const added = (k) => quartiles(rounds.map((r) => r[k][0] / r[k][1] - 1));
    out[name] = { main: per('main'), proc: per('proc'), mainAdded: added('main'), procAdded: added('proc'), samples: median(rounds.map((r) => r.samples)), pullMs: done.pullMs, programs: done.programs };
  }
  return out;
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
    if (ROWS.includes('sample')) result.perSample = await sampleCosts();
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
    console.log(`| profile (hello server, wrk -t1 -c16) | req/s unprofiled | profiled | cost, median (quartiles) of ${ROUNDS} paired seconds | main thread's CPU per request: unprofiled µs; cost, median (quartiles) | / pprof's | process CPU per request: cost, median (quartiles) | / pprof's | samples per window | pull: until made (median; first) | pull: the event loop's longest stall (median; first) |${stats !== null ? ' BPF programs: runs/s, ns/run |' : ''}`);
    console.log(`|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|${stats !== null ? '---|' : ''}`);
    /** `x` over the pprof row's `x`, where both are costs. */
    const vsPeer = (name, x, peer) => (name !== 'pprof' && name !== 'none' && Number.isFinite(peer) && peer > 0 ? `${(x / peer).toFixed(2)}x` : '');
    for (const name of names) {
      const r = rows.get(name);
      const peer = rows.get('pprof');
      const progs = Object.entries(r.programs ?? {})
        .filter(([, c]) => c.runs > 0)
        .map(([n, c]) => `${n} ${(c.runs / r.seconds).toFixed(0)}/s, ${(c.ns / c.runs).toFixed(0)} ns`)
        .join('; ');
      const { main, proc } = r.cpu;
      console.log(
        `| ${name} | ${r.untraced.toFixed(0)} | ${r.traced.toFixed(0)} | ${pct(r.loss)} (${r.quartiles.map(pct).join(' .. ')}) | ${(main.untraced / 1000).toFixed(1)}; ${pct(main.cost)} (${main.quartiles.map(pct).join(' .. ')}) | ${vsPeer(name, main.cost, peer?.cpu.main.cost)} | ${pct(proc.cost)} (${proc.quartiles.map(pct).join(' .. ')}) | ${vsPeer(name, proc.cost, peer?.cpu.proc.cost)} | ${median(r.samples).toFixed(0)} | ${median(r.pullMs).toFixed(1)} ms; ${r.pullMs[0].toFixed(0)} ms | ${median(r.stallMs).toFixed(1)} ms; ${r.stallMs[0].toFixed(0)} ms |${stats !== null ? ` ${progs || '—'} |` : ''}`,
      );
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
  if (result.perSample) {
    console.log(`\n| a fixed loop under 24 JS frames (${ROUNDS} pairs of ~1 s) | samples a round | CPU added, median (quartiles): main thread | the process | CPU per sample: main thread | the process | so at ~100 Hz, of a busy main thread | pull, main thread (median; first) |${stats !== null ? ' BPF programs: ns/run |' : ''}`);
    console.log(`|---|---:|---:|---:|---:|---:|---:|---:|${stats !== null ? '---|' : ''}`);
    const us = (ns) => (Number.isFinite(ns) ? `${(ns / 1000).toFixed(1)} µs` : '');
    for (const [name, r] of Object.entries(result.perSample)) {
      const progs = Object.entries(r.programs ?? {})
        .filter(([, c]) => c.runs > 0)
        .map(([n, c]) => `${n} ${(c.ns / c.runs).toFixed(0)}`)
        .join('; ');
      const q = (x) => `${pct(x[1])} (${pct(x[0])} .. ${pct(x[2])})`;
      console.log(`| ${name} | ${r.samples} | ${q(r.mainAdded)} | ${q(r.procAdded)} | ${us(r.main)} | ${us(r.proc)} | ${Number.isFinite(r.main) ? `${((r.main * 100) / 1e7).toFixed(2)}%` : ''} | ${median(r.pullMs).toFixed(1)} ms; ${r.pullMs[0].toFixed(0)} ms |${stats !== null ? ` ${progs || '—'} |` : ''}`);
    }
  }
  console.log(result.loadavg);
})();
