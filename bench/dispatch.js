'use strict';
// The dispatcher (lib/core/dispatch.js) alone, fed synthetic batches: the CPU per
// record of the JavaScript side of delivery, without the kernel or the addon.
// `fill` plays the addon (src/queue.rs Sink::fill): the records' bytes are
// written once (the buffers are reused), each fill sets the end offsets.
//
//   node bench/dispatch.js [MODE] [RECORDS] [DISPATCH_MODULE]
//
// MODE: raw (Buffers of one length), decoded (a 32-byte struct), batch,
// percpu (raw, with a CPU per record); RECORDS: 20000000 by default.
// Prints the CPU time and the wall time per record (the median of several
// runs, interleaved with the other module's, is what to compare).
const path = require('node:path');
const { decoder } = require('../lib/core/codec');

const mode = process.argv[2] || 'raw';
const total = Number(process.argv[3] || 20e6);
const { dispatcher } = require(path.resolve(process.argv[4] || path.join(__dirname, '..', 'lib', 'core', 'dispatch.js')));

const LEN = 32;
const layout = {
  kind: 'struct',
  name: 'event',
  size: LEN,
  fields: [
    { name: 'pid', offset: 0, type: { kind: 'int', size: 4, signed: false } },
    { name: 'tid', offset: 4, type: { kind: 'int', size: 4, signed: false } },
    { name: 'ts', offset: 8, type: { kind: 'int', size: 8, signed: false } },
    { name: 'comm', offset: 16, type: { kind: 'string', size: 16 } },
  ],
};

let sent = 0;
let written = null;
const flow = {
  fill(data, ends, cpus) {
    const n = Math.min(ends.length, Math.floor(data.length / LEN), total - sent);
    if (written !== data) {
      for (let i = 0; i < Math.floor(data.length / LEN); i++) {
        data.writeUInt32LE(i, i * LEN);
        data.write('node', i * LEN + 16);
      }
      written = data;
    }
    for (let i = 0; i < n; i++) ends[i] = (i + 1) * LEN;
    if (cpus) for (let i = 0; i < n; i++) cpus[i] = i & 1;
    sent += n;
    return n;
  },
  pause() {},
  resume() {},
};

let sink = 0;
const callbacks = {
  raw: (r) => {
    sink += r.length;
  },
  decoded: (r) => {
    sink += r.pid;
  },
  batch: (data, ends) => {
    sink += ends.length;
  },
  percpu: (cpu, r) => {
    sink += cpu + r.length;
  },
};
const state = { closed: false, received: 0, decodeErrors: 0 };
const dispatch = dispatcher({
  callback: callbacks[mode],
  perCpu: mode === 'percpu',
  decode: mode === 'decoded' ? decoder(layout) : null,
  typeName: 'struct event',
  batch: mode === 'batch',
  state,
  flow,
});

const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
dispatch(null);
const done = () => {
  if (state.received < total) return setImmediate(done);
  const cpu = process.cpuUsage(cpu0);
  const wall = Number(process.hrtime.bigint() - t0);
  const perCpu = ((cpu.user + cpu.system) * 1000) / total;
  if (sink === 0) throw new Error('the callback saw no record');
  console.log(`${mode}: ${perCpu.toFixed(2)} ns/record CPU, ${(wall / total).toFixed(2)} ns/record wall (${total} records)`);
};
done();
