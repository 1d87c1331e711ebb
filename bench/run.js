'use strict';
// `npm run bench`: node-libbpf against C libbpf, BCC and bpftrace on one
// workload, side by side in one run, and prints one table (also written to
// bench/RESULTS.md).
//
// The workload: bench/loadgen.c makes N getppid() calls in a tight loop; a
// tracepoint program on syscalls:sys_enter_getppid (bench/bench.bpf.c, the
// same object for the C and node-libbpf consumers) emits a 24-byte record
// {u32 pid; u32 tid; u64 ts; u64 seq} per call into an 8 MiB ring buffer or
// a perf buffer (64 pages per CPU). Each consumer counts what it receives and
// checks the seq numbers for what is missing. Every consumer runs in turn,
// each repetition in the same order; every figure is from the median run of
// `--reps` (by delivered events/s).
//
//   node bench/run.js [--reps 3] [--n 2000000] [--only a,b] [--no-http] [--http-rounds 30] [--no-startup]
//                     [--no-install]
//                     [--patched DIR]   (DIR: another checkout of node-libbpf, built, e.g. with a proposed
//                                        change: its node-libbpf rows are added, labelled with DIR)
//
// delivered events/s = received / (time of the last delivery - loop start),
// both CLOCK_MONOTONIC. traced slowdown = ns per call traced / untraced (the
// untraced loop runs in every repetition too). consumer CPU = user + system
// seconds of the consumer process (all its threads) from attached to done.
//
// Every process it starts it stops by its own pid (and kills what is left on
// exit).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const build = path.join(__dirname, '.build');
const { values: args } = require('node:util').parseArgs({
  options: {
    reps: { type: 'string', default: '3' },
    n: { type: 'string', default: '2000000' },
    only: { type: 'string' },
    'no-http': { type: 'boolean', default: false },
    'http-rounds': { type: 'string', default: '30' },
    'no-startup': { type: 'boolean', default: false },
    'no-install': { type: 'boolean', default: false },
    // another checkout of node-libbpf, built (e.g. with a proposed change):
    // its node-libbpf rows are added to the table
    patched: { type: 'string' },
    out: { type: 'string', default: path.join(__dirname, 'RESULTS.md') },
  },
});
const REPS = Number(args.reps);
const N = Number(args.n);
const RUN_TIMEOUT_MS = 180_000;

// ---- processes ------------------------------------------------------------

const children = new Set();
function start(cmd, argv, opts = {}, { readStdout = true } = {}) {
  const child = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'], ...opts });
  children.add(child);
  // 'exit', not 'close': a child whose stdout went to another child never closes it here
  child.exited = new Promise((resolve) => child.on('exit', (code, signal) => {
    children.delete(child);
    resolve({ code, signal });
  }));
  child.on('error', () => {});
  child.on('close', () => { child.closed = true; });
  child.stderrText = '';
  if (child.stderr) child.stderr.on('data', (d) => { if (child.stderrText.length < 20000) child.stderrText += d; });
  child.lines = [];
  child.waiters = [];
  if (child.stdout && readStdout) {
    let partial = '';
    child.stdout.on('data', (d) => {
      partial += d;
      let nl;
      while ((nl = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        child.lines.push({ line, at: process.hrtime.bigint() });
        for (const w of child.waiters.slice()) w();
      }
    });
  }
  return child;
}
/** Stops a child we started, by its pid: `signal`, then SIGKILL after `ms`. */
async function stop(child, signal = 'SIGTERM', ms = 3000) {
  if (!children.has(child)) return child.exited;
  try { process.kill(child.pid, signal); } catch { /* gone */ }
  const t = setTimeout(() => { try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ } }, ms);
  const r = await child.exited;
  clearTimeout(t);
  return r;
}
function killAll() {
  for (const child of children) {
    try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ }
  }
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { killAll(); process.exit(130); });

