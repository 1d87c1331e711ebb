'use strict';
// Fuzzing the typed codec (lib/core/codec.js) in-process, without the kernel:
// random layouts, as src/btf.rs makes them, and random bytes.
//
// - the generated decoder and the interpreted one (closures, for processes
//   that refuse code generation) give deep-equal values for the same bytes;
// - decoding never throws for any bytes of at least layout.size, at any
//   offset, and reads nothing outside [o, o + size) (flex: up to `end`);
// - encode(decode(bytes)) gives back the same bytes where the layout is
//   lossless (ints, enums, pointers, byte arrays, arrays and structs of them,
//   no padding, no unions, bitfields that tile their storage);
// - decode(encode(decode(bytes))) gives back the same value for every layout
//   without unions (padding, strings, bools, floats, stacks included);
// - integers and bitfields: their limits encode and decode back, one past
//   them is refused;
// - encode of wrong values throws only Errors with code ERR_BPF_INVALID_VALUE.
//
// The seed is random and printed; FUZZ_SEED=<n> replays a run, FUZZ_CASES
// sets how many layouts (default 5000), FUZZ_ONLY=<case> runs one case (and
// prints its whole layout in failures).
const test = require('node:test');
const assert = require('node:assert');
const crypto = require('node:crypto');
const { isDeepStrictEqual, inspect } = require('node:util');
const codec = require('../lib/core/codec');

const OPTIONS = [
  { int64: 'bigint', enums: 'name' },
  { int64: 'bigint', enums: 'number' },
  { int64: 'number', enums: 'name' },
  { int64: 'number', enums: 'number' },
];

// ---- randomness -----------------------------------------------------------

/** mulberry32: a small seeded PRNG. */
function random(seed) {
  let a = seed >>> 0;
  const r = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(r() * n);
  return { r, int, pick: (xs) => xs[int(xs.length)], chance: (p) => r() < p };
}

/** Random bytes in one of a few styles: uniform, mostly zero, mostly 0xff, sparse. */
function randomBytes(rnd, n) {
  const style = rnd.int(4);
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) {
    if (style === 0) b[i] = rnd.int(256);
    else if (style === 1) b[i] = rnd.chance(0.8) ? 0 : rnd.int(256);
    else if (style === 2) b[i] = rnd.chance(0.8) ? 0xff : rnd.int(256);
    else b[i] = rnd.chance(0.9) ? 0 : rnd.pick([1, 0x7f, 0x80, 0xff]);
  }
  return b;
}

// ---- layouts --------------------------------------------------------------

// C identifiers, some of them names that plain JS objects already have
const NAMES = ['pid', 'tid', 'ts', 'comm', 'flags', 'len', 'data', 'next', 'x', 'y', 'value', 'key', 'count', 'state'];
const TRICKY_NAMES = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', 'length', 'prototype', 'then', '__proto__'];

function intLimits(size, signed) {
  const bits = BigInt(size * 8);
  return signed ? [-(1n << (bits - 1n)), (1n << (bits - 1n)) - 1n] : [0n, (1n << bits) - 1n];
}

/** An enum's values: unique names, values that fit the size (and JSON: within 2^53). */
function enumLayout(rnd) {
  const size = rnd.pick([1, 2, 4, 4, 8]);
  const signed = rnd.chance(0.3);
  let [min, max] = intLimits(size, signed);
  const safe = BigInt(Number.MAX_SAFE_INTEGER);
  if (max > safe) max = safe;
  if (min < -safe) min = -safe;
  const values = [];
  const n = rnd.int(6);
  for (let i = 0; i < n; i++) {
    const v = rnd.pick([0n, 1n, BigInt(i), max, min, min + BigInt(rnd.int(1000))]);
    values.push([`E${i}`, Number(v < min ? min : v > max ? max : v)]);
  }
  return { kind: 'enum', name: `e${rnd.int(100)}`, size, signed, values };
}

/**
 * A random layout. `lossless`: only kinds whose bytes survive a round trip
 * (no bool, float, string, stack, flex, union, padding, partial bitfields);
 * `union`: whether unions (and overlapping fields) may appear.
 */
