'use strict';
// bpf.profile(): a service profiles itself, on and off the CPU, with
// kernel, native and JavaScript frames; every profile is read back with a
// real pprof reader (`go tool pprof`), the pull handler is scraped over
// loopback, the push lands in a small receiver with Pyroscope's parameters.
const { describe, test, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const bpf = require('..');
const { kernelIds, ownIds, AS_NOBODY, UNSHARE_PID, memlockPrefix, nobodyCannotRun, pidNamespaceCannotRun } = require('./helpers');

const ROOT = path.join(__dirname, '..');
const SERVICE = path.join(__dirname, 'fixtures', 'profile_service.js');
const NODE_ARGS = ['--perf-basic-prof', '--interpreted-frames-native-stack', '--no-logfile-per-isolate', '--logfile=+'];
const { testNode } = require('../scripts/nodes');

// Node 22, 24 and 26 (npm test's pretest caches them; under test:node a missing one fails)
const OTHER_NODES = ['22', '24', '26'].map((major) => {
  const { node, skip } = testNode(major);
  if (skip) console.log(`# profile.test.js: skipping Node ${major}: ${skip}`);
  return node;
});

const goOk = spawnSync('go', ['version']).status === 0;
const asRoot = process.getuid?.() !== 0 ? 'profiles load BPF programs: run the tests as root' : false;
const skip = asRoot || (!goOk ? 'no go toolchain: go tool pprof reads the profiles' : false);
if (skip) console.log(`# skipping profile.test.js: ${skip}`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-test-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Runs the service fixture to its end: its JSON line. */
function service(args, { node = process.execPath, prefix = [], nodeArgs = NODE_ARGS, options = undefined } = {}) {
  const cmd = [...prefix, node, ...nodeArgs, SERVICE, ...args];
  const env = options ? { ...process.env, PROFILE_OPTIONS: JSON.stringify(options) } : process.env;
  const r = spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8', timeout: 60_000, cwd: tmp, env });
  assert.equal(r.status, 0, `${cmd.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}


/** `service()` without blocking this process (it serves the push's receiver meanwhile). */
function serviceAsync(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_ARGS, SERVICE, ...args], { stdio: ['ignore', 'pipe', 'pipe'], cwd: tmp });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill(), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').pop()));
      else reject(new Error(`service ${args.join(' ')} exited ${code}: ${err}`));
    });
  });
}

/** `go tool pprof ARGS FILE`'s output. */
const pprof = (args, file) => execFileSync('go', ['tool', 'pprof', ...args, file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** `-traces` output as `[{ labels, value (ms), frames: [innermost first] }]`. */
function traces(file, args = []) {
  const out = pprof(['-traces', '-unit=ms', ...args], file);
  return out
    .split(/-+\+-+\n/)
    .slice(1)
    .map((block) => {
      const lines = block.split('\n').filter((l) => l.trim());
      const labels = Object.fromEntries(lines.filter((l) => /^\s*\w+:\s/.test(l) && !/ms\s/.test(l)).map((l) => l.trim().split(/:\s+/)));
      const body = lines.filter((l) => !/^\s*\w+:\s/.test(l) || /^\s+[\d.]+ms\s/.test(l));
      const first = /^\s*([\d.]+)ms\s+(.*)$/.exec(body[0] ?? '');
      if (!first) return undefined;
      return { labels, value: Number(first[1]), frames: [first[2].trim(), ...body.slice(1).map((l) => l.trim())] };
    })
    .filter(Boolean);
}

test('a JIT address is named by the perf map as it was at the window\'s end, not by code compiled there after it', () => {
  const pid = 4194305; // above the largest pid_max: no process writes this map
  const file = `/tmp/perf-${pid}.map`;
  const before = '1000 100 JS:*hotLoop a.js:1:1\n';
  // after the window: the decoding's own code lands where the sampled code was freed; a cut last line
  fs.writeFileSync(file, `${before}1080 100 JS:^toBigInt b.js:2:2\n2000 10 JS:~cut`);
  try {
    // the perf map alone, read by the Rust reader to an end offset (a window's end: symbolizer.perfMapSize then)
    const sym = new bpf.Symbolizer();
    const names = (p, end) => sym.perfMap(p, [0x1090n, 0x2000n], end).map((f) => f.name ?? null);
    assert.deepEqual(names(pid, before.length), ['JS:*hotLoop a.js:1:1', null]);
    assert.deepEqual(names(pid, sym.perfMapSize(pid)), ['JS:^toBigInt b.js:2:2', null], 'a line cut by the end is no line');
    assert.deepEqual(names(pid, 0), [null, null]);
    assert.deepEqual(names(pid + 1, sym.perfMapSize(pid + 1)), [null, null]);
    assert.equal(sym.perfMapSize(pid + 1), 0, 'no map');
  } finally {
    fs.rmSync(file, { force: true });
  }
});

describe('on CPU', { skip }, () => {
  const versions = [['20 (this node)', process.execPath], ...OTHER_NODES.filter(Boolean).map((n) => [path.basename(path.dirname(path.dirname(n))), n])];
  for (const [version, node] of versions) {
    test(`node ${version}: -top names hotLoop at >= 70% cum; -traces has kernel frames under statLoop`, () => {
      const dir = fs.mkdtempSync(path.join(tmp, 'cpu-'));
      // (Node 24 and 26's Maglev inlines them into the timer's callback: the flag that keeps them named, docs/service.md: Profiles)
      const major = Number(/v?(\d+)\./.exec(version === '20 (this node)' ? process.version : version)[1]);
      const r = service(['cpu', dir], { node, nodeArgs: major >= 24 ? [...NODE_ARGS, '--no-maglev-inlining'] : NODE_ARGS });
      const file = path.join(dir, 'cpu.pb.gz');
      const top = pprof(['-top', '-nodecount=200'], file);
      const total = Number(/Total samples = ([\d.]+)ms/.exec(top)?.[1] ?? Number(/Total samples = ([\d.]+)s/.exec(top)[1]) * 1000);
      const row = top.split('\n').find((l) => /\shotLoop$/.test(l));
      assert.ok(row, `hotLoop in -top (${r.samples} samples):\n${top}`);
      const cumPct = Number(row.trim().split(/\s+/)[4].replace('%', ''));
      assert.ok(cumPct >= 70, `hotLoop at ${cumPct}% cum of ${total} ms:\n${top}`);
      assert.match(top, /Type: cpu/);
      // the syscall-heavy function has kernel frames under it (innermost first: the kernel's before it)
      const stat = traces(file).filter((t) => t.frames.some((f) => /^'?statLoop$/.test(f)));
      assert.ok(stat.length, `statLoop in -traces:\n${pprof(['-traces'], file).slice(0, 4000)}`);
      const withKernel = stat.find((t) => {
        const at = t.frames.findIndex((f) => /^'?statLoop$/.test(f));
        return t.frames.slice(0, at).some((f) => /^(entry_SYSCALL_64\w*|do_syscall_64|__x64_sys_\w+|el0_svc)$/.test(f));
      });
      assert.ok(withKernel, `a kernel frame under statLoop:\n${JSON.stringify(stat.slice(0, 3), null, 1)}`);
      // every sample has its thread's labels; the main thread is named main
      const raw = pprof(['-raw'], file);
      assert.match(raw, /thread_kind:\[main\]/);
      assert.match(raw, /thread_id:\[\d+\]/);
      assert.match(raw, /thread_name:\[/);
      assert.match(fs.readFileSync(path.join(dir, 'cpu.svg'), 'utf8'), /hotLoop/);
      assert.match(fs.readFileSync(path.join(dir, 'cpu.folded'), 'utf8'), /;hotLoop [^;]*hot|;hotLoop/);
    });
  }
});

describe("issue 23's inlining case (Maglev inlines hotLoopX into processImmediate)", { skip }, () => {
  for (const node of OTHER_NODES.filter((n) => n && !/\/22\./.test(n))) {
    const version = path.basename(path.dirname(path.dirname(node)));
    test(`node ${version}, --perf-basic-prof --no-maglev-inlining: hotLoopX in >= 70% of the samples; without the flag, a frame that holds it says which flag names it`, () => {
      const dir = fs.mkdtempSync(path.join(tmp, 'inl-'));
      const share = () => {
        const lines = fs.readFileSync(path.join(dir, 'inlined.folded'), 'utf8').trim().split('\n');
        const count = (l) => Number(l.slice(l.lastIndexOf(' ') + 1));
        const total = lines.reduce((n, l) => n + count(l), 0);
        return { total, hot: lines.filter((l) => /;hotLoopX /.test(l)).reduce((n, l) => n + count(l), 0), lines };
      };
      service(['inlined', dir], { node, nodeArgs: ['--perf-basic-prof', '--no-maglev-inlining'] });
      const named = share();
      assert.ok(named.hot >= 0.7 * named.total, `hotLoopX in ${named.hot} of ${named.total} samples`);
      assert.match(pprof(['-top'], path.join(dir, 'inlined.pb.gz')), /hotLoopX/);
      service(['inlined', dir], { node, nodeArgs: ['--perf-basic-prof'] });
      const plain = share();
      const unnamed = plain.lines.filter((l) => !/;hotLoopX /.test(l) && /processImmediate/.test(l) && !/may hold inlined code: run node with --no-maglev-inlining/.test(l));
      const inProcessImmediate = plain.lines.filter((l) => /processImmediate[^;]* \d+$/.test(l));
      // (named from V8's data, issue 27, a sample in processImmediate's own code has its line: inlined code there would be named by its position)
      // (or, in a few samples, no line: no code object found for the pc, 6-7 of ~190 samples on Node 24
      // and 26; the frame says so rather than give the line where the function starts)
      const count = (l) => Number(l.slice(l.lastIndexOf(' ') + 1));
      const noLine = inProcessImmediate.filter((l) => /processImmediate node:internal\/timers \d+$/.test(l));
      assert.deepEqual(inProcessImmediate.filter((l) => !/--no-maglev-inlining/.test(l) && !/processImmediate node:internal\/timers:\d+:\d+ \d+$/.test(l) && !noLine.includes(l)), [], `samples in processImmediate's code say which flag names what it inlined, or are named with their line:\n${unnamed.join('\n')}`);
      assert.ok(noLine.reduce((n, l) => n + count(l), 0) <= 0.1 * plain.total, `processImmediate without a line in more than 10% of the ${plain.total} samples:\n${noLine.join('\n')}`);
    });
  }
});