/** The first stdout line (from line `from` on) matching `re`, or an Error after `ms`. */
function waitLine(child, re, ms, from = 0) {
  return new Promise((resolve, reject) => {
    let index = from;
    const check = () => {
      for (; index < child.lines.length; index++) {
        if (re.test(child.lines[index].line)) {
          done();
          resolve(child.lines[index]);
          return true;
        }
      }
      return false;
    };
    const fail = (why) => {
      done();
      const err = child.stderrText.trim().split('\n').filter((l) => !/warning|^\s*\^|^\s*$|note:/i.test(l)).slice(-3).join(' | ');
      reject(new Error(`${path.basename(child.spawnfile)}: ${why}${err ? `: ${err}` : ''}`));
    };
    const timer = setTimeout(() => fail(`no ${re} within ${ms} ms`), ms);
    const onExit = () => setImmediate(() => { if (!check()) fail('exited'); });
    const done = () => {
      clearTimeout(timer);
      child.waiters = child.waiters.filter((w) => w !== check);
      child.off('close', onExit);
    };
    if (check()) return;
    child.waiters.push(check);
    child.on('close', onExit);
    // already closed: 'close' will not come again
    if (child.closed) onExit();
  });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const json = (l) => JSON.parse(l.line);
/** user + system CPU seconds of a live process (all threads). */
function procCpu(pid) {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}

// ---- build ----------------------------------------------------------------

function sh(cmd, argv, opts = {}) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', ...opts });
  return { ok: r.status === 0, out: `${r.stdout || ''}${r.stderr || ''}${r.error ? r.error.message : ''}`.trim() };
}
const have = (pkg) => sh('dpkg-query', ['-W', '-f=${Status}', pkg]).out.includes('install ok installed');
let aptUpdated = false;
/** Installs Debian packages that are missing; returns why not, or ''. */
function aptInstall(...pkgs) {
  const missing = pkgs.filter((p) => !have(p));
  if (!missing.length) return '';
  if (args['no-install']) return `not installed: ${missing.join(' ')} (--no-install)`;
  console.error(`bench: apt-get install ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let r = sh('apt-get', ['install', '-y', '-qq', ...missing], { env });
  if (!r.ok && !aptUpdated) {
    aptUpdated = true;
    sh('apt-get', ['update', '-qq'], { env });
    r = sh('apt-get', ['install', '-y', '-qq', ...missing], { env });
  }
  return r.ok ? '' : `apt-get install ${missing.join(' ')} failed: ${r.out.split('\n').slice(-1)[0]}`;
}
const newer = (out, ...srcs) => !fs.existsSync(out) || srcs.some((s) => fs.statSync(s).mtimeMs > fs.statSync(out).mtimeMs);
function compile(out, srcs, cmd, argv) {
  if (!newer(out, ...srcs)) return;
  const r = sh(cmd, argv);
  if (!r.ok) throw new Error(`${cmd} ${argv.join(' ')}:\n${r.out}`);
}

/** Kernel headers for BCC: the running kernel's, or Debian's nearest, unpacked here. */
function bccKernelSource() {
  const own = `/lib/modules/${os.release()}/build`;
  if (fs.existsSync(path.join(own, 'include'))) return { dir: null, note: `headers of ${os.release()}` };
  const dest = path.join(build, 'kheaders');
  const merged = path.join(dest, 'src');
  const stamp = path.join(dest, 'version');
  if (fs.existsSync(stamp) && fs.existsSync(path.join(merged, 'include', 'linux', 'kconfig.h'))) {
    return { dir: merged, note: `Debian linux-headers-${fs.readFileSync(stamp, 'utf8').trim()}, unpacked in bench/.build` };
  }
  if (args['no-install']) return { error: 'no kernel headers (--no-install)' };
  const list = sh('apt-cache', ['search', '--names-only', '^linux-headers-[0-9]']).out.split('\n')
    .map((l) => l.split(' ')[0]).filter((p) => /^linux-headers-[0-9][^ ]*-amd64$/.test(p) && !/-(cloud|rt)-amd64$/.test(p));
  const ver = (p) => p.replace(/^linux-headers-/, '').replace(/-amd64$/, '');
  const num = (v) => v.split(/[.+-]/).map((x) => Number(x.replace(/\D/g, '')) || 0);
  const cmp = (a, b) => { const x = num(a); const y = num(b); for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] || 0) !== (y[i] || 0)) return (x[i] || 0) - (y[i] || 0); return 0; };
  const versions = list.map(ver).sort(cmp);
  if (!versions.length) return { error: 'no linux-headers package in the apt lists' };
  const running = os.release();
  // the newest not newer than the running kernel (else the oldest)
  const pick = versions.filter((v) => cmp(v, running) <= 0).pop() || versions[0];
  const amd64 = `linux-headers-${pick}-amd64`;
  const depends = sh('apt-cache', ['depends', amd64]).out;
  const common = (/Depends: (linux-headers-\S+-common)\b/.exec(depends) || [])[1];
  if (!common) return { error: `${amd64}: no -common headers package` };
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(path.join(dest, 'debs'), { recursive: true });
  const dl = sh('apt-get', ['download', amd64, common], { cwd: path.join(dest, 'debs') });
  if (!dl.ok) return { error: `apt-get download ${amd64}: ${dl.out.split('\n').slice(-1)[0]}` };
  for (const deb of fs.readdirSync(path.join(dest, 'debs'))) sh('dpkg', ['-x', path.join(dest, 'debs', deb), path.join(dest, 'root')]);
  const usr = path.join(dest, 'root', 'usr', 'src');
  // Debian splits the tree: -common has the sources, -amd64 the config and
  // generated headers; BCC wants them in one directory
  const dirs = fs.readdirSync(usr);
  const commonDir = dirs.find((d) => d.endsWith('-common'));
  const archDir = dirs.find((d) => d.endsWith('-amd64'));
  sh('cp', ['-a', path.join(usr, commonDir), merged]);
  sh('cp', ['-a', `${path.join(usr, archDir)}/.`, merged]);
  fs.rmSync(path.join(dest, 'debs'), { recursive: true, force: true });
  fs.writeFileSync(stamp, `${pick}\n`);
  return { dir: merged, note: `Debian linux-headers-${pick}, unpacked in bench/.build` };
}

function buildAll() {
  const missing = aptInstall('libbpf-dev', 'clang', 'gcc');
  if (missing) throw new Error(`the C consumer needs libbpf-dev: ${missing}`);
  if (!fs.existsSync(path.join(root, 'bpf', '.output', 'vmlinux.h')) || !fs.readdirSync(root).some((f) => f.endsWith('.node'))) {
    console.error('bench: npm run build');
    const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('npm run build failed');
  }
  fs.mkdirSync(build, { recursive: true });
  const bpfFlags = ['-g', '-O2', '-target', 'bpf', '-D__TARGET_ARCH_x86', '-I', path.join(root, 'bpf', '.output'), '-I', __dirname, '-idirafter', '/usr/include/x86_64-linux-gnu', '-Wall', '-c'];
  for (const name of ['bench', 'syscalls']) {
    const src = path.join(__dirname, `${name}.bpf.c`);
    compile(path.join(build, `${name}.bpf.o`), [src, path.join(__dirname, `${name}.h`)], 'clang', [...bpfFlags, src, '-o', path.join(build, `${name}.bpf.o`)]);
  }
  for (const [name, libs] of [['loadgen', []], ['canary', []], ['consumer', ['-lbpf']]]) {
    const src = path.join(__dirname, `${name}.c`);
    compile(path.join(build, name), [src, path.join(__dirname, 'bench.h')], 'gcc', ['-O2', '-Wall', '-I', __dirname, '-o', path.join(build, name), src, ...libs]);
  }
  const tools = {};
  tools.bpftrace = aptInstall('bpftrace') || (sh('bpftrace', ['--version']).ok ? '' : 'bpftrace does not run');
  if (!tools.bpftrace) tools.bpftraceVersion = sh('bpftrace', ['--version']).out.split('\n').pop().replace(/^bpftrace /, '');
  tools.wrk = aptInstall('wrk');
  tools.bcc = aptInstall('python3-bpfcc');
  if (!tools.bcc) {
    const k = bccKernelSource();
    if (k.error) tools.bcc = k.error;
    else tools.bccSource = k;
  }
  return tools;
}

// ---- one consumer run --------------------------------------------------------

const OBJ = () => path.join(build, 'bench.bpf.o');
const C = (mode) => ({ cmd: path.join(build, 'consumer'), argv: (pid) => [mode, OBJ(), String(pid), String(N)] });
const NODE = (mode, lib) => ({ cmd: process.execPath, argv: (pid) => [path.join(__dirname, 'node_consumer.js'), mode, OBJ(), String(pid), String(N)], lib });
const BCC = (mode) => ({ cmd: '/usr/bin/python3', argv: (pid) => [path.join(__dirname, 'bcc_consumer.py'), mode, String(pid), String(N)], bcc: true });

const CONSUMERS = [
  { id: 'c-ring-nowakeup', label: 'C libbpf ring, BPF_RB_NO_WAKEUP + consume every 10 ms', ...C('ring-nowakeup'), ref: true },
  { id: 'c-ring-wakeup', label: 'C libbpf ring, default wakeups', ...C('ring-wakeup') },
  { id: 'c-perf', label: 'C libbpf perf buffer (wakeup per event)', ...C('perf') },
  { id: 'node-ring-typed', label: 'node-libbpf ring → objects ({ type }), BPF_RB_NO_WAKEUP', ...NODE('ring-typed'), node: true },
  { id: 'node-ring-typed-wakeup', label: 'node-libbpf ring → objects ({ type }), default wakeups', ...NODE('ring-typed-wakeup'), node: true },
  { id: 'node-ring-raw', label: 'node-libbpf ring → Buffers (raw), BPF_RB_NO_WAKEUP', ...NODE('ring-raw'), node: true },
  { id: 'node-ring-batch', label: 'node-libbpf ring → batches (data, ends), BPF_RB_NO_WAKEUP', ...NODE('ring-batch'), node: true },
  { id: 'node-perf', label: 'node-libbpf perf → objects, defaults (1 MiB per CPU, wakeup at 1/4)', ...NODE('perf-typed'), node: true },
  { id: 'node-perf-64', label: 'node-libbpf perf → objects, pageCount 64 (the old default), other defaults', ...NODE('perf-typed-64'), node: true },
  { id: 'node-perf-wake1', label: 'node-libbpf perf → objects, wakeupBytes 1 (as C perf)', ...NODE('perf-typed-wake1'), node: true },
  { id: 'node-backpressure', label: 'node-libbpf ring → objects, 20 µs callback (backpressure)', ...NODE('backpressure'), node: true },
  ...(args.patched
    ? [
        ['ring-typed', 'ring → objects ({ type }), BPF_RB_NO_WAKEUP'],
        ['ring-typed-wakeup', 'ring → objects ({ type }), default wakeups'],
        ['ring-raw', 'ring → Buffers (raw), BPF_RB_NO_WAKEUP'],
        ['ring-batch', 'ring → batches (data, ends), BPF_RB_NO_WAKEUP'],
        ['perf-typed', 'perf → objects, that build\'s defaults'],
        ['backpressure', 'ring → objects, 20 µs callback (backpressure)'],
      ].map(([mode, what]) => ({ id: `patched-${mode}`, label: `node-libbpf at ${args.patched}: ${what}`, ...NODE(mode, path.resolve(args.patched)), node: true }))
    : []),
  { id: 'bcc-perf', label: 'BCC Python, perf buffer (64 pages)', ...BCC('perf') },
  { id: 'bcc-ring', label: 'BCC Python, ring buffer (8 MiB)', ...BCC('ring') },
  { id: 'bpftrace', label: 'bpftrace printf (-B line)', bpftrace: true },
];

/** The load generator, waiting for "go" (pinned to CPU 0 with `pin`). */
async function loadgen(pin = false) {
  const lg = pin ? start('taskset', ['-c', '0', path.join(build, 'loadgen'), String(N)]) : start(path.join(build, 'loadgen'), [String(N)]);
  return lg;
}
async function finishLoad(lg) {
  lg.stdin.end('go\n');
  const line = await waitLine(lg, /^\{/, RUN_TIMEOUT_MS);
  await lg.exited;
  return json(line);
}

async function untraced() {
  const lg = await loadgen();
  return finishLoad(lg);
}

async function runConsumer(spec, env, pin = false) {
  const lg = await loadgen(pin);
  let consumer;
  let tracer;
  try {
    if (spec.bpftrace) return await runBpftrace(lg);
    const childEnv = { ...process.env };
    if (spec.bcc && env.bccDir) childEnv.BCC_KERNEL_SOURCE = env.bccDir;
    if (spec.lib) childEnv.BENCH_LIB = spec.lib;
    // pin: the consumer on CPU 1, the load on CPU 0 (taskset execs: same pid)
    consumer = pin ? start('taskset', ['-c', '1', spec.cmd, ...spec.argv(lg.pid)], { env: childEnv }) : start(spec.cmd, spec.argv(lg.pid), { env: childEnv });
    await waitLine(consumer, /^ready$/, spec.bcc ? 120_000 : 30_000);
    const load = await finishLoad(lg);
    try { process.kill(consumer.pid, 'SIGUSR1'); } catch { /* exited: waitLine says why */ }
    const result = json(await waitLine(consumer, /^\{/, RUN_TIMEOUT_MS));
    await consumer.exited;
    return { load, ...result };
  } finally {
    if (consumer) await stop(consumer, 'SIGKILL');
    if (tracer) await stop(tracer, 'SIGKILL');
    await stop(lg, 'SIGKILL');
  }
}

async function runBpftrace(lg) {
  const script = `tracepoint:syscalls:sys_enter_getppid /pid == ${lg.pid}/ { $s = @seq; @seq = $s + 1; printf("%d %d %llu %llu\\n", pid, tid, nsecs, $s); }`;
  const bt = start('bpftrace', ['-B', 'line', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] }, { readStdout: false });
  // the line reader (bench/consumer.c lines) reads bpftrace's stdout
  const reader = start(path.join(build, 'consumer'), ['lines', '-', '-', String(N)], { stdio: [bt.stdout, 'pipe', 'pipe'] });
  try {
    await waitLine(reader, /^ready$/, 10_000);
    // attached: bpftool lists its perf-event link
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = sh('bpftool', ['-j', 'perf']);
      if (r.ok && JSON.parse(r.out || '[]').some((e) => e.pid === bt.pid && e.tracepoint === 'sys_enter_getppid')) break;
      if (Date.now() > deadline || !children.has(bt)) throw new Error(`bpftrace did not attach: ${bt.stderrText.trim().split('\n').slice(-2).join(' | ')}`);
      await sleep(50);
    }
    const cpu0 = procCpu(bt.pid);
    const load = await finishLoad(lg);
    process.kill(reader.pid, 'SIGUSR1');
    const result = json(await waitLine(reader, /^\{/, RUN_TIMEOUT_MS));
    const cpu = procCpu(bt.pid) - cpu0;
    await stop(bt, 'SIGINT');
    const lost = /Lost (\d+) events/g;
    let kernelLost = 0;
    for (let m; (m = lost.exec(bt.stderrText));) kernelLost += Number(m[1]);
    return { load, ...result, lost: kernelLost, cpu_s: cpu };
  } finally {
    await stop(bt, 'SIGINT');
    await stop(reader, 'SIGKILL');
  }
}

// ---- HTTP server row --------------------------------------------------------------

// One load run (wrk, for the whole row) against one server, while
// bench/syscall_toggle.js attaches a tracer's programs for a second, detaches
// them for a second, and so on: each traced second is compared with the
// untraced seconds around it (the server's speed drifts by 10% over a
// minute here, traced or not, so that tracers started in turn for minutes
// each measured the drift as much as the tracer). The first SETTLE_MS after
// each switch are not counted.
//   example: examples/node_syscalls.js's programs, tracing the server
//   idle:    the same, tracing an idle process (what the syscall
//            tracepoints cost every process by themselves)
//   stream:  a ring buffer record per syscall into a JS callback
//   bpftrace: the example's histograms as a bpftrace script would keep them
const EXAMPLE_OBJ = path.join(root, 'bpf', '.output', 'node_syscalls.bpf.o');
const TOGGLE_MS = 1000;
const SETTLE_MS = 150;
const HTTP_ROUNDS = Number(args['http-rounds']);

/** The server's samples ({t, n}: requests served by CLOCK_MONOTONIC ns t). */
function servedSamples(server) {
  return server.lines.map((l) => /^\{"t":(\d+),"n":(\d+)\}$/.exec(l.line)).filter(Boolean).map((m) => ({ t: BigInt(m[1]), n: Number(m[2]) }));
}

/** Requests/s over [from, to] (ns), from the server's samples; NaN with fewer than two. */
function rateBetween(samples, from, to) {
  const inside = samples.filter((x) => x.t >= from && x.t <= to);
  if (inside.length < 2) return NaN;
  const [a, b] = [inside[0], inside.at(-1)];
  return (b.n - a.n) / (Number(b.t - a.t) / 1e9);
}

/** Runs syscall_toggle.js KIND on `pid` for ROUNDS on/off pairs; the req/s of each window. */
async function toggled(server, kind, pid) {
  const seconds = (HTTP_ROUNDS * 2 * TOGGLE_MS) / 1000;
  const t = start(process.execPath, [path.join(__dirname, 'syscall_toggle.js'), kind, String(pid), String(TOGGLE_MS), String(seconds)]);
  try {
    // bpftrace starts (compiles) and stops (prints) once per traced second
    const done = json(await waitLine(t, /"done":true/, seconds * 1000 * (kind === 'bpftrace' ? 4 : 1) + 60_000));
    const switches = t.lines.map((l) => l.line).filter((l) => l.startsWith('{"t"')).map((l) => JSON.parse(l)).map((x) => ({ t: BigInt(x.t), on: x.on }));
    await sleep(100); // the server's sample after the last switch
    const samples = servedSamples(server);
    const windows = [];
    for (let i = 0; i + 1 < switches.length; i++) {
      windows.push({ on: switches[i].on, rate: rateBetween(samples, switches[i].t + BigInt(SETTLE_MS * 1e6), switches[i + 1].t) });
    }
    // each traced window against the mean of the untraced ones around it
    const losses = [];
    const on = [];
    const off = [];
    windows.forEach((w, i) => {
      (w.on ? on : off).push(w.rate);
      if (!w.on || i === 0 || i + 1 >= windows.length) return;
      const around = (windows[i - 1].rate + windows[i + 1].rate) / 2;
      if (Number.isFinite(w.rate) && Number.isFinite(around)) losses.push(1 - w.rate / around);
    });
    const mean = (xs) => xs.filter(Number.isFinite).reduce((a, b) => a + b, 0) / xs.filter(Number.isFinite).length;
    return { kind, loss: median(losses), losses, traced: mean(on), untraced: mean(off), calls: done.calls, lost: done.lost, cpu_s: done.cpu_s, seconds: on.length * (TOGGLE_MS - SETTLE_MS) / 1000 };
  } finally {
    await stop(t, 'SIGTERM');
  }
}

async function httpRow(tools) {
  if (!fs.existsSync(EXAMPLE_OBJ)) throw new Error(`${EXAMPLE_OBJ} is missing (npm run build)`);
  const server = start(process.execPath, [path.join(__dirname, 'http_server.js')]);
  const idle = start('sleep', ['3600'], { stdio: 'ignore' });
  let load;
  try {
    const { port } = json(await waitLine(server, /^\{"port"/, 10_000));
    load = start('wrk', ['-t1', '-c16', '-d3600s', `http://127.0.0.1:${port}/`]);
    await sleep(3000); // the server's JIT warms up
    const row = {};
    for (const kind of ['example', 'idle', 'stream', ...(tools.bpftrace ? [] : ['bpftrace'])]) {
      try {
        row[kind] = await toggled(server, kind === 'idle' ? 'example' : kind, kind === 'idle' ? idle.pid : server.pid);
      } catch (e) {
        if (kind === 'example') throw e;
        row.failed = [...(row.failed ?? []), `${kind}: ${e.message.split('\n')[0].slice(0, 300)}`];
        console.error(`bench: http ${kind}: ${e.message}`);
        continue;
      }
      const r = row[kind];
      console.error(`bench: http ${kind}: ${r.untraced.toFixed(0)} req/s untraced, ${r.traced.toFixed(0)} traced: ${(r.loss * 100).toFixed(1)}% fewer (median of ${r.losses.length} traced seconds), ${fmtInt(r.calls)} syscalls, ${r.lost} lost, tracer CPU ${r.cpu_s.toFixed(2)} s`);
    }
    return row;
  } finally {
    if (load) await stop(load, 'SIGINT');
    await stop(server, 'SIGTERM');
    await stop(idle, 'SIGKILL');
  }
}