function genLayout(rnd, { lossless, union, tricky }, depth = 0) {
  const leaf = () => {
    const kinds = lossless ? ['int', 'int', 'enum', 'ptr', 'bytes'] : ['int', 'int', 'enum', 'ptr', 'bytes', 'bool', 'float', 'string', 'string', 'stack'];
    switch (rnd.pick(kinds)) {
      case 'int':
        return { kind: 'int', size: rnd.chance(0.03) ? 16 : rnd.pick([1, 2, 4, 8]), signed: rnd.chance(0.5) };
      case 'enum':
        return enumLayout(rnd);
      case 'ptr':
        return { kind: 'ptr', size: 8 };
      case 'bytes':
        return { kind: 'bytes', size: 1 + rnd.int(20) };
      case 'bool':
        return { kind: 'bool', size: 1 };
      case 'float':
        return { kind: 'float', size: rnd.pick([4, 8]) };
      case 'string':
        return { kind: 'string', size: 1 + rnd.int(24) };
      case 'stack': {
        const len = 1 + rnd.int(6);
        return { kind: 'stack', size: 8 * len, len };
      }
    }
    throw new Error('unreachable');
  };
  if (depth >= 3 || rnd.chance(0.35)) return leaf();
  const what = rnd.pick(union ? ['array', 'struct', 'struct', 'union'] : ['array', 'struct', 'struct']);
  if (what === 'array') {
    // more than 64 elements takes the decoders' loop path
    const len = rnd.chance(0.1) ? 65 + rnd.int(10) : rnd.int(6);
    const elem = genLayout(rnd, { lossless, union, tricky }, depth + 2);
    return { kind: 'array', size: len * elem.size, len, elem };
  }
  return what === 'union' ? unionLayout(rnd, { lossless, union, tricky }, depth) : structLayout(rnd, { lossless, union, tricky }, depth);
}

function fieldNames(rnd, n, tricky) {
  const names = new Set();
  while (names.size < n) {
    if (tricky && rnd.chance(0.15)) names.add(rnd.pick(TRICKY_NAMES));
    else names.add(`${rnd.pick(NAMES)}${names.size}`);
  }
  return [...names];
}

function structLayout(rnd, opts, depth) {
  const { lossless, union } = opts;
  const fields = [];
  let at = 0;
  const n = rnd.int(6);
  for (let i = 0; i < n; i++) {
    if (!lossless && rnd.chance(0.2)) at += 1 + rnd.int(7); // padding
    if (rnd.chance(0.2)) {
      // a storage unit split into bitfields
      const unit = rnd.pick([1, 2, 4, 8]);
      const signed = rnd.chance(0.4);
      let bit = 0;
      while (bit < unit * 8) {
        const left = unit * 8 - bit;
        const size = lossless ? (rnd.chance(0.3) ? left : 1 + rnd.int(left)) : 1 + rnd.int(left);
        if (!lossless && rnd.chance(0.2)) bit += rnd.int(Math.max(1, left - size + 1)); // unused bits
        if (bit + size > unit * 8) break;
        const bitOffset = at * 8 + bit;
        fields.push({ name: null, offset: bitOffset >> 3, bitOffset, bitSize: size, type: { kind: 'int', size: unit, signed } });
        bit += size;
      }
      at += unit;
      continue;
    }
    const type = genLayout(rnd, opts, depth + 1);
    // a member of a flattened anonymous union overlaps the one before it
    const overlap = union && !lossless && fields.length > 0 && rnd.chance(0.1);
    const offset = overlap ? fields[fields.length - 1].offset : at;
    fields.push({ name: null, offset, type });
    at = Math.max(at, offset + type.size);
  }
  if (!lossless && rnd.chance(0.2)) at += 1 + rnd.int(8); // trailing padding
  // a zero-length trailing array: the rest of the record (top level only)
  if (!lossless && depth === 0 && rnd.chance(0.15)) fields.push({ name: null, offset: at, type: { kind: 'flex', size: 0, elem: { kind: 'int', size: 1, signed: false } } });
  fieldNames(rnd, fields.length, opts.tricky).forEach((name, i) => (fields[i].name = name));
  // unnamed bitfields (`int :3`) are named '' (several may be)
  if (!lossless) for (const f of fields) if (f.bitSize && rnd.chance(0.1)) f.name = '';
  return { kind: 'struct', name: `s${depth}`, size: at, fields };
}

