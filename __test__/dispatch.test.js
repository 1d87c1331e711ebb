'use strict';
// The dispatcher (lib/core/dispatch.js) on its own: what the addon hands over is
// played by `flow`, a queue of records in JavaScript, which `fill` copies
// into the dispatcher's buffers as the addon does (src/queue.rs
// Sink::fill). The same paths run against the kernel in buffers.test.js and
// reliability.test.js; these are the ones a test program cannot reach
// there: a record larger than the dispatcher's first buffer, records of
// every length, and the buffers' reuse. No root, no kernel.
const test = require('node:test');
const assert = require('node:assert');
const { dispatcher } = require('../lib/core/dispatch');

/** The addon's side, over `records` (Buffers, each from `cpu`). */
function flowOf(records, cpu = 0) {
  const flow = {
    fills: 0,
    paused: false,
    fill(data, ends, cpus) {
      if (flow.paused || records.length === 0) return 0;
      flow.fills++;
      if (records[0].length > data.length) return -records[0].length;
      let bytes = 0;
      let n = 0;
      while (records.length > 0 && n < ends.length && bytes + records[0].length <= data.length) {
        const r = records.shift();
        r.copy(data, bytes);
        bytes += r.length;
        ends[n] = bytes;
        if (cpus) cpus[n] = cpu;
        n++;
      }
      return n;
    },
    pause: () => {
      flow.paused = true;
    },
    resume: () => {
      flow.paused = false;
    },
  };
  return flow;
}

const stateOf = () => ({ closed: false, received: 0, decodeErrors: 0 });
/** Resolves once `done()` is true (delivery yields to the event loop every 10 ms). */
const until = (done) =>
  new Promise((resolve) => {
    const check = () => (done() ? resolve() : setTimeout(check, 2));
    check();
  });
const record = (i, len = 16) => Buffer.alloc(len, i % 256);

test('a record larger than the first buffer (1 MiB) is delivered whole, and so are those after it', async () => {
  const big = Buffer.alloc(3 << 20, 7);
  const flow = flowOf([record(1), big, record(2)]);
  const got = [];
  const state = stateOf();
  const dispatch = dispatcher({ callback: (r) => got.push(Buffer.from(r)), perCpu: false, decode: null, state, flow });
  dispatch(null);
  // (the last may wait for the next turn: copying 3 MiB twice can take the turn's 10 ms)
  await until(() => got.length === 3);
  assert.deepStrictEqual(got.map((r) => r.length), [16, 3 << 20, 16]);
  assert.ok(got[1].equals(big));
  assert.strictEqual(state.received, 3);
});

test('the buffers are reused: a raw record is a view valid during its callback, Buffer.from(record) keeps it', async () => {
  const flow = flowOf(Array.from({ length: 100_000 }, (_, i) => record(i, 32)));
  const kept = [];
  const copies = [];
  dispatcher({
    callback: (r) => {
      kept.push(r);
      copies.push(Buffer.from(r));
    },
    perCpu: false,
    decode: null,
    state: stateOf(),
    flow,
  })(null);
  await until(() => copies.length === 100_000);
  copies.forEach((c, i) => assert.ok(c.equals(record(i, 32)), `copy ${i}`));
  // 100,000 records of 32 bytes take several fills of the same buffer
  assert.ok(flow.fills > 1, `${flow.fills} fills`);
  assert.ok(kept[0] instanceof Buffer);
  assert.strictEqual(kept[0].buffer, kept[kept.length - 1].buffer, 'one buffer for every batch');
  // records of one length: the view of each slot is made once and reused
  assert.strictEqual(kept[32768], kept[0], 'the first record of the second fill');
  assert.strictEqual(new Set(kept).size, 32768);
});

