'use strict';
// Naming the walked V8 frames from the process's memory (lib/frames/v8_heap.js,
// lib/frames/v8_names.js; issue 27): the bounded memory reader and its coded
// error, an unknown V8 that names nothing, code churn under heavy GC that
// never names a frame after the wrong function, and hostile frames (random
// and corrupted sfi/code/slot/pc, pointers to other objects, a process that
// exits mid-naming) that give unnamed frames in bounded time, never a throw.
// stackcount -p, pprof and off-CPU naming per Node version: v8_frames.test.js.
const { describe, test, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { bpf, objectPath, sleep, prng } = require('./helpers');
const { V8Frames, binaryOf, binaryLayout, v8dbgSymbols } = require('../lib/frames/v8');
const { V8Names, interpreterRanges } = require('../lib/frames/v8_names');
const { Memory, heapLayout, positionAt, baselineBytecodeOffset, lineOf } = require('../lib/frames/v8_heap');
const { testNode, cacheOf, cachedReleases } = require('../scripts/nodes');

const HOT = path.join(__dirname, 'fixtures', 'v8_hot.js');
const CHURN = path.join(__dirname, 'fixtures', 'v8_churn.js');
const root = process.getuid?.() === 0;
const skip = root ? false : 'the frames are walked by BPF programs and other processes are read: run the tests as root';
if (skip) console.log(`# skipping parts of v8_names.test.js: ${skip}`);

const children = new Set();
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** Starts `fixture` under `node`; resolves to the child once it printed "ready". */
async function start(node, fixture) {
  const child = spawn(node, [fixture], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => String(d).includes('ready') && resolve(undefined));
    child.on('exit', (code) => reject(new Error(`${node} ${fixture} exited ${code} before it was ready`)));
  });
  return child;
}

/** The stacks the kernel walked in process `pid` for `ms` (stackcount's object, 99 Hz): [{ depth, frames }]. */
async function walk(pid, ms, v8 = new V8Frames()) {
  const obj = bpf.loadBpfProgram(objectPath('stackcount'));
  try {
    obj.setGlobalVariable('target_pid', pid);
    const err = v8.watch(obj, pid);
    if (err) throw err;
    obj.attachPerfEvent('handle_sample', { event: 'cpu-clock', frequency: 99 });
    await sleep(ms);
    obj.detachAll();
    return [...v8.readStacks(obj).values()];
  } finally {
    obj.close();
  }
}

