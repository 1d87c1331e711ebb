'use strict';
// The real-programs suite: how well JS frames are named on other people's
// programs, with V8's own CPU profiler as the oracle. Each program
// (__test__/fixtures/real/) runs once under `node --cpu-prof` (the oracle)
// and once profiled by us for the same time: from the host (stackcount -p
// PID --profile -F 499 --json) or in process (a --require preload's
// bpf.profile({ frequency: 499 }) window). Both sides are reduced to the
// innermost JS frame of each sample (the first frame with a file; V8's
// inlined functions are nodes of their own, ours the frame's `inlined`),
// counted by (function name, file) within the program's own files. The
// threshold is on our samples charged as V8's profiler charges a sample
// (v8Charged: a builtin's time to its JS caller's caller, and on Node 20-24
// the top frame's inlined code to the function whose code it is); the
// figure by the innermost function is shown beside it.
// Used by scripts/real-programs.js (npm run real-programs) and
// __test__/real_programs.test.js.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

const FIXTURES = path.join(__dirname, 'fixtures', 'real');
const ROOT = path.join(__dirname, '..');
const STACKCOUNT = path.join(ROOT, 'examples', 'stackcount.js');
const PRELOAD = path.join(FIXTURES, 'preload.js');
const FREQUENCY = 499;
/** How long a program is profiled (each of its runs), unless it says otherwise. */
const SECONDS = 6;
/** Random draws of V8's samples for the noise floor of the top-10 figure. */
const BASELINE_DRAWS = 20;

/** The thresholds a row must meet (the lead enables the test by default once they are met). */
const THRESHOLDS = { top: 9, line: 0.95, column: 0.95, ts: 0.95 };

const TYPESCRIPT = path.join(ROOT, 'node_modules', 'typescript', 'lib', 'typescript.js');
const APP_SOURCES = path.join(FIXTURES, 'app', 'src');

/**
 * The programs. `files(file)` is the key of a frame's file within the
 * program's own files, or null outside them (node's own, this package's);
 * `thread`: the thread V8's oracle is read from (0: main, 1: the first worker);
 * `seconds`: how long each run is profiled (default SECONDS).
 * @type {Record<string, { script: string, what: string, thread: number, seconds?: number, files: (file: string) => string | null, minified?: boolean, sourceMapped?: boolean, build?: (dir: string) => string[] }>}
 */
