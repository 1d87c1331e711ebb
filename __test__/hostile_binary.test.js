'use strict';
// A traced node whose binary is hostile, and `stackcount -p PID --profile -d 2`
// run against it as root (__test__/hostile_target.js: it ends within 10 s,
// peak RSS at most 256 MB, no signal, exit 0, no planted file opened):
// the binary swapped for a FIFO after the process started, its path made a
// link to a FIFO outside the target's files, a symbol string table with no
// NUL, 4,000 executable mappings of the binary, forged v8dbg_* values. The
// tracer reads the running inode through /proc/PID/exe (readTargetFile's
// checks), every table it reads bounded, and a forged layout gives
// ERR_V8_LAYOUT, never an abort.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const native = require('../lib/core/native');
const { v8dbgSymbols } = require('../lib/frames/v8');
const { hostileNode, watchOpens, runTracer, assertTracerHeld, tempDir } = require('./hostile_target');

const root = process.getuid?.() === 0;
const skip = root ? false : 'the tracer needs root (BPF programs, another process\'s /proc files): run the tests as root';
if (skip) console.log(`# skipping hostile_binary.test.js's tracer runs: ${skip}`);

/** An LD_PRELOAD library built from fixtures/`name`.c (gcc -shared -fPIC), rebuilt when its source is newer. */
function buildPreload(name) {
  const src = path.join(__dirname, 'fixtures', `${name}.c`);
  const out = path.join(__dirname, '.build', `${name}.so`);
  if (!fs.existsSync(out) || fs.statSync(out).mtimeMs < fs.statSync(src).mtimeMs) {
    fs.mkdirSync(path.dirname(out), { recursive: true });
    execFileSync('gcc', ['-O1', '-shared', '-fPIC', '-o', out, src]);
  }
  return out;
}

/** The sections of ELF file `file` (readelf -S): name -> { index, addr, offset, size }. */
function sections(file) {
  const out = new Map();
  for (const line of execFileSync('readelf', ['-W', '-S', file], { encoding: 'utf8' }).split('\n')) {
    const m = /^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)/.exec(line);
    if (m) out.set(m[2], { index: Number(m[1]), addr: parseInt(m[3], 16), offset: parseInt(m[4], 16), size: parseInt(m[5], 16) });
  }
  return out;
}

/** Where dynamic symbol `name`'s bytes are in ELF file `file`. */
function symbolOffset(file, name) {
  const text = execFileSync('readelf', ['-W', '--dyn-syms', file], { encoding: 'utf8', maxBuffer: 256 << 20 });
  const m = new RegExp(`^\\s*\\d+:\\s+([0-9a-f]+)\\s+\\d+\\s+\\S+\\s+\\S+\\s+\\S+\\s+(\\d+)\\s+${name}$`, 'm').exec(text);
  assert.ok(m, `${name} in ${file}'s .dynsym`);
  const section = [...sections(file).values()].find((s) => s.index === Number(m[2]));
  assert.ok(section, `section ${m[2]} of ${file}`);
  return section.offset + parseInt(m[1], 16) - section.addr;
}

/** A copy of this node at `dir`/node, changed by `patch(bytes)` (a Buffer of the whole file) before it is written. */
function patchedNode(dir, patch) {
  const bytes = fs.readFileSync(process.execPath);
  patch(bytes);
  const node = path.join(dir, 'node');
  fs.writeFileSync(node, bytes, { mode: 0o755 });
  return node;
}

/** The opens `watch` (watchOpens') saw, once it has stopped. */
async function openedBy(watch) {
  await watch.stop();
  return watch.opened;
}

test('readTargetFile and statTargetFile: a FIFO, a link, a directory refused without blocking; a range read; in a root; the magic link followed only when asked', (t) => {
  const dir = tempDir(t, 'target-file-');
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const file = path.join(dir, 'file');
  fs.writeFileSync(file, '0123456789');
  const link = path.join(dir, 'link');
  fs.symlinkSync(file, link);
  const code = (fn) => {
    try {
      fn();
    } catch (err) {
      return /** @type {any} */ (err).code;
    }
    return 'no error';
  };
  assert.equal(code(() => native.readTargetFile(fifo)), 'ERR_BPF_INVALID_OBJECT');
  assert.equal(code(() => native.statTargetFile(fifo)), 'ERR_BPF_INVALID_OBJECT');
  assert.equal(code(() => native.readTargetFile(link)), 'ERR_BPF_INVALID_OBJECT');
  assert.equal(code(() => native.readTargetFile(dir)), 'ERR_BPF_INVALID_OBJECT');
  assert.equal(code(() => native.readTargetFile(path.join(dir, 'none'))), 'ENOENT');
  assert.throws(() => native.readTargetFile(link), /is a symbolic link/);
  assert.equal(native.readTargetFile(file).toString(), '0123456789');
  assert.equal(native.readTargetFile(file, { offset: 2, length: 3 }).toString(), '234');
  assert.equal(native.readTargetFile(file, { offset: 20 }).length, 0);
  assert.equal(code(() => native.readTargetFile(file, { length: 2 ** 40 })), 'ERR_BPF_INVALID_VALUE');
  assert.equal(code(() => native.readTargetFile(file, { offset: -1 })), 'ERR_BPF_INVALID_VALUE');
  // a path in a process's root, resolved there (this process's root is /)
  assert.equal(native.readTargetFile(file, { pid: process.pid }).toString(), '0123456789');
  assert.equal(code(() => native.readTargetFile(link, { pid: process.pid })), 'ERR_BPF_INVALID_OBJECT');
  // /proc/PID/exe: the running binary, with follow only; follow for any other path refused
  assert.equal(code(() => native.readTargetFile(`/proc/${process.pid}/exe`)), 'ERR_BPF_INVALID_OBJECT');
  assert.deepEqual([...native.readTargetFile(`/proc/${process.pid}/exe`, { follow: true, length: 4 })], [0x7f, 0x45, 0x4c, 0x46]);
  assert.equal(code(() => native.readTargetFile(link, { follow: true })), 'ERR_BPF_INVALID_VALUE');
  const st = native.statTargetFile(`/proc/${process.pid}/exe`, { follow: true });
  const real = fs.statSync(process.execPath);
  assert.deepEqual([st.size, st.dev, st.ino], [real.size, real.dev, real.ino]);
});