describe("threads: 'main'", { skip }, () => {
  test('one event that follows the main thread: every CPU sample is the main thread\'s, hotLoop among them', () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'main-'));
    const r = service(['cpu', dir], { options: { threads: 'main' } });
    assert.ok(r.samples > 50, `${r.samples} samples`);
    assert.deepEqual(r.threads.map((t) => t.split(':')[0]), ['main'], r.threads.join(', '));
    assert.match(pprof(['-top', '-nodecount=200'], path.join(dir, 'cpu.pb.gz')), /\shotLoop$/m);
    assert.throws(() => bpf.profile(/** @type {any} */ ({ threads: 'workers' })), { code: 'ERR_BPF_INVALID_VALUE', message: /threads .*'all'.*'main'/ });
  });
});

describe('without a perf map', { skip }, () => {
  test('without V8\'s data either (v8: false), JIT frames say how to get their names, and so does the comment; no bare address', () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'nomap-'));
    service(['cpu', dir], { nodeArgs: [], options: { v8: false } });
    const file = path.join(dir, 'cpu.pb.gz');
    const top = pprof(['-top', '-nodecount=300'], file);
    assert.match(top, /run node with --perf-basic-prof \(or --perf-basic-prof-only-functions --interpreted-frames-native-stack\)/, 'the comment');
    assert.doesNotMatch(top, /hotLoop/);
    const jit = top.split('\n').find((l) => l.endsWith('[JIT code: run node with --perf-basic-prof]'));
    assert.ok(jit && Number(jit.trim().split(/\s+/)[4].replace('%', '')) >= 70, `the JIT frame holds the hot loop:\n${top}`);
    assert.doesNotMatch(top, /\s0x[0-9a-f]+$/m, 'no bare address');
  });
});

