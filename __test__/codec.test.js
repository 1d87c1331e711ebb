'use strict';
// The typed codec (lib/core/codec.js) on its own: layouts as data in, values out.
// No kernel and no root needed.
const test = require('node:test');
const assert = require('node:assert');
const { spawnSync } = require('node:child_process');
const codec = require('../lib/core/codec');

const u32 = { kind: 'int', size: 4, signed: false };
const s8 = { kind: 'int', size: 1, signed: true };
const u64 = { kind: 'int', size: 8, signed: false };
const s64 = { kind: 'int', size: 8, signed: true };
const color = { kind: 'enum', name: 'color', size: 4, signed: false, values: [['RED', 0], ['GREEN', 1]] };

// struct event { u32 pid; s8 delta; u8 bits: 3 (signed), 5; u64 ts; s64 neg; char comm[8]; enum color c; u8 tail[]; }
const event = {
  kind: 'struct',
  name: 'event',
  size: 36,
  fields: [
    { name: 'pid', offset: 0, type: u32 },
    { name: 'delta', offset: 4, type: s8 },
    { name: 'low', offset: 5, bitOffset: 40, bitSize: 3, type: { kind: 'int', size: 1, signed: true } },
    { name: 'high', offset: 5, bitOffset: 43, bitSize: 5, type: { kind: 'int', size: 1, signed: false } },
    { name: 'ts', offset: 8, type: u64 },
    { name: 'neg', offset: 16, type: s64 },
    { name: 'comm', offset: 24, type: { kind: 'string', size: 8 } },
    { name: 'c', offset: 32, type: color },
    { name: 'tail', offset: 36, type: { kind: 'flex', size: 0, elem: { kind: 'int', size: 1, signed: false } } },
  ],
};

function sample() {
  const b = Buffer.alloc(40);
  b.writeUInt32LE(4242, 0);
  b.writeInt8(-3, 4);
  b[5] = 0b10110_101; // low = -3 (3 bits, signed), high = 22
  b.writeBigUInt64LE(2n ** 63n + 5n, 8);
  b.writeBigInt64LE(-7n, 16);
  b.write('node\0xyz', 24);
  b.writeUInt32LE(1, 32);
  b.set([9, 8, 7, 6], 36);
  return b;
}

const decodeAll = (decode, b) => decode(b, 0, b.length, new DataView(b.buffer, b.byteOffset, b.length));

test('a struct decodes field by field: ints, signed bitfields, bigints, strings, enums by name, a flexible tail', () => {
  const e = decodeAll(codec.decoder(event), sample());
  assert.deepStrictEqual(e, { pid: 4242, delta: -3, low: -3, high: 22, ts: 2n ** 63n + 5n, neg: -7n, comm: 'node', c: 'GREEN', tail: Buffer.from([9, 8, 7, 6]) });
});

test("{ int64: 'number', enums: 'number' } gives numbers", () => {
  const e = decodeAll(codec.decoder(event, { int64: 'number', enums: 'number' }), sample());
  assert.strictEqual(e.ts, Number(2n ** 63n + 5n));
  assert.strictEqual(e.neg, -7);
  assert.strictEqual(e.c, 1);
});

test('the interpreted decoder (no code generation) gives exactly what the generated one gives', () => {
  for (const options of [{}, { int64: 'number' }, { enums: 'number' }]) {
    const b = sample();
    assert.deepStrictEqual(decodeAll(codec.interpretedDecoder(event, options), b), decodeAll(codec.generatedDecoder(event, options), b));
  }
  const arr = { kind: 'array', size: 400, len: 100, elem: u32 }; // > 64 elements: a loop, not inlined
  const b = Buffer.alloc(400);
  for (let i = 0; i < 100; i++) b.writeUInt32LE(i * 3, i * 4);
  assert.deepStrictEqual(decodeAll(codec.interpretedDecoder(arr), b), decodeAll(codec.generatedDecoder(arr), b));
  assert.strictEqual(decodeAll(codec.decoder(arr), b)[99], 297);
});

test('decoders are made once per layout and options', () => {
  assert.strictEqual(codec.decoder(event), codec.decoder(event, { int64: 'bigint' }));
  assert.notStrictEqual(codec.decoder(event), codec.decoder(event, { int64: 'number' }));
});

