'use strict';
// The HTTP row's tracers, switched on and off: the programs attached for
// PERIOD_MS, detached for PERIOD_MS, and so on for SECONDS, so that the
// benchmark can compare the traced server with itself untraced a second
// apart (its speed drifts by 10% over a minute, traced or not).
//   node bench/syscall_toggle.js KIND PID PERIOD_MS SECONDS
// KIND: example: examples/node_syscalls.js's object (bpf/node_syscalls.bpf.o)
//       configured as that example configures it: latency histograms
//       counted in the kernel; its user space only reads maps at the end;
//       stream: bench/.build/syscalls.bpf.o, a ring buffer record per
//       syscall decoded into a JS callback that keeps per-syscall counts
//       and log2 histograms;
//       bpftrace: the same histograms in bpftrace's idiom (BPFTRACE below),
//       one bpftrace started per traced period (its compile before, its
//       exit after: neither in a measured period).
// Prints {"t": CLOCK_MONOTONIC ns, "on": bool} after each attach and
// detach, then {"done": true, "calls", "lost", "cpu_s"}.
const path = require('node:path');
const { spawn } = require('node:child_process');
const bpf = require('..');
const { SyscallLatency, syscallNumber } = require('../lib/tools/syscalls');
const { objectPath } = require('../lib/core/objects');

const [kind, pidArg, periodArg, secondsArg] = process.argv.slice(2);
const pid = Number(pidArg);
const period = Number(periodArg);
const cpu0 = process.cpuUsage();
let obj;
let attach;
let result;

if (kind === 'example') {
  obj = bpf.loadBpfProgram(objectPath('node_syscalls'));
  const latency = new SyscallLatency({ unit: 'us' });
  latency.configure(obj, pid);
  for (const name of ['open', 'openat', 'openat2', 'connect']) obj.setGlobalVariable(`nr_${name}`, syscallNumber(name) ?? -1);
  obj.load();
  attach = () => [obj.attachRawTracepoint('sys_enter', 'handle_sys_enter'), obj.attachRawTracepoint('sys_exit', 'handle_sys_exit')];
  result = () => {
    latency.collect();
    return { calls: latency.totals().reduce((n, r) => n + r.count, 0), lost: 0 };
  };
} else if (kind === 'stream') {
  obj = bpf.loadBpfProgram(path.join(__dirname, '.build', 'syscalls.bpf.o'));
  obj.setGlobalVariable('target_pid', pid);
  const stats = new Map(); // nr -> { count, errors, buckets }
  let records = 0;
  const buffer = obj.getMap('events').openRingBuffer((e) => {
    records++;
    let s = stats.get(e.nr);
    if (s === undefined) stats.set(e.nr, (s = { count: 0, errors: 0, buckets: new Float64Array(64) }));
    s.count++;
    if (e.ret < 0n) s.errors++;
    const ns = Number(e.duration_ns);
    s.buckets[ns >= 2 ** 32 ? 63 - Math.clz32(ns / 2 ** 32) : 31 - Math.clz32(ns | 1)]++;
  }, { type: 'syscall_event' });
  attach = () => [obj.attachTracepoint('raw_syscalls', 'sys_enter', 'handle_enter'), obj.attachTracepoint('raw_syscalls', 'sys_exit', 'handle_exit')];
  result = () => ({ calls: records, lost: buffer.lost + Number(obj.getGlobalVariable('ring_full')) });
} else if (kind === 'bpftrace') {
  const BPFTRACE = `
    tracepoint:raw_syscalls:sys_enter /pid == ${pid}/ { @start[tid] = nsecs; }
    tracepoint:raw_syscalls:sys_exit /@start[tid]/ {
      @usecs[args->id] = hist((nsecs - @start[tid]) / 1000); @calls = count(); delete(@start[tid]);
    }`;
  let calls = 0;
  /** @type {import('node:child_process').ChildProcessByStdio<null, import('node:stream').Readable, null> & { out: string, exited: Promise<number | null> }} */
  let bt;
  attach = async () => {
    // bpftrace dies with this process, even SIGKILLed (setpriv --pdeathsig)
    bt = /** @type {typeof bt} */ (spawn('setpriv', ['--pdeathsig', 'KILL', 'bpftrace', '-B', 'line', '-e', BPFTRACE], { stdio: ['ignore', 'pipe', 'ignore'] }));
    bt.out = '';
    bt.stdout.on('data', (d) => (bt.out += d));
    bt.exited = new Promise((resolve) => bt.on('exit', resolve));
    const deadline = Date.now() + 30_000;
    while (!/Attaching/.test(bt.out)) {
      if (bt.exitCode !== null || Date.now() > deadline) {
        bt.kill('SIGKILL');
        throw new Error(`bpftrace did not attach: ${bt.out}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    return [{
      detach: async () => {
        bt.kill('SIGINT');
        const killer = setTimeout(() => bt.kill('SIGKILL'), 10_000);
        await bt.exited;
        clearTimeout(killer);
        calls += Number(/@calls: (\d+)/.exec(bt.out)?.[1] ?? 0);
      },
    }];
  };
  result = () => ({ calls, lost: 0 });
} else {
  throw new Error(`unknown kind ${kind}: example, stream or bpftrace`);
}

for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(1)); // detaches, and bpftrace dies
const say = (o) => process.stdout.write(`${JSON.stringify(o, (k, v) => (typeof v === 'bigint' ? v.toString() : v))}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

(async () => {
  const end = Date.now() + Number(secondsArg) * 1000;
  while (Date.now() < end) {
    const links = await attach();
    say({ t: process.hrtime.bigint(), on: true });
    await sleep(period);
    for (const l of links) await l.detach();
    say({ t: process.hrtime.bigint(), on: false });
    await sleep(period);
  }
  await sleep(200); // the last records of a stream reach the callback before the count
  const cpu = process.cpuUsage(cpu0);
  say({ done: true, ...result(), cpu_s: (cpu.user + cpu.system) / 1e6 });
  obj?.close();
})();