describe('off CPU', { skip }, () => {
  test('B blocks of 50 ms in Atomics.wait: waitHere above the futex frames, B x 50 ms +- 10%', () => {
    const B = 8;
    const run = () => {
      const dir = fs.mkdtempSync(path.join(tmp, 'off-'));
      const r = service(['offcpu', dir, String(B)]);
      assert.equal(r.blocks, B);
      const file = path.join(dir, 'offcpu.pb.gz');
      assert.match(pprof(['-top'], file), /Type: off_cpu/);
      const blocked = traces(file, ['-tagfocus=off_cpu_state=blocked']);
      const waits = blocked.filter((t) => t.frames.includes('waitHere'));
      return { file, blocked, waits, total: waits.reduce((sum, t) => sum + t.value, 0) };
    };
    // (in full suite runs, 1 of ~50 blocks has gone missing under load, never alone: run again once, and say so with where its time went)
    let { file, waits, total, blocked } = run();
    if (total < B * 50 * 0.9) {
      const others = blocked.filter((t) => !t.frames.includes('waitHere')).map((t) => `${t.value} ms: ${t.frames.slice(0, 12).join(' <- ')}`);
      console.log(`# off CPU: ${total} ms under waitHere for ${B} x 50 ms, run again; the other blocked traces: ${others.join(' | ') || 'none'}`);
      ({ file, waits, total } = run());
    }
    assert.ok(waits.length, `waitHere in -traces:\n${pprof(['-traces'], file).slice(0, 5000)}`);
    for (const t of waits) {
      const js = t.frames.indexOf('waitHere');
      const futex = t.frames.findIndex((f) => /futex/.test(f));
      assert.ok(futex >= 0 && futex < js, `futex frames under waitHere: ${t.frames.join(' <- ')}`);
    }
    assert.ok(Math.abs(total - B * 50) <= B * 50 * 0.1, `${total} ms blocked in waitHere, expected ${B * 50} +- 10%`);
  });
});

