'use strict';
// Bad input: each mistake is a JS Error with a stable code and a message
// that names the thing and the fix; none crashes the process.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { bpf, objectPath, throwsCode } = require('./helpers');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-err-'));

test('a missing object file: ENOENT', () => {
  throwsCode(assert, () => bpf.loadBpfProgram('/no/such/prog.bpf.o'), 'ENOENT', /\/no\/such\/prog\.bpf\.o does not exist/);
});

test('a file that is not an ELF: ERR_BPF_INVALID_OBJECT, with the command that compiles it', () => {
  const text = path.join(tmp, 'prog.bpf.c');
  fs.writeFileSync(text, 'int x;\n');
  throwsCode(assert, () => bpf.loadBpfProgram(text), 'ERR_BPF_INVALID_OBJECT', /not an ELF file \(a C source\?\).*npx node-libbpf build prog\.bpf\.c/);
  throwsCode(assert, () => bpf.loadBpfProgram(Buffer.from('hello')), 'ERR_BPF_INVALID_OBJECT', /the Buffer is not an ELF file/);
});

test('a truncated ELF: ERR_BPF_INVALID_OBJECT', () => {
  const whole = fs.readFileSync(objectPath('openat'));
  const cut = path.join(tmp, 'cut.bpf.o');
  fs.writeFileSync(cut, whole.subarray(0, 1000));
  throwsCode(assert, () => bpf.loadBpfProgram(cut), 'ERR_BPF_INVALID_OBJECT', /cut\.bpf\.o is not a valid BPF object/);
  throwsCode(assert, () => bpf.loadBpfProgram(whole.subarray(0, 1000)), 'ERR_BPF_INVALID_OBJECT', /<buffer> is not a valid BPF object/);
});

test('an object loads from a Buffer as from a file', (t) => {
  const obj = bpf.loadBpfProgram(fs.readFileSync(objectPath('openat')));
  t.after(() => obj.close());
  obj.load();
  assert.strictEqual(obj.loaded, true);
  assert.deepStrictEqual(Object.keys(obj.programs).sort(), ['handle_enter_openat', 'handle_exit_openat']);
});

test('unknown program, map and global names list the names that exist', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  throwsCode(assert, () => obj.attachTracepoint('syscalls', 'sys_enter_openat', 'nope'), 'ERR_BPF_UNKNOWN_NAME', /no program named 'nope'.*handle_enter_openat/);
  throwsCode(assert, () => obj.getMap('nope'), 'ERR_BPF_UNKNOWN_NAME', /no map named 'nope'.*rb_events/);
  throwsCode(assert, () => obj.getGlobalVariable('nope'), 'ERR_BPF_UNKNOWN_NAME', /no global variable 'nope'.*target_pid/);
});

test('a tracepoint that does not exist: ERR_BPF_UNKNOWN_NAME', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  throwsCode(assert, () => obj.attachTracepoint('syscalls', 'sys_enter_nosuchcall', 'handle_enter_openat'), 'ERR_BPF_UNKNOWN_NAME', /tracepoint syscalls:sys_enter_nosuchcall does not exist/);
  const probes = bpf.loadBpfProgram(objectPath('probes'));
  t.after(() => probes.close());
  throwsCode(assert, () => probes.attachRawTracepoint('no_such_raw_tp', 'handle_raw_sys_enter'), 'ERR_BPF_UNKNOWN_NAME', /raw tracepoint no_such_raw_tp does not exist/);
});

test('a program of the wrong type for the attach call says which SEC() it needs', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  throwsCode(assert, () => obj.attachRawTracepoint('sys_enter', 'handle_enter_openat'), 'ERR_INVALID_ARG_TYPE', /'handle_enter_openat' is a SEC\("tp\/syscalls\/sys_enter_openat"\) program; .* needs a SEC\("raw_tp/);
  throwsCode(assert, () => obj.attachPerfEvent('handle_enter_openat'), 'ERR_INVALID_ARG_TYPE', /needs a SEC\("perf_event"\) program/);
  throwsCode(assert, () => obj.attachUprobe(process.execPath, 'uv__io_poll', 'handle_enter_openat'), 'ERR_INVALID_ARG_TYPE', /SEC\("uprobe"\)/);
});

test('wrong keys and values of a map: ERR_BPF_INVALID_VALUE', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  const kv = obj.getMap('kv');
  throwsCode(assert, () => kv.get(Buffer.alloc(8)), 'ERR_BPF_INVALID_VALUE', /map 'kv' key is a Buffer of 8 bytes; the type is 4 bytes/);
  throwsCode(assert, () => kv.set(1, -1), 'ERR_BPF_INVALID_VALUE', /map 'kv' value: -1 does not fit u64/);
  throwsCode(assert, () => kv.get('key'), 'ERR_BPF_INVALID_VALUE', /map 'kv' key: expected a number or bigint for u32, got string key/);
  throwsCode(assert, () => obj.getMap('rb_events').get(1), 'ERR_INVALID_ARG_TYPE', /openRingBuffer/);
  throwsCode(assert, () => kv.openRingBuffer(() => {}), 'ERR_INVALID_ARG_TYPE', /needs a BPF_MAP_TYPE_RINGBUF map; map 'kv' is a hash map/);
  throwsCode(assert, () => obj.getMap('rb_events').openPerfBuffer(() => {}), 'ERR_INVALID_ARG_TYPE', /BPF_MAP_TYPE_PERF_EVENT_ARRAY/);
  throwsCode(assert, () => obj.getMap('perf_events').openPerfBuffer(() => {}, { pageCount: 3 }), 'ERR_BPF_INVALID_VALUE', /pageCount must be a power of two .*; got 3/);
  // one reader per map: a second one is refused until the first is closed
  const first = obj.getMap('rb_events').openRingBuffer(() => {});
  throwsCode(assert, () => obj.getMap('rb_events').openRingBuffer(() => {}), 'ERR_BPF_BUFFER', /map 'rb_events' has an open buffer already: close it before opening another/);
  first.close();
  obj.getMap('rb_events').openRingBuffer(() => {}).close();
});

