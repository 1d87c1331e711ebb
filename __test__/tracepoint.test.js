'use strict';
// Tracepoints: syscalls:sys_enter_openat/sys_exit_openat pairs of this
// process, streamed through a ring buffer and through a perf buffer.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { bpf, objectPath, waitFor, twoFiles, openBoth, throwsCode } = require('./helpers');

const K = 25;
const ENOENT = 2;

/** Decodes `struct openat_event` (__test__/bpf/openat.h). */
function decode(data) {
  const nul = data.indexOf(0, 24);
  return {
    pid: data.readUInt32LE(0),
    tid: data.readUInt32LE(4),
    durationNs: data.readBigUInt64LE(8),
    ret: data.readInt32LE(16),
    sink: data.readUInt32LE(20),
    filename: data.toString('utf8', 24, nul < 0 ? 24 + 256 : nul),
  };
}

/** Loads openat.bpf.o for this process, sending to `sinks` (1 ring, 2 perf). */
function openatTracer(sinks) {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  obj.setGlobalVariable('target_pid', process.pid);
  obj.setGlobalVariable('sinks', sinks);
  obj.attachTracepoint('syscalls', 'sys_enter_openat', obj.programs.handle_enter_openat);
  obj.attachTracepoint('syscalls', 'sys_exit_openat', 'handle_exit_openat');
  return obj;
}

function checkEvents(events, files) {
  const opened = events.filter((e) => e.filename === files.present);
  const failed = events.filter((e) => e.filename === files.missing);
  assert.strictEqual(opened.length, K, 'one event per successful openat');
  assert.strictEqual(failed.length, K, 'one event per failed openat');
  for (const e of opened) {
    assert.ok(e.ret >= 0, `fd returned, got ${e.ret}`);
    assert.ok(e.durationNs > 0n, 'duration > 0');
    assert.strictEqual(e.pid, process.pid);
  }
  for (const e of failed) {
    assert.strictEqual(e.ret, -ENOENT);
    assert.ok(e.durationNs > 0n);
  }
}

test('openat pairs of this process arrive through a ring buffer, exactly K per file', async (t) => {
  const files = twoFiles();
  const obj = openatTracer(1);
  t.after(() => obj.close());
  const events = [];
  const rb = obj.getMap('rb_events').openRingBuffer((data) => events.push(decode(data)));
  openBoth(files, K);
  await waitFor(() => events.filter((e) => e.filename.startsWith(files.dir)).length >= 2 * K);
  rb.close();
  checkEvents(events, files);
  assert.ok(events.every((e) => e.sink === 1));
  assert.strictEqual(rb.lost, 0);
  assert.strictEqual(rb.received, events.length);
});

test('openat pairs of this process arrive through a perf buffer, with the CPU', async (t) => {
  const files = twoFiles();
  const obj = openatTracer(2);
  t.after(() => obj.close());
  const events = [];
  const cpus = new Set();
  const lost = [];
  const pb = obj.getMap('perf_events').openPerfBuffer(
    (cpu, data) => {
      cpus.add(cpu);
      events.push(decode(data));
    },
    { lost: (cpu, n) => lost.push([cpu, n]) },
  );
  openBoth(files, K);
  await waitFor(() => events.filter((e) => e.filename.startsWith(files.dir)).length >= 2 * K);
  pb.close();
  checkEvents(events, files);
  assert.ok(events.every((e) => e.sink === 2));
  assert.deepStrictEqual(lost, []);
  assert.ok([...cpus].every((c) => c >= 0 && c < os.cpus().length));
});

test('the .bss counters match the openat calls this process made', async (t) => {
  const files = twoFiles();
  const obj = openatTracer(0);
  t.after(() => obj.close());
  const enters = obj.getGlobalVariable('enter_count');
  const exits = obj.getGlobalVariable('exit_count');
  assert.strictEqual(typeof enters, 'bigint');
  openBoth(files, K);
  // the programs ran synchronously inside this thread's own syscalls
  assert.strictEqual(obj.getGlobalVariable('enter_count') - enters, BigInt(2 * K));
  assert.strictEqual(obj.getGlobalVariable('exit_count') - exits, BigInt(2 * K));
});

test('a detached link stops counting; detachAll() detaches every link', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', process.pid);
  const link = obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
  assert.strictEqual(link.attached, true);
  assert.match(link.target, /syscalls:sys_enter_openat/);
  const count = () => obj.getGlobalVariable('enter_count');
  const start = count();
  fs.closeSync(fs.openSync(__filename, 'r'));
  assert.strictEqual(count() - start, 1n);
  link.detach();
  link.detach(); // idempotent
  assert.strictEqual(link.attached, false);
  const mid = count();
  fs.closeSync(fs.openSync(__filename, 'r'));
  assert.strictEqual(count(), mid);

  const again = obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
  const exit = obj.attachTracepoint('syscalls', 'sys_exit_openat', 'handle_exit_openat');
  obj.detachAll();
  assert.strictEqual(again.attached, false);
  assert.strictEqual(exit.attached, false);
  const end = count();
  fs.closeSync(fs.openSync(__filename, 'r'));
  assert.strictEqual(count(), end);
  assert.strictEqual(obj.getGlobalVariable('exit_count'), 0n);
});

test('attach() attaches by the SEC() name, as libbpf auto-attach', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', process.pid);
  const link = obj.attach(obj.programs.handle_enter_openat);
  assert.strictEqual(obj.programs, obj.programs, 'the programs are made once (a loop over them makes none)');
  assert.match(link.target, /tp\/syscalls\/sys_enter_openat/);
  const start = obj.getGlobalVariable('enter_count');
  fs.closeSync(fs.openSync(__filename, 'r'));
  assert.strictEqual(obj.getGlobalVariable('enter_count') - start, 1n);
});

test('a raw tracepoint counts exactly the getppid calls made', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('probes'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', process.pid);
  obj.attachRawTracepoint('sys_enter', obj.programs.handle_raw_sys_enter);
  const n = 17;
  const before = obj.getGlobalVariable('raw_tp_hits');
  for (let i = 0; i < n; i++) process.ppid; // eslint-disable-line no-unused-expressions
  assert.strictEqual(obj.getGlobalVariable('raw_tp_hits') - before, BigInt(n));
});

test('a tp_btf program attaches with attachRawTracepoint and counts exactly the getppid calls made', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('probes'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', process.pid);
  throwsCode(assert, () => obj.attachRawTracepoint('sys_exit', 'handle_btf_sys_enter'), 'ERR_INVALID_ARG_TYPE', /SEC\("tp_btf\/sys_enter"\) program attaches to the raw tracepoint sys_enter, not sys_exit/);
  const link = obj.attachRawTracepoint('sys_enter', 'handle_btf_sys_enter');
  assert.ok(link.attached);
  const n = 19;
  const before = obj.getGlobalVariable('tp_btf_hits');
  for (let i = 0; i < n; i++) process.ppid; // eslint-disable-line no-unused-expressions
  assert.strictEqual(obj.getGlobalVariable('tp_btf_hits') - before, BigInt(n));
});

// tracefs missing: __test__/monitor_tracefs.test.js (in a mount namespace of its own: an attach throws ERR_BPF_TRACEFS, nothing mounts it)
