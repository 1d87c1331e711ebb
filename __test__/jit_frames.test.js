'use strict';
// JavaScript frames of code V8 inlined (issue 23): Node 24 and 26's Maglev
// inlines a hot function into its caller, whose code object alone a perf
// map names. stackcount names the hot function when node runs with
// --no-maglev-inlining, and marks the Maglev frames that may hold inlined
// code, with that flag, when it does not. lib/frames/jitdump.js reads V8's jitdump
// (--perf-prof) as hostile input: truncated or malformed, it gives what it
// could read, or a coded error, never a throw of another kind or a hang.
const { describe, test, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startExample, sleep } = require('./helpers');
const { JitDump, findJitDump, parseCodeName, INLINED_MARK } = require('../lib/frames/jitdump');

const STACKCOUNT = path.join(__dirname, '..', 'examples', 'stackcount.js');
const WORKLOAD = path.join(__dirname, '..', 'examples', 'workloads', 'inlined.js');
const { testNode } = require('../scripts/nodes');
const MAGLEV_MARK = '[may hold inlined code: run node with --no-maglev-inlining to name it]';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jit-frames-test-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const TURBOFAN = path.join(__dirname, 'fixtures', 'turbofan_inline.js');
// The jitdump names an inlined function from the Sparkplug code of the function
// that encloses its position. On a loaded machine V8 sometimes optimizes helper
// without ever compiling it with Sparkplug, and the frame is then marked, not
// named (CI failed on it once): --always-sparkplug makes that code certain.
const TURBOFAN_FLAGS = ['--no-maglev-inlining', '--always-sparkplug'];

/** A jitdump of `script` (default: the workload), written by `node` (--perf-prof, and `flags`) in `ms` milliseconds. */
function realDump(node, ms, script = WORKLOAD, flags = []) {
  const dir = fs.mkdtempSync(path.join(tmp, 'dump-'));
  // (in its directory: the jitdump's default place, and --perf-prof starts V8's log, isolate-*.log, there too)
  const r = spawnSync(node, ['--perf-prof', ...flags, script, String(ms)], { timeout: 30_000, cwd: dir });
  assert.equal(r.status, 0, String(r.stderr));
  const [file] = fs.readdirSync(dir).filter((f) => /^jit-\d+\.dump$/.test(f));
  assert.ok(file, `a jitdump in ${dir}`);
  return path.join(dir, file);
}

/** The addresses of code object `c`'s source positions (a JitDump's code: its DebugTable, `shift` from where they were written). */
const addressesOf = (c) => Array.from(c.debug.addrs, (a) => a + c.shift);

/** Whether `fn` throws nothing, or an Error with a string code. */
function onlyCoded(fn) {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof Error && typeof /** @type {NodeJS.ErrnoException} */ (err).code === 'string', `a coded error: ${err.stack}`);
  }
}

// (Node 20, end of life, names and inlines its code otherwise: the tests of what V8 wrote skip there; the kernel matrix's VM has only it)
const dumpNode = [26, 24, 22].map((major) => testNode(major).node).find(Boolean);
const noNewNode = dumpNode ? false : 'no Node 22, 24 or 26 (npm run test:node caches them): this reads what their V8 writes';

