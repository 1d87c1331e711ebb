'use strict';
// What profiling costs a real program's main thread (docs/performance.md:
// Profiles): the TypeScript compiler transpiling lib/ in a loop (the
// real-programs suite's typescript program), pulled the way a service is
// (a window of SECONDS, then its profile made and encoded), against
// SECONDS unprofiled, ROUNDS pairs in one process per row
// (bench/harness/ts_row.js), rows in turn. Needs root (or CAP_BPF +
// CAP_PERFMON) and the devDependencies typescript and @datadog/pprof.
//   throughput rows (paired; the median of the pairs, their quartiles):
//            none      no profiler (the noise)
//            pprof     @datadog/pprof's time profiler at 100 Hz (V8's CpuProfiler)
//            ours      bpf.profile(), the defaults (99 Hz: the tick where it can)
//            ours-499  bpf.profile({ frequency: 499 }) (a cpu-clock event)
//          files transpiled per second (wall: the period's files over its
//          time, the pull's included), and the main thread's CPU per file
//          (its schedstat: what the machine's other load moves least); our
//          main thread's ms per window: the synchronous parts timed where
//          they run (V8Frames.prime's calls, collect() from the window's end
//          until it resolves, pprof('cpu')), wall
//   cpuprof: ours and ours-499 again, PROF_WINDOWS windows back to back
//          under `node --cpu-prof` (1 ms): the main thread's top 20
//          functions by self time, from the program's ready on; our
//          functions' rank and share (a frame of lib/, index.js or
//          binding.js, or node's own or a native function they call), and the samples
//          with one of ours on the stack, as ms per window
//   node bench/profile_ts.js [--rounds N] [--seconds S] [--rows none,pprof,ours,ours-499,cpuprof] [--windows N] [--json FILE]
//   (--json: the figures also written to FILE)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { start, stop, waitLine } = require('./harness/procs');
const { median } = require('./harness/numbers');

const argv = process.argv.slice(2);
const arg = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const ROUNDS = Number(arg('--rounds', 6));
const SECONDS = Number(arg('--seconds', 10));
const PROF_WINDOWS = Number(arg('--windows', 4));
const ROW_OF = new Map([
  ['none', 'none'],
  ['pprof', 'pprof'],
  ['ours', 'bpf:{}'],
  ['ours-499', 'bpf:{"frequency":499}'],
]);
const ROWS = arg('--rows', [...ROW_OF.keys(), 'cpuprof'].join(',')).split(',');
for (const r of ROWS) if (!ROW_OF.has(r) && r !== 'cpuprof') throw new Error(`--rows: no row ${r}; the rows are ${[...ROW_OF.keys(), 'cpuprof'].join(', ')}`);
const ROOT = path.join(__dirname, '..');
const CHILD = path.join(__dirname, 'harness', 'ts_row.js');
const KEEP = arg('--keep', null);

/** Lower quartile, median, upper quartile of the finite xs. */
function quartiles(xs) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.max(0, Math.round(q * (s.length - 1))))];
  return s.length ? [at(0.25), at(0.5), at(0.75)] : [NaN, NaN, NaN];
}

