'use strict';
// Issue 21, "hostile input": a traced process controls its perf map and the
// files it maps, and the tools read them as root. Each test is the attack:
// a malformed perf map, one truncated and rewritten while it is read, a
// mapped file truncated or replaced by a FIFO, a FIFO as perf map, a 32 GiB
// sparse file mapped. Each call must give a result or a coded error within
// a bounded time: the calls run in a child process with a timeout, so a
// hang or a signal (SIGBUS) fails the test instead of stopping the suite.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync, execFileSync } = require('node:child_process');
const { bpf, buildFixture, throwsCode } = require('./helpers');

const CHILD_TIMEOUT_MS = 30_000;

/**
 * Runs `body` (the source of a function of `(bpf, args)`) in a fresh node
 * process and returns what it returns (JSON); fails on a signal or a hang.
 */
function inChild(body, args) {
  const script = `const bpf = require(${JSON.stringify(path.join(__dirname, '..'))});
    const out = (${body})(bpf, JSON.parse(process.argv[1]), (v) => typeof v === 'bigint' ? v.toString() : v);
    process.stdout.write(JSON.stringify(out, (k, v) => typeof v === 'bigint' ? v.toString() : v));`;
  const started = Date.now();
  const r = spawnSync(process.execPath, ['-e', script, JSON.stringify(args, (k, v) => (typeof v === 'bigint' ? v.toString() : v))], {
    encoding: 'utf8',
    timeout: CHILD_TIMEOUT_MS,
  });
  assert.strictEqual(r.signal, null, `the child ended by ${r.signal} after ${Date.now() - started} ms: ${r.stderr}`);
  assert.strictEqual(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** A process mapping `files` (fixtures/map_files.c): its pid, each file's start address, and `stop()`. */
async function mapper(files) {
  const child = spawn(buildFixture('map_files'), files, { stdio: ['pipe', 'pipe', 'inherit'] });
  const starts = await new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (d) => {
      text += d;
      const lines = text.split('\n').filter(Boolean);
      if (lines.length === files.length) resolve(lines.map((l) => BigInt(`0x${l.split(' ')[0]}`)));
    });
    child.on('exit', (code) => reject(new Error(`map_files exited ${code}`)));
    if (files.length === 0) resolve([]);
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return { pid: child.pid, starts, stop: () => (child.stdin.end(), exited) };
}

function tempDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A copy of the add_one fixture (an ELF with symbols) and where add_one is in the file. */
function elfCopy(dir) {
  const copy = path.join(dir, 'victim.bin');
  fs.copyFileSync(buildFixture('add_one'), copy);
  const addOne = bpf.elfSymbols(copy).find((s) => s.name === 'add_one');
  return { copy, fileOffset: addOne.fileOffset };
}

/** A process that maps a copy of add_one (stopped after the test), and its perf map's path (removed after it). */
async function victim(t, dir) {
  const { copy, fileOffset } = elfCopy(dir);
  const target = await mapper([copy]);
  t.after(() => target.stop());
  const perfMap = `/tmp/perf-${target.pid}.map`;
  t.after(() => fs.rmSync(perfMap, { force: true }));
  return { copy, fileOffset, target, perfMap };
}

// what the children run: symbolize, and say which of our mappings are memfd copies
const SYMBOLIZE = `(bpf, { pid, addrs, times = 1 }) => {
  const sym = new bpf.Symbolizer();
  let frames;
  for (let i = 0; i < times; i++) frames = sym.process(pid, addrs.map(BigInt));
  return { frames, maps: require('fs').readFileSync('/proc/self/maps', 'utf8') };
}`;

test('a malformed perf map: its good lines name JIT frames, bad ones are skipped, native frames still named', async (t) => {
  const dir = tempDir(t);
  const { copy, fileOffset, target, perfMap } = await victim(t, dir);
  fs.writeFileSync(
    perfMap,
    [
      '1000 100 JS:*good x.js:1:1',
      'zz00 100 JS:*badaddress',
      '3000 qq JS:*badsize',
      '4000',
      'ffffffffffffff00 1000 JS:*wraps',
      '\u0000\u0001\u00ff garbage',
      `5000 20 ${'L'.repeat(100_000)}`,
      '6000 10 JS:*crlf y.js:2:2\r',
    ].join('\n'),
  );
  const addrs = [0x1010n, 0x3004n, 0x4000n, 0x5001n, 0x6002n, target.starts[0] + fileOffset + 1n];
  const { frames, maps } = inChild(SYMBOLIZE, { pid: target.pid, addrs });
  assert.deepStrictEqual(
    frames.map((f) => [f.name?.slice(0, 20), f.offset]),
    [['JS:*good x.js:1:1', 0x10], [undefined, 0], [undefined, 0], ['L'.repeat(20), 1], ['JS:*crlf y.js:2:2', 2], ['add_one', 1]],
  );
  assert.strictEqual(frames[5].module, copy, 'the module is the target\'s path, not the copy\'s');
  assert.ok(!maps.includes(copy), 'the target\'s file is never mapped by the tracer');
  assert.match(maps, /memfd:node-libbpf-elf/, 'a sealed copy is');
});

test('a perf map truncated and rewritten while it is read, an ELF truncated under its mapping: results, no SIGBUS', async (t) => {
  const dir = tempDir(t);
  const { copy, fileOffset, target, perfMap } = await victim(t, dir);
  // 8 MB of perf map, cut and written again without a pause by a second process
  const full = path.join(dir, 'full.map');
  fs.writeFileSync(full, Array.from({ length: 200_000 }, (_, i) => `${(0x100000 + i * 0x40).toString(16)} 40 JS:*f${i} z.js:${i}:1`).join('\n'));
  fs.copyFileSync(full, perfMap);
  const churn = spawn('sh', ['-c', `while :; do : > ${perfMap}; cat ${full} > ${perfMap}; done`], { stdio: 'ignore' });
  t.after(() => churn.kill('SIGKILL'));
  const addrs = [0x100000n + 0x40n * 12345n + 3n, target.starts[0] + fileOffset];
  const { frames } = inChild(SYMBOLIZE, { pid: target.pid, addrs, times: 40 });
  assert.strictEqual(frames.length, 2);
  assert.ok(frames[0].name === undefined || frames[0].name === 'JS:*f12345 z.js:12345:1', frames[0].name);
  assert.strictEqual(frames[1].name, 'add_one');
  churn.kill('SIGKILL');

  // symbolized once (its copy made), then the target cuts the file it maps
  const cut = inChild(
    `(bpf, { pid, addrs, copy }) => {
      const sym = new bpf.Symbolizer();
      const before = sym.process(pid, addrs.map(BigInt));
      require('fs').truncateSync(copy, 0);
      const after = sym.process(pid, addrs.map(BigInt));
      const fresh = new bpf.Symbolizer().process(pid, addrs.map(BigInt));
      return [before, after, fresh].map((frames) => frames[1].name ?? null);
    }`,
    { pid: target.pid, addrs, copy },
  );
  assert.deepStrictEqual(cut, ['add_one', null, null], 'named while the file was whole; unknown once it is empty');
});

test('a FIFO: as a path, as a perf map, in place of a mapped file; a symlink as perf map', async (t) => {
  const dir = tempDir(t);
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  // open() of a FIFO without O_NONBLOCK waits for a writer: forever
  const direct = inChild(
    `(bpf, { fifo }) => [() => bpf.elfSymbols(fifo), () => bpf.dwarfMemberOffset(fifo, 'a', 'b')].map((f) => {
      try { f(); return 'no error'; } catch (e) { return [e.code, e.message]; }
    })`,
    { fifo },
  );
  for (const [code, message] of direct) {
    assert.strictEqual(code, 'ERR_BPF_INVALID_OBJECT');
    assert.match(message, /fifo is not a regular file/);
  }

  const { copy, fileOffset, target, perfMap } = await victim(t, dir);
  execFileSync('mkfifo', [perfMap]);
  // and the mapped file's path now a FIFO too
  fs.renameSync(fifo, copy);
  const addrs = [0x1000n, target.starts[0] + fileOffset];
  const { frames } = inChild(SYMBOLIZE, { pid: target.pid, addrs });
  assert.deepStrictEqual(frames.map((f) => f.name ?? null), [null, 'add_one'], 'the mapped file itself (map_files), never the FIFO');

  // a perf map that is a link to a file of ours: not followed
  fs.rmSync(perfMap);
  const ours = path.join(dir, 'ours.map');
  fs.writeFileSync(ours, '1000 100 JS:*secret\n');
  fs.symlinkSync(ours, perfMap);
  const linked = inChild(SYMBOLIZE, { pid: target.pid, addrs });
  assert.strictEqual(linked.frames[0].name, undefined, 'a symlinked perf map is not read');
});

test('a 32 GiB sparse file: mapped by the target, as its perf map, as a path', async (t) => {
  const dir = tempDir(t);
  const sparse = path.join(dir, 'sparse.bin');
  fs.closeSync(fs.openSync(sparse, 'w'));
  fs.truncateSync(sparse, 32 * 2 ** 30);
  const target = await mapper([sparse]);
  t.after(() => target.stop());
  const perfMap = `/tmp/perf-${target.pid}.map`;
  t.after(() => fs.rmSync(perfMap, { force: true }));
  fs.closeSync(fs.openSync(perfMap, 'w'));
  fs.truncateSync(perfMap, 32 * 2 ** 30);
  const started = Date.now();
  const { frames } = inChild(SYMBOLIZE, { pid: target.pid, addrs: [target.starts[0] + 0x1000n, 0x1000n] });
  assert.deepStrictEqual(frames.map((f) => f.name ?? null), [null, null]);
  assert.ok(Date.now() - started < 10_000, `bounded: ${Date.now() - started} ms`);
  throwsCode(assert, () => bpf.elfSymbols(sparse), 'ERR_BPF_INVALID_OBJECT', /34359738368 bytes, more than the 1024 MiB read at most/);
  throwsCode(assert, () => bpf.dwarfMemberOffset(sparse, 'a', 'b'), 'ERR_BPF_INVALID_OBJECT', /more than the 1024 MiB/);
});

/** The section headers of a 64-bit little-endian ELF: name, flags, offset. */
function elfSections(buf) {
  const shoff = Number(buf.readBigUInt64LE(0x28));
  /** @type {{ nameOff: number, flags: number, offset: number, name?: string }[]} */
  const headers = Array.from({ length: buf.readUInt16LE(0x3c) }, (_, i) => {
    const at = shoff + i * 64;
    return { nameOff: buf.readUInt32LE(at), flags: Number(buf.readBigUInt64LE(at + 8)), offset: Number(buf.readBigUInt64LE(at + 24)) };
  });
  const strtab = headers[buf.readUInt16LE(0x3e)];
  for (const h of headers) h.name = buf.latin1Slice(strtab.offset + h.nameOff, buf.indexOf(0, strtab.offset + h.nameOff));
  return headers;
}

// (the kernel matrix's VM has no compiler: the host's run covers this one)
const noCxx = spawnSync('g++', ['--version']).error ? 'no g++ to build the nested binaries' : false;
test('DWARF nested 100 deep: an error past 64 levels, not a stack overflow', { skip: noCxx }, (t) => {
  const dir = tempDir(t);
  /** A binary whose struct N0 holds N1, ... down to N<depth - 1>, which holds `int x` after `long pad`. */
  const nested = (depth) => {
    let source = `struct N${depth - 1} { long pad; int x; }`;
    for (let i = depth - 2; i >= 0; i--) source = `struct N${i} { ${source} v; }`;
    const binary = path.join(dir, `nested${depth}`);
    execFileSync('g++', ['-g', '-x', 'c++', '-o', binary, '-'], { input: `${source} root;\nint main() { return sizeof root; }\n` });
    return binary;
  };
  assert.strictEqual(bpf.dwarfMemberOffset(nested(60), 'N59', 'x'), 8, '60 deep is found');
  throwsCode(assert, () => bpf.dwarfMemberOffset(nested(100), 'N99', 'x'), 'ERR_BPF_INVALID_OBJECT', /nested more than 64 deep/);
});

test('a compressed DWARF section that claims 1 TiB: refused before anything is allocated', (t) => {
  const dir = tempDir(t);
  const binary = path.join(dir, 'claims');
  fs.copyFileSync(buildFixture('member_offsets', ['-gz=zlib']), binary);
  assert.strictEqual(bpf.dwarfMemberOffset(binary, 'Wide', 'far'), 70312, 'compressed DWARF reads');
  const buf = fs.readFileSync(binary);
  const info = elfSections(buf).find((s) => s.name === '.debug_info');
  assert.ok(info.flags & 0x800, 'SHF_COMPRESSED');
  // Elf64_Chdr: ch_type, ch_reserved, ch_size
  buf.writeBigUInt64LE(1n << 40n, info.offset + 8);
  fs.writeFileSync(binary, buf);
  throwsCode(assert, () => bpf.dwarfMemberOffset(binary, 'Wide', 'far'), 'ERR_BPF_INVALID_OBJECT', /\.debug_info claims 1099511627776 bytes decompressed, more than the \d+ allowed/);
});

test('a path in a process\'s root (/proc/PID/root/...): resolved there, a link as its last component not followed', (t) => {
  const dir = tempDir(t);
  const { copy } = elfCopy(dir);
  const inRoot = (file) => `/proc/${process.pid}/root${file}`;
  assert.ok(bpf.elfSymbols(inRoot(copy)).some((s) => s.name === 'add_one'));
  const link = path.join(dir, 'link.so');
  fs.symlinkSync(copy, link);
  assert.ok(bpf.elfSymbols(link).some((s) => s.name === 'add_one'), 'a path the user gives: followed');
  throwsCode(assert, () => bpf.elfSymbols(inRoot(link)), 'ERR_BPF_INVALID_OBJECT', /is a symbolic link: not followed/);
  throwsCode(assert, () => bpf.dwarfMemberOffset(inRoot(link), 'point', 'y'), 'ERR_BPF_INVALID_OBJECT', /is a symbolic link/);
  throwsCode(assert, () => bpf.elfSymbols(inRoot(path.join(dir, 'none.so'))), 'ENOENT', /does not exist/);
});

test('a perf map over 64 MiB: its last 64 MiB are read, the lines written last', async (t) => {
  const target = await mapper([]);
  t.after(() => target.stop());
  const perfMap = `/tmp/perf-${target.pid}.map`;
  t.after(() => fs.rmSync(perfMap, { force: true }));
  fs.writeFileSync(perfMap, '1000 10 JS:*first a.js:1:1\n');
  fs.truncateSync(perfMap, 70 * 2 ** 20);
  fs.appendFileSync(perfMap, '\n2000 10 JS:*last b.js:2:2\n');
  const { frames } = inChild(SYMBOLIZE, { pid: target.pid, addrs: [0x1004n, 0x2004n] });
  assert.deepStrictEqual(frames.map((f) => f.name ?? null), [null, 'JS:*last b.js:2:2']);
});