test('raw records of mixed lengths are delivered byte for byte, each a Buffer', async () => {
  const lengths = [8, 8, 8, ...Array.from({ length: 71 }, (_, i) => i), 4095, 4096, 4097, 9000, 3, 8, 8];
  const records = lengths.map((len, i) => Buffer.from(Array.from({ length: len }, (_, k) => (i * 31 + k * 7) & 255)));
  const flow = flowOf(records.map((r) => Buffer.from(r)));
  const got = [];
  dispatcher({
    callback: (r) => {
      assert.ok(r instanceof Buffer);
      got.push(Buffer.from(r));
    },
    perCpu: false,
    decode: null,
    state: stateOf(),
    flow,
  })(null);
  await until(() => got.length === records.length);
  got.forEach((r, i) => assert.ok(r.equals(records[i]), `record ${i} (${lengths[i]} bytes)`));
});

test('typed records read their 64-bit fields exactly, at 8-byte boundaries of the buffer (the word views) and off them', () => {
  const codec = require('../lib/core/codec');
  // struct { u64 a; s64 b; u32 c; u8 tail[]; }: 24 bytes, then 0-7 bytes of tail
  const layout = {
    kind: 'struct',
    name: 'rec',
    size: 24,
    fields: [
      { name: 'a', offset: 0, type: { kind: 'int', size: 8, signed: false } },
      { name: 'b', offset: 8, type: { kind: 'int', size: 8, signed: true } },
      { name: 'c', offset: 16, type: { kind: 'int', size: 4, signed: false } },
      { name: 'tail', offset: 24, type: { kind: 'flex', size: 0, elem: { kind: 'int', size: 1, signed: false } } },
    ],
  };
  const decode = codec.decoder(layout);
  const want = [];
  const records = [];
  for (let i = 0; i < 200; i++) {
    const r = Buffer.alloc(24 + (i % 8), 0xee);
    const a = 0xfedcba9876543210n + BigInt(i);
    const b = -1234567890123n * BigInt(i + 1);
    r.writeBigUInt64LE(a, 0);
    r.writeBigInt64LE(b, 8);
    r.writeUInt32LE(i, 16);
    records.push(r);
    want.push({ a, b, c: i, tail: r.subarray(24) });
  }
  const got = [];
  const dispatch = dispatcher({ callback: (e) => got.push(e), perCpu: false, decode, state: stateOf(), flow: flowOf(records) });
  dispatch(null);
  assert.strictEqual(got.length, 200);
  // records of 24 + (i % 8) bytes one after another: most start off an 8-byte boundary
  got.forEach((e, i) => assert.deepStrictEqual({ ...e, tail: Buffer.from(e.tail) }, want[i], `record ${i}`));
});

test('batch mode: one call per fill with the bytes, the end offsets and (perf) the CPUs', () => {
  const flow = flowOf(Array.from({ length: 10 }, (_, i) => record(i, 8 + i)), 1);
  const calls = [];
  dispatcher({
    callback: (data, ends, cpus) => calls.push({ data: Buffer.from(data), ends: [...ends], cpus: [...cpus] }),
    perCpu: true,
    decode: null,
    batch: true,
    state: stateOf(),
    flow,
  })(null);
  assert.strictEqual(calls.length, 1);
  let start = 0;
  calls[0].ends.forEach((end, i) => {
    assert.ok(calls[0].data.subarray(start, end).equals(record(i, 8 + i)), `record ${i}`);
    start = end;
  });
  assert.deepStrictEqual(calls[0].cpus, Array(10).fill(1));
});

test('a callback that closes its buffer gets no further record, and nothing more is pulled', () => {
  const flow = flowOf(Array.from({ length: 1000 }, (_, i) => record(i)));
  const state = stateOf();
  let calls = 0;
  dispatcher({
    callback: () => {
      calls++;
      state.closed = true;
    },
    perCpu: false,
    decode: null,
    state,
    flow,
  })(null);
  assert.strictEqual(calls, 1);
  assert.strictEqual(flow.fills, 1);
});