test('encode writes what decode reads; missing fields are zero', () => {
  const value = { pid: 7, delta: -1, low: 2, high: 31, ts: 1n << 40n, neg: -2, comm: 'bash', c: 'RED' };
  const noTail = { ...event, fields: event.fields.slice(0, -1) };
  const bytes = codec.encode(noTail, value, 'the value');
  assert.strictEqual(bytes.length, 36);
  assert.deepStrictEqual(codec.decode(noTail, bytes), { ...value, neg: -2n });
  assert.deepStrictEqual(codec.decode(noTail, codec.encode(noTail, {}, 'empty')), { pid: 0, delta: 0, low: 0, high: 0, ts: 0n, neg: 0n, comm: '', c: 'RED' });
});

test('encode refuses what does not fit, naming the field (ERR_BPF_INVALID_VALUE)', () => {
  /** @type {[any, any, RegExp][]} */
  const bad = [
    [u32, -1, /-1 does not fit u32/],
    [u32, 1.5, /not an integer/],
    [u32, 'x', /expected a number or bigint/],
    [s8, 128, /does not fit s8/],
    [u64, 2 ** 60, /beyond Number.MAX_SAFE_INTEGER; pass a BigInt/],
    [{ kind: 'string', size: 4 }, 'toolong', /5|7 bytes do not fit char\[4\]/],
    [color, 'BLUE', /'BLUE' is not an enumerator of enum color \(RED, GREEN\)/],
    [event, { pid: 1, nope: 2 }, /struct event has no field 'nope'/],
    [event, { low: 4 }, /the value\.low: 4 does not fit s3/],
    [u32, Buffer.alloc(3), /a Buffer of 3 bytes; the type is 4 bytes/],
  ];
  for (const [layout, value, re] of bad) {
    assert.throws(() => codec.encode(layout, value, 'the value'), (/** @type {any} */ e) => e.code === 'ERR_BPF_INVALID_VALUE' && re.test(e.message), `${JSON.stringify(layout).slice(0, 40)} ${String(value)}`);
  }
});

test('bad decode options are coded errors', () => {
  assert.throws(() => codec.decoder(event, { int64: 'float' }), { code: 'ERR_BPF_INVALID_VALUE', message: "option int64: 'float' is not one of 'bigint', 'number'" });
  assert.throws(() => codec.decoder(event, { enums: 'both' }), { code: 'ERR_BPF_INVALID_VALUE' });
});

test('where code generation is refused (node --disallow-code-generation-from-strings), decoders still work', () => {
  const script = `
    const codec = require(${JSON.stringify(require.resolve('../lib/core/codec'))});
    const layout = ${JSON.stringify(event)};
    const b = Buffer.alloc(40); b.writeUInt32LE(99, 0); b.write('abc', 24);
    const e = codec.decode(layout, b);
    console.log(JSON.stringify({ allowed: codec.codeGenerationAllowed(), pid: e.pid, comm: e.comm }));`;
  const run = spawnSync(process.execPath, ['--disallow-code-generation-from-strings', '-e', script], { encoding: 'utf8' });
  assert.strictEqual(run.status, 0, run.stderr);
  assert.deepStrictEqual(JSON.parse(run.stdout), { allowed: false, pid: 99, comm: 'abc' });
});

test('a field named __proto__ is a field, and a 32-bit bitfield across 5 bytes is a number', () => {
  const odd = {
    kind: 'struct',
    name: 'odd',
    size: 8,
    fields: [
      { name: '__proto__', offset: 0, type: { kind: 'int', size: 1, signed: false } },
      { name: 'wide', offset: 0, bitOffset: 11, bitSize: 30, type: { kind: 'int', size: 4, signed: false } },
    ],
  };
  const b = codec.encode(odd, JSON.parse('{"__proto__": 7, "wide": 1073741823}'), 'odd');
  for (const decoderOf of [codec.generatedDecoder, codec.interpretedDecoder]) {
    const v = decodeAll(decoderOf(odd), b);
    assert.deepStrictEqual(Object.keys(v), ['__proto__', 'wide']);
    assert.strictEqual(Object.getPrototypeOf(v), Object.prototype);
    assert.strictEqual(v.wide, 1073741823);
    assert.strictEqual(Object.getOwnPropertyDescriptor(v, '__proto__').value, 7);
  }
});
