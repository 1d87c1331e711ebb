'use strict';
// Symbols: ELF function symbols, addresses to names (kernel and process),
// DWARF member offsets, flame graphs, and attach cookies.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { execFileSync, spawn } = require('node:child_process');
const { bpf, objectPath, buildFixture, throwsCode } = require('./helpers');
const { StackSymbolizer } = require('../lib/frames/stacks');

test('elfSymbols lists function symbols with their file offsets', () => {
  const binary = buildFixture('add_one');
  const addOne = bpf.elfSymbols(binary).find((s) => s.name === 'add_one');
  const nmAddr = BigInt(`0x${execFileSync('nm', [binary], { encoding: 'utf8' }).match(/^([0-9a-f]+) T add_one$/m)[1]}`);
  assert.strictEqual(addOne.address, nmAddr);
  assert.ok(addOne.fileOffset > 0n && addOne.size > 0);
  const mutexes = bpf.elfSymbols('/lib/x86_64-linux-gnu/libc.so.6').filter((s) => s.name.startsWith('pthread_mutex_'));
  assert.ok(mutexes.some((s) => s.name === 'pthread_mutex_lock'), 'dynamic symbols too');
  assert.strictEqual(new Set(mutexes.map((s) => s.name)).size, mutexes.length, 'each name once');
  throwsCode(assert, () => bpf.elfSymbols('/no/such/lib.so'), 'ENOENT', /does not exist/);
  throwsCode(assert, () => bpf.elfSymbols(__filename), 'ERR_BPF_INVALID_OBJECT', /not an ELF file/);
});

test('a Symbolizer names kernel addresses and this process\'s addresses', async () => {
  const sym = new bpf.Symbolizer();
  const line = fs.readFileSync('/proc/kallsyms', 'utf8').split('\n').find((l) => / [tT] do_sys_openat2$/.test(l));
  const [frame] = sym.kernel([BigInt(`0x${line.split(' ')[0]}`) + 4n]);
  assert.deepStrictEqual([frame.name, frame.offset], ['do_sys_openat2', 4]);
  // read ahead on the thread pool (twice at once: read once; then at once, read already), the same names; below every symbol, none
  const ahead = new bpf.Symbolizer();
  assert.deepStrictEqual(await Promise.all([ahead.preloadKernel(), ahead.preloadKernel()]), [undefined, undefined]);
  await ahead.preloadKernel();
  const [again, below] = ahead.kernel([BigInt(`0x${line.split(' ')[0]}`) + 4n, 4096n]);
  assert.deepStrictEqual([again.name, again.offset, below.name], ['do_sys_openat2', 4, undefined]);
  const poll = bpf.elfSymbols(process.execPath).find((s) => s.name === 'uv__io_poll');
  const [own, unknown] = sym.process(process.pid, [poll.address + 10n, 8n]);
  assert.deepStrictEqual([own.name, own.offset, own.module], ['uv__io_poll', 10, process.execPath]);
  // this process's own code is read from its file, not from a sealed copy (node's ~100 MB: ~50 ms and as much shared memory)
  assert.doesNotMatch(fs.readFileSync('/proc/self/maps', 'utf8'), /memfd:node-libbpf-elf/, 'no copy of our own binary');
  assert.strictEqual(unknown.name, undefined, 'no symbol there');
  throwsCode(assert, () => sym.process(2 ** 30, [1n]), 'ENOENT', /process 1073741824 does not exist/);
});

test('a perf map read to an end offset: JIT frames named by the lines written before it (Symbolizer, StackSymbolizer.endWindow)', async (t) => {
  // a live process of ours, whose perf map we write: what a window saw, then code compiled after it at the same address
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  await new Promise((resolve) => child.once('spawn', resolve));
  const file = `/tmp/perf-${child.pid}.map`;
  fs.rmSync(file, { force: true }); // (another process of that pid left it)
  t.after(() => fs.rmSync(file, { force: true }));
  fs.writeFileSync(file, '1000 100 JS:*hotLoop a.js:1:1\n');
  const sym = new bpf.Symbolizer();
  const stackSym = new StackSymbolizer(bpf);
  const end = sym.perfMapSize(child.pid);
  assert.equal(end, 30);
  stackSym.endWindow([child.pid]);
  fs.appendFileSync(file, '1080 100 JS:^toBigInt b.js:2:2\n');
  const names = (endOffset) => sym.process(child.pid, [0x1090n, 0x1100n], endOffset).map((f) => f.name ?? null);
  assert.deepStrictEqual(names(end), ['JS:*hotLoop a.js:1:1', null]);
  assert.deepStrictEqual(names(undefined), ['JS:^toBigInt b.js:2:2', 'JS:^toBigInt b.js:2:2'], 'without an end: the whole map');
  assert.deepStrictEqual(names(end), ['JS:*hotLoop a.js:1:1', null], 'the map read to its end again, not the cached whole one');
  assert.deepStrictEqual(names(0), [null, null]);
  assert.deepStrictEqual(stackSym.user(child.pid, [0x1090n, 0x1100n]), ['hotLoop a.js:1:1', '[unknown]']);
  throwsCode(assert, () => sym.process(child.pid, [0x1090n], -1), 'ERR_BPF_INVALID_VALUE', /perfMapEnd: -1 is no byte offset/);
});