describe('lib/jitdump', () => {
  const node = dumpNode ?? process.execPath;
  const file = realDump(node, 1500);
  const bytes = fs.readFileSync(file);

  test('code names: tiers, OSR and context-specialized markers', () => {
    assert.deepEqual(parseCodeName("JS:+'processImmediate node:internal/timers:525:28"), { osr: false, tier: '+', fn: 'processImmediate', file: 'node:internal/timers', line: 525, column: 28 });
    assert.deepEqual(parseCodeName('JS:o*hotLoopX /app/x.js:3:18'), { osr: true, tier: '*', fn: 'hotLoopX', file: '/app/x.js', line: 3, column: 18 });
    assert.equal(parseCodeName('JS:~ /app/x.js:9:5').fn, '(anonymous)');
    assert.equal(parseCodeName('Builtin:ArgumentsAdaptorTrampoline'), null);
  });

  test(`a real jitdump (${path.basename(path.dirname(path.dirname(node)))}): hotLoopX's code objects, named at their addresses`, { skip: noNewNode }, () => {
    const dump = new JitDump(file).refresh();
    assert.equal(dump.malformed, null);
    const hot = dump.codes.filter((c) => c.info?.fn === 'hotLoopX');
    assert.ok(hot.length >= 1, `hotLoopX compiled: ${dump.codes.length} code objects`);
    // (an address V8 reused for later code is that code's)
    for (const c of hot.filter((x) => dump.code(x.start + 1) === x)) assert.equal(dump.frames(c.start + 1).at(-1), `hotLoopX ${WORKLOAD}:6:18`);
    assert.equal(dump.frames(1), null, 'no code at address 1');
    // every address of every JavaScript code object gives a frame naming a function, or marked
    for (const c of dump.codes.filter((x) => x.info && x.debug)) {
      for (const a of addressesOf(c)) for (const f of dump.code(a) === c ? dump.frames(a) : []) assert.match(f, /^(.+ \S+:\d+:\d+|\[inlined code at .*\])( \[holds inlined code: .*\])?$/);
    }
  });

  for (const major of [22, 24, 26]) {
    const { node, skip } = testNode(major);
    if (skip) console.log(`skipping the TurboFan jitdump of Node ${major}: ${skip}`);
    test(`Node ${major}: TurboFan code names the function it inlined (helper into outer)`, { skip }, () => {
      const dump = new JitDump(realDump(/** @type {string} */ (node), 2500, TURBOFAN, TURBOFAN_FLAGS)).refresh();
      const outer = `outer ${TURBOFAN}:5:15`;
      const helper = `helper ${TURBOFAN}:4:16`;
      const seen = new Map();
      for (const c of dump.codes.filter((x) => x.info?.fn === 'outer' && x.info.tier === '*' && x.debug)) {
        for (const a of addressesOf(c)) if (dump.code(a) === c) seen.set(dump.frames(a).join(' <- '), true);
      }
      assert.ok(seen.has(`${helper} <- ${outer}`), `helper inlined in outer's TurboFan code, named: ${[...seen.keys()].join(' | ')}`);
      assert.ok(seen.has(outer), `outer's own code: ${[...seen.keys()].join(' | ')}`);
      for (const frames of seen.keys()) assert.ok([outer, `${helper} <- ${outer}`].includes(frames), frames);
    });
  }

  test('StackSymbolizer.userFrames and frames: the inlined function above the code that holds it', { skip: noNewNode }, async () => {
    const { StackSymbolizer } = require('../lib/frames/stacks');
    const node = dumpNode ?? process.execPath;
    // a live process with a jitdump in its working directory, with TurboFan's inlining of helper in outer
    const child = spawn(node, ['--perf-prof', ...TURBOFAN_FLAGS, TURBOFAN, '25000'], { cwd: tmp, stdio: 'ignore' });
    try {
      // TurboFan compiles outer, and V8 flushes the dump's buffer, within
      // ~2 s on an idle machine; up to 20 s here on a loaded one
      let sym, dump, inlinedAt = [];
      for (const end = Date.now() + 20_000; inlinedAt.length === 0 && Date.now() < end; ) {
        await sleep(500);
        sym = new StackSymbolizer();
        dump = sym.jitOf(child.pid).dump;
        if (!dump) continue;
        dump.refresh();
        inlinedAt = dump.codes
          .filter((c) => c.info?.fn === 'outer' && c.info.tier === '*' && c.debug)
          .flatMap(addressesOf)
          .filter((a) => dump.frames(a)?.length === 2);
      }
      assert.ok(dump, 'the jitdump found');
      assert.ok(inlinedAt.length > 0, 'outer\'s TurboFan code holds helper (flushed to the dump)');
      const [a] = inlinedAt;
      assert.deepEqual(sym.userFrames(child.pid, [BigInt(a)]), [[`helper ${TURBOFAN}:4:16`, `outer ${TURBOFAN}:5:15`]]);
      assert.deepEqual(sym.frames(child.pid, [BigInt(a), BigInt(a)]), [`helper ${TURBOFAN}:4:16`, `outer ${TURBOFAN}:5:15`, `helper ${TURBOFAN}:4:16`, `outer ${TURBOFAN}:5:15`]);
      assert.deepEqual(sym.user(child.pid, [BigInt(a)]), [`outer ${TURBOFAN}:5:15`]);
    } finally {
      child.kill();
      fs.rmSync(path.join(tmp, `jit-${child.pid}.dump`), { force: true });
    }
  });

  test('truncated anywhere: the records before the cut, or a coded error for a cut header', () => {
    const full = new JitDump(file).refresh().codes.length;
    const cut = path.join(tmp, 'cut.dump');
    let last = -1;
    for (const n of [0, 1, 39, 40, 41, 56, 57, ...Array.from({ length: 40 }, (_, i) => Math.floor((bytes.length * (i + 1)) / 41))]) {
      fs.writeFileSync(cut, bytes.subarray(0, n));
      let dump;
      try {
        dump = new JitDump(cut).refresh();
      } catch (err) {
        assert.ok(n < 40, `only a cut header fails: ${n} bytes: ${err.message}`);
        assert.equal(err.code, 'ERR_BPF_INVALID_VALUE');
        continue;
      }
      assert.ok(dump.codes.length >= last && dump.codes.length <= full, `${n} bytes: ${dump.codes.length} of ${full} code objects`);
      last = dump.codes.length;
    }
    // growing: a dump read again after more was written reads the rest
    fs.writeFileSync(cut, bytes.subarray(0, bytes.length >> 1));
    const growing = new JitDump(cut).refresh();
    fs.appendFileSync(cut, bytes.subarray(bytes.length >> 1));
    assert.equal(growing.refresh().codes.length, full);
  });

  test('malformed records: parsing stops there, no throw, no hang', () => {
    const bad = path.join(tmp, 'bad.dump');
    const header = bytes.subarray(0, 40);
    const record = (id, size, body = Buffer.alloc(0)) => {
      const h = Buffer.alloc(16);
      h.writeUInt32LE(id, 0);
      h.writeUInt32LE(size, 4);
      return Buffer.concat([h, body]);
    };
    const cases = {
      'a record of 0 bytes': record(0, 0),
      'a record of 8 bytes': record(2, 8),
      'a code load without a name': record(0, 16 + 48, Buffer.alloc(48, 0x41)),
      'a code load bigger than its record': record(0, 16 + 44, Buffer.concat([Buffer.alloc(16), Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0]), Buffer.alloc(8), Buffer.from('f\0\0\0')])),
      'debug info of 2^60 entries': record(2, 16 + 16, Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10])),
      'a record past the end': record(0, 0xffffffff),
    };
    for (const [what, body] of Object.entries(cases)) {
      fs.writeFileSync(bad, Buffer.concat([header, bytes.subarray(40, 40 + 4096 * 4), body, body]));
      const dump = new JitDump(bad).refresh();
      assert.ok(dump.codes.length >= 0, what);
      assert.equal(dump.refresh().codes.length, dump.codes.length, `${what}: read again, the same`);
    }
    // a code object moved 200000 times: read in linear time
    const load = record(0, 16 + 40 + 2 + 1, Buffer.concat([Buffer.alloc(16), Buffer.from([0, 0x10, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]), Buffer.alloc(8), Buffer.from('f\0'), Buffer.alloc(1)]));
    const move = (i) => {
      const b = Buffer.alloc(48);
      b.writeUInt32LE(0x1000 + i * 0x10, 16);
      b.writeUInt32LE(0x1000 + (i + 1) * 0x10, 24);
      b.writeUInt32LE(1, 32);
      return record(1, 16 + 48, b);
    };
    // (against 20000 moves: 10x the moves must not take 100x the time; no wall-clock bound, as
    // a VM under qemu TCG is 20x slower than the host)
    const readMoves = (n) => {
      fs.writeFileSync(bad, Buffer.concat([header, load, ...Array.from({ length: n }, (_, i) => move(i))]));
      const started = process.hrtime.bigint();
      const moved = new JitDump(bad).refresh();
      assert.equal(moved.codes.length, n + 1);
      assert.equal(moved.code(0x1000 + n * 0x10).name, 'f');
      return Number(process.hrtime.bigint() - started) / 1e6;
    };
    const small = readMoves(20_000);
    const big = readMoves(200_000);
    assert.ok(big < 30 * Math.max(small, 10), `200000 moves in ${big.toFixed(0)} ms, 20000 in ${small.toFixed(0)} ms: not linear`);
    // random bytes flipped: only coded errors
    for (let i = 0; i < 200; i++) {
      const copy = Buffer.from(bytes.subarray(0, 64 * 1024));
      for (let j = 0; j < 8; j++) copy[40 + Math.floor(Math.random() * (copy.length - 40))] = Math.floor(Math.random() * 256);
      fs.writeFileSync(bad, copy);
      onlyCoded(() => {
        const dump = new JitDump(bad).refresh();
        for (const c of dump.codes) dump.frames(c.start);
      });
    }
  });

  test('not a regular file, a symbolic link, not a jitdump: coded errors', () => {
    const link = path.join(tmp, 'link.dump');
    fs.symlinkSync(file, link);
    assert.throws(() => new JitDump(link).refresh(), { code: 'ERR_BPF_INVALID_OBJECT', message: /symbolic link/ });
    assert.throws(() => new JitDump(tmp).refresh(), { code: 'ERR_BPF_INVALID_OBJECT', message: /not a regular file/ });
    const fifo = path.join(tmp, 'fifo.dump');
    spawnSync('mkfifo', [fifo]);
    assert.throws(() => new JitDump(fifo).refresh(), { code: 'ERR_BPF_INVALID_OBJECT', message: /not a regular file/ });
    const text = path.join(tmp, 'text.dump');
    fs.writeFileSync(text, 'x'.repeat(100));
    assert.throws(() => new JitDump(text).refresh(), { code: 'ERR_BPF_INVALID_VALUE', message: /not a jitdump/ });
    assert.throws(() => new JitDump(path.join(tmp, 'none.dump')).refresh(), { code: 'ENOENT' });
  });

  test('findJitDump: the target\'s --perf-prof-path, through /proc/PID/root; none without --perf-prof', async () => {
    // (Node 20 takes no --perf-prof-path on its command line)
    const child = spawn(process.execPath, ['--perf-prof', '-e', 'setTimeout(() => {}, 5000)'], { cwd: tmp });
    const plain = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 5000)']);
    try {
      await sleep(1000);
      assert.equal(findJitDump(child.pid), `/proc/${child.pid}/root${fs.realpathSync(tmp)}/jit-${child.pid}.dump`);
      assert.ok(fs.existsSync(findJitDump(child.pid)), 'there');
      assert.equal(findJitDump(child.pid, ['--perf-prof', '--perf-prof-path=/srv/../x']), `/proc/${child.pid}/root/x/jit-${child.pid}.dump`);
      assert.equal(findJitDump(plain.pid), null);
      assert.equal(findJitDump(child.pid, ['--perf-prof', '--perf-prof-path=../../etc']), null, 'no .. out of its working directory');
    } finally {
      child.kill();
      plain.kill();
    }
  });
});