const PROGRAMS = {
  typescript: {
    script: 'typescript.js',
    what: "the TypeScript compiler (typescript.js, 9 MB) transpiling lib/ in a loop, main thread",
    thread: 0,
    files: (file) => (file === TYPESCRIPT ? 'typescript.js' : null),
  },
  http: {
    script: 'http.js',
    what: 'fastify with async handlers, driven by 8 keep-alive clients in the same process (127.0.0.1)',
    thread: 0,
    // (~15% of its samples are in its files, node's own http the rest: profiled longer for as many)
    seconds: 15,
    // the fixture and the packages it loads (not this package's own, nor its trace-mapping)
    files: (file) => (file === path.join(FIXTURES, 'http.js') || (file.includes('/node_modules/') && !file.includes('/node_modules/@jridgewell/')) ? file.replace(/^.*\/node_modules\//, '') : null),
  },
  bundle: {
    script: 'bundle.js',
    what: 'an esbuild bundle (one minified line, a linked source map) of a small TypeScript app',
    thread: 0,
    minified: true,
    sourceMapped: true,
    // the bundle (built as app.js) and its sources are one program: a frame is matched by name
    files: (file) => (path.basename(file) === 'app.js' || file.startsWith(APP_SOURCES + path.sep) ? 'app' : null),
    build: (dir) => {
      const out = path.join(dir, 'app.js');
      if (!fs.existsSync(out)) {
        require('esbuild').buildSync({
          entryPoints: [path.join(APP_SOURCES, 'main.ts')],
          bundle: true,
          platform: 'node',
          format: 'cjs',
          minifyWhitespace: true,
          minifySyntax: true,
          sourcemap: 'linked',
          outfile: out,
          logLevel: 'warning',
        });
      }
      return [out];
    },
  },
  worker: {
    script: 'ts_worker.js',
    what: 'the TypeScript compiler in a worker thread named ts-worker (the main thread waits)',
    thread: 1,
    files: (file) => (file === TYPESCRIPT ? 'typescript.js' : null),
  },
};

const MODES = ['host', 'inprocess'];

/** A frame's file as a path: V8 writes CommonJS files as file:// URLs. */
function filePath(url) {
  if (!url.startsWith('file://')) return url;
  try {
    return decodeURIComponent(new URL(url).pathname);
  } catch {
    return url;
  }
}

const fnName = (name) => name || '(anonymous)';

/**
 * V8's profile (a parsed .cpuprofile), reduced: the innermost node with a
 * url of each sample taken from `fromUs` on (the program's ready time: its
 * start and warm-up left out, as ours leave them), counted by (name, file)
 * in the program's files. `counts`: Map key -> { name, file, key, count },
 * `total`, `inProgram`.
 */
function oracleCounts(profile, program, fromUs = 0) {
  const { nodes } = profile;
  let t = profile.startTime;
  const samples = profile.samples.filter((_, i) => (t += profile.timeDeltas[i]) >= fromUs);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map();
  for (const id of samples) self.set(id, (self.get(id) ?? 0) + 1);
  const counts = new Map();
  let inProgram = 0;
  for (const [id, count] of self) {
    let n = byId.get(id);
    while (n && !n.callFrame.url) n = byId.get(parent.get(n.id));
    if (!n) continue;
    const file = filePath(n.callFrame.url);
    const fileKey = program.files(file);
    if (fileKey === null) continue;
    inProgram += count;
    const key = `${fnName(n.callFrame.functionName)}\t${fileKey}`;
    const e = counts.get(key) ?? counts.set(key, { key, name: fnName(n.callFrame.functionName), file, count: 0 }).get(key);
    e.count += count;
  }
  return { counts, total: samples.length, inProgram };
}

/**
 * What V8's profile shows of function `name` (for a miss), from `fromUs` on:
 * its self samples, its callers (`name:line`) and the functions it calls
 * by their self samples; its positionTicks (line: ticks) are the whole run's.
 */
function explainOracle(profile, name, fromUs = 0) {
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n);
  const self = new Map();
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    if ((t += profile.timeDeltas[i]) >= fromUs) self.set(id, (self.get(id) ?? 0) + 1);
  });
  const out = { self: 0, callers: {}, positionTicks: {}, children: {} };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  for (const n of profile.nodes) {
    if (n.callFrame.functionName !== name) continue;
    const s = self.get(n.id) ?? 0;
    out.self += s;
    const p = parent.get(n.id)?.callFrame;
    const caller = p ? `${fnName(p.functionName)}:${p.lineNumber + 1}` : '(none)';
    out.callers[caller] = (out.callers[caller] ?? 0) + s;
    for (const t of n.positionTicks ?? []) out.positionTicks[t.line] = (out.positionTicks[t.line] ?? 0) + t.ticks;
    for (const c of n.children ?? []) {
      const cf = byId.get(c)?.callFrame;
      if (cf) out.children[fnName(cf.functionName)] = (out.children[fnName(cf.functionName)] ?? 0) + (self.get(c) ?? 0);
    }
  }
  return out;
}

/** A stackcount user frame's label, `name file:line:column` (`name file` without a line), as a frame; null: not a JS frame with a file. */
function parseLabel(label) {
  const m = /^(.*) ((?:\/|node:)[^ ]*?)(?::(\d+):(\d+))?$/.exec(label);
  if (!m) return null;
  return { name: m[1], file: m[2], line: m[3] ? Number(m[3]) : 0, column: m[4] ? Number(m[4]) : 0 };
}

/**
 * Our samples as `[{ count, fn, unnamed, thread, chain, groups, natives, frameless }]`:
 * fn the innermost JS frame with a file (null: none; unnamed: a JS frame
 * V8's data could not name came first), chain the names of its JS frames
 * with a file, innermost first; groups its JS frames by the function whose
 * code ran (stackcount's `inlined` marks the functions inlined into the
 * frame after them), each innermost first, `{ name, file? }` (no file: an
 * unnamed frame, or a function without a script name such as `new
 * Function`'s); natives the names above the first JS frame; frameless: the
 * first of them ran on the first JS frame's own frame (stackcount's
 * `frameless`).
 */
