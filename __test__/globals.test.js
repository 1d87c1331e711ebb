'use strict';
// Global variables: const volatile (.rodata) before load, .data and .bss
// before and after load, sizes and signedness from BTF.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { spawnSync } = require('node:child_process');
const { bpf, objectPath, throwsCode } = require('./helpers');

test('globals lists the variables with their section, size and type', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  const byName = Object.fromEntries(obj.globals.map((g) => [g.name, g]));
  const u32 = { kind: 'int', size: 4, signed: false };
  assert.deepStrictEqual(byName.target_pid, { name: 'target_pid', section: '.rodata', size: 4, type: 'u32', layout: u32 });
  assert.deepStrictEqual(byName.small_s16, { name: 'small_s16', section: '.rodata', size: 2, type: 's16', layout: { kind: 'int', size: 2, signed: true } });
  assert.deepStrictEqual(byName.sinks, { name: 'sinks', section: '.data', size: 4, type: 'u32', layout: u32 });
  assert.deepStrictEqual(byName.enter_count, { name: 'enter_count', section: '.bss', size: 8, type: 'u64', layout: { kind: 'int', size: 8, signed: false } });
  assert.strictEqual(byName.flag.type, 'bool');
});

test('values round-trip with the type of each global', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', 4294967295);
  assert.strictEqual(obj.getGlobalVariable('target_pid'), 4294967295);
  obj.setGlobalVariable('small_s16', -32768);
  assert.strictEqual(obj.getGlobalVariable('small_s16'), -32768);
  obj.setGlobalVariable('big_s64', -(2n ** 63n));
  assert.strictEqual(obj.getGlobalVariable('big_s64'), -(2n ** 63n));
  obj.setGlobalVariable('big_s64', 12345);
  assert.strictEqual(obj.getGlobalVariable('big_s64'), 12345n);
  obj.setGlobalVariable('flag', true);
  assert.strictEqual(obj.getGlobalVariable('flag'), true);
  obj.setGlobalVariable('small_u8', Buffer.from([200]));
  assert.strictEqual(obj.getGlobalVariable('small_u8'), 200);
  assert.strictEqual(obj.getGlobalVariable('big_s64', { int64: 'number' }), 12345);
});

test('a value that does not fit is an error, not a truncation', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  throwsCode(assert, () => obj.setGlobalVariable('small_u8', 256), 'ERR_BPF_INVALID_VALUE', /global 'small_u8' \(u8\): 256 does not fit u8 \(range 0\.\.255\)/);
  throwsCode(assert, () => obj.setGlobalVariable('small_u8', -1), 'ERR_BPF_INVALID_VALUE', /does not fit/);
  throwsCode(assert, () => obj.setGlobalVariable('small_s16', 32768), 'ERR_BPF_INVALID_VALUE', /does not fit/);
  throwsCode(assert, () => obj.setGlobalVariable('target_pid', 1.5), 'ERR_BPF_INVALID_VALUE', /not an integer/);
  throwsCode(assert, () => obj.setGlobalVariable('big_s64', 2n ** 63n), 'ERR_BPF_INVALID_VALUE', /does not fit/);
  throwsCode(assert, () => obj.setGlobalVariable('big_s64', 2 ** 60), 'ERR_BPF_INVALID_VALUE', /BigInt/);
  throwsCode(assert, () => obj.setGlobalVariable('target_pid', Buffer.alloc(8)), 'ERR_BPF_INVALID_VALUE', /a Buffer of 8 bytes; the type is 4 bytes/);
  throwsCode(assert, () => obj.setGlobalVariable('flag', 2), 'ERR_BPF_INVALID_VALUE', /expected a boolean, got number 2/);
  throwsCode(assert, () => obj.setGlobalVariable('target_pid', 'five'), 'ERR_BPF_INVALID_VALUE', /expected a number or bigint for u32, got string five/);
  throwsCode(assert, () => obj.setGlobalVariable('no_such_global', 1), 'ERR_BPF_UNKNOWN_NAME', /no global variable 'no_such_global'.*target_pid/);
  assert.strictEqual(obj.getGlobalVariable('small_u8'), 0, 'failed sets wrote nothing');
});

test('.rodata is frozen at load: setting it after load says why', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', 42);
  obj.load();
  assert.strictEqual(obj.getGlobalVariable('target_pid'), 42, 'still readable after load');
  throwsCode(assert, () => obj.setGlobalVariable('target_pid', 1), 'ERR_BPF_READ_ONLY', /const volatile.*before obj\.load\(\)/);
  assert.strictEqual(obj.getGlobalVariable('target_pid'), 42);
});

test('target_pid set to another process filters this process out: exactly 0 events', (t) => {
  const other = spawnSync('true').pid; // a pid that is not ours
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', other);
  obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
  for (let i = 0; i < 10; i++) fs.closeSync(fs.openSync(__filename, 'r'));
  assert.strictEqual(obj.getGlobalVariable('enter_count'), 0n);
});

test('.data is writable after load, through the kernel map: the program sees it', async (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', process.pid);
  obj.setGlobalVariable('sinks', 0);
  obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
  obj.attachTracepoint('syscalls', 'sys_exit_openat', 'handle_exit_openat');
  let records = 0;
  // the opens of this file only (struct openat_event: the filename at byte 24): the process's other
  // threads open files too now and then (Node 24 did, once, in the window)
  const ours = Buffer.from(`${__filename}\0`);
  const rb = obj.getMap('rb_events').openRingBuffer((data) => {
    if (data.subarray(24, 24 + ours.length).equals(ours)) records++;
  });
  // (what the library itself opened since attach: 5.10 opened one file more)
  const before = obj.getGlobalVariable('exit_count');
  fs.closeSync(fs.openSync(__filename, 'r'));
  obj.setGlobalVariable('sinks', 1); // after load: now to the ring buffer
  assert.strictEqual(obj.getGlobalVariable('sinks'), 1);
  fs.closeSync(fs.openSync(__filename, 'r'));
  fs.closeSync(fs.openSync(__filename, 'r'));
  const start = Date.now();
  while (records < 2 && Date.now() - start < 10_000) await new Promise((r) => setTimeout(r, 10));
  rb.close();
  assert.strictEqual(records, 2);
  // and .bss counters are written by the program, read here (this thread's 3 opens, and any of the others')
  assert.ok(obj.getGlobalVariable('exit_count') - before >= 3n);
});
