'use strict';
// Typed data: records, map keys and values, and globals decoded from the
// object's BTF into plain JavaScript values, and encoded back.
const test = require('node:test');
const assert = require('node:assert');
const os = require('node:os');
const { bpf, objectPath, waitFor, throwsCode } = require('./helpers');

/** What __test__/bpf/types.bpf.c fills `struct kinds` with. */
const EXPECTED = {
  small: 0xdeadbeef,
  big: 0x123456789abcdefn,
  negative: -1234567890123n,
  neg32: -2000000000,
  neg16: -300,
  neg8: -5,
  byte: 250,
  flag: true,
  comm: 'types-test',
  raw: Buffer.from([1, 2, 3, 4]),
  arr: [10, 20, 30],
  nested: { a: 65535, b: -128, tag: 'abc' },
  pair: [
    { a: 1, b: 2, tag: 'p0' },
    { a: 3, b: -4, tag: 'p1x' },
  ],
  u: { as_u32: 0x04030201, as_bytes: Buffer.from([1, 2, 3, 4]) },
  color: 'BLUE',
  unnamed_color: 42, // no enumerator has this value: the number
  bits_lo: 5,
  bits_hi: 17,
  sbits: -3,
  ptr: 0xffff888012345678n,
  x: 111, // fields of an anonymous struct belong to the parent
  y: 222,
  tail_len: 5,
};
const TAIL = [0xa0, 0xa1, 0xa2, 0xa3, 0xa4];

/** Loads types.bpf.o for this process; `trigger()` runs its program once. */
function typesObject(t) {
  const obj = bpf.loadBpfProgram(objectPath('types'));
  t.after(() => obj.close());
  obj.setGlobalVariable('target_pid', process.pid);
  obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_enter_getppid');
  return { obj, trigger: () => process.ppid };
}

function checkKinds(record) {
  const { tail, ...fields } = record;
  assert.deepStrictEqual(fields, EXPECTED);
  // a flexible trailing array is the rest of the record, as a Buffer
  assert.ok(Buffer.isBuffer(tail));
  assert.deepStrictEqual([...tail.subarray(0, record.tail_len)], TAIL);
}

test('a ring buffer record decodes into every kind of field, at its BTF offset', async (t) => {
  const { obj, trigger } = typesObject(t);
  const records = [];
  const errors = [];
  const rb = obj.getMap('rb').openRingBuffer((r) => records.push(r), { type: 'kinds', error: (e) => errors.push(e) });
  trigger();
  trigger();
  await waitFor(() => records.length === 2 && errors.length === 2);
  rb.close();
  assert.strictEqual(records.length, 2);
  records.forEach(checkKinds);
  // the program also sends a record one byte short of the struct: skipped, reported
  assert.strictEqual(errors.length, 2);
  assert.strictEqual(errors[0].code, 'ERR_BPF_SHORT_RECORD');
  assert.match(errors[0].message, /record of 135 bytes is shorter than struct kinds \(136 bytes\)/);
  assert.strictEqual(rb.decodeErrors, 2);
});

test('a perf buffer record decodes the same way (`struct` prefix allowed)', async (t) => {
  const { obj, trigger } = typesObject(t);
  const records = [];
  const pb = obj.getMap('pb').openPerfBuffer((cpu, r) => records.push({ cpu, r }), { type: 'struct kinds' });
  trigger();
  await waitFor(() => records.length === 1);
  pb.close();
  assert.strictEqual(records.length, 1);
  assert.ok(records[0].cpu >= 0 && records[0].cpu < os.cpus().length);
  checkKinds(records[0].r);
});

test('int64: number and enums: number give plain numbers', async (t) => {
  const { obj, trigger } = typesObject(t);
  const records = [];
  const rb = obj.getMap('rb').openRingBuffer((r) => records.push(r), { type: 'kinds', int64: 'number', enums: 'number', error: () => {} });
  trigger();
  await waitFor(() => records.length === 1);
  rb.close();
  const [r] = records;
  assert.strictEqual(r.big, 0x123456789abcdef); // precision lost, as asked
  assert.strictEqual(r.negative, -1234567890123);
  assert.strictEqual(r.ptr, Number(0xffff888012345678n));
  assert.strictEqual(r.color, 7);
});

test('without a type, records stay Buffers (the article form)', async (t) => {
  const { obj, trigger } = typesObject(t);
  const records = [];
  const rb = obj.getMap('rb').openRingBuffer((d) => records.push(d));
  trigger();
  await waitFor(() => records.length === 2);
  rb.close();
  assert.ok(Buffer.isBuffer(records[0]));
  assert.strictEqual(records[0].readUInt32LE(0), 0xdeadbeef);
  assert.strictEqual(records[0].length, 141);
  assert.strictEqual(records[1].length, 135);
});