test('dwarfMemberOffset reads a struct member offset from DWARF', () => {
  const binary = buildFixture('add_one');
  assert.strictEqual(bpf.dwarfMemberOffset(binary, 'point', 'y'), 8);
  throwsCode(assert, () => bpf.dwarfMemberOffset(binary, 'point', 'z'), 'ERR_BPF_UNKNOWN_NAME', /struct point .* has no member 'z'/);
  throwsCode(assert, () => bpf.dwarfMemberOffset(binary, 'nope', 'y'), 'ERR_BPF_UNKNOWN_NAME', /no DWARF struct 'nope'/);
});

test('dwarfMemberOffset finds C++ members in namespaces, whatever form DWARF gives the offset', () => {
  // DWARF 4 and 5 write the offsets 0, 304 and 70312 as data1, data2 and
  // data4; strict DWARF 2 as DW_OP_plus_uconst expressions, and without
  // namespaces (DW_TAG_namespace is DWARF 3): there, only bare names
  for (const flags of [['-gdwarf-4'], ['-gdwarf-5'], ['-gdwarf-2', '-gstrict-dwarf']]) {
    const binary = buildFixture('member_offsets', flags);
    const namespaces = flags[0] !== '-gdwarf-2';
    // `outer::inner::Wide::mid 304` per line: the offsets the compiler computed (offsetof)
    const printed = execFileSync(binary, { encoding: 'utf8' }).trim().split('\n').map((line) => line.split(' '));
    assert.deepStrictEqual(printed.map(([, offset]) => Number(offset)), [0, 304, 70312, 8], 'one offset of each size');
    for (const [qualified, offset] of printed) {
      const names = qualified.split('::');
      const member = names.pop();
      const struct = namespaces ? names.join('::') : names.at(-1);
      assert.strictEqual(bpf.dwarfMemberOffset(binary, struct, member), Number(offset), `${struct} ${member} ${flags.join(' ')}`);
    }
    // the bare name finds the struct too; a class is a struct
    assert.strictEqual(bpf.dwarfMemberOffset(binary, 'Wide', 'far'), 70312);
    assert.strictEqual(bpf.dwarfMemberOffset(binary, 'Shape', 'area'), 8);
    if (namespaces) {
      assert.strictEqual(bpf.dwarfMemberOffset(binary, 'inner::Wide', 'mid'), 304, 'so does the end of the qualified name');
      throwsCode(assert, () => bpf.dwarfMemberOffset(binary, 'outer::Wide', 'mid'), 'ERR_BPF_UNKNOWN_NAME', /no DWARF struct 'outer::Wide'/);
    }
    throwsCode(assert, () => bpf.dwarfMemberOffset(binary, 'Wide', 'last'), 'ERR_BPF_UNKNOWN_NAME', /struct Wide .* has no member 'last'/);
    throwsCode(assert, () => bpf.dwarfMemberOffset(binary, 'Shape', 'closed'), 'ERR_BPF_INVALID_VALUE', /'closed' of struct Shape .* is a bit-field/);
    throwsCode(assert, () => bpf.dwarfMemberOffset(binary, 'Shape', 'made'), 'ERR_BPF_INVALID_VALUE', /'made' of struct Shape .* is static/);
  }
});

test('flameGraph draws folded stacks as an SVG', () => {
  const svg = bpf.flameGraph('main;work;hotLoop 30\nmain;idle 10\n', { title: 'test graph' });
  assert.match(svg, /^<\?xml/);
  assert.match(svg, /<svg/);
  assert.match(svg, /hotLoop/);
  assert.match(svg, /test graph/);
});

test('attach cookies tell the attachments of one program apart', (t) => {
  if (!bpf.features().attachCookie) return t.skip('this kernel has no attach cookies (bpf_get_attach_cookie, Linux 5.15+)');
  const obj = bpf.loadBpfProgram(objectPath('probes'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', process.pid);
  obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_cookie_getppid', { cookie: 42n });
  for (let i = 0; i < 5; i++) process.ppid; // eslint-disable-line no-unused-expressions
  assert.deepStrictEqual(obj.getMap('cookie_counts').entries(), [[42n, 5n]]);
});