function unionLayout(rnd, opts, depth) {
  const n = 1 + rnd.int(4);
  const fields = [];
  for (let i = 0; i < n; i++) {
    if (rnd.chance(0.2)) {
      const unit = rnd.pick([1, 2, 4, 8]);
      fields.push({ name: null, offset: 0, bitOffset: 0, bitSize: 1 + rnd.int(unit * 8), type: { kind: 'int', size: unit, signed: rnd.chance(0.5) } });
    } else {
      fields.push({ name: null, offset: 0, type: genLayout(rnd, opts, depth + 1) });
    }
  }
  fieldNames(rnd, n, opts.tricky).forEach((name, i) => (fields[i].name = name));
  const size = Math.max(...fields.map((f) => f.type.size)) + (rnd.chance(0.2) ? rnd.int(8) : 0);
  return { kind: 'union', name: `u${depth}`, size, fields };
}

/** Calls `visit(t, at)` for every leaf of a layout (every union member too). */
function walk(t, at, visit) {
  if (t.kind === 'array') for (let i = 0; i < t.len; i++) walk(t.elem, at + i * t.elem.size, visit);
  else if (t.kind === 'struct' || t.kind === 'union') {
    for (const f of t.fields) if (!f.bitSize) walk(f.type, at + f.offset, visit);
  } else visit(t, at);
}

// ---- decoding helpers ------------------------------------------------------

/**
 * `bytes` placed at a random offset of a Buffer that itself starts at a
 * random offset of its ArrayBuffer, with random bytes around: [buf, o, end].
 */
function place(rnd, bytes, after = rnd.int(16)) {
  const before = rnd.int(16);
  const shift = rnd.int(8);
  const ab = new ArrayBuffer(shift + before + bytes.length + after);
  const buf = Buffer.from(ab, shift, before + bytes.length + after);
  randomBytes(rnd, buf.length).copy(buf);
  bytes.copy(buf, before);
  return [buf, before, before + bytes.length];
}

/** `bytes` at a random 8-byte boundary of an 8-byte-aligned Buffer, random bytes around: [buf, o, end]. */
function placeAligned(rnd, bytes) {
  const before = 8 * rnd.int(3);
  const buf = Buffer.alloc(before + bytes.length + rnd.int(16));
  randomBytes(rnd, buf.length).copy(buf);
  bytes.copy(buf, before);
  return [buf, before, before + bytes.length];
}

const dvOf = (b) => new DataView(b.buffer, b.byteOffset, b.length);
/** A value for a message (a value whose prototype a `__proto__` field replaced may not print). */
function show(v) {
  try {
    return inspect(v, { depth: 6, breakLength: Infinity, maxArrayLength: 20 });
  } catch (e) {
    return `(not printable: ${e.message})`;
  }
}

function same(a, b) {
  try {
    return isDeepStrictEqual(a, b);
  } catch {
    return false;
  }
}

// ---- the test ----------------------------------------------------------------

