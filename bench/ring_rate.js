'use strict';
// How fast a ring buffer delivers records to a JavaScript callback: a C loop
// makes N getppid calls, __test__/bpf/stream.bpf.c emits a 24-byte record for
// each, and a callback counts them. Prints one line of figures.
//   node bench/ring_rate.js [N=2000000] [--no-wakeup] [--typed]
const { spawn } = require('node:child_process');
const bpf = require('..');
const { buildFixture } = require('../__test__/helpers');
const { objectPath } = require('../lib/core/objects');

const N = Number(process.argv.find((a) => /^\d+$/.test(a)) || 2_000_000);
const noWakeup = process.argv.includes('--no-wakeup');
const typed = process.argv.includes('--typed');

function run(traced) {
  const child = spawn(buildFixture('getppid_loop'), [String(N)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  return { child, done: new Promise((resolve) => child.on('exit', () => resolve(parseFloat(out)))), go: () => child.stdin.end('go\n') };
}

(async () => {
  const base = run();
  base.go();
  const untracedNs = await base.done;

  const loop = run();
  const obj = bpf.loadBpfProgram(objectPath('stream'));
  obj.setGlobalVariable('target_pid', loop.child.pid);
  obj.setGlobalVariable('no_wakeup', noWakeup);
  obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_enter_getppid');
  let received = 0;
  let first = 0n;
  let last = 0n;
  const rb = obj.getMap('events').openRingBuffer(() => {
    if (received++ === 0) first = process.hrtime.bigint();
    last = process.hrtime.bigint();
  }, typed ? { type: 'stream_event' } : {});
  const cpu0 = process.cpuUsage();
  loop.go();
  const tracedNs = await loop.done;
  const deadline = Date.now() + 10_000;
  while (received + rb.lost + Number(obj.getGlobalVariable('ring_full')) < N && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 5));
  }
  const cpu = process.cpuUsage(cpu0);
  const seconds = Number(last - first) / 1e9;
  console.log(JSON.stringify({
    records: N,
    received,
    lost: rb.lost + Number(obj.getGlobalVariable('ring_full')),
    deliveredPerSecond: Math.round(received / seconds),
    untracedNsPerCall: untracedNs,
    tracedNsPerCall: tracedNs,
    slowdown: +(tracedNs / untracedNs).toFixed(2),
    consumerCpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(2),
    mode: noWakeup ? 'BPF_RB_NO_WAKEUP' : 'adaptive wakeup',
    delivered: typed ? 'decoded objects' : 'Buffers',
  }));
  obj.close();
})();