test('wrong argument types are errors with a code, not crashes', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  for (const call of [
    // wrong on purpose: the casts let them past the type check
    () => obj.attachTracepoint(/** @type {any} */ (1), /** @type {any} */ (2), /** @type {any} */ (3)),
    () => obj.getMap('kv').set(),
    () => bpf.loadBpfProgram(/** @type {any} */ (42)),
  ]) {
    assert.throws(call, (/** @type {NodeJS.ErrnoException} */ e) => e instanceof Error && typeof e.code === 'string' && e.message.length > 0);
  }
});

test('an undefined program (a misspelled obj.programs.x) lists the programs', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  throwsCode(assert, () => obj.attachTracepoint('syscalls', 'sys_enter_openat', obj.programs.handle_enter_opneat), 'ERR_INVALID_ARG_TYPE', /program argument is undefined.*handle_enter_openat, handle_exit_openat/);
});

test('a program of another object is refused', (t) => {
  const a = bpf.loadBpfProgram(objectPath('openat'));
  const b = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => (a.close(), b.close()));
  throwsCode(assert, () => a.attachTracepoint('syscalls', 'sys_enter_openat', b.programs.handle_enter_openat), 'ERR_INVALID_ARG_TYPE', /belongs to another BPF object/);
});

test('kprobes on a kernel without them: ENOTSUP naming the tracepoint to use', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('probes'));
  t.after(() => obj.close());
  if (bpf.features().kprobes) {
    t.skip('this kernel has kprobes: the kprobe tests in kernels.test.js run instead');
    return;
  }
  throwsCode(assert, () => obj.attachKprobe('__x64_sys_openat', 'handle_kprobe_openat'), 'ENOTSUP', /kprobes are not available on this kernel.*syscalls:sys_enter_openat/);
  // the article's name attaches through libbpf's ksyscall, and the hint names its tracepoint
  throwsCode(assert, () => obj.attachKprobe('sys_enter_openat', 'handle_kprobe_openat'), 'ENOTSUP', /ksyscall openat cannot attach.*attachTracepoint\('syscalls', 'sys_enter_openat'/);
  throwsCode(assert, () => obj.attachKretprobe('sys_exit_openat', 'handle_kretprobe_openat'), 'ENOTSUP', /kretsyscall openat cannot attach.*'syscalls', 'sys_exit_openat'/);
  throwsCode(assert, () => obj.attach('handle_kprobe_openat'), 'ENOTSUP', /kprobes are not available/);
  assert.strictEqual(obj.closed, false, 'the object is still usable');
});

test('fentry/fexit refused at load by this kernel: ENOTSUP saying so plainly', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('fentry'));
  t.after(() => obj.close());
  if (bpf.features().fentry) {
    t.skip('this kernel allows fentry: kernels.test.js tests it');
    return;
  }
  throwsCode(assert, () => obj.load(), 'ENOTSUP', /refuses fentry programs at load time.*tp\/|raw_tp/);
  assert.doesNotMatch(String((() => { try { obj.load(); } catch (e) { return e.message; } })()), /ulimit|RLIMIT_MEMLOCK/);
});

test('use after close: ERR_BPF_CLOSED from every call', () => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  const kv = obj.getMap('kv');
  const prog = obj.programs.handle_enter_openat;
  obj.close();
  obj.close(); // idempotent
  assert.strictEqual(obj.closed, true);
  throwsCode(assert, () => obj.load(), 'ERR_BPF_CLOSED', /is closed: load it again with loadBpfProgram\(\)/);
  throwsCode(assert, () => obj.attachTracepoint('syscalls', 'sys_enter_openat', prog), 'ERR_BPF_CLOSED');
  throwsCode(assert, () => obj.getMap('kv'), 'ERR_BPF_CLOSED');
  throwsCode(assert, () => obj.setGlobalVariable('target_pid', 1), 'ERR_BPF_CLOSED');
  throwsCode(assert, () => kv.get(1), 'ERR_BPF_CLOSED');
  throwsCode(assert, () => obj.getMap('perf_events'), 'ERR_BPF_CLOSED');
});