function hostSamples(json) {
  return json.stacks.map((s) => {
    let fn = null;
    let unnamed = false;
    const chain = [];
    const inlined = new Set(s.inlined ?? []);
    const frameless = new Set(s.frameless ?? []);
    const groups = [];
    const natives = [];
    let pending = [];
    s.user.forEach((label, i) => {
      const f = parseLabel(label);
      if (f) chain.push(f.name);
      // (a label without a file is a JS frame where it is unnamed, or the caller of a frameless native; an inlined one joins the next)
      const js = f || label.startsWith('[JS') || (frameless.has(i - 1) && !frameless.has(i));
      if (inlined.has(i)) {
        pending.push(f ?? { name: label });
      } else if (js) {
        groups.push([...pending, f ?? { name: label }]);
        pending = [];
      } else if (!groups.length) {
        natives.push(label);
      }
      if (fn || unnamed) return;
      if (label.startsWith('[JS')) unnamed = true;
      else fn = f;
    });
    return { count: s.count, fn, unnamed, thread: s.comm, chain, groups, natives, frameless: natives.length > 0 && frameless.has(0) };
  });
}

/**
 * The same from a profile window's `cpu` stacks (frames innermost first; a
 * frame's `inlined`, innermost first, were inlined into it).
 */
function windowSamples(cpu) {
  return cpu.map((s) => {
    let fn = null;
    let unnamed = false;
    const chain = [];
    const groups = [];
    const natives = [];
    // (the frame natives[0] is, where there are natives)
    const first = s.frames.findIndex((f) => f.kind !== 'js');
    for (const f of s.frames) {
      if (f.kind !== 'js') {
        if (!groups.length && !chain.length) natives.push(f.name);
        continue;
      }
      // (a function inlined without a script, a builtin, is not a JS frame with a file: as on the host)
      const all = [...(f.inlined ?? []), f];
      const named = all.filter((g) => g.file);
      chain.push(...named.map((g) => g.name));
      groups.push(all.map((g) => ({ name: g.name, file: g.file, line: g.line ?? 0, column: g.column ?? 0, generated: g.generated })));
      if (fn || unnamed) continue;
      if (!f.file && f.tier === 'unnamed') {
        unnamed = true;
        continue;
      }
      if (!named.length) continue;
      const inner = named[0];
      fn = { name: inner.name, file: inner.file, line: inner.line ?? 0, column: inner.column ?? 0, generated: inner.generated };
    }
    return { count: s.count, fn, unnamed, thread: s.thread, chain, groups, natives, frameless: natives.length > 0 && (s.frameless ?? []).includes(first) };
  });
}

/**
 * The function V8's CPU profiler would charge sample `s` with, under V8
 * major `v8` (symbolizer.cc's SymbolizeTickSample, V8 11-14):
 * - a pc in a builtin called from JS code (no CEntry: not a runtime call
 *   through an exit frame): V8's profiler has no code entry for builtins
 *   (its code map names only the entries it already has) and reads no
 *   return address at sp, and its iterator starts at the frame that fp's
 *   return address goes to. A builtin that built its own frame (StringAdd's
 *   slow path) leaves the sample to its JS caller; one that runs on its
 *   caller's frame (stackcount's `frameless`: a load IC's fast path) leaves
 *   it to the caller's caller. Measured in one process under both
 *   profilers: functions whose samples are nearly all in builtins they call
 *   (getNodeId 19 of 21 of ours, setParent 16 of 17) had 7 and 4 of V8's,
 *   which samples twice as often;
 * - a pc in a function's optimized code on V8 < 14 (Node 20-24): the
 *   function whose code it is, not the function inlined there (V8 14
 *   unwinds the top frame's inlining, as the others);
 * - else the innermost function, inlined or not, as ours.
 * From there, the first function with a file (V8's tree: a node with a url).
 */
function v8Charged(s, v8) {
  const groups = s.groups ?? [];
  const natives = s.natives ?? [];
  let g = 0;
  let e = 0;
  if (natives.length && /^Builtins_/.test(natives[0]) && !natives.some((n) => /CEntry/.test(n))) g = s.frameless ? 1 : 0;
  else if (!natives.length && v8 < 14 && groups.length) e = groups[0].length - 1;
  // (V8's profile then shows the first function with a script url from there out: as oracleCounts reads it)
  for (; g < groups.length; g++, e = 0) {
    for (; e < groups[g].length; e++) if (groups[g][e].file) return groups[g][e];
  }
  return null;
}

/**
 * What our samples show of function `name` (for a miss): the samples it is
 * the innermost JS frame of, and those it is on the stack of, by the
 * innermost function then (the functions named inside it, or for it).
 */
