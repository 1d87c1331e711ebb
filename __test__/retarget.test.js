'use strict';
// One program, retargeted before load to the kernel function (or BTF
// tracepoint) this kernel has (`prog.setAttachTarget`), and the probes
// that choose it per function as libbpf-tools does (`fentryCanAttach`,
// `kprobeExists`, lib/tools/probes.js `chooseKernelProbe`).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const { bpf, objectPath, throwsCode } = require('./helpers');
const native = require('../lib/core/native');
const { chooseKernelProbe } = require('../lib/tools/probes');

const features = bpf.features();
const MARKER = 12345;

/** retarget.bpf.o, its tp_btf program counting this thread's calls whose second argument is MARKER. */
function open() {
  const obj = bpf.loadBpfProgram(objectPath('retarget'));
  obj.setGlobalVariable('target_tid', process.pid); // the main thread's tid
  obj.setGlobalVariable('marker', MARKER);
  return obj;
}

/** Writes MARKER bytes to /dev/null `n` times (each write returns MARKER); the program's count. */
function writes(obj, n) {
  const fd = fs.openSync('/dev/null', 'w');
  try {
    for (let i = 0; i < n; i++) fs.writeSync(fd, Buffer.alloc(MARKER));
  } finally {
    fs.closeSync(fd);
  }
  return obj.getGlobalVariable('hits', { int64: 'number' });
}

test('setAttachTarget: a tp_btf program of SEC("tp_btf/sys_enter") retargeted to sys_exit sees the return values', (t) => {
  const obj = open();
  t.after(() => obj.close());
  obj.programs.second_arg.setAttachTarget('sys_exit');
  obj.load();
  obj.attach('second_arg');
  assert.strictEqual(writes(obj, 3), 3, "three writes returned 12345: sys_exit's second argument");
});

test('without setAttachTarget the same program stays on sys_enter (the syscall number is never 12345)', (t) => {
  const obj = open();
  t.after(() => obj.close());
  obj.load();
  obj.attach('second_arg');
  assert.strictEqual(writes(obj, 3), 0);
});

test('setAttachTarget errors: unknown target, wrong kind of program, after load', (t) => {
  const obj = open();
  t.after(() => obj.close());
  throwsCode(assert, () => obj.programs.second_arg.setAttachTarget('no_such_function_xyz'), 'ERR_BPF_UNKNOWN_NAME', /program 'second_arg': the kernel's BTF .* has no function or tracepoint 'no_such_function_xyz'/);
  throwsCode(assert, () => obj.programs.raw_any.setAttachTarget('sys_exit'), 'ERR_INVALID_ARG_TYPE', /'raw_any' is a SEC\("raw_tp\/sys_enter"\) program: .*other programs take their target when they attach/);
  obj.load();
  throwsCode(assert, () => obj.programs.second_arg.setAttachTarget('sys_exit'), 'ERR_BPF_READ_ONLY', /loaded already: call programs.second_arg.setAttachTarget\(\) before load/);
  obj.close();
  throwsCode(assert, () => obj.programs.second_arg.setAttachTarget('sys_exit'), 'ERR_BPF_CLOSED', /./);
});

test('an fentry program retargeted to vfs_read: loads and counts where fentry works, else the clear ENOTSUP', (t) => {
  const obj = open();
  t.after(() => obj.close());
  obj.programs.second_arg.autoload = false;
  obj.programs.fentry_any.autoload = true;
  obj.programs.fentry_any.setAttachTarget('vfs_read');
  if (!features.fentry) {
    t.diagnostic('this kernel refuses fentry: the load error is checked');
    throwsCode(assert, () => obj.load(), 'ENOTSUP', /refuses fentry programs at load time.*'fentry_any'/);
    return;
  }
  obj.load();
  const link = obj.attach('fentry_any');
  assert.strictEqual(link.attached, true);
});

test('fentryCanAttach and kprobeExists agree with features() and the kernel BTF', () => {
  // a function every kernel has, one none has
  assert.strictEqual(native.fentryCanAttach('vfs_read'), features.fentry);
  assert.strictEqual(native.fentryCanAttach('no_such_function_xyz'), false);
  assert.strictEqual(native.fentryCanAttach(''), false);
  assert.strictEqual(native.kprobeExists('vfs_read'), features.kprobes);
  assert.strictEqual(native.kprobeExists('no_such_function_xyz'), false);
});

test('chooseKernelProbe: per function, fentry first (unless kprobes), then a kprobe, newest name first', () => {
  const kernel = (fentry, kprobe) => ({ fentryCanAttach: (f) => fentry.includes(f), kprobeExists: (f) => kprobe.includes(f) });
  const both = kernel(['new', 'old'], ['new', 'old']);
  assert.deepStrictEqual(chooseKernelProbe(['new', 'old'], { bpf: both }), { kind: 'fentry', func: 'new' });
  assert.deepStrictEqual(chooseKernelProbe(['new', 'old'], { bpf: both, kprobes: true }), { kind: 'kprobe', func: 'new' });
  // an old kernel: only the old name
  assert.deepStrictEqual(chooseKernelProbe(['new', 'old'], { bpf: kernel(['old'], ['old']) }), { kind: 'fentry', func: 'old' });
  // fentry cannot attach to the new one (e.g. notrace) but a kprobe can: the kprobe, before the old name
  assert.deepStrictEqual(chooseKernelProbe(['new', 'old'], { bpf: kernel(['old'], ['new', 'old']) }), { kind: 'kprobe', func: 'new' });
  assert.strictEqual(chooseKernelProbe(['new', 'old'], { bpf: kernel([], []) }), undefined);
  assert.strictEqual(chooseKernelProbe(['new', 'old'], { bpf: kernel(['new'], []), kprobes: true }), undefined);
  // this kernel, through the addon
  const real = chooseKernelProbe(['vfs_read']);
  const expected = features.fentry ? { kind: 'fentry', func: 'vfs_read' } : features.kprobes ? { kind: 'kprobe', func: 'vfs_read' } : undefined;
  assert.deepStrictEqual(real, expected);
});