// ---- startup row --------------------------------------------------------------

const FILE_IO_PROBES = ['openat', 'read', 'write', 'close'].flatMap((s) => [`sys_enter_${s}`, `sys_exit_${s}`]);

async function startupRow(tools) {
  const canary = start(path.join(build, 'canary'), [], { stdio: 'ignore' });
  const runs = { lib: [], nodeReady: [], nodeAll: [], bpftraceAll: [], bpftraceError: tools.bpftrace || '' };
  try {
    for (let i = 0; i < 5; i++) {
      const t0 = process.hrtime.bigint();
      const p = start(process.execPath, [path.join(__dirname, 'startup_node.js'), String(canary.pid)]);
      try {
        const ready = await waitLine(p, /^\{/, 30_000);
        const all = await waitLine(p, /^all$/, 30_000);
        runs.lib.push(json(ready).lib_ms);
        runs.nodeReady.push(Number(ready.at - t0) / 1e6);
        runs.nodeAll.push(Number(all.at - t0) / 1e6);
      } finally {
        await stop(p, 'SIGKILL');
      }
      if (runs.bpftraceError) continue;
      const script = `${FILE_IO_PROBES.map((p) => `tracepoint:syscalls:${p}`).join(',')} /pid == ${canary.pid}/ { printf("%s\\n", probe); }`;
      const t1 = process.hrtime.bigint();
      const bt = start('bpftrace', ['-B', 'line', '-e', script]);
      try {
        const seen = new Set();
        await waitLine(bt, { test: (l) => { if (l.startsWith('tracepoint:')) seen.add(l); return seen.size === 8; } }, 30_000);
        runs.bpftraceAll.push(Number(bt.lines[bt.lines.length - 1].at - t1) / 1e6);
      } catch (e) {
        runs.bpftraceError = e.message;
      } finally {
        await stop(bt, 'SIGINT');
      }
    }
  } finally {
    await stop(canary, 'SIGKILL');
  }
  return runs;
}

// ---- the table ------------------------------------------------------------------

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[(s.length - 1) >> 1] : NaN;
};
const fmtRate = (r) => (Number.isFinite(r) ? `${(r / 1e6).toFixed(2)} M` : '—');
const fmtInt = (n) => (Number.isFinite(n) ? n.toLocaleString('en-US') : '—');

