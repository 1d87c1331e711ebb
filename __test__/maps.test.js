'use strict';
// Maps with BTF types: keys and values as JavaScript values (the full
// matrix of map types is in types.test.js).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const { bpf, objectPath } = require('./helpers');

test('a hash map of u32 -> u64: numbers in, bigints out', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  const kv = obj.getMap('kv');
  assert.deepStrictEqual([kv.name, kv.type, kv.keySize, kv.valueSize, kv.maxEntries], ['kv', 'hash', 4, 8, 16]);
  assert.deepStrictEqual(kv.keyLayout, { kind: 'int', size: 4, signed: false });
  assert.strictEqual(kv.get(1), undefined, 'missing key: undefined, as a JS Map');
  for (let i = 1; i <= 3; i++) kv.set(i, i * 100);
  assert.strictEqual(kv.get(2), 200n);
  assert.deepStrictEqual(kv.keys().sort(), [1, 2, 3]);
  assert.deepStrictEqual(kv.values().sort(), [100n, 200n, 300n]);
  assert.deepStrictEqual(kv.entries().sort((a, b) => a[0] - b[0]), [[1, 100n], [2, 200n], [3, 300n]]);
  assert.deepStrictEqual(new Map(kv), new Map([[1, 100n], [2, 200n], [3, 300n]]), 'iterable into a JS Map');
  assert.strictEqual(kv.delete(2), true);
  assert.strictEqual(kv.delete(2), false, 'already gone');
  assert.strictEqual(kv.has(2), false);
  assert.strictEqual(kv.size, 2);
  // decode options per map
  const asNumbers = obj.getMap('kv', { int64: 'number' });
  assert.strictEqual(asNumbers.get(3), 300);
  // undecoded: the bytes the kernel holds
  assert.deepStrictEqual(kv.getBytes(3), Buffer.from([44, 1, 0, 0, 0, 0, 0, 0]));
  assert.strictEqual(kv.getBytes(2), undefined);
  const [keys, values] = kv.getBatchBytes();
  assert.deepStrictEqual([keys.length, values.length], [8, 16]);
  const pairs = [0, 1].map((i) => /** @type {[number, bigint]} */ ([keys.readUInt32LE(i * 4), values.readBigUInt64LE(i * 8)])).sort((a, b) => a[0] - b[0]);
  assert.deepStrictEqual(pairs, [[1, 100n], [3, 300n]]);
});

test('a per-CPU array of structs, written by the program, one value per CPU', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', process.pid);
  obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
  obj.attachTracepoint('syscalls', 'sys_exit_openat', 'handle_exit_openat');
  const path = `${os.tmpdir()}/node-libbpf-percpu-${process.pid}`;
  fs.writeFileSync(path, '');
  fs.closeSync(fs.openSync(path, 'r'));
  const scratch = obj.getMap('scratch');
  assert.strictEqual(scratch.type, 'percpu_array');
  const values = scratch.get(0);
  assert.strictEqual(values.length, bpf.features().possibleCpus);
  const ours = values.find((v) => v.filename === path);
  assert.ok(ours, 'the program wrote our event on one CPU');
  assert.strictEqual(ours.pid, process.pid);
  assert.ok(ours.ret >= 0 && ours.duration_ns > 0n);
});

test("per-CPU maps hold libbpf's count of possible CPUs: /sys/devices/system/cpu/possible's highest CPU + 1", () => {
  const native = require('../lib/core/native');
  const { possibleCpus } = require('../lib/core/map');
  // "0-3", "0,2-5": the highest CPU number, plus one
  const text = fs.readFileSync('/sys/devices/system/cpu/possible', 'utf8').trim();
  const highest = Math.max(...text.split(',').map((part) => Number(part.split('-').pop())));
  assert.strictEqual(native.possibleCpus(), highest + 1, `possible: ${text}`);
  assert.strictEqual(possibleCpus(), native.possibleCpus());
  assert.strictEqual(bpf.features().possibleCpus, native.possibleCpus());
});