test('codec fuzz: generated = interpreted, decode never throws, round trips, coded errors only', (t) => {
  const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : crypto.randomInt(1, 2 ** 31);
  const cases = process.env.FUZZ_CASES ? Number(process.env.FUZZ_CASES) : 5000;
  const line = `codec fuzz seed ${seed}: replay with FUZZ_SEED=${seed}`;
  console.log(line);
  t.diagnostic(line);
  const started = Date.now();
  const counts = { decodes: 0, byteRoundTrips: 0, valueRoundTrips: 0, wrongValues: 0, refused: 0, limits: 0 };
  // failures by property: how many, and the first two of each
  const failures = new Map();
  const fail = (id, property, layout, detail) => {
    const key = property.replace(/ \{.*\}$/, '');
    const f = failures.get(key) || { n: 0, examples: [] };
    f.n++;
    const json = JSON.stringify(layout);
    if (f.examples.length < 2) f.examples.push(`case ${id}: ${property}\n  layout ${json.length > 800 && only === null ? `${json.slice(0, 800)}...` : json}\n  ${detail}`);
    failures.set(key, f);
  };

  const only = process.env.FUZZ_ONLY ? Number(process.env.FUZZ_ONLY) : null;
  for (let id = only ?? 0; id < (only === null ? cases : only + 1); id++) {
    const rnd = random((Math.imul(seed ^ 0x85ebca6b, 0xc2b2ae35) ^ Math.imul(id + 1, 0x9e3779b1)) >>> 0);
    const lossless = rnd.chance(0.4);
    const tricky = rnd.chance(0.1);
    // unions: union layouts, and struct fields that overlap (flattened anonymous unions)
    const unions = !lossless && rnd.chance(0.5);
    const layout = genLayout(rnd, { lossless, union: unions, tricky });

    // 1. generated = interpreted, no throw, nothing read outside the value
    for (const options of OPTIONS) {
      let gen;
      let int;
      try {
        gen = codec.decoder(layout, options);
        int = codec.interpretedDecoder(layout, options);
      } catch (e) {
        fail(id, 'making the decoders threw', layout, show(e));
        continue;
      }
      for (let k = 0; k < 2; k++) {
        const bytes = randomBytes(rnd, layout.size + (rnd.chance(0.3) ? rnd.int(8) : 0));
        const [buf, o, end] = place(rnd, bytes);
        const alone = Buffer.from(bytes);
        // the same bytes at an 8-byte boundary, decoded with the word views
        // (as the dispatcher decodes a ring's records)
        const [wbuf, wo, wend] = placeAligned(rnd, bytes);
        const { u64, i64 } = codec.wordViews(wbuf);
        let a;
        let b;
        let c;
        let w;
        try {
          a = gen(buf, o, end, dvOf(buf));
          b = int(buf, o, end, dvOf(buf));
          c = gen(alone, 0, alone.length, dvOf(alone));
          w = gen(wbuf, wo, wend, dvOf(wbuf), u64, i64);
        } catch (e) {
          fail(id, `decoding ${JSON.stringify(options)} threw`, layout, `bytes ${bytes.toString('hex')}: ${show(e)}`);
          continue;
        }
        counts.decodes += 4;
        if (!same(a, b)) fail(id, `generated != interpreted ${JSON.stringify(options)}`, layout, `bytes ${bytes.toString('hex')}\n  generated   ${show(a)}\n  interpreted ${show(b)}`);
        if (!same(a, c)) fail(id, `the value depends on bytes outside it ${JSON.stringify(options)}`, layout, `bytes ${bytes.toString('hex')}\n  in a bigger buffer ${show(a)}\n  alone ${show(c)}`);
        if (!same(w, b)) fail(id, `decoded with the word views != interpreted ${JSON.stringify(options)}`, layout, `bytes ${bytes.toString('hex')}\n  words       ${show(w)}\n  interpreted ${show(b)}`);
      }
    }

    // 2. bytes round trip (lossless layouts): encode(decode(bytes)) == bytes
    const exact = { int64: 'bigint', enums: rnd.pick(['name', 'number']) };
    const decode = codec.decoder(layout, exact);
    if (lossless) {
      const bytes = randomBytes(rnd, layout.size);
      let value;
      try {
        value = decode(bytes, 0, bytes.length, dvOf(bytes));
        const back = codec.encode(layout, value, 'value');
        counts.byteRoundTrips++;
        if (!back.equals(bytes)) fail(id, `encode(decode(bytes)) != bytes ${JSON.stringify(exact)}`, layout, `bytes ${bytes.toString('hex')}\n  back  ${back.toString('hex')}\n  value ${show(value)}`);
      } catch (e) {
        fail(id, `decode or encode threw ${JSON.stringify(exact)}`, layout, `bytes ${bytes.toString('hex')}, value ${show(value)}: ${show(e)}`);
      }
    }

    // 3. value round trip (no unions): decode(encode(decode(bytes))) == decode(bytes)
    if (!unions) {
      const bytes = randomBytes(rnd, layout.size);
      // char arrays of ASCII: other bytes may decode to U+FFFD, 3 bytes each (see the report)
      walk(layout, 0, (leaf, at) => {
        if (leaf.kind === 'string') for (let i = at; i < at + leaf.size; i++) bytes[i] &= 0x7f;
      });
      let value;
      try {
        value = decode(bytes, 0, bytes.length, dvOf(bytes));
        const again = codec.encode(layout, value, 'value');
        const value2 = decode(again, 0, again.length, dvOf(again));
        counts.valueRoundTrips++;
        if (again.length !== layout.size) fail(id, 'encode gave a Buffer of the wrong size', layout, `${again.length} bytes`);
        if (!same(value, value2)) fail(id, `decode(encode(value)) != value ${JSON.stringify(exact)}`, layout, `bytes ${bytes.toString('hex')}\n  value ${show(value)}\n  again ${show(value2)}`);
      } catch (e) {
        fail(id, `decode or encode threw ${JSON.stringify(exact)}`, layout, `bytes ${bytes.toString('hex')}, value ${show(value)}: ${show(e)}`);
      }
    }

    // 4. integer limits: min and max encode and decode back, one past them is refused
    const int = rnd.chance(0.5) ? { kind: 'int', size: rnd.pick([1, 2, 4, 8]), signed: rnd.chance(0.5) } : null;
    const bits = int ? int.size * 8 : 1 + rnd.int(64);
    const unit = int ? null : bits <= 8 ? 1 : bits <= 16 ? 2 : bits <= 32 ? 4 : 8;
    const shift = int ? 0 : rnd.int(unit * 8 - bits + 1);
    const signed = int ? int.signed : rnd.chance(0.5);
    const limitsLayout = int || { kind: 'struct', name: 'bits', size: unit, fields: [{ name: 'v', offset: 0, bitOffset: shift, bitSize: bits, type: { kind: 'int', size: unit, signed } }] };
    const [min, max] = signed ? [-(1n << BigInt(bits - 1)), (1n << BigInt(bits - 1)) - 1n] : [0n, (1n << BigInt(bits)) - 1n];
    const wrap = (v) => (int ? v : { v });
    const unwrap = (v) => (int ? v : v.v);
    for (const v of [min, max, min - 1n, max + 1n]) {
      const inRange = v >= min && v <= max;
      try {
        const out = codec.encode(limitsLayout, wrap(v), 'value');
        const back = BigInt(unwrap(codec.decode(limitsLayout, out, { int64: 'bigint' })));
        if (!inRange) fail(id, 'one past an integer limit was taken', limitsLayout, `${v} for ${signed ? 's' : 'u'}${bits}: ${out.toString('hex')}`);
        else if (back !== v) fail(id, 'an integer limit came back changed', limitsLayout, `${v} came back as ${back} (${out.toString('hex')})`);
        counts.limits++;
      } catch (e) {
        if (inRange || e.code !== 'ERR_BPF_INVALID_VALUE') fail(id, 'encoding an integer limit threw', limitsLayout, `${v}: ${show(e)}`);
        else counts.limits++;
      }
    }

    // 5. wrong values: a Buffer of layout.size, or ERR_BPF_INVALID_VALUE
    for (let k = 0; k < 3; k++) {
      const bytes = randomBytes(rnd, layout.size);
      let wrong;
      try {
        wrong = corrupt(rnd, decode(bytes, 0, bytes.length, dvOf(bytes)));
      } catch (e) {
        fail(id, 'decoding threw', layout, `bytes ${bytes.toString('hex')}: ${show(e)}`);
        continue;
      }
      counts.wrongValues++;
      try {
        const out = codec.encode(layout, wrong, 'value');
        if (!Buffer.isBuffer(out) || out.length !== layout.size) fail(id, 'encode gave no Buffer of layout.size', layout, `value ${show(wrong)}: ${show(out)}`);
      } catch (e) {
        if (e instanceof Error && /** @type {NodeJS.ErrnoException} */ (e).code === 'ERR_BPF_INVALID_VALUE' && typeof e.message === 'string' && e.message.length > 0) counts.refused++;
        else fail(id, 'encode threw without code ERR_BPF_INVALID_VALUE', layout, `value ${show(wrong)}: ${show(e)}`);
      }
    }
  }

  const secs = ((Date.now() - started) / 1000).toFixed(1);
  t.diagnostic(`${only === null ? cases : 1} layouts in ${secs} s: ${counts.decodes} decodes, ${counts.byteRoundTrips} byte round trips, ${counts.valueRoundTrips} value round trips, ${counts.wrongValues} wrong values (${counts.refused} refused with ERR_BPF_INVALID_VALUE), ${counts.limits} integer limits`);
  const summary = [...failures].map(([key, f]) => `${key}: ${f.n} times\n${f.examples.join('\n')}`);
  assert.ok(failures.size === 0, `failures (${line}):\n${summary.join('\n')}`);
});