test('a slow callback yields to the event loop after 10 ms, with the addon paused, and goes on after', async () => {
  const flow = flowOf(Array.from({ length: 400 }, (_, i) => record(i)));
  const state = stateOf();
  let timerRanAt = -1;
  setImmediate(() => {
    timerRanAt = state.received;
  });
  let pausedSeen = false;
  const dispatch = dispatcher({
    callback: () => {
      const until = performance.now() + 0.1; // 100 µs a record: 40 ms in all
      while (performance.now() < until);
      pausedSeen ||= flow.paused;
    },
    perCpu: false,
    decode: null,
    state,
    flow,
  });
  dispatch(null);
  assert.ok(state.received < 400, `${state.received} delivered before yielding`);
  assert.ok(pausedSeen || flow.paused, 'the addon is paused while records wait in JavaScript');
  await until(() => state.received === 400);
  assert.ok(timerRanAt > 0 && timerRanAt < 400, `the event loop ran after ${timerRanAt} records`);
  assert.strictEqual(flow.paused, false, 'resumed once caught up');
});

test('doorbell calls back to back (several in one turn of the loop) share one 10 ms budget, and the event loop runs between', async () => {
  const records = [];
  const flow = flowOf(records);
  const state = stateOf();
  let immediateAt = -1;
  setImmediate(() => {
    immediateAt = state.received;
  });
  const dispatch = dispatcher({
    callback: () => {
      const until = performance.now() + 0.1; // 100 µs a record
      while (performance.now() < until);
    },
    perCpu: false,
    decode: null,
    state,
    flow,
  });
  // 20 calls in this turn with 20 new records each: each call's records take 2 ms, well in a budget of
  // their own; together they take 40 ms, and they share one budget
  for (let call = 0; call < 20; call++) {
    for (let i = 0; i < 20; i++) records.push(record(i));
    dispatch(null);
  }
  assert.ok(state.received < 200, `${state.received} delivered in this turn (one budget: ~100)`);
  await until(() => state.received === 400);
  assert.ok(immediateAt > 0 && immediateAt < 400, `the event loop ran after ${immediateAt} records`);
  // (the last records can end a budget: the resume is then the next turn's)
  await new Promise((r) => setTimeout(r, 20));
  assert.strictEqual(flow.paused, false, 'resumed once caught up');
});

test("a raw record's read methods return what Buffer's return, and throw what Buffer's throw", async () => {
  // a raw record as the dispatcher hands it over: 16 bytes inside a larger buffer
  const bytes = Buffer.from(Array.from({ length: 64 }, (_, i) => (i * 37 + 200) & 255));
  /** @type {any} */ // any: its read methods are looked up by name
  let raw;
  dispatcher({ callback: (r) => (raw = r), perCpu: false, decode: null, state: stateOf(), flow: flowOf([bytes.subarray(0, 8), bytes.subarray(8, 24)]) })(null);
  await until(() => raw !== undefined && raw.length === 16);
  // a Buffer with the same bytes, whose methods are Buffer's own
  const buffer = bytes.subarray(8, 24);
  const outcome = (f) => {
    try {
      return { value: f() };
    } catch (e) {
      return { error: `${e.name} ${e.code}: ${e.message}` };
    }
  };
  const offsets = [undefined, 0, 1, 3, 4, 7, 8, 12, 13, 14, 15, 16, 17, -1, -0, 1.5, NaN, Infinity, -Infinity, 2 ** 53, '1', '0', null, true, {}, 1n];
  const names = Object.getOwnPropertyNames(Buffer.prototype).filter((n) => /^read(U?Int|Uint|BigU?Int|BigUint|Float|Double)(8|16|32|64)?(LE|BE)?$/.test(n) && !/^read(U?Int|Uint)(LE|BE)$/.test(n));
  assert.strictEqual(names.length, 25, names.join());
  let compared = 0;
  for (const name of names) {
    assert.notStrictEqual(raw[name], Buffer.prototype[name], `${name}: the record has its own`);
    for (const offset of offsets) {
      assert.deepStrictEqual(outcome(() => raw[name](offset)), outcome(() => buffer[name](offset)), `${name}(${String(offset)})`);
      compared++;
    }
  }
  assert.strictEqual(compared, 25 * offsets.length);
  assert.ok(raw instanceof Buffer);
  assert.strictEqual(raw.readUint32LE, raw.readUInt32LE);
});