function explainOurs(samples, name) {
  const out = { innermost: 0, onStack: 0, innermostThen: {} };
  for (const s of samples) {
    const at = s.chain.indexOf(name);
    if (at < 0) continue;
    out.onStack += s.count;
    if (at === 0) out.innermost += s.count;
    const inner = at === 0 ? '(itself)' : at === 1 ? s.chain[0] : `${s.chain[at - 1]} > ${at > 2 ? `(${at - 2} more) > ` : ''}${s.chain[0]}`;
    out.innermostThen[inner] = (out.innermostThen[inner] ?? 0) + s.count;
  }
  out.innermostThen = Object.fromEntries(Object.entries(out.innermostThen).sort((a, b) => b[1] - a[1]).slice(0, 8));
  return out;
}

/**
 * The figures of one (program, node, mode) from the oracle's counts and
 * our samples, under V8 major `v8`. `top`: V8's top 10 in our top 20 by the
 * innermost function (inlined or not); `topV8`: the same with our samples
 * charged as V8's profiler charges them (v8Charged), the figure the
 * threshold is on; `baseline`: the first figure for V8's own samples drawn
 * down to our count, the noise floor.
 */
function figures(program, oracle, samples, v8) {
  const ours = new Map();
  const oursV8 = new Map();
  let total = 0;
  let inProgram = 0;
  let withLine = 0;
  let withColumn = 0;
  let ts = 0;
  let unnamed = 0;
  let charged = 0;
  // a source-mapped frame is matched at its generated place (V8 names the bundle)
  const keyOf = (fn) => {
    const fileKey = program.files(fn.generated?.file ?? fn.file) ?? program.files(fn.file);
    return fileKey === null ? null : `${fnName(fn.name)}\t${fileKey}`;
  };
  for (const s of samples) {
    total += s.count;
    if (s.unnamed) unnamed += s.count;
    const v8Fn = v8Charged(s, v8);
    const k = v8Fn ? keyOf(v8Fn) : null;
    if (k !== null) {
      charged += s.count;
      oursV8.set(k, (oursV8.get(k) ?? 0) + s.count);
    }
    if (!s.fn) continue;
    const key = keyOf(s.fn);
    if (key !== null) {
      inProgram += s.count;
      if (s.fn.line > 0) withLine += s.count;
      if (s.fn.line > 0 && s.fn.column > 0) withColumn += s.count;
      if (s.fn.file.endsWith('.ts')) ts += s.count;
      ours.set(key, (ours.get(key) ?? 0) + s.count);
    }
  }
  const v8Top = [...oracle.counts.values()].sort((a, b) => b.count - a.count).slice(0, 10);
  const hits = (counts, n) => {
    const top = new Set([...counts].sort((a, b) => b[1] - a[1]).slice(0, 20).map(([k]) => k));
    return v8Top.filter((e) => !top.has(e.key)).map((e) => ({ name: e.name, v8Share: e.count / oracle.inProgram, oursShare: (counts.get(e.key) ?? 0) / (n || 1) }));
  };
  const misses = hits(ours, inProgram);
  // the noise floor: V8's own samples, as many as ours drawn at random
  const pool = [...oracle.counts.values()].flatMap((e) => Array(e.count).fill(e.key));
  let seed = 1;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  let baseline = 0;
  for (let draw = 0; draw < BASELINE_DRAWS; draw++) {
    const counts = new Map();
    for (let i = 0; i < Math.min(inProgram, pool.length); i++) {
      const j = i + Math.floor(random() * (pool.length - i));
      [pool[i], pool[j]] = [pool[j], pool[i]];
      counts.set(pool[i], (counts.get(pool[i]) ?? 0) + 1);
    }
    baseline += v8Top.length - hits(counts, inProgram).length;
  }
  return {
    samples: total,
    inProgram,
    v8Samples: oracle.total,
    v8InProgram: oracle.inProgram,
    top: v8Top.length - misses.length,
    topOf: v8Top.length,
    topV8: v8Top.length - hits(oursV8, charged).length,
    missesV8: hits(oursV8, charged),
    baseline: baseline / BASELINE_DRAWS,
    line: inProgram ? withLine / inProgram : 0,
    column: inProgram ? withColumn / inProgram : 0,
    ts: program.sourceMapped ? (inProgram ? ts / inProgram : 0) : null,
    unnamed,
    misses,
    v8Top: v8Top.map((e) => ({ name: e.name, share: e.count / oracle.inProgram })),
  };
}