test('an unknown type name lists the structs that exist', (t) => {
  const { obj } = typesObject(t);
  throwsCode(assert, () => obj.getMap('rb').openRingBuffer(() => {}, { type: 'kindz' }), 'ERR_BPF_UNKNOWN_NAME', /no type named 'kindz'; its structs are: .*counter.*kinds.*name_key/);
  throwsCode(assert, () => obj.getMap('rb').openRingBuffer(() => {}, { type: 'kinds', int64: /** @type {any} */ ('string') }), 'ERR_BPF_INVALID_VALUE', /int64: 'string'/);
});

test('typeLayout and typeNames describe the BTF types', (t) => {
  const { obj } = typesObject(t);
  assert.ok(obj.typeNames().includes('struct kinds'));
  assert.ok(obj.typeNames().includes('enum color'));
  const layout = /** @type {Extract<import('..').TypeLayout, { fields: unknown }>} */ (obj.typeLayout('kinds'));
  assert.strictEqual(layout.size, 136);
  const big = layout.fields.find((f) => f.name === 'big');
  assert.strictEqual(big.offset, 8, 'a u64 after a u32 is at offset 8');
  const bits = layout.fields.find((f) => f.name === 'bits_hi');
  assert.deepStrictEqual([bits.bitSize, bits.bitOffset % 8], [5, 3]);
  assert.deepStrictEqual(/** @type {Extract<import('..').TypeLayout, { values: unknown }>} */ (obj.typeLayout('enum color')).values, [['RED', 0], ['GREEN', 1], ['BLUE', 7]]);
});

test('hash map with a struct key: JS sets, the program reads and writes, JS reads', (t) => {
  const { obj, trigger } = typesObject(t);
  const inHash = obj.getMap('in_hash');
  const outHash = obj.getMap('out_hash');
  const key = { id: 1, name: 'one' };
  inHash.set(key, { count: 40n, delta: 2, color: 'BLUE' });
  assert.strictEqual(inHash.has(key), true);
  assert.strictEqual(inHash.has({ id: 2, name: 'one' }), false);
  trigger();
  assert.deepStrictEqual(outHash.get(key), { count: 42n, delta: 2, color: 'BLUE' });
  assert.deepStrictEqual(outHash.keys(), [{ id: 1, name: 'one' }]);
  assert.deepStrictEqual(outHash.entries(), [[{ id: 1, name: 'one' }, { count: 42n, delta: 2, color: 'BLUE' }]]);
  assert.deepStrictEqual([...outHash], outHash.entries(), 'iterable');
  assert.strictEqual(outHash.get({ id: 9, name: 'x' }), undefined);
  // missing fields are zero
  inHash.set({ id: 3 }, { delta: -1 });
  assert.deepStrictEqual(inHash.get({ id: 3, name: '' }), { count: 0n, delta: -1, color: 'RED' });
  assert.strictEqual(inHash.size, 2);
  assert.strictEqual(inHash.count(), 2);
  assert.strictEqual(inHash.delete(key), true);
  assert.strictEqual(inHash.delete(key), false);
  inHash.clear();
  assert.strictEqual(inHash.size, 0);
});

test('batch operations read, or read and delete, a hash map', (t) => {
  const { obj } = typesObject(t);
  const m = obj.getMap('in_hash');
  for (let i = 0; i < 10; i++) m.set({ id: i, name: `k${i}` }, { count: BigInt(i), delta: i });
  const batch = m.getBatch().sort((a, b) => a[0].id - b[0].id);
  assert.strictEqual(batch.length, 10);
  assert.deepStrictEqual(batch[7], [{ id: 7, name: 'k7' }, { count: 7n, delta: 7, color: 'RED' }]);
  assert.strictEqual(m.size, 10, 'getBatch does not delete');
  const drained = m.lookupAndDeleteBatch();
  assert.strictEqual(drained.length, 10);
  assert.strictEqual(m.size, 0, 'lookupAndDeleteBatch deletes');
  throwsCode(assert, () => obj.getMap('arr').getBatch(), 'ERR_INVALID_ARG_TYPE', /batch operations need a hash/);
});

test('LRU hash: the program updates what JS set', (t) => {
  const { obj, trigger } = typesObject(t);
  const lru = obj.getMap('lru');
  lru.set(7, { count: 100n, delta: 3 });
  trigger();
  trigger();
  assert.deepStrictEqual(lru.get(7), { count: 106n, delta: 3, color: 'RED' });
});