describe('off CPU: the main thread\'s own switches', { skip }, () => {
  test('context-switches (a perf event of the main thread) counts what sched_switch (every switch) counts: 8 blocks of 127 ms, the last ending the window', () => {
    const B = 8;
    const MS = 127;
    const runs = ['context-switches', 'sched_switch'].map((offCpuEvent) => {
      const r = service(['offcpu', fs.mkdtempSync(path.join(tmp, 'offev-')), String(B), String(MS)], { options: { offCpuEvent } });
      assert.equal(r.event, offCpuEvent);
      assert.equal(r.blocks, B);
      return r;
    });
    for (const r of runs) {
      // each block once, blocked, its own length (the sleep's timer slack and wake-up: at most 10%); V8 may
      // split a block in two: Atomics.wait wakes to handle an interrupt (a finished compile, a GC request)
      // and waits again for the rest, which is two intervals (the time stays the same)
      assert.ok(r.waits.count >= B && r.waits.count <= B + 2, `${r.event}: ${B} blocks in ${r.waits.count} intervals: ${JSON.stringify(r)}`);
      assert.deepEqual(r.waits.states, ['blocked'], r.event);
      assert.ok(r.waits.ns >= B * MS * 1e6 && r.waits.ns <= B * MS * 1e6 * 1.1, `${r.event}: ${r.waits.ns / 1e6} ms blocked in waitHere, expected ${B * MS} ms to +10%`);
    }
    // the same intervals: within 1% of each other (their clocks: the run queue's against bpf_ktime_get_ns)
    const [a, b] = runs.map((r) => r.waits.ns);
    assert.ok(Math.abs(a - b) <= 0.01 * b, `context-switches ${a / 1e6} ms, sched_switch ${b / 1e6} ms`);
  });

  test('preempted: counted without stacks by default (count and time), by stack with preempted: true; a CPU hog on the same CPU preempts the main thread', () => {
    const hog = spawn('taskset', ['-c', '0', process.execPath, '-e', 'for (;;);'], { stdio: 'ignore' });
    try {
      for (const event of ['context-switches', 'sched_switch']) {
        const prefix = ['taskset', '-c', '0'];
        const plain = service(['busy', tmp], { prefix, options: { offCpuEvent: event, minOffCpu: 0.0005 } });
        assert.equal(plain.states.preempted, undefined, `${event}: no preempted stacks by default: ${JSON.stringify(plain)}`);
        assert.ok(plain.preempted.count >= 5 && plain.preempted.ns >= plain.preempted.count * 0.0005e9, `${event}: preempted ${JSON.stringify(plain.preempted)}`);
        assert.match(plain.notes.join('\n'), /preempted .* \d+ times/);
        const walked = service(['busy', tmp], { prefix, options: { offCpuEvent: event, minOffCpu: 0.0005, preempted: true } });
        assert.equal(walked.preempted, null);
        assert.ok(walked.states.preempted?.count >= 5, `${event}: preempted stacks with preempted: true: ${JSON.stringify(walked)}`);
      }
    } finally {
      hog.kill();
    }
  });

  test("context-switches: closed during a window, the window rejects with ERR_BPF_CLOSED (no end-of-window switch on a closed object)", async () => {
    const p = bpf.profile({ offCpuEvent: 'context-switches' });
    const w = p.collect({ seconds: 5 });
    await new Promise((r) => setTimeout(r, 100));
    p.close();
    await assert.rejects(w, { code: 'ERR_BPF_CLOSED' });
    assert.ok(p.closed);
  });

  test('offCpuEvent: anything else is ERR_BPF_INVALID_VALUE naming the two', () => {
    assert.throws(() => bpf.profile(/** @type {any} */ ({ offCpuEvent: 'sched-switch' })), { code: 'ERR_BPF_INVALID_VALUE', message: /offCpuEvent .*'sched_switch' or 'context-switches'/ });
  });
});