const skipRoot = process.getuid?.() !== 0 ? 'stackcount loads BPF programs: run the tests as root' : false;
if (skipRoot) console.log(`# skipping jit_frames.test.js stackcount tests: ${skipRoot}`);

/** Main-thread samples of `stackcount --profile -p` against the workload under `node flags`: { total, hot, marked }. */
async function profile(node, flags) {
  const target = spawn(node, [...flags, WORKLOAD, '12000'], { stdio: 'ignore', cwd: tmp });
  try {
    await sleep(1500); // Maglev has compiled (and inlined) by then
    const tool = startExample(STACKCOUNT, ['-p', String(target.pid), '--profile', '-d', '3', '--folded', '-U'], 60_000);
    const { code, stdout, stderr } = await tool.exited;
    assert.equal(code, 0, stderr);
    // the main thread: node (22), MainThread (24), node-MainThread (26)
    const lines = stdout.split('\n').filter((l) => /^(node|MainThread|node-MainThread);/.test(l));
    const count = (pred) => lines.filter(pred).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    return {
      total: count(() => true),
      hot: count((l) => l.includes(';hotLoopX ')),
      marked: count((l) => !l.includes(';hotLoopX ') && (l.includes(MAGLEV_MARK) || l.includes(INLINED_MARK))),
      stderr,
    };
  } finally {
    target.kill();
    fs.rmSync(`/tmp/perf-${target.pid}.map`, { force: true });
    fs.rmSync(path.join(tmp, `jit-${target.pid}.dump`), { force: true });
  }
}

