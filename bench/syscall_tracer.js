'use strict';
// The HTTP row's tracer: every system call of process PID with its latency
// (bench/syscalls.bpf.c, raw_syscalls sys_enter/sys_exit, one ring buffer
// record per call), decoded objects into a JavaScript callback that keeps a
// count and a log2 latency histogram per syscall, as a syscall-latency tool
// would.
//   node bench/syscall_tracer.js OBJ PID    (PID 0: attach, but match no process)
// Prints "ready" once attached; at SIGUSR1 prints one JSON line (records,
// lost, the busiest syscalls with their p50/p99) and exits.
const path = require('node:path');
const bpf = require(path.join(__dirname, '..'));

const [objPath, pidArg] = process.argv.slice(2);
const obj = bpf.loadBpfProgram(objPath);
obj.setGlobalVariable('target_pid', Number(pidArg));
obj.attachTracepoint('raw_syscalls', 'sys_enter', 'handle_enter');
obj.attachTracepoint('raw_syscalls', 'sys_exit', 'handle_exit');

const stats = new Map(); // nr -> { count, errors, buckets: Float64Array(64) }
let records = 0;
const buffer = obj.getMap('events').openRingBuffer((e) => {
  records++;
  let s = stats.get(e.nr);
  if (s === undefined) {
    s = { count: 0, errors: 0, buckets: new Float64Array(64) };
    stats.set(e.nr, s);
  }
  s.count++;
  if (e.ret < 0n) s.errors++;
  s.buckets[63 - Math.clz32(Number(e.duration_ns) | 1) + (Number(e.duration_ns) >= 2 ** 32 ? 32 : 0)]++;
}, { type: 'syscall_event' });

const quantile = (b, count, q) => {
  let seen = 0;
  for (let i = 0; i < b.length; i++) {
    seen += b[i];
    if (seen >= q * count) return 2 ** (i + 1);
  }
  return Infinity;
};

const cpu0 = process.cpuUsage();
process.stdout.write('ready\n');
process.on('SIGUSR1', () => {
  const top = [...stats.entries()]
    .sort((a, b) => b[1].count - a[1].count)
    .slice(0, 6)
    .map(([nr, s]) => ({ nr, count: s.count, errors: s.errors, p50_ns_below: quantile(s.buckets, s.count, 0.5), p99_ns_below: quantile(s.buckets, s.count, 0.99) }));
  const cpu = process.cpuUsage(cpu0);
  const out = { records, lost: buffer.lost + Number(obj.getGlobalVariable('ring_full')), cpu_s: (cpu.user + cpu.system) / 1e6, top };
  obj.close();
  process.stdout.write(`${JSON.stringify(out)}\n`);
});