function loadavg() {
  return os.loadavg().map((x) => x.toFixed(2)).join(' ');
}

async function main() {
  const t0 = Date.now();
  const startLoad = loadavg();
  const qemu = sh('pgrep', ['-c', 'qemu']).out.trim();
  const tools = buildAll();
  const env = { bccDir: tools.bccSource && tools.bccSource.dir };
  const only = args.only ? new Set(args.only.split(',')) : null;
  const consumers = CONSUMERS.filter((c) => !only || only.has(c.id) || c.ref);
  const unavailable = (c) => (c.bpftrace ? tools.bpftrace : c.bcc ? tools.bcc : '');

  const results = new Map(consumers.map((c) => [c.id, []]));
  const errors = new Map();
  const untracedNs = [];
  for (let rep = 0; rep < REPS; rep++) {
    untracedNs.push((await untraced()).ns_per_call);
    console.error(`bench: rep ${rep + 1}/${REPS}: untraced ${untracedNs[rep]} ns per call`);
    for (const c of consumers) {
      if (unavailable(c) || errors.has(c.id)) continue;
      try {
        const r = await runConsumer(c, env);
        r.rate = r.received / ((r.last_ns - r.load.start_ns) / 1e9);
        r.ns = r.load.ns_per_call;
        results.get(c.id).push(r);
        console.error(`bench: rep ${rep + 1}/${REPS}: ${c.id}: ${fmtInt(r.received)} received, ${fmtInt(r.lost)} lost, ${fmtInt(r.missing)} missing, ${fmtRate(r.rate)} events/s, ${r.ns} ns per call, ${r.cpu_s.toFixed(2)} CPU s${r.rss_growth_mb !== undefined ? `, RSS +${r.rss_growth_mb} MB` : ''}`);
      } catch (e) {
        errors.set(c.id, e.message.split('\n')[0]);
        console.error(`bench: ${c.id}: ${e.message}`);
      }
    }
  }
  // diagnostic, once: the backpressure run with the consumer pinned to CPU 1
  // and the load to CPU 0, so that the slow callback cannot take the
  // traced loop's CPU: what slows the loop then is not the JS thread
  let pinned;
  const bpSpec = consumers.find((c) => c.id === 'node-backpressure');
  if (bpSpec && results.get(bpSpec.id).length) {
    try {
      pinned = await runConsumer(bpSpec, env, true);
      console.error(`bench: node-backpressure pinned: ${fmtInt(pinned.received)} received, ${fmtInt(pinned.lost)} lost, ${pinned.load.ns_per_call} ns per call, RSS +${pinned.rss_growth_mb} MB`);
    } catch (e) {
      console.error(`bench: node-backpressure pinned: ${e.message}`);
    }
  }
  const base = median(untracedNs);
  const rows = consumers.map((c) => {
    const runs = results.get(c.id);
    if (!runs.length) return { c, na: unavailable(c) || errors.get(c.id) || 'no run' };
    const sorted = runs.slice().sort((a, b) => a.rate - b.rate);
    const r = sorted[(sorted.length - 1) >> 1];
    return { c, r, slowdown: r.ns / base, runs };
  });
  const ref = rows.find((x) => x.c.ref && x.r);

  const header = '| consumer | received | lost | missing | delivered events/s | traced slowdown | consumer CPU s | vs C no-wakeup: events/s, slowdown |';
  const lines = [header, '|---|---:|---:|---:|---:|---:|---:|---|'];
  for (const { c, r, slowdown, na } of rows) {
    if (na) {
      lines.push(`| ${c.label} | not available: ${na.replace(/\|/g, '/')} | | | | | | |`);
      continue;
    }
    const vs = c.node && ref ? `${((r.rate / ref.r.rate) * 100).toFixed(0)}%, ${(slowdown / ref.slowdown).toFixed(2)}x` : c.ref ? 'reference' : ref ? `${((r.rate / ref.r.rate) * 100).toFixed(0)}%, ${(slowdown / ref.slowdown).toFixed(2)}x` : '';
    lines.push(`| ${c.label} | ${fmtInt(r.received)} | ${fmtInt(r.lost)} | ${fmtInt(r.missing)} | ${fmtRate(r.rate)} | ${slowdown.toFixed(1)}x | ${r.cpu_s.toFixed(2)} | ${vs} |`);
  }

  const notes = [];
  const bp = rows.find((x) => x.c.id === 'node-backpressure' && x.r);
  if (bp) {
    const exact = bp.runs.every((r) => r.received + r.lost === N);
    notes.push(`- Backpressure (20 µs of work per record): received + lost == N in ${bp.runs.filter((r) => r.received + r.lost === N).length} of ${bp.runs.length} runs${exact ? ' (all)' : ''}; lost == missing by seq in ${bp.runs.filter((r) => r.lost === r.missing).length} of ${bp.runs.length}; RSS growth ${bp.runs.map((r) => `${r.rss_growth_mb} MB`).join(', ')} (peak RSS over RSS once attached); traced slowdown in the runs ${bp.runs.map((r) => `${(r.ns / base).toFixed(1)}x`).join(', ')}${pinned ? `; once more with the consumer pinned to CPU 1 and the load to CPU 0 (the 100%-busy JS thread cannot take the loop's CPU): ${(pinned.load.ns_per_call / base).toFixed(1)}x, ${fmtInt(pinned.received)} received + ${fmtInt(pinned.lost)} lost, RSS +${pinned.rss_growth_mb} MB` : ''}.`);
  }
  const nodeRss = rows.filter((x) => x.c.node && x.r && x.c.id !== 'node-backpressure').map((x) => `${x.c.id} +${x.r.rss_growth_mb} MB`);
  if (nodeRss.length) notes.push(`- RSS growth of the other node-libbpf consumers: ${nodeRss.join(', ')}.`);

  const targets = [];
  const row = (id) => rows.find((x) => x.c.id === id && x.r);
  const check = (ok, text) => targets.push(`- ${ok ? 'met' : '**not met**'}: ${text}`);
  if (ref) {
    for (const prefix of ['node', 'patched']) {
      const who = prefix === 'node' ? 'node-libbpf' : `node-libbpf at ${args.patched}`;
      const typed = row(`${prefix}-ring-typed`);
      if (typed) {
        const share = typed.r.rate / ref.r.rate;
        const slow = typed.slowdown / ref.slowdown;
        check(share >= 0.7 && typed.r.rate >= 1e6 && typed.r.lost === 0 && typed.r.missing === 0 && slow <= 1.15,
          `${who} ring → objects: ${(share * 100).toFixed(0)}% of C no-wakeup events/s (≥ 70%), ${fmtRate(typed.r.rate)}/s (≥ 1 M), ${typed.r.lost} lost, ${typed.r.missing} missing, slowdown ${slow.toFixed(2)}x C's (≤ 1.15x)`);
      }
      const raw = [row(`${prefix}-ring-batch`), row(`${prefix}-ring-raw`)].filter(Boolean).sort((a, b) => b.r.rate - a.r.rate)[0];
      if (raw) {
        const share = raw.r.rate / ref.r.rate;
        check(share >= 0.9 && raw.r.missing === 0, `${who} raw (best of Buffers and batches: ${raw.c.id}): ${(share * 100).toFixed(0)}% of C no-wakeup events/s (≥ 90%)`);
      }
    }
  }
  const cPerf = row('c-perf');
  const wake1 = row('node-perf-wake1');
  if (cPerf && wake1) check(wake1.r.rate >= cPerf.r.rate, `perf buffer with C's settings (wakeupBytes 1, 64 pages): ${fmtRate(wake1.r.rate)}/s vs C ${fmtRate(cPerf.r.rate)}/s, slowdown ${wake1.slowdown.toFixed(1)}x vs ${cPerf.slowdown.toFixed(1)}x`);
  for (const id of ['node-perf', 'patched-perf-typed']) {
    const p = row(id);
    if (p) check(p.slowdown < 5 && p.runs.every((r) => r.missing === 0), `${id} (library defaults): slowdown ${p.slowdown.toFixed(1)}x (< 5x); missing in the ${p.runs.length} runs: ${p.runs.map((r) => `${fmtInt(r.missing)} (${((r.missing / N) * 100).toFixed(2)}%)`).join(', ')} (none anywhere wanted)`);
  }
  if (bp) {
    const typed = row('node-ring-typed');
    const exact = bp.runs.every((r) => r.received + r.lost === N);
    const rss = Math.max(...bp.runs.map((r) => r.rss_growth_mb));
    check(exact && rss < 100 && (!typed || bp.slowdown <= typed.slowdown * 1.15),
      `backpressure: received + lost == N in every run: ${exact}; RSS growth ≤ ${rss} MB (< 100 MB); traced slowdown ${bp.slowdown.toFixed(1)}x vs ${typed ? `${typed.slowdown.toFixed(1)}x with a fast callback` : '?'}`);
  }

  let http;
  if (!args['no-http']) {
    if (tools.wrk) notes.push(`- HTTP server: not available: ${tools.wrk}`);
    else {
      try {
        http = await httpRow(tools);
        const pct = (k) => `${(http[k].loss * 100).toFixed(1)}%`;
        const spread = (k) => {
          const xs = http[k].losses.slice().sort((x, y) => x - y);
          return `quartiles ${(xs[Math.floor(xs.length / 4)] * 100).toFixed(1)}% to ${(xs[Math.floor((xs.length * 3) / 4)] * 100).toFixed(1)}%`;
        };
        check(http.example.loss <= 0.05, `HTTP server traced by examples/node_syscalls.js: ${pct('example')} fewer requests/s (≤ 5%)`);
        const controls = [
          http.idle && `the same programs tracing an idle process (what the syscall tracepoints cost every syscall on the machine, wrk's included) ${pct('idle')} fewer (${spread('idle')})`,
          http.stream && `a 32-byte ring buffer record per syscall streamed into a JS callback (decoded objects, log2 histograms in JS) ${pct('stream')} fewer (${spread('stream')}; ${fmtInt(http.stream.calls)} records, ${fmtRate(http.stream.calls / http.stream.seconds)}/s while attached, ${http.stream.lost} lost, tracer CPU ${http.stream.cpu_s.toFixed(2)} s)`,
          http.bpftrace && `bpftrace ${tools.bpftraceVersion || ''} keeping the same histograms (\`@start[tid] = nsecs\` at sys_enter, \`hist()\` by syscall at sys_exit: hash maps) ${pct('bpftrace')} fewer (${spread('bpftrace')}; ${fmtInt(http.bpftrace.calls)} syscalls counted)`,
          ...(http.failed ?? []).map((f) => `failed: ${f}`),
        ].filter(Boolean);
        notes.push(`- HTTP server (bench/http_server.js on 127.0.0.1) under one wrk run (-t1 -c16), its requests counted by itself every 50 ms, while bench/syscall_toggle.js attaches a tracer's programs for ${TOGGLE_MS / 1000} s and detaches them for ${TOGGLE_MS / 1000} s, ${HTTP_ROUNDS} times (the first ${SETTLE_MS} ms after each switch not counted; each traced second against the untraced seconds around it; median). The syscall-latency example's programs (\`examples/node_syscalls.js --pid <server>\`: raw_syscalls sys_enter/sys_exit, per-syscall latency histograms counted in the kernel): untraced ${http.example.untraced.toFixed(0)} req/s, traced **${pct('example')} fewer requests/s** (${spread('example')}; ${fmtInt(http.example.calls)} syscalls counted). Controls: ${controls.join('; ')}.`);
      } catch (e) {
        notes.push(`- HTTP server: failed: ${e.message.split('\n')[0]}`);
      }
    }
  }
  if (!args['no-startup']) {
    try {
      const s = await startupRow(tools);
      const bt = s.bpftraceAll.length ? `bpftrace (8 probes, same canary): **${median(s.bpftraceAll).toFixed(0)} ms** from spawn to all 8 probes firing` : `bpftrace: not available: ${s.bpftraceError}`;
      check(median(s.lib) < 100, `startup: loadBpfProgram + load + attach ×8 ${median(s.lib).toFixed(1)} ms (well under 100 ms)${s.bpftraceAll.length ? `; bpftrace from spawn to all 8 probes firing ${median(s.bpftraceAll).toFixed(0)} ms, node-libbpf from spawn (Node.js boot included) ${median(s.nodeAll).toFixed(0)} ms` : ''}`);
      notes.push(`- Startup, median of ${s.lib.length} fresh processes, bpf/file_io.bpf.o (8 syscall tracepoints): loadBpfProgram + load + attach ×8 **${median(s.lib).toFixed(1)} ms** (runs ${s.lib.map((x) => x.toFixed(1)).join(', ')}); node process spawn to attached ${median(s.nodeReady).toFixed(0)} ms, to the first record of each of the 4 syscalls (all 8 probes fired) ${median(s.nodeAll).toFixed(0)} ms; ${bt}.`);
    } catch (e) {
      notes.push(`- Startup: failed: ${e.message.split('\n')[0]}`);
    }
  }

  const endLoad = loadavg();
  const qemuEnd = sh('pgrep', ['-c', 'qemu']).out.trim();
  const date = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const head = [
    `${date}, kernel ${os.release()}, ${os.cpus().length} vCPU, Node.js ${process.version}; load average (1, 5, 15 min) ${startLoad} at start, ${endLoad} at end; qemu processes at start: ${qemu || 0}, at end: ${qemuEnd || 0}.`,
    `N = ${fmtInt(N)} getppid calls per run, untraced ${base.toFixed(1)} ns per call (median); ${REPS} repetitions, each row the median run by delivered events/s. Ring buffer 8 MiB; perf buffers 64 pages (256 KiB) per CPU for C, BCC and node-perf-wake1, node-libbpf's default (256 pages, 1 MiB) for node-perf. BCC: ${tools.bccSource ? tools.bccSource.note : tools.bcc}. Total time ${((Date.now() - t0) / 1000).toFixed(0)} s.`,
  ];
  const perRun = rows.filter((x) => x.r).map(({ c, runs }) => `| ${c.id} | ${runs.map((r) => `${(r.ns / base).toFixed(2)}x`).join(', ')} | ${runs.map((r) => fmtInt(r.missing)).join(', ')} | ${runs.map((r) => r.cpu_s.toFixed(2)).join(', ')} |`);
  const appendix = `Every run (in order), for the spread: traced slowdown, missing, consumer CPU s; untraced ns per call ${untracedNs.map((x) => x.toFixed(0)).join(', ')}.\n\n| consumer | slowdown | missing | CPU s |\n|---|---|---|---|\n${perRun.join('\n')}`;
  const text = `${head.join('\n')}\n\n${lines.join('\n')}\n\n${notes.join('\n')}\n\nTargets (issue 4):\n\n${targets.join('\n')}\n\n${appendix}\n`;
  console.log(`\n${text}`);
  const md = `# Benchmark results\n\nWritten by \`npm run bench\` (bench/run.js); see bench/README.md for what each row measures.\n\n${text}`;
  fs.writeFileSync(args.out, md);
}

main().then(
  // every child is stopped: what is left (a pipe a grandchild inherited) must not keep the bench alive
  () => process.exit(0),
  (e) => {
    console.error(e.stack || e.message);
    killAll();
    process.exit(1);
  },
);
