'use strict';
// The startup row: bench/startup_node.js (loadBpfProgram + load + attach of
// the 8 syscall tracepoints of bpf/file_io.bpf.o, timed inside the process,
// and from spawn to the first record of each syscall of bench/canary.c),
// against bpftrace from spawn to all 8 of the same probes firing.
const path = require('node:path');
const { start, stop, waitLine, json } = require('./procs');
const { built } = require('./build');

const FILE_IO_PROBES = ['openat', 'read', 'write', 'close'].flatMap((s) => [`sys_enter_${s}`, `sys_exit_${s}`]);

/**
 * The startup row, 5 fresh processes each: { lib, nodeReady, nodeAll,
 * bpftraceAll (ms each), bpftraceError }.
 */
async function startupRow(tools) {
  const canary = start(built('canary'), [], { stdio: 'ignore' });
  const runs = { lib: [], nodeReady: [], nodeAll: [], bpftraceAll: [], bpftraceError: tools.bpftrace || '' };
  try {
    for (let i = 0; i < 5; i++) {
      const t0 = process.hrtime.bigint();
      const p = start(process.execPath, [path.join(__dirname, '..', 'startup_node.js'), String(canary.pid)]);
      try {
        const ready = await waitLine(p, /^\{/, 30_000);
        const all = await waitLine(p, /^all$/, 30_000);
        runs.lib.push(json(ready).lib_ms);
        runs.nodeReady.push(Number(ready.at - t0) / 1e6);
        runs.nodeAll.push(Number(all.at - t0) / 1e6);
      } finally {
        await stop(p, 'SIGKILL');
      }
      if (runs.bpftraceError) continue;
      const script = `${FILE_IO_PROBES.map((p) => `tracepoint:syscalls:${p}`).join(',')} /pid == ${canary.pid}/ { printf("%s\\n", probe); }`;
      const t1 = process.hrtime.bigint();
      const bt = start('bpftrace', ['-B', 'line', '-e', script]);
      try {
        const seen = new Set();
        await waitLine(bt, { test: (l) => { if (l.startsWith('tracepoint:')) seen.add(l); return seen.size === 8; } }, 30_000);
        runs.bpftraceAll.push(Number(bt.lines[bt.lines.length - 1].at - t1) / 1e6);
      } catch (e) {
        runs.bpftraceError = e.message;
      } finally {
        await stop(bt, 'SIGINT');
      }
    }
  } finally {
    await stop(canary, 'SIGKILL');
  }
  return runs;
}

module.exports = { startupRow };
