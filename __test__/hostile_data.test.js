'use strict';
// What a traced process writes, read by the tracer as hostile data (its perf
// map, its jitdump, its V8 heap, its /proc files): nothing it writes can
// bloat, hang, kill or fool `stackcount -p PID --profile` (the harness:
// hostile_target.js). Then the naming's own bounds, without stackcount: its
// caches by bytes, its time budget, inlining positions that cycle, line ends
// that do not rise.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { hostileNode, runTracer, assertTracerHeld, tempDir } = require('./hostile_target');
const { sleep } = require('./helpers');
const { V8Frames, binaryOf } = require('../lib/frames/v8');
const { V8Names } = require('../lib/frames/v8_names');
const { inliningChain, lineOf } = require('../lib/frames/v8_heap');
const { escapeText } = require('../lib/core/format');

const root = process.getuid?.() === 0;
const skip = root ? false : 'stackcount loads BPF programs, and the tests read and write other processes: run the tests as root';
if (skip) console.log(`# skipping hostile_data.test.js: ${skip}`);

/** A hot loop in a regular expression: V8 compiles it to code that only the perf map names (`RegExp:(a|b)*c[0-9]+x`). */
const REGEXP_LOOP = `
const re = /(a|b)*c[0-9]+x/;
const s = 'ab'.repeat(5000) + 'c12';
function hostileRegexLoop() { let n = 0; for (let i = 0; i < 50; i++) n += re.test(s) ? 1 : 0; return n; }
hostileRegexLoop();
setInterval(() => hostileRegexLoop(), 1);
setTimeout(() => console.log('ready'), 500);`;

/**
 * Process `pid`'s perf map (/tmp/perf-PID.map, which its --perf-basic-prof
 * writes) once it names the compiled regular expression: `{ text, start,
 * size }` (the map's text, where the expression's code is).
 */
async function regexpMap(pid, name = /RegExp:\(a\|b\)\*c/) {
  const file = `/tmp/perf-${pid}.map`;
  for (let i = 0; i < 100; i++) {
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'latin1') : '';
    const line = text.split('\n').find((l) => name.test(l));
    if (line) {
      const [start, size] = line.split(' ');
      return { text, start, size };
    }
    await sleep(100);
  }
  throw new Error(`no RegExp line in ${file}`);
}

/**
 * Replaces process `pid`'s perf map by `parts` (strings and Buffers): a new
 * file renamed over it, as V8 goes on writing into the file it opened (at
 * its own offset: what is appended to that file, V8 writes over).
 */
