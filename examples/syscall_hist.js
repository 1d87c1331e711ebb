'use strict';
// Per-syscall latency histograms of a process, counted in the kernel and
// printed as bpftrace prints hist() (log2) or lhist() (linear). Needs root.
//   node examples/syscall_hist.js [--pid N] [-i S] [--unit us] [--linear MIN,MAX,STEP]
//                                 [-s openat,read] [--top N] [--duration S] [--json]
//
// Raw tracepoints sys_enter and sys_exit rather than the syscalls:* ones:
// two attachments see every syscall (there are ~360 syscalls:sys_enter_*
// events, each one a perf event to open, and ~50 ms or more of kernel time
// to close), and they run the program with the syscall's registers without
// first building a trace record.
const path = require('path');
const bpf = require('..');
const { parseArgs, intervalOption, integer } = require('../lib/tools/args');
const { traceTarget, untilStopped } = require('../lib/host/target');
const { SyscallLatency, UNITS } = require('../lib/tools/syscalls');
const { ReportClock, printReport } = require('../lib/tools/report');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');
const { configureCgroup } = require('../lib/host/cgroup');

/** `--linear 0,100,10`: `{ min, max, step }`, as bpftrace's lhist(v, min, max, step). */
function linearSpec(value) {
  const [min, max, step, ...rest] = value.split(',').map(Number);
  if (rest.length || ![min, max, step].every(Number.isInteger) || min < 0 || max <= min || step <= 0) {
    throw new Error(`not MIN,MAX,STEP (integers, 0 <= MIN < MAX, STEP > 0): ${value}`);
  }
  return { min, max, step };
}

function unit(value) {
  if (!UNITS[value]) throw new Error(`not ns, us or ms: ${value}`);
  return value;
}

// a count of rows: at most 100000
const positiveInteger = integer(1, 100_000);

async function main() {
  const opts = parseArgs('Prints a latency histogram per syscall of a process, or of every process, counted in the kernel.', {
    systemWide: 'every process',
    perContainer: true,
    options: {
      interval: intervalOption(),
      unit: { type: 'string', arg: 'UNIT', help: 'the histograms\' unit: ns, us (default) or ms', parse: unit },
      linear: { type: 'string', arg: 'MIN,MAX,STEP', help: 'linear slots (as lhist) in that unit, instead of log2', parse: linearSpec },
      syscall: { type: 'string', short: 's', arg: 'NAMES', help: 'only these syscalls (comma-separated: openat,read)', parse: (v) => v.split(',') },
      top: { type: 'string', arg: 'N', help: 'histograms of the N most frequent syscalls only (default: all)', parse: positiveInteger },
    },
  });
  let latency;
  try {
    latency = new SyscallLatency({ unit: opts.unit ?? 'us', linear: opts.linear, syscalls: opts.syscall, perContainer: opts.perContainer });
  } catch (err) {
    console.error(`syscall_hist: ${err.message}`);
    process.exit(2);
  }
  const target = await traceTarget(opts, path.join(__dirname, 'workloads', 'http.js'));
  const clock = new ReportClock();
  const report = (head, rows) =>
    printReport(opts, head, { pid: target.pid, syscalls: latency.toJSON(rows) }, () =>
      [latency.formatTable(rows), ...rows.slice(0, opts.top).map((r) => `\n${latency.formatHistogram(r)}`)].join('\n'),
    );
  let obj;
  try {
    obj = bpf.loadBpfProgram(objectPath('syscall_hist'));
    latency.configure(obj, target.kernelPid);
    configureCgroup(obj, opts);
    obj.load();
    latency.start();
    obj.attachRawTracepoint('sys_enter', 'handle_sys_enter');
    obj.attachRawTracepoint('sys_exit', 'handle_sys_exit');
    clock.started();
    await untilStopped(opts, target, () => {
      const head = clock.next();
      latency.collect();
      report(head, latency.interval());
    });
    obj.detachAll(); // then the counts are final
    const head = clock.end();
    latency.collect();
    report(head, latency.totals());
  } finally {
    obj?.close();
    target.stop();
  }
}

run(main);