test('a field named __proto__ (a valid C name) decodes as an own property and encodes back', () => {
  const layout = { kind: 'struct', name: 'odd', size: 8, fields: [{ name: '__proto__', offset: 0, type: { kind: 'int', size: 4, signed: false } }, { name: 'constructor', offset: 4, type: { kind: 'int', size: 4, signed: false } }] };
  const bytes = Buffer.from([1, 0, 0, 0, 2, 0, 0, 0]);
  for (const decode of [codec.decoder(layout), codec.interpretedDecoder(layout)]) {
    const value = decode(bytes, 0, 8, dvOf(bytes));
    assert.deepStrictEqual(Object.keys(value), ['__proto__', 'constructor']);
    assert.strictEqual(Object.getPrototypeOf(value), Object.prototype);
    assert.deepStrictEqual(codec.encode(layout, value, 'value'), bytes);
  }
});

// ---- wrong values ----------------------------------------------------------------

const WRONG = [
  () => null,
  () => undefined,
  () => 'text',
  () => '',
  () => '\u00ff\u{1f600}',
  () => 1.5,
  () => -1,
  () => NaN,
  () => Infinity,
  () => -0,
  () => 2 ** 53,
  () => 2 ** 64,
  () => -(2n ** 64n),
  () => 2n ** 64n,
  () => 2n ** 200n,
  () => true,
  () => Symbol('s'),
  () => () => 1,
  () => ({}),
  () => ({ nope: 1 }),
  () => Object.create(null),
  () => [],
  () => [1, 2, 3],
  () => new Array(100).fill(0),
  () => Buffer.alloc(0),
  () => Buffer.alloc(3),
  () => Buffer.alloc(1000),
  () => new Uint8Array(5),
  () => new Uint16Array(2),
  () => new Date(0),
  () => new Map([[1, 2]]),
  () => JSON.parse('{"__proto__": 1}'),
  () => 'x'.repeat(300),
];