/** Runs ts_row.js (under `node ...flags`); its rounds. */
async function child(row, rounds, extra = [], flags = []) {
  const c = start(process.execPath, [...flags, CHILD, row, String(rounds), String(SECONDS), ...extra], { cwd: os.tmpdir() });
  try {
    const done = JSON.parse((await waitLine(c, /^\{"(done|error)"/, rounds * (2 * SECONDS + 30) * 1000 + 120_000)).line);
    if (done.error) throw new Error(`row ${row}: ${done.error}${c.stderrText ? `\n${c.stderrText}` : ''}`);
    await c.exited;
    const lines = c.lines.map((l) => JSON.parse(l.line));
    return { ready: Number(lines.find((l) => l.ready)?.ready), rounds: lines.filter((l) => 'round' in l) };
  } finally {
    await stop(c, 'SIGTERM');
  }
}

/** A row's pairs: files/s lost and main-thread CPU per file added (each pair's), and the window's parts. */
function throughput(rounds) {
  const rate = (x) => (x.files * 1000) / x.ms;
  const cpuPerFile = (x) => x.cpuMs / x.files;
  const parts = (k) => rounds.map((r) => r.window?.[k] ?? 0);
  const ours = rounds.map((r) => (r.window ? r.window.primeMs + r.window.pullMs + r.window.encodeMs : 0));
  const oursCpu = rounds.map((r) => (r.window ? r.window.primeCpuMs + r.window.pullCpuMs + r.window.encodeCpuMs : 0));
  return {
    off: median(rounds.map((r) => rate(r.off))),
    on: median(rounds.map((r) => rate(r.on))),
    loss: quartiles(rounds.map((r) => 1 - rate(r.on) / rate(r.off))),
    cpuOff: median(rounds.map((r) => cpuPerFile(r.off))),
    cpuAdded: quartiles(rounds.map((r) => cpuPerFile(r.on) / cpuPerFile(r.off) - 1)),
    busy: median(rounds.map((r) => r.off.cpuMs / r.off.ms)),
    mainMs: ours,
    mainCpuMs: oursCpu,
    primeMs: parts('primeMs'),
    primes: parts('primes'),
    pullMs: parts('pullMs'),
    encodeMs: parts('encodeMs'),
    samples: parts('samples'),
  };
}

/** Whether a profile node's file is this package's own (lib/, the entry, the binding). */
const oursFile = (url) => {
  const file = url.startsWith('file://') ? decodeURIComponent(new URL(url).pathname) : url;
  return file.startsWith(path.join(ROOT, 'lib') + path.sep) || file === path.join(ROOT, 'index.js') || file === path.join(ROOT, 'binding.js');
};
const SPECIAL = new Set(['(root)', '(idle)', '(program)', '(garbage collector)']);

/**
 * A .cpuprofile from `fromUs` on: the top `n` functions by self time
 * (name, file:line, ms, share, ours), the best rank of ours, and the
 * samples with one of ours on the stack (ms). A native function (no file)
 * or node's own (node:fs) is ours when the nearest frame above it in
 * another file is.
 */
function topFunctions(profile, fromUs, n = 20) {
  const byId = new Map(profile.nodes.map((x) => [x.id, x]));
  const parent = new Map();
  for (const x of profile.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
  const ownerOf = new Map(); // id -> whether the node is ours
  const underOurs = new Map(); // id -> whether one of ours is on its stack
  const isOurs = (id) => {
    if (ownerOf.has(id)) return ownerOf.get(id);
    const x = byId.get(id);
    let v = false;
    if (x.callFrame.url && !x.callFrame.url.startsWith('node:')) v = oursFile(x.callFrame.url);
    else if (!SPECIAL.has(x.callFrame.functionName) && parent.has(id)) v = isOurs(parent.get(id));
    ownerOf.set(id, v);
    return v;
  };
  const under = (id) => {
    if (underOurs.has(id)) return underOurs.get(id);
    const v = isOurs(id) || (parent.has(id) && under(parent.get(id)));
    underOurs.set(id, v);
    return v;
  };
  const self = new Map(); // key -> { name, where, ms, ours }
  let total = 0;
  let oursMs = 0;
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i];
    if (t < fromUs) return;
    const ms = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i]) / 1000;
    const x = byId.get(id);
    const cf = x.callFrame;
    if (cf.functionName === '(idle)') return;
    total += ms;
    if (under(id)) oursMs += ms;
    const where = cf.url ? `${path.basename(cf.url)}:${cf.lineNumber + 1}` : '';
    const key = `${cf.functionName}\t${cf.url}\t${cf.lineNumber}`;
    const e = self.get(key) ?? self.set(key, { name: cf.functionName || '(anonymous)', where, ms: 0, ours: isOurs(id) }).get(key);
    e.ms += ms;
  });
  const ranked = [...self.values()].sort((a, b) => b.ms - a.ms).map((e, i) => ({ ...e, rank: i + 1, share: e.ms / total }));
  const firstOurs = ranked.find((e) => e.ours);
  return { top: ranked.slice(0, n), ours: ranked.filter((e) => e.ours).slice(0, 8), firstOurs, oursMs, totalMs: total, oursInTop: ranked.slice(0, n).filter((e) => e.ours).length };
}