test('the node binary replaced by a FIFO after the process started: held, its hot function named from the running inode', { skip }, async (t) => {
  const dir = tempDir(t);
  const exe = path.join(dir, 'node');
  const target = await hostileNode(t, { exe });
  fs.rmSync(exe);
  execFileSync('mkfifo', [exe]);
  assert.match(fs.readlinkSync(`/proc/${target.pid}/exe`), / \(deleted\)$/);
  const watch = await watchOpens(t, [exe]);
  const run = await runTracer(target.pid);
  assertTracerHeld(run, { opened: await openedBy(watch) });
  assert.match(run.stdout, /hostileHotLoop/, `the hot function named${run.stdout.slice(0, 2000)}`);
});

test("the binary's path replaced by a link to a FIFO outside the target's files: held, neither opened", { skip }, async (t) => {
  const dir = tempDir(t);
  const exe = path.join(dir, 'node');
  const target = await hostileNode(t, { exe });
  const mine = tempDir(t, 'hostile-root-');
  fs.chmodSync(mine, 0o700);
  const fifo = path.join(mine, 'fifo');
  execFileSync('mkfifo', [fifo]);
  fs.rmSync(exe);
  fs.symlinkSync(fifo, exe);
  const watch = await watchOpens(t, [fifo, exe]);
  const run = await runTracer(target.pid);
  assertTracerHeld(run, { opened: await openedBy(watch) });
  assert.match(run.stdout, /hostileHotLoop/);
});

test('a symbol string table with no NUL: held; the v8dbg_* values come from .dynsym, the interpreter is not known', { skip }, async (t) => {
  const dir = tempDir(t);
  const strtab = sections(process.execPath).get('.strtab');
  assert.ok(strtab && strtab.size > 1 << 20, 'node has a .strtab');
  const node = patchedNode(dir, (bytes) => bytes.subarray(strtab.offset, strtab.offset + strtab.size).forEach((b, i, a) => b === 0 && (a[i] = 0x78)));
  // what the reader makes of it: .symtab's names are none (no NUL within 4 KiB); .dynsym's are whole
  const read = v8dbgSymbols(node);
  const mine = v8dbgSymbols(process.execPath);
  assert.equal(read.values.size, mine.values.size);
  assert.deepEqual(read.version, mine.version);
  assert.equal(read.interpreter.length, 0);
  assert.ok(mine.interpreter.length > 100, `${mine.interpreter.length} interpreter symbols in node's own .symtab`);
  const target = await hostileNode(t, { node });
  const run = await runTracer(target.pid);
  assertTracerHeld(run);
  // the hot loop is optimized code: named from its JSFunction, whichever the interpreter's ranges
  assert.match(run.stdout, /hostileHotLoop/);
});

test('4,000 executable mappings of the binary: held, the hot function named', { skip }, async (t) => {
  const preload = buildPreload('map_exe_text');
  const target = await hostileNode(t, { env: { ...process.env, LD_PRELOAD: preload } });
  const exe = fs.realpathSync(process.execPath);
  const mappings = (pid) =>
    fs
      .readFileSync(`/proc/${pid}/maps`, 'utf8')
      .split('\n')
      .filter((l) => l.endsWith(` ${exe}`) && l.split(' ')[1].includes('x')).length;
  // (this process runs the same binary: its own executable mappings of it, and the library's 4,000)
  assert.equal(mappings(target.pid), mappings(process.pid) + 4000);
  const run = await runTracer(target.pid);
  assertTracerHeld(run);
  assert.match(run.stdout, /hostileHotLoop/);
});

test('forged v8dbg_* values: v8dbg_HeapObjectTag -1 and a huge Script::name offset: held, JS frames not named with ERR_V8_LAYOUT', { skip }, async (t) => {
  const tagAt = symbolOffset(process.execPath, 'v8dbg_HeapObjectTag');
  const nameAt = symbolOffset(process.execPath, 'v8dbg_class_Script__name__Object');
  // the walk's layout: no walk, and stackcount says why
  const tag = patchedNode(tempDir(t), (bytes) => bytes.writeInt32LE(-1, tagAt));
  assert.equal(v8dbgSymbols(tag).values.get('v8dbg_HeapObjectTag'), -1);
  const run = await runTracer((await hostileNode(t, { node: tag })).pid);
  assertTracerHeld(run);
  assert.match(run.stderr, /v8dbg_HeapObjectTag is -1, outside 0\.\.15/);
  // the naming's layout: the walk runs, its JS frames are unnamed with the reason; native frames are named
  const offset = patchedNode(tempDir(t), (bytes) => bytes.writeInt32LE(0x40000000, nameAt));
  const run2 = await runTracer((await hostileNode(t, { node: offset })).pid);
  assertTracerHeld(run2);
  assert.match(run2.stdout, /\[JS sfi=0x[0-9a-f]+: ERR_V8_LAYOUT\]/);
  assert.match(run2.stdout, /uv_run|node::/, 'native frames named');
});