/** A decoded value with one part replaced by something wrong (or extra keys, or too many elements). */
function corrupt(rnd, value) {
  if (rnd.chance(0.2)) return rnd.pick(WRONG)();
  const copy = (v) => (Array.isArray(v) ? v.map(copy) : v && typeof v === 'object' && !Buffer.isBuffer(v) ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, copy(x)])) : v);
  const root = { value: copy(value) };
  // walk down to a random container and spoil one of its entries
  let holder = root;
  let key = 'value';
  while (rnd.chance(0.7)) {
    const v = holder[key];
    const keys = Array.isArray(v) ? v.map((_, i) => i) : v && typeof v === 'object' && !Buffer.isBuffer(v) ? Object.keys(v) : [];
    if (keys.length === 0) break;
    holder = v;
    key = rnd.pick(keys);
  }
  const v = holder[key];
  const how = rnd.int(4);
  if (how === 0 && Array.isArray(v)) v.push(...v.slice(0, 1 + rnd.int(3)), 0);
  else if (how === 1 && v && typeof v === 'object' && !Array.isArray(v) && !Buffer.isBuffer(v)) v[rnd.pick(['extra', 'Pid', '', 'toString'])] = 1;
  else if (how === 2 && typeof v === 'bigint') holder[key] = v * 2n ** 70n + 1n;
  else if (how === 2 && typeof v === 'number') holder[key] = rnd.pick([v + 0.5, v * 2 ** 60, -v - 1, v * 1e300]);
  else holder[key] = rnd.pick(WRONG)();
  return root.value;
}