/** Which thresholds a row fails (messages), none when it passes. */
function failures(program, row) {
  const out = [];
  if (row.error) return [row.error];
  if (row.topV8 < Math.min(THRESHOLDS.top, row.topOf)) out.push(`${row.topV8}/${row.topOf} of V8's top 10 in our top 20, charged as V8 charges (< ${THRESHOLDS.top}): missing ${row.missesV8.map((m) => m.name).join(', ')}`);
  if (row.line < THRESHOLDS.line) out.push(`${pct(row.line)} of the program's samples with a line (< ${pct(THRESHOLDS.line)})`);
  if (program.minified && row.column < THRESHOLDS.column) out.push(`${pct(row.column)} with a column in a minified file (< ${pct(THRESHOLDS.column)})`);
  if (program.sourceMapped && row.ts < THRESHOLDS.ts) out.push(`${pct(row.ts)} name the original .ts file (< ${pct(THRESHOLDS.ts)})`);
  return out;
}

const pct = (x) => `${(100 * x).toFixed(1)}%`;

/** Waits for `child`'s stdout line `ready <µs>` (or its exit, an error): the time it printed (CLOCK_MONOTONIC, µs). */
function ready(child, ms) {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`not ready in ${ms / 1000} s`)), ms);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /^ready (\d+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`exited before it was ready (${signal ?? `code ${code}`})`));
    });
  });
}

/** Ends `child` with SIGTERM (the fixtures stop their loop and exit), SIGKILL after `ms`. */
function stop(child, ms = 30_000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal);
    });
    child.kill('SIGTERM');
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `file` with `args` to its end (at most `ms`): `{ code, stdout, stderr }`. */
function run(file, args, ms) {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, stdout, stderr });
    });
  });
}

/**
 * One run of `name` under `node`: mode 'oracle' (node --cpu-prof: the
 * parsed .cpuprofile of the program's thread), 'host' (stackcount's JSON)
 * or 'inprocess' (the preload's window). The program runs until warm
 * (`ready`), is profiled for `seconds`, then stopped.
 */
