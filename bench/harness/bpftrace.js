'use strict';
// The bpftrace row: a printf per getppid call of the load generator, read
// by `bench/consumer.c lines`. Its CPU is the bpftrace process's (all its
// threads, from /proc/PID/stat), not the line reader's.
const { start, stop, running, waitLine, sleep, json, procCpu, sh } = require('./procs');
const { built } = require('./build');
const { finishLoad, RUN_TIMEOUT_MS } = require('./loadgen');

async function runBpftrace(lg, n) {
  const script = `tracepoint:syscalls:sys_enter_getppid /pid == ${lg.pid}/ { $s = @seq; @seq = $s + 1; printf("%d %d %llu %llu\\n", pid, tid, nsecs, $s); }`;
  const bt = start('bpftrace', ['-B', 'line', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] }, { readStdout: false });
  // the line reader reads bpftrace's stdout
  const reader = start(built('consumer'), ['lines', '-', '-', String(n)], { stdio: [bt.stdout, 'pipe', 'pipe'] });
  try {
    await waitLine(reader, /^ready$/, 10_000);
    // attached: bpftool lists its perf-event link
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = sh('bpftool', ['-j', 'perf']);
      if (r.ok && JSON.parse(r.out || '[]').some((e) => e.pid === bt.pid && e.tracepoint === 'sys_enter_getppid')) break;
      if (Date.now() > deadline || !running(bt)) throw new Error(`bpftrace did not attach: ${bt.stderrText.trim().split('\n').slice(-2).join(' | ')}`);
      await sleep(50);
    }
    const cpu0 = procCpu(bt.pid);
    const load = await finishLoad(lg);
    process.kill(reader.pid, 'SIGUSR1');
    const result = json(await waitLine(reader, /^\{/, RUN_TIMEOUT_MS));
    const cpu = procCpu(bt.pid) - cpu0;
    await stop(bt, 'SIGINT');
    const lost = /Lost (\d+) events/g;
    let kernelLost = 0;
    for (let m; (m = lost.exec(bt.stderrText));) kernelLost += Number(m[1]);
    // warm_ns: the line reader's, not bpftrace's (its CPU is read from /proc, at the start and the end only)
    return { load, ...result, lost: kernelLost, cpu_s: cpu, reader_cpu_s: result.cpu_s, warm_ns: undefined };
  } finally {
    await stop(bt, 'SIGINT');
    await stop(reader, 'SIGKILL');
  }
}

/** The bpftrace row for `opts.n` records per run. */
function bpftraceRows(opts) {
  return [{
    id: 'bpftrace',
    label: 'bpftrace printf (-B line)',
    kind: 'bpftrace',
    unavailable: (tools) => tools.bpftrace,
    run: (lg) => runBpftrace(lg, opts.n),
  }];
}

module.exports = { bpftraceRows };