function replacePerfMap(t, pid, parts) {
  const map = `/tmp/perf-${pid}.map`;
  t.after(() => fs.rmSync(map, { force: true }));
  const fd = fs.openSync(`${map}.new`, 'w');
  try {
    for (const part of parts) fs.writeSync(fd, part);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(`${map}.new`, map);
}

/** A jitdump (lib/frames/jitdump.js's format): one code object at `base` named `name`, a debug record of about `debugBytes` for it, then `moves` moves. */
function jitdumpBytes({ base, name, debugBytes, moves, file }) {
  const header = Buffer.alloc(40);
  header.writeUInt32LE(0x4a695444, 0);
  header.writeUInt32LE(1, 4);
  header.writeUInt32LE(40, 8);
  const record = (id, body) => {
    const h = Buffer.alloc(16);
    h.writeUInt32LE(id, 0);
    h.writeUInt32LE(16 + body.length, 4);
    return Buffer.concat([h, body]);
  };
  const fileName = Buffer.from(`${file}\0`);
  const entrySize = 16 + fileName.length;
  const n = Math.floor((debugBytes - 16) / entrySize);
  const debug = Buffer.alloc(16 + n * entrySize);
  debug.writeBigUInt64LE(BigInt(base), 0);
  debug.writeBigUInt64LE(BigInt(n), 8);
  for (let i = 0; i < n; i++) {
    const off = 16 + i * entrySize;
    debug.writeBigUInt64LE(BigInt(base + 0x40 + i), off); // (V8 adds the ELF header's size)
    debug.writeUInt32LE(1 + (i % 1000), off + 8);
    debug.writeUInt32LE(1, off + 12);
    fileName.copy(debug, off + 16);
  }
  const codeSize = n + 16;
  const codeName = Buffer.from(`${name}\0`);
  const load = Buffer.alloc(40 + codeName.length + codeSize);
  load.writeBigUInt64LE(BigInt(base), 16);
  load.writeBigUInt64LE(BigInt(codeSize), 24);
  codeName.copy(load, 40);
  const parts = [header, record(2, debug), record(0, load)];
  for (let i = 0; i < moves; i++) {
    const m = Buffer.alloc(48);
    m.writeBigUInt64LE(BigInt(base + i * 0x1000000), 16);
    m.writeBigUInt64LE(BigInt(base + (i + 1) * 0x1000000), 24);
    m.writeBigUInt64LE(BigInt(codeSize), 32);
    parts.push(record(1, m));
  }
  return Buffer.concat(parts);
}

/** The reason lines the tracer printed (`stackcount: pid N: ...`) that match `re`. */
const reasons = (run, re) => run.stderr.split('\n').filter((l) => re.test(l));

describe('hostile data: stackcount -p PID --profile -d 2 holds', { skip }, () => {
  test('a perf map of one line whose name is 48 MiB starting with ESC: read, the name cut at 4 KiB with a mark', async (t) => {
    const target = await hostileNode(t, { script: REGEXP_LOOP, args: ['--perf-basic-prof'] });
    // the regular expression's own code, named again by the line written last (which wins)
    const { text, start, size } = await regexpMap(target.pid);
    const long = 48 << 20;
    replacePerfMap(t, target.pid, [text, Buffer.concat([Buffer.from(`${start} ${size} \x1b`), Buffer.alloc(long - 1, 'A'), Buffer.from('\n')])]);
    const run = await runTracer(target.pid);
    assertTracerHeld(run);
    // (4 KiB kept, the ESC escaped by the tool)
    const mark = `\\e${'A'.repeat(4095)}…[+${long - 4096} bytes]`;
    assert.ok(run.stdout.includes(mark), `the regular expression's frame named by the appended line, cut: ${run.stdout.slice(0, 3000)}`);
  });

  test('a perf map of 2 M lines: its last 1 Mi lines read, within the RSS bound', async (t) => {
    // two regular expressions: the first named by the map's first line, the second by its last
    const script = REGEXP_LOOP.replace('setInterval(', "const re2 = /(c|d)*e[0-9]+y/;\nconst s2 = 'cd'.repeat(5000) + 'e12';\nsetInterval(() => { for (let i = 0; i < 50; i++) re2.test(s2); }, 1);\nsetInterval(");
    const target = await hostileNode(t, { script, args: ['--perf-basic-prof'] });
    const second = await regexpMap(target.pid, /RegExp:\(c\|d\)\*e/);
    // (read after the second's line: the map's text has both)
    const { text, start, size } = await regexpMap(target.pid);
    // the first expression's line, then 2 M functions where no code is (0x7e00...; 48 MB: all of it is read), then the
    // second's line, last
    const per = 100_000;
    const chunks = Array.from({ length: 20 }, (_, chunk) => {
      let lines = '';
      for (let i = chunk * per; i < (chunk + 1) * per; i++) lines += `${(0x7e0000000000 + i * 0x40).toString(16)} 40 f${i}\n`;
      return lines;
    });
    replacePerfMap(t, target.pid, [text, `${start} ${size} RegExp:hostile-head-of-2M-lines\n`, ...chunks, `${second.start} ${second.size} RegExp:hostile-tail-of-2M-lines\n`]);
    const run = await runTracer(target.pid);
    assertTracerHeld(run);
    assert.match(run.stdout, /^ {4}hostile-tail-of-2M-lines$/m, `the map's last line names the second expression's frames: ${run.stdout.slice(0, 3000)}`);
    assert.doesNotMatch(run.stdout, /hostile-head-of-2M-lines/, 'the map\'s first line is past its last 1 Mi lines: not parsed');
  });

  test('a jitdump with a 16 MiB debug record and 100 moves: the positions shared, not copied', async (t) => {
    const dir = tempDir(t);
    // (--perf-prof: the tool looks for jit-PID.dump in the target's working directory)
    const target = await hostileNode(t, { args: ['--perf-prof'], cwd: dir });
    const dump = path.join(dir, `jit-${target.pid}.dump`);
    // (replaced, not rewritten: V8 goes on writing into the file it opened)
    const bytes = jitdumpBytes({ base: 0x10000000, name: 'JS:*hostileJit /hostile/jit.js:1:1', debugBytes: (16 << 20) - 64, moves: 100, file: '/hostile/jit.js' });
    fs.writeFileSync(`${dump}.new`, bytes);
    fs.renameSync(`${dump}.new`, dump);
    const run = await runTracer(target.pid);
    assertTracerHeld(run);
    // read: the dump's code objects are what the tool knows of it (no malformed record, no bound reached)
    const { JitDump } = require('../lib/frames/jitdump');
    const read = new JitDump(`/proc/${target.pid}/root${fs.realpathSync(dump)}`).refresh();
    assert.equal(read.codes.length, 101);
    assert.equal(read.malformed, null);
    assert.equal(read.limited, null);
    assert.deepEqual(read.frames(0x10000000 + 100 * 0x1000000 + 0x10), ['hostileJit /hostile/jit.js:1:1']);
    assert.ok(read.codes.every((c) => c.debug === read.codes[0].debug), 'one table of positions for the code and its 100 moves');
    assert.equal(reasons(run, /malformed|read up to/).length, 0, run.stderr);
  });

  describe('a tracer with CAP_BPF and CAP_PERFMON only, not root: a process whose files it may not read', () => {
    const UID = 1000;
    const OTHER = 65534;
    const caps = () => ['setpriv', `--reuid=${UID}`, `--regid=${UID}`, '--clear-groups', '--inh-caps=+bpf,+perfmon', '--ambient-caps=+bpf,+perfmon'];

    /** Asserts the tracer held, and said once why the process's frames are not named. */
    function heldWithReason(run, pid) {
      assertTracerHeld(run);
      const said = reasons(run, new RegExp(`pid ${pid}: its user-space frames are not named: .*(Permission denied|EACCES|EPERM|not permitted)`));
      assert.equal(said.length, 1, `the reason, once:\n${run.stderr}`);
      assert.equal(said[0], escapeText(said[0]));
    }
    test("another user's node: held, exit 0, the reason printed once", async (t) => {
      const target = await hostileNode(t, { uid: OTHER });
      // (no CAP_KILL: -p's check that the process exists takes EPERM for yes)
      const run = await runTracer(target.pid, { prefix: caps() });
      heldWithReason(run, target.pid);
    });

    test('a non-dumpable node of its own user (LD_PRELOAD: prctl(PR_SET_DUMPABLE, 0)): held, exit 0, the reason printed once', async (t) => {
      const dir = tempDir(t);
      fs.chmodSync(dir, 0o755);
      const so = path.join(dir, 'undumpable.so');
      const c = path.join(dir, 'undumpable.c');
      fs.writeFileSync(c, '#include <sys/prctl.h>\n__attribute__((constructor)) static void undumpable(void) { prctl(PR_SET_DUMPABLE, 0); }\n');
      const cc = spawnSync('gcc', ['-shared', '-fPIC', '-o', so, c], { encoding: 'utf8' });
      assert.equal(cc.status, 0, cc.stderr);
      const target = await hostileNode(t, { uid: UID, env: { ...process.env, LD_PRELOAD: so } });
      assert.equal(fs.statSync(`/proc/${target.pid}/maps`).uid, 0, 'a non-dumpable process: its /proc files are root\'s');
      const run = await runTracer(target.pid, { prefix: caps() });
      heldWithReason(run, target.pid);
    });
  });
});

/**
 * A node (`process.execPath`) that runs `script` (which fills `fns`) with
 * --allow-natives-syntax, stopped after test `t`: `{ pid, sfis }`, the
 * SharedFunctionInfo of each of the first `count` of `fns` (V8's
 * %DebugPrint, to a file: it prints through C's stdout, which a pipe that
 * node made non-blocking loses).
 */
async function nodeWithSfis(t, script, count) {
  const out = path.join(tempDir(t), 'printed');
  const fd = fs.openSync(out, 'w');
  // (64 more prints push the first ones out of stdio's buffer)
  const printed = `${script}\nfor (const f of [...fns, ...Array(64).fill(fns[0])]) %DebugPrint(f);\nsetInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--allow-natives-syntax', '-e', printed], { stdio: ['ignore', fd, 'inherit'] });
  fs.closeSync(fd);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  t.after(() => (child.kill('SIGKILL'), exited));
  const sfis = () => [...fs.readFileSync(out, 'utf8').matchAll(/ - shared_info: 0x([0-9a-f]+) /g)].map((m) => parseInt(m[1], 16));
  for (let i = 0; i < 300 && sfis().length < count; i++) await sleep(100);
  assert.ok(sfis().length >= count, `${count} functions printed`);
  return { pid: child.pid, sfis: sfis().slice(0, count) };
}

describe("the naming's bounds (lib/frames/v8_names.js, V8Frames.namesOf)", { skip }, () => {
  test('many scripts sharing one big source: its line ends computed once, the caches within their byte budget', async (t) => {
    const LINES = 250_000;
    const N = 150;
    const { pid, sfis } = await nodeWithSfis(
      t,
      `const vm = require('node:vm');
const src = 'function sharedSource() { return 1; }\\n' + '//\\n'.repeat(${LINES}) + 'sharedSource';
const fns = [];
for (let i = 0; i < ${N}; i++) fns.push(vm.runInThisContext(src, { filename: '/hostile/shared-' + i + '.js' }));
fns.forEach((f) => f());`,
      N,
    );
    assert.equal(sfis.length, N);
    const names = new V8Names(pid, binaryOf(pid));
    t.after(() => names.close());
    globalThis.gc?.();
    const before = process.memoryUsage();
    for (const [i, sfi] of sfis.entries()) {
      const fn = names.function(sfi);
      assert.ok(fn, `sfi ${i}`);
      assert.equal(fn.file, `/hostile/shared-${i}.js`);
      assert.equal(names.named(fn, 'interpreted', fn.start, null).line, 1);
    }
    const after = process.memoryUsage();
    // (one Int32Array of 250 001 line ends, 1 MB: a copy a script was 150 of them, 150 MB)
    const grown = after.arrayBuffers - before.arrayBuffers;
    assert.ok(grown < 16 << 20, `array buffers grew by ${(grown / 2 ** 20).toFixed(1)} MiB naming ${N} scripts of one source`);
    assert.equal(names.lineEnds.size, 1, 'one entry of line ends for the source');
    assert.ok(names.cache.bytes <= names.cache.max, `${names.cache.bytes} bytes cached, the budget ${names.cache.max}`);
    // a budget smaller than what was cached: the least recently used go, the newest stays
    const { NamingCache } = require('../lib/frames/v8_names');
    const small = new NamingCache(4 << 10);
    names.share(small);
    for (const sfi of sfis) names.function(sfi);
    assert.ok(small.bytes <= small.max, `${small.bytes} bytes cached past a budget of ${small.max}`);
    assert.ok(names.sfis.size > 0 && names.sfis.size < N, `${names.sfis.size} functions kept`);
    assert.ok(names.sfis.has(sfis[N - 1]), 'the last one named is kept');
  });

  test('a naming pass past its time budget: the frames past it unnamed with the reason, noted once', async (t) => {
    const { pid, sfis } = await nodeWithSfis(t, 'const fns = Array.from({ length: 50 }, (_, i) => new Function(`return ${i}`));\nfns.forEach((f) => f());', 50);
    assert.equal(sfis.length, 50);
    const v8 = new V8Frames();
    t.after(() => v8.close());
    const frames = sfis.map((sfi) => ({ pc: 0x1000, sfi, code: 0, slot: 0n, innermost: true }));
    const inTime = v8.namesOf(pid, frames);
    assert.ok(inTime.every((list) => list && list[0].kind !== 'unnamed'), 'named within the budget');
    v8.namingBudgetMs = 0;
    const late = v8.namesOf(pid, frames);
    for (const list of late) {
      assert.equal(list.length, 1);
      assert.equal(list[0].kind, 'unnamed');
      assert.match(list[0].reason, /past the naming pass's 0 ms budget/);
    }
    v8.namesOf(pid, frames);
    assert.deepEqual([...(v8.notes?.keys() ?? [])], [`pid ${pid}: JavaScript frames left unnamed: a naming pass took more than its 0 ms budget`]);
  });

  test('inlining positions that cycle, or go deeper than 64: the list ends with a frame that says it was cut', () => {
    // raw positions: script offset << 1, inlining id + 1 from bit 31
    const raw = (offset, id) => (BigInt(offset) << 1n) | (BigInt(id + 1) << 31n);
    const cycle = inliningChain(raw(10, 0), [raw(20, 1), raw(30, 0)]);
    assert.deepEqual(cycle.chain, [
      { id: 0, offset: 10 },
      { id: 1, offset: 20 },
    ]);
    assert.match(cycle.cut, /a cycle in the inlining positions \(inlining id 0 again\)/);
    const deep = inliningChain(raw(1, 0), Array.from({ length: 100 }, (_, i) => raw(i, i + 1)));
    assert.equal(deep.chain.length, 64);
    assert.match(deep.cut, /more than 64 inlined functions/);
    const fine = inliningChain(raw(5, 1), [raw(7, -1), raw(6, 0)]);
    assert.deepEqual(fine, { chain: [{ id: 1, offset: 5 }, { id: 0, offset: 6 }], outer: { offset: 7, inlining: -1 }, cut: null });
  });

  test("a script's line ends that do not rise (written into its memory): refused, the line computed from its source", async (t) => {
    // (a stack trace makes V8 keep the script's line ends: its line_ends table)
    const { pid, sfis } = await nodeWithSfis(t, 'function fourth() { return new Error().stack; }\nconst fns = [fourth];\n\n\nfunction sixth() {}\nfns.push(sixth);\nfourth(); sixth();', 2);
    const names = new V8Names(pid, binaryOf(pid));
    t.after(() => names.close());
    const [, sixth] = sfis;
    const h = names.heap;
    const L = names.layout;
    const fn = names.function(sixth);
    const script = h.field(sixth, L.sfiScript);
    const table = h.field(script, L.scriptLineEnds);
    assert.equal(h.type(table), L.types.fixedArray, 'the script keeps its line ends');
    const n = h.smiField(table, L.arrayLength);
    assert.ok(n > 6, `${n} line ends`);
    const truth = lineOf(h.lineEnds(script), fn.start);
    assert.ok(truth.line > 1);
    assert.equal(names.named(fn, 'interpreted', fn.start, null).line, truth.line);
    // its first line ends now at 0, and every other too: no longer rising
    const mem = fs.openSync(`/proc/${pid}/mem`, 'r+');
    try {
      const zero = Buffer.alloc(8 * n);
      fs.writeSync(mem, zero, 0, zero.length, table - 1 + L.arrayData);
    } finally {
      fs.closeSync(mem);
    }
    // (read afresh: a naming that starts now)
    const fresh = new V8Names(pid, binaryOf(pid));
    t.after(() => fresh.close());
    const named = fresh.named(fresh.function(sixth), 'interpreted', fn.start, null);
    assert.equal(named.line, truth.line, 'the line from the source, not the table');
    assert.equal(named.reason, undefined);
  });
});