describe('the memory reader', () => {
  test('reads the bytes there (the ELF header of our own node), null for what cannot be read, caps every length', () => {
    const mem = new Memory(process.pid);
    try {
      const exe = fs.readlinkSync('/proc/self/exe');
      const first = fs
        .readFileSync('/proc/self/maps', 'utf8')
        .split('\n')
        .find((l) => l.endsWith(exe) && l.split(/\s+/)[2] === '00000000');
      const at = parseInt(first.split('-')[0], 16);
      assert.deepEqual(mem.read(at, 4), Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
      assert.deepEqual(mem.read(BigInt(at) + 1n, 3), Buffer.from('ELF'));
      assert.equal(mem.read(0, 8), null, 'the null page');
      assert.equal(mem.read(8, 8), null);
      assert.equal(mem.read(at, 2 << 20), null, 'more than 1 MiB at once');
      assert.equal(mem.read(at, -1), null);
      assert.equal(mem.read(2n ** 64n - 8n, 8), null, 'beyond 2^53');
      assert.equal(mem.word(8), null);
    } finally {
      mem.close();
    }
    assert.equal(new Memory(process.pid).read(0x1000, 8), null, 'nothing mapped at 0x1000');
  });

  test('a process it may not read: ERR_V8_MEMORY naming CAP_SYS_PTRACE and the fix', { skip: !root && 'needs root to run a child as nobody' }, () => {
    const heap = path.join(__dirname, '..', 'lib', 'frames', 'v8_heap.js');
    const r = spawnSync(process.execPath, ['-e', `try { new (require(${JSON.stringify(heap)}).Memory)(1); console.log('opened') } catch (e) { console.log(e.code, e.message) }`], { uid: 65534, gid: 65534, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^ERR_V8_MEMORY cannot read the memory of process 1 .*CAP_SYS_PTRACE.*same user/);
    assert.throws(() => new Memory(2 ** 30), { code: 'ERR_V8_MEMORY' });
  });

  test('source position tables and line ends of random bytes: an answer or null, never a throw or a hang', () => {
    const rand = prng(27);
    const t0 = Date.now();
    for (let i = 0; i < 3000; i++) {
      const table = Buffer.from(Array.from({ length: Math.floor(rand() * 512) }, () => Math.floor(rand() * 256)));
      const r = positionAt(table, Math.floor(rand() * 5000), 1 + (i % 2));
      assert.ok(r === null || typeof r === 'bigint');
      // baseline code's bytecode offset table, walked along random bytecodes with random sizes (0 included)
      const bytecodes = Buffer.from(Array.from({ length: Math.floor(rand() * 256) }, () => Math.floor(rand() * 256)));
      const sizes = Buffer.from(Array.from({ length: 3 * (1 + Math.floor(rand() * 220)) }, () => Math.floor(rand() * 8)));
      const b = baselineBytecodeOffset(table, bytecodes, sizes, Math.floor(rand() * 5000));
      assert.ok(b === null || (Number.isInteger(b) && b >= -1 && b < bytecodes.length), String(b));
    }
    // a known walk: prologue 4 bytes; LdaZero (size 1), Wide-prefixed bytecode 5 (double size 3: 1 + 3), bytecode 6 (size 2)
    const sizes = Buffer.alloc(3 * 8, 1);
    sizes[6] = 2;
    sizes[8 + 5] = 3;
    const table = Buffer.from([4, 3, 10, 5]);
    const bytecodes = Buffer.from([7, 0, 5, 0, 0, 6, 0]);
    assert.deepEqual([0, 3, 4, 6, 7, 16, 17, 21, 22].map((at) => baselineBytecodeOffset(table, bytecodes, sizes, at)), [-1, -1, 0, 0, 1, 1, 5, 5, null]);
    assert.deepEqual(lineOf(Int32Array.from([9, 19, 29]), 12), { line: 2, column: 3 });
    assert.equal(lineOf(Int32Array.from([9, 19, 29]), 30), null);
    assert.equal(lineOf(null, 3), null);
    assert.ok(Date.now() - t0 < 10_000, `${Date.now() - t0} ms`);
  });
});

describe('an unknown V8', () => {
  test('a version not in the table names no frame, and says so', () => {
    const b = binaryOf(process.pid);
    const names = new V8Names(process.pid, { ...b, version: [99, 7, 1] });
    try {
      assert.equal(heapLayout(b.values, [99, 7, 1]).unknown, 'V8 99.7: layout not known');
      const f = names.frame({ pc: 0x1000n, sfi: 0x1001n, code: 0n, slot: 0n });
      assert.deepEqual(f, [{ name: '[JS V8 99.7: layout not known]', kind: 'unnamed', reason: 'V8 99.7: layout not known' }]);
    } finally {
      names.close();
    }
  });
});

// The other architecture's official nodes (arm64 on an x86_64 machine; scripts/nodes.js --arch), only read:
// the layout comes from the same v8dbg_* tables in an aarch64 ELF as in an x86_64 one
const OTHER_ARCH = require('node:os').arch() === 'arm64' ? 'x64' : 'arm64';

describe(`${OTHER_ARCH} node binaries: the V8 layout read from their ELF`, () => {
  for (const major of ['20', '22', '24', '26']) {
    // the newest cached release with this architecture's twin (npm's two packages do not always have the same newest), else testNode's
    const twin = cachedReleases(major, OTHER_ARCH).filter((v) => v === process.versions.node || cachedReleases(major).includes(v)).at(-1);
    const { node: other, skip: noOther } = twin ? { node: path.join(cacheOf(OTHER_ARCH), twin, 'bin', 'node'), skip: undefined } : testNode(major, OTHER_ARCH);
    const version = other && path.basename(path.dirname(path.dirname(other)));
    // this architecture's node of the same release: the host's, or a cached one (scripts/nodes.js fetches the other architecture's release to match)
    const mine = version && (process.versions.node === version ? process.execPath : cachedReleases(major).includes(version) ? path.join(cacheOf(), version, 'bin', 'node') : undefined);
    const why = noOther || (!mine && `no ${require('node:os').arch()} Node ${version} cached to compare with (node scripts/nodes.js ${major} fetches the newest)`);
    if (why) console.log(`# v8_names.test.js: skipping the ${OTHER_ARCH} layout of Node ${major}: ${why}`);
    test(`Node ${version ?? major}: the ${OTHER_ARCH} binary has the same V8 version, struct v8_layout and heap layout as ${require('node:os').arch()}'s; only the register numbers differ`, { skip: why }, () => {
      const a = binaryLayout(/** @type {string} */ (other));
      const x = binaryLayout(/** @type {string} */ (mine));
      assert.deepEqual([a.arch, x.arch], [OTHER_ARCH, require('node:os').arch()]);
      assert.equal(a.version.join('.'), x.version.join('.'));
      assert.equal(a.heap.unknown, null, `V8 ${a.version.join('.')} is in the table`);
      // frame slots (relative to fp: both keep fp and the return address/lr above it), tags, object offsets, instance types
      assert.deepEqual(a.layout, x.layout);
      assert.deepEqual(a.heap, x.heap);
      // plausible on their own: V8's standard frame, 64-bit SMIs (no pointer compression in official builds), a JSFunction's SFI in its first words
      assert.deepEqual([a.layout.fp_context, a.layout.fp_function, a.layout.heap_object_tag, a.layout.heap_object_tag_mask, a.layout.smi_shift, a.layout.object_map], [-8, -16, 1, 3, 32, 0]);
      assert.ok(a.layout.function_shared >= 8 && a.layout.function_shared <= 64 && a.layout.function_shared % 8 === 0, `JSFunction::shared at ${a.layout.function_shared}`);
      assert.ok(a.layout.js_function_first > 0 && a.layout.js_function_first <= a.layout.js_function_last && a.layout.js_function_last < 0x10000, 'JSFunction instance types');
      // the raw tables: the same names, the same values but for the registers (x86_64's and aarch64's numbering)
      const av = v8dbgSymbols(/** @type {string} */ (other)).values;
      const xv = v8dbgSymbols(/** @type {string} */ (mine)).values;
      assert.ok(av.size >= 400, `${av.size} v8dbg_* values`);
      assert.deepEqual([...av.keys()].sort(), [...xv.keys()].sort());
      const differ = [...av.keys()].filter((k) => av.get(k) !== xv.get(k));
      assert.ok(differ.length > 0 && differ.every((k) => /Register$/.test(k)), `differ: ${differ}`);
      // the interpreter's code (entry trampolines and bytecode handlers) by symbol, as many in both
      const ar = interpreterRanges(/** @type {string} */ (other), `test-${OTHER_ARCH}-${version}`);
      const xr = interpreterRanges(/** @type {string} */ (mine), `test-mine-${version}`);
      assert.ok(ar.length >= 100 && ar.length === xr.length, `${ar.length} and ${xr.length} interpreter ranges`);
    });
  }

  test('an ELF of another machine, or one with no V8: coded errors naming the file', () => {
    const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'v8-elf-'));
    try {
      const plain = path.join(dir, 'true');
      fs.copyFileSync('/bin/true', plain);
      assert.throws(() => binaryLayout(plain), (/** @type {any} */ e) => e.code === 'ERR_V8_NOT_NODE' && e.message.includes(plain));
      const arm32 = path.join(dir, 'arm32');
      const bytes = fs.readFileSync('/bin/true');
      bytes.writeUInt16LE(40, 0x12); // EM_ARM
      fs.writeFileSync(arm32, bytes);
      assert.throws(() => binaryLayout(arm32), (/** @type {any} */ e) => e.code === 'ERR_V8_ELF' && e.message.includes(arm32) && /machine 40/.test(e.message));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('hostile and churning memory', { skip }, () => {
  for (const major of ['20', '24']) {
  const { node: churnNode, skip: noChurnNode } = testNode(major);
  test(`Node ${major}: code churn under heavy GC: a frame is never named after another function (churn_g*_l<L> only below lane<L>)`, { skip: noChurnNode }, async () => {
    const child = await start(/** @type {string} */ (churnNode), CHURN);
    const v8 = new V8Frames();
    try {
      const stacks = await walk(/** @type {number} */ (child.pid), 3000, v8);
      // named after the sampling: meanwhile most of the functions sampled died, and the GC moved or reused their memory
      let pairs = 0;
      let named = 0;
      let churn = 0;
      for (const s of stacks) {
        const frames = v8.namesOf(/** @type {number} */ (child.pid), s.frames).flatMap((list) => list ?? [{ name: '(native)' }]);
        for (const [i, f] of frames.entries()) {
          const c = /^churn_g(\d+)_l(\d)$/.exec(f.name);
          if (!c) continue;
          churn++;
          if (f.file !== undefined) assert.equal(path.basename(f.file), `churn-${c[1]}.js`, `${f.name}: its file`);
          named++;
          const caller = frames.slice(i + 1).find((g) => g.kind !== 'unnamed');
          const lane = caller && /^lane(\d)$/.exec(caller.name);
          if (!lane) continue;
          assert.equal(lane[1], c[2], `${f.name} below ${caller.name}`);
          assert.equal(path.basename(caller.file), `lane-${lane[1]}.js`);
          pairs++;
        }
      }
      console.log(`# Node ${major} churn: ${stacks.length} stacks, ${churn} churn frames named, ${pairs} (churn, lane) pairs checked`);
      assert.ok(pairs >= 20, `only ${pairs} pairs of ${named} named churn frames to check`);
    } finally {
      v8.close();
      child.kill('SIGKILL');
    }
  });
  }

  for (const major of ['20', '24']) {
    const { node: bin, skip: noNode } = testNode(major);
    test(`Node ${major}: corrupted frames (random and off-by-some sfi/code/slot/pc, other objects as sfi) give unnamed frames or the real function, in bounded time; a process gone mid-naming: unnamed`, { skip: noNode }, async () => {
      const child = await start(/** @type {string} */ (bin), HOT);
      const pid = /** @type {number} */ (child.pid);
      const v8 = new V8Frames();
      try {
        const stacks = await walk(pid, 1000, v8);
        // (as BigInts, the frames' words up to 2^64: readStacks gives Numbers, the naming takes both)
        const real = stacks
          .flatMap((s) => s.frames)
          .filter((f) => f.sfi)
          .map((f) => ({ ...f, pc: BigInt(f.pc), sfi: BigInt(f.sfi), code: BigInt(f.code), slot: BigInt(f.slot) }));
        assert.ok(real.length >= 5, `${real.length} walked JS frames`);
        const names = new V8Names(pid, binaryOf(pid));
        const L = names.layout;
        const truth = new Map(real.map((f) => [f.sfi, names.frame(f).at(-1)?.name]));
        // (hotLoopNf: its own frame, or inlined into its callers' on Node 24/26)
        const all = real.flatMap((f) => names.frame(f).map((g) => g.name));
        assert.ok(all.includes('hotLoopNf'), all.join(', '));
        const rand = prng(Number(major));
        const r64 = () => (BigInt(Math.floor(rand() * 2 ** 32)) << 32n) | BigInt(Math.floor(rand() * 2 ** 32));
        const pick = () => real[Math.floor(rand() * real.length)];
        const others = [];
        for (const f of real.slice(0, 20)) {
          const sfi = Number(f.sfi);
          for (const off of [0, L.sfiName, L.sfiScript, L.sfiFunctionData]) {
            const v = names.heap.field(sfi, off); // its map, name or scope info, script, bytecode
            if (v) others.push(BigInt(v));
          }
          if (f.code) others.push(f.code);
        }
        const corrupt = [
          () => ({ ...pick(), sfi: r64() }),
          () => ({ ...pick(), sfi: r64() & 0x7fffffffffffn }),
          () => ({ ...pick(), sfi: pick().sfi + BigInt(8 * (1 + Math.floor(rand() * 8))) }),
          () => ({ ...pick(), sfi: pick().sfi - 1n }),
          () => ({ ...pick(), sfi: others[Math.floor(rand() * others.length)] }),
          () => ({ ...pick(), code: r64() }),
          () => ({ ...pick(), code: others[Math.floor(rand() * others.length)] }),
          () => ({ ...pick(), slot: r64() }),
          () => ({ ...pick(), pc: r64() }),
          () => ({ ...pick(), pc: pick().pc + BigInt(Math.floor(rand() * 4096)) }),
          () => ({ pc: r64(), sfi: r64(), code: r64(), slot: r64() }),
        ];
        const t0 = Date.now();
        let slowest = 0;
        let n = 0;
        for (let i = 0; i < 2200; i++) {
          const kind = i % corrupt.length;
          const f = corrupt[kind]();
          const t = Date.now();
          const out = names.frame(f);
          slowest = Math.max(slowest, Date.now() - t);
          assert.ok(Array.isArray(out) && out.length >= 1 && out.length <= 65, `kind ${kind}`);
          const outer = out.at(-1);
          if (truth.has(f.sfi)) {
            // the real SFI with a corrupted code, slot or pc: its own name, never another's
            assert.equal(outer.name, truth.get(f.sfi), `kind ${kind}: ${JSON.stringify(out)}`);
          } else {
            assert.equal(outer.kind, 'unnamed', `kind ${kind}, sfi 0x${f.sfi.toString(16)}: ${JSON.stringify(out)}`);
            assert.match(outer.name, /^\[JS /);
          }
          n++;
        }
        const ms = Date.now() - t0;
        console.log(`# Node ${major}: ${n} corrupted frames named in ${ms} ms (slowest ${slowest} ms), ${names.mem.reads} reads`);
        assert.ok(ms < 30_000 && slowest < 2000, `${ms} ms, slowest ${slowest} ms`);
        // the process exits mid-naming: its memory reads fail, every frame unnamed, nothing thrown
        child.kill('SIGKILL');
        await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve)));
        names.epoch();
        for (const f of real.slice(0, 50)) assert.equal(names.frame(f).at(-1).kind, 'unnamed');
        names.close();
        // and a process gone before naming: a coded error, no names
        assert.throws(() => new V8Names(pid, binaryOf(pid)), (e) => ['ERR_V8_MEMORY', 'ERR_V8_NO_PROCESS'].includes(/** @type {any} */ (e).code));
        const gone = v8.namesOf(pid + 0, real.slice(0, 3));
        for (const list of gone) assert.equal(list?.[0].kind, 'unnamed');
      } finally {
        v8.close();
        child.kill('SIGKILL');
      }
    });
  }
});
