'use strict';
// window.cpuprofile(): a profile window as the .cpuprofile `node --cpu-prof`
// writes, read back by speedscope's own importer (@elg/speedscope: its
// importers exported), which also reads a real `node --cpu-prof` file here,
// so the test shows the reader reads the real format.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { register } = require('node:module');
const { pathToFileURL } = require('node:url');
const bpf = require('..');
const { toCpuProfile } = require('../lib/service/cpuprofile');

const asRoot = process.getuid?.() !== 0 ? 'profiles load BPF programs: run the tests as root' : false;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cpuprofile-test-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// @elg/speedscope's library is ES modules whose imports have no .js: resolved here with it
register(
  `data:text/javascript,${encodeURIComponent(`export async function resolve(s, c, next) {
    try { return await next(s, c); } catch (e) {
      if (e.code === 'ERR_MODULE_NOT_FOUND' && /^\\.\\.?\\//.test(s) && c.parentURL?.includes('/@elg/speedscope/')) return next(s + '.js', c);
      throw e;
    }
  }`)}`,
);
/** @type {{ importFromChromeCPUProfile: (p: any) => any }} */
let speedscope;
before(async () => {
  speedscope = await import('@elg/speedscope/dist/library/import/chrome.js');
});

/** speedscope's frames of a .cpuprofile (a JSON round trip first, as a file would be): `[{ name, file, line, col, total, self }]`, and its total. */
function read(profile) {
  const p = speedscope.importFromChromeCPUProfile(JSON.parse(JSON.stringify(profile)));
  const frames = [];
  p.forEachFrame((f) => frames.push({ name: f.name, file: f.file, line: f.line, col: f.col, total: f.getTotalWeight(), self: f.getSelfWeight() }));
  return { frames, total: p.getTotalWeight() };
}

const js = (name, line, extra = {}) => ({ name, kind: 'js', file: '/app/a.js', line, column: 3, label: `${name} /app/a.js:${line}:3`, ...extra });
const kernel = { name: 'do_sys_openat2', kind: 'kernel', label: 'do_sys_openat2' };
const nativeFrame = { name: 'uv_run', kind: 'native', module: '/usr/bin/node', label: 'uv_run' };

/** A window of known stacks (innermost first): what a ProfileWindow holds. */
const WINDOW = {
  startNs: 1_000_000_000n,
  durationNs: 1e9,
  periodNs: 10_101_010,
  cpu: [
    { tid: 10, thread: 'node', threadKind: 'main', count: 3, frames: [js('leaf', 5), js('outer', 9, { inlined: [js('inner2', 20), js('inner1', 30)] }), nativeFrame] },
    { tid: 10, thread: 'node', threadKind: 'main', count: 2, frames: [js('leaf', 4), js('outer', 9, { inlined: [js('inner2', 20), js('inner1', 30)] }), nativeFrame] },
    { tid: 10, thread: 'node', threadKind: 'main', count: 4, frames: [kernel, js('outer', 12), nativeFrame] },
    { tid: 11, thread: 'libuv-worker', threadKind: 'libuv pool', count: 7, frames: [kernel, nativeFrame] },
  ],
  offCpu: [
    { tid: 10, thread: 'node', threadKind: 'main', count: 2, ns: 41_600_000, state: 'blocked', frames: [kernel, js('waitHere', 7), nativeFrame] },
    { tid: 10, thread: 'node', threadKind: 'main', count: 1, ns: 200_000, state: 'blocked', frames: [kernel, nativeFrame] },
  ],
};

describe('the encoder, on a window of known stacks', () => {
  test("the main thread's stacks: (root), then outermost first, inlined functions as nodes, outermost first; kernel and native frames as nodes", () => {
    const p = toCpuProfile(WINDOW, 'cpu');
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const pathOf = (id) => {
      const out = [];
      for (let n = byId.get(id); n; n = p.nodes.find((m) => m.children.includes(n.id))) out.unshift(n.callFrame.functionName);
      return out.join(';');
    };
    assert.deepEqual(p.nodes[0].callFrame, { functionName: '(root)', scriptId: '0', url: '', lineNumber: -1, columnNumber: -1 });
    const leaves = p.nodes.filter((n) => n.hitCount).map((n) => [pathOf(n.id), n.hitCount]);
    assert.deepEqual(leaves, [
      ['(root);uv_run;outer;inner1;inner2;leaf', 5],
      ['(root);uv_run;outer;do_sys_openat2', 4],
    ]);
    // 9 samples a period (10101 µs) apart, and one of (root) that closes the last stack; the first at startTime
    assert.equal(p.samples.length, 10);
    assert.equal(p.samples[9], 1);
    assert.deepEqual(p.timeDeltas, [0, ...Array(9).fill(10101)]);
    assert.deepEqual([p.startTime, p.endTime], [1_000_000, 1_000_000 + 9 * 10101]);
    // a function's callFrame: the first line the window saw it at (0-based), file:// url; its samples' lines in positionTicks
    const leaf = p.nodes.find((n) => n.callFrame.functionName === 'leaf');
    assert.deepEqual(leaf.callFrame, { functionName: 'leaf', scriptId: '1', url: 'file:///app/a.js', lineNumber: 3, columnNumber: 2 });
    assert.deepEqual(leaf.positionTicks, [{ line: 4, ticks: 2 }, { line: 5, ticks: 3 }]);
    assert.equal(p.nodes.filter((n) => n.callFrame.functionName === 'outer').length, 1, 'one node for outer, at lines 9 and 12');
    assert.deepEqual(p.nodes.find((n) => n.callFrame.functionName === 'do_sys_openat2').callFrame, { functionName: 'do_sys_openat2', scriptId: '0', url: '[kernel]', lineNumber: -1, columnNumber: -1 });
    assert.deepEqual(p.nodes.find((n) => n.callFrame.functionName === 'uv_run').callFrame, { functionName: 'uv_run', scriptId: '0', url: '/usr/bin/node', lineNumber: -1, columnNumber: -1 });
    // speedscope: each function's share of the samples
    const r = read(p);
    assert.equal(r.total, 9 * 10101);
    const total = (name) => r.frames.find((f) => f.name === name).total;
    assert.deepEqual([total('leaf'), total('inner1'), total('outer'), total('do_sys_openat2'), total('uv_run')], [5, 5, 9, 4, 9].map((n) => n * 10101));
  });

  test("thread 'all': each thread's stacks under a node named after it; a tid: that thread's; anything else: a coded error", () => {
    const all = toCpuProfile(WINDOW, 'cpu', { thread: 'all' });
    const threads = all.nodes[0].children.map((id) => all.nodes[id - 1].callFrame.functionName);
    assert.deepEqual(threads, ['node (tid 10, main)', 'libuv-worker (tid 11, libuv pool)']);
    assert.equal(all.samples.length, 16 + 1);
    const pool = toCpuProfile(WINDOW, 'cpu', { thread: 11 });
    assert.equal(read(pool).frames.find((f) => f.name === 'do_sys_openat2').total, 7 * 10101);
    assert.deepEqual(toCpuProfile(WINDOW, 'cpu', { thread: 99 }).samples, [], 'a thread without samples: an empty profile');
    for (const thread of ['pool', 0, 1.5]) {
      assert.throws(() => toCpuProfile(WINDOW, 'cpu', { thread: /** @type {any} */ (thread) }), { code: 'ERR_BPF_INVALID_VALUE', message: /thread is 'main' .* or a thread id/ });
    }
  });

  test('off CPU: a sample is a millisecond (a stack\'s time rounded, at least one)', () => {
    const p = toCpuProfile(WINDOW, 'offCpu');
    const r = read(p);
    assert.equal(p.samples.length, 42 + 1 + 1);
    assert.equal(r.frames.find((f) => f.name === 'waitHere').total, 42 * 1000);
    assert.equal(r.total, 43 * 1000);
  });
});

test("speedscope's importer reads a real `node --cpu-prof` file: its hot function, file and line", () => {
  const dir = fs.mkdtempSync(path.join(tmp, 'node-'));
  const script = path.join(dir, 'hot.js');
  fs.writeFileSync(script, 'function hotOne(n) { let x = 0; for (let i = 0; i < n; i++) x += Math.sqrt(i); return x; }\nconst end = Date.now() + 300;\nwhile (Date.now() < end) hotOne(1e5);\n');
  const r = spawnSync(process.execPath, ['--cpu-prof', '--cpu-prof-dir', dir, script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  const { frames, total } = read(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')));
  const hot = frames.find((f) => f.name === 'hotOne');
  assert.ok(hot, `hotOne among ${frames.map((f) => f.name)}`);
  assert.deepEqual([hot.file, hot.line], [pathToFileURL(script).href, 0]);
  assert.ok(hot.total > 0.5 * total, `hotOne ${hot.total} of ${total} µs`);
});

describe('a profile of this process', { skip: asRoot }, () => {
  const file = path.join(tmp, 'work.js');
  // a leaf loop (line 2) and a syscall loop (line 3), a chunk a turn of the event loop
  fs.writeFileSync(
    file,
    `'use strict';
function hotLeaf(n) { let x = 0; for (let i = 0; i < n; i++) x = (x + Math.sqrt(i)) % 1e9; return x; }
function statLeaf(n) { let s = 0; for (let i = 0; i < n; i++) s += require('node:fs').statSync('/proc/self/stat').size; return s; }
module.exports = async (ms) => { const end = Date.now() + ms; let s = 0; while (Date.now() < end) { s += hotLeaf(100000) + statLeaf(300); await new Promise((r) => setImmediate(r)); } return s; };
`,
  );

  test("the hot function's node (file, line), its share of samples as in the window; kernel and native frames as nodes", async () => {
    const work = require(file);
    const p = bpf.profile({ frequency: 997, offCpu: false, clock: 'cpu-clock' });
    let w;
    try {
      const window = p.collect({ seconds: 1 });
      await work(900);
      w = await window;
    } finally {
      p.close();
    }
    const main = w.cpu.filter((s) => s.threadKind === 'main');
    const fns = (s) => s.frames.flatMap((f) => [f, ...(f.inlined ?? [])]);
    const all = main.reduce((n, s) => n + s.count, 0);
    const hot = main.filter((s) => fns(s).some((f) => f.name === 'hotLeaf')).reduce((n, s) => n + s.count, 0);
    assert.ok(hot >= 20, `${hot} samples in hotLeaf`);
    const profile = w.cpuprofile('cpu');
    assert.equal(profile.nodes.reduce((n, x) => n + x.hitCount, 0), all);
    const period = Math.round(w.periodNs / 1000);
    const r = read(profile);
    assert.equal(r.total, all * period);
    const leaf = r.frames.find((f) => f.name === 'hotLeaf');
    assert.ok(leaf, `hotLeaf among ${r.frames.map((f) => f.name).slice(0, 40)}`);
    assert.deepEqual([leaf.file, leaf.line], [pathToFileURL(file).href, 1], "hotLeaf at its file's line 2 (0-based: 1)");
    assert.equal(leaf.total, hot * period, 'its share of the samples, as in the window');
    // kernel frames (statLeaf's syscalls) and native ones (node's own code: uv_run and its callers) are nodes
    const kernelNames = new Set(main.flatMap((s) => s.frames).filter((f) => f.kind === 'kernel').map((f) => f.name));
    assert.ok(kernelNames.size, 'the window has kernel frames');
    assert.ok(r.frames.some((f) => f.file === '[kernel]' && kernelNames.has(f.name)), 'a kernel frame');
    const natives = main.flatMap((s) => s.frames).filter((f) => f.kind === 'native' && f.module);
    assert.ok(natives.length, 'the window has native frames');
    assert.ok(r.frames.some((f) => natives.some((n) => n.name === f.name && n.module === f.file) && f.line === -1), 'a native frame, its module as url');
    // every thread: the main thread's node holds what the main thread's profile has
    const everyThread = w.cpuprofile('cpu', { thread: 'all' });
    const mainNode = everyThread.nodes.find((n) => n.callFrame.functionName === `${main[0].thread} (tid ${main[0].tid}, main)`);
    assert.ok(mainNode, 'a node for the main thread');
    assert.throws(() => w.cpuprofile(/** @type {any} */ ('wall')), { code: 'ERR_BPF_INVALID_VALUE', message: /'cpu' or 'offCpu'/ });
  });

  test('off CPU: the blocked main thread, in milliseconds', async () => {
    const p = bpf.profile({ frequency: 99, offCpu: true });
    const shared = new Int32Array(new SharedArrayBuffer(4));
    let w;
    try {
      const window = p.collect({ seconds: 0.6 });
      for (let i = 0; i < 5; i++) Atomics.wait(shared, 0, 0, 40);
      w = await window;
    } finally {
      p.close();
    }
    const expected = w.offCpu.filter((s) => s.threadKind === 'main').reduce((n, s) => n + Math.max(1, Math.round(s.ns / 1e6)), 0);
    assert.ok(expected >= 5 * 40, `${expected} ms off the CPU`);
    const r = read(w.cpuprofile('offCpu'));
    assert.equal(r.total, expected * 1000);
  });

  test('the handler: format=cpuprofile answers a .cpuprofile; another format is 400', async () => {
    const p = bpf.profile({ offCpu: false });
    const server = http.createServer((req, res) => {
      if (!p.handler()(req, res)) res.writeHead(404).end();
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', () => r(undefined)));
    const base = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}/debug/pprof/profile`;
    try {
      const bad = await fetch(`${base}?seconds=0.2&format=json`);
      assert.equal(bad.status, 400);
      assert.match(await bad.text(), /format is pprof \(default\) or cpuprofile, got "json"/);
      assert.equal((await fetch(`${base}?seconds=0.2&format=cpuprofile&thread=x`)).status, 400);
      const res = await fetch(`${base}?seconds=0.3&format=cpuprofile&thread=all`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.match(res.headers.get('content-disposition'), /filename="profile\.cpuprofile"/);
      const profile = await res.json();
      assert.equal(profile.nodes[0].callFrame.functionName, '(root)');
      assert.ok(read(profile).total >= 0);
    } finally {
      server.close();
      p.close();
    }
  });
});