describe('pull', { skip }, () => {
  test('/debug/pprof/profile?seconds=1 over loopback: a pprof of that window; bad seconds 400; a second pull 409', async () => {
    const child = spawn(process.execPath, [...NODE_ARGS, SERVICE, 'serve'], { stdio: ['pipe', 'pipe', 'inherit'], cwd: tmp });
    try {
      const line = await new Promise((resolve, reject) => {
        child.stdout.once('data', (d) => resolve(String(d)));
        child.once('exit', (code) => reject(new Error(`service exited ${code}`)));
      });
      const { port } = JSON.parse(line);
      const get = (p) => fetch(`http://127.0.0.1:${port}${p}`);
      const pulling = get('/debug/pprof/profile?seconds=1');
      await new Promise((r) => setTimeout(r, 200));
      const second = await get('/debug/pprof/offcpu?seconds=1');
      assert.equal(second.status, 409, await second.text());
      for (const bad of ['0', '-1', '301', 'abc', '', 'NaN']) {
        const res = await get(`/debug/pprof/profile?seconds=${bad}`);
        assert.equal(res.status, 400, `seconds=${bad}`);
        assert.match(await res.text(), /seconds must be a number above 0 and at most 300/);
      }
      const res = await pulling;
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/octet-stream');
      const file = path.join(tmp, 'pulled.pb.gz');
      fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
      const top = pprof(['-top'], file);
      const duration = Number(/Duration: ([\d.]+)s/.exec(top)[1]);
      assert.ok(duration >= 1 && duration < 1.3, `the window asked (1 s): ${duration} s`);
      assert.match(top, /hotLoop/);
      const off = await get('/debug/pprof/offcpu?seconds=0.5');
      assert.equal(off.status, 200);
      fs.writeFileSync(file, Buffer.from(await off.arrayBuffer()));
      assert.match(pprof(['-top'], file), /Type: off_cpu/);
      assert.equal((await get('/other')).status, 200, 'other paths are the service\'s');
    } finally {
      child.stdin.end();
      await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r()));
    }
  });
});