/** The row under `node --cpu-prof`, PROF_WINDOWS windows back to back: topFunctions of its main thread. */
async function cpuprof(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-ts-'));
  try {
    const r = await child(ROW_OF.get(name), PROF_WINDOWS, ['back-to-back'], ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-interval', '1000']);
    const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`cpuprof ${name}: node --cpu-prof wrote no profile in ${dir}`);
    if (KEEP) fs.copyFileSync(path.join(dir, file), path.join(KEEP, `${name}.cpuprofile`));
    // from the second window on: the first names every stack for the first time (its time is timed apart)
    const top = topFunctions(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')), Number(r.rounds[1].at));
    const timed = (k) => r.rounds.map((x) => x.window[`prime${k}`] + x.window[`pull${k}`] + x.window[`encode${k}`]);
    return { ...top, windows: r.rounds.length - 1, perWindow: timed('Ms'), perWindowCpu: timed('CpuMs') };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const pct = (x) => `${(x * 100).toFixed(1)}%`;
const ms = (x) => `${x.toFixed(0)} ms`;

(async () => {
  const result = { rounds: ROUNDS, seconds: SECONDS, loadavg: [os.loadavg().map((x) => x.toFixed(2)).join(' ')], rows: {}, cpuprof: {} };
  for (const name of ROWS.filter((r) => ROW_OF.has(r))) result.rows[name] = throughput((await child(ROW_OF.get(name), ROUNDS)).rounds);
  if (ROWS.includes('cpuprof')) for (const name of ['ours', 'ours-499']) result.cpuprof[name] = await cpuprof(name);
  result.loadavg.push(os.loadavg().map((x) => x.toFixed(2)).join(' '));
  result.uptime = execFileSync('uptime', { encoding: 'utf8' }).trim();
  if (argv.includes('--json')) fs.writeFileSync(arg('--json'), JSON.stringify(result));
  const names = Object.keys(result.rows);
  if (names.length) {
    console.log(`| typescript.js transpiling lib/ (${ROUNDS} pairs of ${SECONDS} s) | files/s unprofiled | profiled | lost, median (quartiles) | main thread CPU per file, unprofiled | added, median (quartiles) | main thread busy (unprofiled) | ours: main-thread ms per window, median (first) | its CPU (schedstat) | prime (calls) | pull until made | pprof('cpu') | samples per window |`);
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const name of names) {
      const r = result.rows[name];
      const mine = r.pullMs.some((x) => x > 0);
      const m = (xs) => `${ms(median(xs.slice(1)))} (${ms(xs[0])})`;
      console.log(`| ${name} | ${r.off.toFixed(1)} | ${r.on.toFixed(1)} | ${pct(r.loss[1])} (${r.loss.map(pct).filter((_, i) => i !== 1).join(' .. ')}) | ${r.cpuOff.toFixed(1)} ms | ${pct(r.cpuAdded[1])} (${r.cpuAdded.map(pct).filter((_, i) => i !== 1).join(' .. ')}) | ${pct(r.busy)} | ${mine && name !== 'pprof' ? m(r.mainMs) : ''} | ${mine && name !== 'pprof' ? m(r.mainCpuMs) : ''} | ${mine && name !== 'pprof' ? `${m(r.primeMs)} (${median(r.primes)})` : ''} | ${mine ? m(r.pullMs) : ''} | ${mine ? m(r.encodeMs) : ''} | ${mine ? median(r.samples).toFixed(0) : ''} |`);
    }
  }
  for (const [name, c] of Object.entries(result.cpuprof)) {
    console.log(`\n${name} under node --cpu-prof, ${c.windows + 1} windows of ${SECONDS} s back to back, from the second: ${c.oursInTop} of ours in the main thread's top 20; ours first at rank ${c.firstOurs?.rank ?? '—'} (${c.firstOurs ? `${c.firstOurs.name} ${c.firstOurs.where}, ${pct(c.firstOurs.share)}` : 'none'}); one of ours on the stack ${pct(c.oursMs / c.totalMs)} of the main thread's samples, ${ms(c.oursMs / c.windows)} a window (timed, every window: ${c.perWindow.map((x) => x.toFixed(0)).join(', ')} ms; main-thread CPU ${c.perWindowCpu.map((x) => x.toFixed(0)).join(', ')} ms)`);
    console.log(`ours by self time: ${c.ours.map((e) => `#${e.rank} ${e.name} ${e.where} ${ms(e.ms / c.windows)}/window`).join('; ')}`);
    console.log('| rank | function | where | self ms | share |');
    console.log('|---:|---|---|---:|---:|');
    for (const e of c.top) console.log(`| ${e.rank} | ${e.ours ? `**${e.name}** (ours)` : e.name} | ${e.where} | ${e.ms.toFixed(0)} | ${pct(e.share)} |`);
  }
  console.log(`\nload average ${result.loadavg.join(' at start, ')} at end; ${result.uptime}`);
})().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