describe('stackcount --profile: the hot function V8 inlined', { skip: skipRoot, concurrency: 1 }, () => {
  for (const major of [22, 24, 26]) {
    const { node, skip } = testNode(major);
    if (skip) console.log(`# skipping Node ${major}: ${skip}`);
    test(`Node ${major}, --perf-basic-prof --no-maglev-inlining: hotLoopX in most samples`, { skip, timeout: 60_000 }, async () => {
      const r = await profile(node, ['--perf-basic-prof', '--no-maglev-inlining']);
      console.log(`Node ${major} --perf-basic-prof --no-maglev-inlining: hotLoopX in ${r.hot} of ${r.total} main-thread samples`);
      assert.ok(r.total >= 20 && r.hot > r.total / 2, `hotLoopX in ${r.hot} of ${r.total} samples\n${r.stderr}`);
    });
    // (the jitdump alone names hotLoopX only once V8 has flushed its stdio buffer: not always in 3 s)
    test(`Node ${major}, --perf-basic-prof --perf-prof --no-maglev-inlining: hotLoopX in most samples, from the jitdump and the perf map`, { skip, timeout: 60_000 }, async () => {
      const r = await profile(node, ['--perf-basic-prof', '--perf-prof', '--no-maglev-inlining']);
      console.log(`Node ${major} --perf-basic-prof --perf-prof --no-maglev-inlining: hotLoopX in ${r.hot} of ${r.total} main-thread samples`);
      assert.ok(r.total >= 20 && r.hot > r.total / 2, `hotLoopX in ${r.hot} of ${r.total} samples\n${r.stderr}`);
    });
    if (major === 22) continue;
    test(`Node ${major}, --perf-basic-prof: hotLoopX, or a frame that says which flag names it, in most samples`, { skip, timeout: 60_000 }, async () => {
      const r = await profile(node, ['--perf-basic-prof']);
      console.log(`Node ${major} --perf-basic-prof: hotLoopX in ${r.hot}, marked ${r.marked}, of ${r.total} main-thread samples`);
      // the rest: node's own C++ (libuv, GC)
      assert.ok(r.total >= 20 && r.hot + r.marked >= r.total * 0.8, `hotLoopX in ${r.hot}, marked in ${r.marked}, of ${r.total} samples\n${r.stderr}`);
      // V8's own data names the inlined function (issue 27): the flag is advised only where a Maglev frame is still marked
      if (r.marked) assert.match(r.stderr, /runs without --no-maglev-inlining: .*run node --perf-basic-prof --no-maglev-inlining/);
      else assert.ok(r.hot >= r.total * 0.8, `hotLoopX named from V8's data in ${r.hot} of ${r.total} samples`);
    });
  }
});