describe('push', { skip }, () => {
  test("Pyroscope's POST /ingest: name{labels}, from, until, format=pprof, sampleRate, spyName; a multipart profile go tool pprof reads", async () => {
    const got = [];
    const server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        got.push({ method: req.method, url: req.url, type: req.headers['content-type'], body: Buffer.concat(chunks) });
        res.end();
      });
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', () => r(undefined)));
    try {
      const r = await serviceAsync(['push', `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`]);
      assert.deepEqual(r.errors, []);
      assert.ok(r.pushed >= 2, `pushed ${r.pushed}`);
      const cpu = got.find((g) => !g.body.includes('sample_type_config'));
      const off = got.find((g) => g.body.includes('sample_type_config'));
      assert.ok(cpu && off, `a CPU and an off-CPU push: ${got.map((g) => g.url).join(', ')}`);
      let rate;
      for (const g of [cpu, off]) {
        assert.equal(g.method, 'POST');
        const url = new URL(g.url, 'http://x');
        assert.equal(url.pathname, '/ingest');
        const q = Object.fromEntries(url.searchParams);
        assert.equal(q.name, 'profile-test{env=test,host=h1}');
        assert.equal(q.format, 'pprof');
        // (the window's frequency: 99 Hz by cpu-clock, a whole fraction of CONFIG_HZ by the tick; the CPU profile's period says which)
        if (g === off) assert.equal(q.sampleRate, rate);
        assert.equal(q.spyName, 'node-libbpf');
        assert.ok(Number(q.until) > Number(q.from) && Math.abs(Number(q.from) - Date.now() / 1000) < 30, `from ${q.from} until ${q.until}`);
        const boundary = /multipart\/form-data; boundary=(.+)$/.exec(g.type)[1];
        const part = g.body
          .toString('latin1')
          .split(`--${boundary}`)
          .find((p) => /name="profile"/.test(p));
        const data = Buffer.from(part.slice(part.indexOf('\r\n\r\n') + 4, -2), 'latin1');
        const file = path.join(tmp, 'pushed.pb.gz');
        fs.writeFileSync(file, data);
        assert.match(pprof(['-top'], file), g === cpu ? /Type: cpu/ : /Type: off_cpu/);
        if (g === cpu) {
          const period = Number(/^Period: (\d+)$/m.exec(pprof(['-raw'], file))?.[1]);
          rate = String(Math.round(1e9 / period));
          assert.ok(['99', '83', '100', '333', '250'].includes(rate), `period ${period}`);
          assert.equal(q.sampleRate, rate);
        }
      }
      assert.match(off.body.toString(), /"off_cpu":\{"units":"samples"/);
    } finally {
      server.close();
    }
  });
});

describe('worker threads', { skip: asRoot }, () => {
  test('a worker thread\'s samples: threadKind worker, thread "worker NAME" where node names its thread after it (24 on), else "worker"', async () => {
    const { Worker } = require('node:worker_threads');
    const fixture = path.join(__dirname, 'fixtures', 'worker_spin.js');
    const workers = [new Worker(fixture, { name: 'ts-worker', workerData: 'named' }), new Worker(fixture, { workerData: 'unnamed' })];
    const p = bpf.profile({ frequency: 997, offCpu: false });
    try {
      await Promise.all(workers.map((w) => new Promise((resolve) => w.once('message', resolve))));
      const { cpu } = await p.collect({ seconds: 1 });
      const named = Number(process.versions.node.split('.')[0]) >= 24 ? 'worker ts-worker' : 'worker';
      const fns = (s) => s.frames.flatMap((f) => [f, ...(f.inlined ?? [])]).map((f) => f.name);
      for (const [fn, thread] of [['spinNamed', named], ['spinUnnamed', 'worker']]) {
        const mine = cpu.filter((s) => fns(s).includes(fn));
        const samples = mine.reduce((k, s) => k + s.count, 0);
        assert.ok(samples >= 50, `${samples} samples in ${fn}`);
        assert.deepEqual([...new Set(mine.map((s) => `${s.threadKind}/${s.thread}`))], [`worker/${thread}`], fn);
      }
    } finally {
      p.close();
      await Promise.all(workers.map((w) => w.terminate()));
    }
  });
});

