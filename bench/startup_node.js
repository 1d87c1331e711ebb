'use strict';
// The startup row: loadBpfProgram + load + attach of bpf/file_io.bpf.o's 8
// syscall tracepoints, timed in this process; then the first record of each
// of the 4 syscalls (each needs its enter and exit probes) of the canary.
//   node bench/startup_node.js CANARY_PID
// Prints {"lib_ms"} once attached, then "all" once every probe has fired.
const t0 = process.hrtime.bigint();
const bpf = require('..');
const { objectPath } = require('../lib/core/objects');
const t1 = process.hrtime.bigint();

const obj = bpf.loadBpfProgram(objectPath('file_io'));
obj.setGlobalVariable('target_pid', Number(process.argv[2]));
obj.load();
for (const name of Object.keys(obj.programs)) {
  const [, category, tp] = obj.programs[name].section.split('/');
  obj.attachTracepoint(category, tp, name);
}
const t2 = process.hrtime.bigint();
process.stdout.write(`${JSON.stringify({ require_ms: Number(t1 - t0) / 1e6, lib_ms: Number(t2 - t1) / 1e6, probes: Object.keys(obj.programs).length })}\n`);

// wakeupBytes 1: the first record wakes the poller at once
const seen = new Set();
const buffer = obj.getMap('events').openPerfBuffer((cpu, e) => {
  if (seen.size === 4) return;
  seen.add(e.syscall);
  if (seen.size === 4) {
    process.stdout.write('all\n');
    buffer.close();
    obj.close();
  }
}, { type: 'file_io_event', wakeupBytes: 1 });