async function runOnce(name, node, mode, { seconds, dir }) {
  const program = PROGRAMS[name];
  const runDir = fs.mkdtempSync(path.join(dir, `${name}-${mode}-`));
  const args = program.build ? program.build(dir) : [];
  const out = path.join(runDir, 'window.json');
  const flags = mode === 'oracle' ? ['--cpu-prof', '--cpu-prof-dir', runDir] : mode === 'inprocess' ? ['--require', PRELOAD] : [];
  const child = spawn(node, [...flags, path.join(FIXTURES, program.script), ...args], {
    cwd: runDir,
    env: { ...process.env, REAL_PROGRAMS_OUT: out, REAL_PROGRAMS_SECONDS: String(seconds) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const load = os.loadavg()[0];
  try {
    const readyUs = await ready(child, 90_000).catch(async (err) => {
      await sleep(100);
      throw new Error(`${err.message}: ${stderr.trim().split('\n').slice(-3).join(' / ')}`);
    });
    let result;
    if (mode === 'oracle') {
      await sleep(seconds * 1000);
    } else if (mode === 'host') {
      const r = await run(process.execPath, [STACKCOUNT, '-p', String(child.pid), '--profile', '-F', String(FREQUENCY), '-d', String(seconds), '--json'], (seconds + 120) * 1000);
      fs.writeFileSync(path.join(runDir, 'stackcount.json'), r.stdout);
      if (r.code !== 0) throw new Error(`stackcount exited ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' / ')}`);
      result = JSON.parse(r.stdout);
    } else {
      child.kill('SIGUSR2');
      const end = Date.now() + (seconds + 120) * 1000;
      while (!fs.existsSync(out) && Date.now() < end && child.exitCode === null) await sleep(100);
      await sleep(200);
      if (!fs.existsSync(out)) throw new Error(`the in-process window wrote nothing in ${seconds + 120} s`);
      result = JSON.parse(fs.readFileSync(out, 'utf8'));
      if (result.error) throw new Error(`profile(): ${result.error.code}: ${result.error.message}`);
    }
    const code = await stop(child);
    if (mode === 'oracle') {
      if (code !== 0) throw new Error(`the program exited ${code}: ${stderr.trim().split('\n').slice(-3).join(' / ')}`);
      // CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile, one per thread
      const file = fs.readdirSync(runDir).find((f) => f.endsWith('.cpuprofile') && f.split('.')[4] === String(program.thread));
      if (!file) throw new Error(`no .cpuprofile of thread ${program.thread} in ${runDir}`);
      result = JSON.parse(fs.readFileSync(path.join(runDir, file), 'utf8'));
    }
    return { result, load, runDir, readyUs };
  } finally {
    await stop(child);
  }
}

/** The V8 major of node binary `file` (its `process.versions.v8`). */
function v8Major(file) {
  const r = spawnSync(file, ['-p', 'process.versions.v8'], { encoding: 'utf8', timeout: 30_000 });
  const major = Number(r.stdout?.split('.')[0]);
  if (!(major > 0)) throw new Error(`${file} -p process.versions.v8: ${r.error?.message ?? r.stderr}`);
  return major;
}

/**
 * One oracle run of program `name` under `node`, then one run per mode:
 * the rows.
 */
async function measureProgram(name, node, modes, seconds, dir) {
  const program = PROGRAMS[name];
  let oracle;
  let oracleError;
  try {
    const o = await runOnce(name, node.path, 'oracle', { seconds, dir });
    oracle = { ...oracleCounts(o.result, program, o.readyUs), profile: o.result, readyUs: o.readyUs };
  } catch (err) {
    oracleError = `oracle: ${err.message}`;
  }
  const rows = [];
  for (const mode of modes) {
    const row = /** @type {any} */ ({ program: name, node: node.label, mode });
    try {
      if (oracleError) throw new Error(oracleError);
      const r = await runOnce(name, node.path, mode, { seconds, dir });
      const samples = mode === 'host' ? hostSamples(r.result) : windowSamples(r.result.cpu);
      Object.assign(row, figures(program, oracle, samples, v8Major(node.path)), { load: r.load, dir: r.runDir, ours: samples });
    } catch (err) {
      row.error = err.message;
    }
    row.failures = failures(program, row);
    row.oracle = oracle;
    rows.push(row);
  }
  return rows;
}

/**
 * Measures `programs` under `nodes` (`{ label, path }`) in `modes`: one
 * oracle run and one run per mode for each (program, node). A row under a
 * threshold is measured again, up to `retries` times, with a new oracle
 * run: two runs of V8's own profiler differ too (the JIT decides anew each
 * time), and a function at 1% of the samples can leave the top 10. The row
 * kept is the last; `tries` lists each try's failures. Returns the rows;
 * `log` is told each as it comes.
 * @param {{ programs?: string[], nodes: { label: string, path: string }[], modes?: string[], seconds?: number, retries?: number, dir: string, log?: (row: any) => void }} options
 */
async function measure({ programs = Object.keys(PROGRAMS), nodes, modes = MODES, seconds: asked, retries = 0, dir, log = () => {} }) {
  fs.mkdirSync(dir, { recursive: true });
  const rows = [];
  for (const node of nodes) {
    for (const name of programs) {
      const seconds = asked ?? PROGRAMS[name].seconds ?? SECONDS;
      const tries = new Map(modes.map((m) => [m, []]));
      let todo = modes;
      for (let attempt = 0; todo.length && attempt <= retries; attempt++) {
        const got = await measureProgram(name, node, todo, seconds, dir);
        for (const row of got) tries.get(row.mode).push(row.failures);
        const done = attempt === retries ? got : got.filter((r) => !r.failures.length);
        for (const row of done) {
          row.tries = tries.get(row.mode);
          rows.push(row);
          log(row);
        }
        todo = got.filter((r) => !done.includes(r)).map((r) => r.mode);
      }
    }
  }
  return rows;
}

/** The rows as a Markdown table. */
function table(rows) {
  const lines = [
    '| program | node | mode | our samples (in its files) | V8\'s samples (in its files) | V8\'s top 10 in our top 20 | the same, charged as V8 charges | V8\'s own samples, as many as ours | with a line | with a column | original .ts | unnamed JS | load |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    if (r.error) {
      lines.push(`| ${r.program} | ${r.node} | ${r.mode} | error: ${r.error.replace(/\|/g, '/')} | | | | | | | | | |`);
      continue;
    }
    const program = PROGRAMS[r.program];
    lines.push(`| ${r.program} | ${r.node} | ${r.mode} | ${r.samples} (${r.inProgram}) | ${r.v8Samples} (${r.v8InProgram}) | ${r.top}/${r.topOf} | ${r.topV8}/${r.topOf} | ${r.baseline.toFixed(1)}/${r.topOf} | ${pct(r.line)} | ${program.minified ? pct(r.column) : '-'} | ${r.ts === null ? '-' : pct(r.ts)} | ${r.unnamed} | ${r.load.toFixed(1)} |`);
  }
  return lines.join('\n');
}

module.exports = { PROGRAMS, MODES, THRESHOLDS, SECONDS, measure, table, failures, oracleCounts, explainOracle, explainOurs, hostSamples, windowSamples, figures, parseLabel, v8Charged };