describe('window after window', { skip: asRoot }, () => {
  test('the walked stacks are kept from one window to the next: the same work in three windows is named at its line in each (flagless: no perf map)', async () => {
    const file = path.join(tmp, 'windows.js');
    // a leaf loop under a few frames, a chunk a turn of the loop; this test's node has no perf map flag
    fs.writeFileSync(file, `
function leafSpin(n) { let x = 0; for (let i = 0; i < n; i++) x = (x + Math.sqrt(i)) % 1e9; return x; }
function outerSpin(depth, n) { return depth === 0 ? leafSpin(n) : outerSpin(depth - 1, n) + 1; }
module.exports = async (ms) => { const end = Date.now() + ms; let s = 0; while (Date.now() < end) { s += outerSpin(6, 200000); await new Promise((r) => setImmediate(r)); } return s; };
`);
    const spin = require(file);
    const p = bpf.profile({ frequency: 997, offCpu: false });
    try {
      for (let n = 0; n < 3; n++) {
        const w = p.collect({ seconds: 0.6 });
        await spin(500);
        const { cpu } = await w;
        const fns = (s) => s.frames.flatMap((f) => [f, ...(f.inlined ?? [])]);
        const mine = cpu.filter((s) => s.threadKind === 'main' && fns(s).some((f) => f.name === 'leafSpin'));
        const samples = mine.reduce((k, s) => k + s.count, 0);
        const named = mine.filter((s) => fns(s).some((f) => f.name === 'leafSpin' && f.file === file && f.line === 2)).reduce((k, s) => k + s.count, 0);
        // (under qemu's TCG, fewer)
        assert.ok(samples >= 20, `window ${n}: ${samples} samples in leafSpin`);
        assert.ok(named >= 0.9 * samples, `window ${n}: ${named} of ${samples} samples name leafSpin at ${file}:2`);
      }
    } finally {
      p.close();
    }
  });
});

describe("beside V8's own sampler", { skip }, () => {
  // a pending signal makes the kernel's verifier give up with EAGAIN, and libbpf tries five times: V8's
  // CpuProfiler (@datadog/pprof, --cpu-prof) sends SIGPROF every interval, and profile.bpf.o takes longer
  // than that to verify (this test failed 5 loads of 5 before the library held signals during a load)
  const pprofModule = (() => {
    try {
      return require.resolve('@datadog/pprof');
    } catch {
      return null;
    }
  })();
  test('a process that @datadog/pprof samples every 100 µs (SIGPROF) loads bpf.profile() every time, and its window has samples', { skip: !pprofModule && '@datadog/pprof is not installed (npm install: a devDependency)' }, () => {
    const script = `
      const { time } = require(${JSON.stringify(pprofModule)});
      const bpf = require(${JSON.stringify(ROOT)});
      time.start({ intervalMicros: 100 });
      (async () => {
        const out = { ok: 0, failed: [], samples: [] };
        for (let i = 0; i < 3; i++) {
          try {
            const p = bpf.profile();
            const w = p.collect({ seconds: 0.3 });
            const end = Date.now() + 250;
            while (Date.now() < end) Math.sqrt(Math.random());
            out.samples.push((await w).cpu.reduce((n, s) => n + s.count, 0));
            p.close();
            out.ok++;
          } catch (e) {
            out.failed.push(e.code + ': ' + e.message.split('\\n')[0]);
          }
        }
        time.stop();
        console.log(JSON.stringify(out));
      })();`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000, cwd: tmp });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim().split('\n').pop());
    assert.deepEqual(out.failed, []);
    assert.equal(out.ok, 3);
    // 250 ms on CPU at 99 Hz: about 25 samples a window
    for (const n of out.samples) assert.ok(n >= 10, `samples a window: ${out.samples}`);
  });
});

