'use strict';
// How long close() holds the main thread: N objects with two tracepoint
// links and a ring buffer each, closed one after the other; then the same
// with closeAsync(), timing until the kernel has released everything.
//   node bench/close.js [N=50]
const bpf = require('..');
const { objectPath } = require('../__test__/helpers');

const N = Number(process.argv[2] ?? 50);

function open() {
  const objs = [];
  for (let i = 0; i < N; i++) {
    const obj = bpf.loadBpfProgram(objectPath('stream'));
    obj.setGlobalVariable('target_pid', 1); // init: no records
    obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_enter_getppid');
    obj.attachTracepoint('syscalls', 'sys_exit_getppid', 'handle_enter_getppid');
    obj.getMap('events').openRingBuffer(() => {}, { pollInterval: 3000 });
    objs.push(obj);
  }
  return objs;
}

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

(async () => {
  let objs = open();
  const each = [];
  let t0 = process.hrtime.bigint();
  for (const obj of objs) {
    const t = process.hrtime.bigint();
    obj.close();
    each.push(ms(t));
  }
  const sync = ms(t0);
  each.sort((a, b) => a - b);
  // releases run in order: this waits for all of the above (a tracepoint
  // takes at most 64 programs, so the next round must not overlap them)
  await objs[objs.length - 1].closeAsync();
  objs = open();
  t0 = process.hrtime.bigint();
  await Promise.all(objs.map((obj) => obj.closeAsync()));
  const released = ms(t0);
  console.log(
    JSON.stringify({
      objects: N,
      linksPerObject: 2,
      closeMainThreadMs: { total: +sync.toFixed(2), median: +each[each.length >> 1].toFixed(3), max: +each[each.length - 1].toFixed(3) },
      closeAsyncReleasedAllMs: +released.toFixed(1),
    }),
  );
})();