test('array map and a struct global set after load: the program uses both', (t) => {
  const { obj, trigger } = typesObject(t);
  const arr = obj.getMap('arr');
  assert.strictEqual(arr.size, 4, 'array maps always hold maxEntries');
  arr.set(0, { count: 1000n, delta: 0, color: 'GREEN' });
  assert.deepStrictEqual(obj.getGlobalVariable('settings'), { count: 0n, delta: 1, color: 'GREEN' });
  obj.setGlobalVariable('settings', { delta: 5, color: 'BLUE' });
  assert.deepStrictEqual(obj.getGlobalVariable('settings'), { count: 0n, delta: 5, color: 'BLUE' });
  trigger();
  assert.deepStrictEqual(arr.get(1), { count: 1005n, delta: 0, color: 'BLUE' });
  assert.strictEqual(obj.getGlobalVariable('calls'), 1);
  assert.strictEqual(obj.getGlobalVariable('greeting'), 'hi');
  obj.setGlobalVariable('greeting', 'hello');
  assert.strictEqual(obj.getGlobalVariable('greeting'), 'hello');
  arr.clear();
  assert.deepStrictEqual(arr.get(1), { count: 0n, delta: 0, color: 'RED' });
  throwsCode(assert, () => arr.delete(0), 'ERR_INVALID_ARG_TYPE', /array map: its entries cannot be deleted/);
});

test('per-CPU hash and array: one value per possible CPU', (t) => {
  const { obj, trigger } = typesObject(t);
  const cpus = bpf.features().possibleCpus;
  const hash = obj.getMap('percpu_hash');
  for (let i = 0; i < 5; i++) trigger();
  const perCpu = hash.get(7);
  assert.strictEqual(perCpu.length, cpus);
  assert.strictEqual(perCpu.reduce((a, b) => a + b, 0n), 5n, 'the calls, summed over CPUs');
  const arr = obj.getMap('percpu_arr');
  arr.set(1, { count: 10n, delta: 2 }); // one value for every CPU
  trigger();
  const values = arr.get(1);
  assert.strictEqual(values.length, cpus);
  assert.strictEqual(values.reduce((a, v) => a + v.count, 0n), BigInt(10 * cpus + 2), 'one CPU added delta once');
  arr.set(1, Array.from({ length: cpus }, (_, i) => ({ count: BigInt(i) })));
  assert.deepStrictEqual(arr.get(1).map((v) => v.count), Array.from({ length: cpus }, (_, i) => BigInt(i)));
  throwsCode(assert, () => arr.set(1, [{}]), cpus === 1 ? 'ERR_BPF_INVALID_VALUE' : 'ERR_BPF_INVALID_VALUE', /per-CPU/);
});

test('a stack-trace map gives arrays of instruction addresses', (t) => {
  const { obj, trigger } = typesObject(t);
  trigger();
  const id = obj.getGlobalVariable('last_stack_id');
  assert.ok(id >= 0n, `a stack id, got ${id}`);
  const stack = obj.getMap('stacks').get(Number(id));
  assert.ok(Array.isArray(stack) && stack.length > 0);
  assert.ok(stack.every((ip) => typeof ip === 'bigint' && ip > 0n));
});

test('a map without BTF types uses Buffers of its sizes', (t) => {
  const { obj } = typesObject(t);
  const m = obj.getMap('untyped');
  assert.strictEqual(m.keyLayout, null);
  const key = Buffer.from([1, 0, 0, 0]);
  m.set(key, Buffer.alloc(8, 9));
  assert.deepStrictEqual(m.get(key), Buffer.alloc(8, 9));
  throwsCode(assert, () => m.get(1), 'ERR_BPF_INVALID_VALUE', /no BTF key type: give the key as a Buffer of 4 bytes/);
  throwsCode(assert, () => m.get(Buffer.alloc(8)), 'ERR_BPF_INVALID_VALUE', /4-byte keys; got a 8-byte Buffer/);
});

test('values of the wrong shape are errors that name the field', (t) => {
  const { obj } = typesObject(t);
  const m = obj.getMap('in_hash');
  const key = { id: 1, name: 'one' };
  throwsCode(assert, () => m.set(key, { count: 1n, bogus: 2 }), 'ERR_BPF_INVALID_VALUE', /map 'in_hash' value: struct counter has no field 'bogus' \(fields: count, delta, color\)/);
  throwsCode(assert, () => m.set(key, { delta: 2 ** 31 }), 'ERR_BPF_INVALID_VALUE', /value\.delta: 2147483648 does not fit s32/);
  throwsCode(assert, () => m.set(key, { color: 'PURPLE' }), 'ERR_BPF_INVALID_VALUE', /'PURPLE' is not an enumerator of enum color \(RED, GREEN, BLUE\)/);
  throwsCode(assert, () => m.set(key, [1, 2]), 'ERR_BPF_INVALID_VALUE', /expected an object for struct counter, got an array/);
  throwsCode(assert, () => m.set({ id: 1, name: 'too long name' }, {}), 'ERR_BPF_INVALID_VALUE', /key\.name: 13 bytes do not fit char\[8\]/);
  throwsCode(assert, () => m.set(key, Buffer.alloc(3)), 'ERR_BPF_INVALID_VALUE', /Buffer of 3 bytes; the type is 16 bytes/);
  throwsCode(assert, () => obj.setGlobalVariable('settings', { delta: 'x' }), 'ERR_BPF_INVALID_VALUE', /global 'settings' \(struct counter\)\.delta: expected a number/);
  assert.strictEqual(m.size, 0, 'nothing was written');
});