describe('least privilege', { skip }, () => {
  const why = nobodyCannotRun();
  if (why) console.log(`# skipping the least-privilege test: ${why}`);

  test('as nobody with CAP_BPF + CAP_PERFMON: a CPU profile with JS frames', { skip: why }, () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'nobody-'));
    fs.chmodSync(tmp, 0o777);
    fs.chmodSync(dir, 0o777);
    service(['cpu', dir], { prefix: [...memlockPrefix(), ...AS_NOBODY] });
    const top = pprof(['-top', '-nodecount=500'], path.join(dir, 'cpu.pb.gz'));
    assert.match(top, /hotLoop/);
    // kernel frames are named, or say why not (kallsyms shows addresses to CAP_SYSLOG only)
    assert.doesNotMatch(top, /\s\[unknown\]$/m, top);
  });

  const noNs = pidNamespaceCannotRun();
  test('the same as pid 1 of a pid namespace: its own threads are sampled (the kernel\'s tgid), labelled with its own tids', { skip: why || noNs }, () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'pidns-'));
    fs.chmodSync(tmp, 0o777);
    fs.chmodSync(dir, 0o777);
    const r = service(['cpu', dir], { prefix: [...UNSHARE_PID, ...memlockPrefix(), ...AS_NOBODY] });
    assert.ok(r.threads.includes('main:node'), JSON.stringify(r));
    const file = path.join(dir, 'cpu.pb.gz');
    assert.match(pprof(['-top'], file), /hotLoop/);
    assert.match(pprof(['-raw'], file), /thread_kind:\[main\][\s\S]*?thread_id:\[1\]|thread_id:\[1\][\s\S]*?thread_kind:\[main\]/, 'the main thread is tid 1 there');
  });
});

describe('bad input and cleanup', { skip }, () => {
  test('a rate of 0 or 1e9, a negative window, a second window: coded errors; close leaves nothing in the kernel', async () => {
    // bad on purpose: any lets '99' past the type check
    for (const frequency of /** @type {any[]} */ ([0, 1e9, 1.5, NaN, '99'])) {
      assert.throws(() => bpf.profile({ frequency }), (/** @type {NodeJS.ErrnoException} */ e) => e.code === 'ERR_BPF_INVALID_VALUE' && /frequency/.test(e.message), `frequency ${frequency}`);
    }
    // bad on purpose: no option is named rate
    assert.throws(() => bpf.profile(/** @type {any} */ ({ rate: 99 })), { code: 'ERR_BPF_UNKNOWN_NAME' });
    const before = kernelIds();
    const p = bpf.profile();
    try {
      // bad on purpose: any lets '1' past the type check
      for (const seconds of /** @type {any[]} */ ([-1, 0, NaN, 301, undefined, '1'])) {
        await assert.rejects(p.collect({ seconds }), (/** @type {NodeJS.ErrnoException} */ e) => e.code === 'ERR_BPF_INVALID_VALUE' && /seconds/.test(e.message), `seconds ${seconds}`);
      }
      const first = p.collect({ seconds: 0.3 });
      assert.equal(p.busy, true);
      await assert.rejects(p.collect({ seconds: 0.1 }), { code: 'ERR_BPF_BUSY' });
      assert.throws(() => p.push({ url: 'http://127.0.0.1:1', name: 'x' }), { code: 'ERR_BPF_BUSY' });
      const w = await first;
      assert.ok(w.durationNs >= 0.3e9);
      // bad on purpose: no kind is named heap
      assert.throws(() => w.pprof(/** @type {any} */ ('heap')), { code: 'ERR_BPF_INVALID_VALUE' });
      // its programs (this process's bpf-prog fds: other helpers' objects do not count) are attached only during a window
      const mine = ownIds('bpf-prog').filter((id) => !before.progs.includes(id));
      assert.equal(mine.length, 2, `its two programs are loaded: ${mine}`);
      assert.deepEqual(ownIds('bpf_link'), [], 'no link between windows');
      p.close();
      await new Promise((r) => setTimeout(r, 500));
      const left = kernelIds();
      assert.deepEqual(
        mine.filter((id) => left.progs.includes(id)),
        [],
        'its programs are gone after close',
      );
      assert.deepEqual(ownIds('bpf_link'), []);
      assert.deepEqual(ownIds('bpf-prog'), []);
      await assert.rejects(p.collect({ seconds: 1 }), { code: 'ERR_BPF_CLOSED' });
    } finally {
      p.close();
    }
  });
});
