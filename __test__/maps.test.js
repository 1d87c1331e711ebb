'use strict';
// Raw maps: keys and values as Buffers of the map's sizes.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const { bpf, objectPath } = require('./helpers');

const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b; };
const u64 = (n) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(n)); return b; };

test('a hash map: set, get, keys, entries, delete', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  const kv = obj.getMap('kv');
  assert.deepStrictEqual([kv.name, kv.type, kv.keySize, kv.valueSize, kv.maxEntries], ['kv', 'hash', 4, 8, 16]);
  assert.strictEqual(kv.get(u32(1)), null, 'missing key: null');
  for (let i = 1; i <= 3; i++) kv.set(u32(i), u64(i * 100));
  assert.deepStrictEqual(kv.get(u32(2)), u64(200));
  assert.deepStrictEqual(kv.keys().map((k) => k.readUInt32LE()).sort(), [1, 2, 3]);
  const entries = kv.entries().map(([k, v]) => [k.readUInt32LE(), Number(v.readBigUInt64LE())]).sort((a, b) => a[0] - b[0]);
  assert.deepStrictEqual(entries, [[1, 100], [2, 200], [3, 300]]);
  assert.strictEqual(kv.delete(u32(2)), true);
  assert.strictEqual(kv.delete(u32(2)), false, 'already gone');
  assert.strictEqual(kv.get(u32(2)), null);
  assert.strictEqual(kv.keys().length, 2);
});

test('a per-CPU array holds one value per possible CPU, written by the program', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', process.pid);
  obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
  obj.attachTracepoint('syscalls', 'sys_exit_openat', 'handle_exit_openat');
  const path = `${os.tmpdir()}/node-libbpf-percpu-${process.pid}`;
  fs.writeFileSync(path, '');
  fs.closeSync(fs.openSync(path, 'r'));
  const scratch = obj.getMap('scratch');
  assert.strictEqual(scratch.type, 'percpuarray');
  const values = scratch.get(u32(0));
  assert.ok(Array.isArray(values));
  assert.ok(values.length >= os.cpus().length);
  assert.ok(values.every((v) => v.length === scratch.valueSize));
  assert.ok(values.some((v) => v.toString('utf8', 24, 24 + path.length) === path), 'the program wrote our event');
  // one value for every CPU
  scratch.set(u32(0), Buffer.alloc(scratch.valueSize, 7));
  assert.ok(scratch.get(u32(0)).every((v) => v.every((b) => b === 7)));
});
