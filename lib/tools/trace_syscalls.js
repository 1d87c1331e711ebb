'use strict';
/**
 * A whole syscall latency tracer, as the article's three examples
 * (trace_file_io, trace_network_latency, trace_mem_latency) are: one line
 * per call from a ring or perf buffer, and the latency summary at the end.
 * Their BPF side is bpf/syscall_latency.bpf.h.
 *
 *   const { traceSyscalls } = require('node-libbpf/lib/trace_syscalls');
 */
const { loadBpfProgram } = require('../core/object');
const { parseArgs } = require('./args');
const { traceTarget, untilStopped } = require('../host/target');
const { LatencySummary } = require('./latency');
const { chooseThreadStorage } = require('../core/compat');
const { escapeText } = require('../core/format');
const { configureCgroup } = require('../host/cgroup');

/**
 * Traces the syscalls `syscalls` of `-p PID`, of every process, or with
 * `--demo` of the workload script `workload` (started as `node [nodeArgs]
 * workload`) until stopped. `object`:
 * the path of a BPF object with `handle_enter_<name>` and
 * `handle_exit_<name>` programs per syscall, a `target_pid` global and a
 * ring or perf (`buffer: 'perf'`) buffer map `events` of struct `type`.
 * `toEvent` (record -> what to print, with `syscall` and `duration_ns`) and
 * `details` (event -> the text after "took N ms") make its lines.
 */
async function traceSyscalls({ description, object, workload, nodeArgs = [], syscalls, buffer, type, toEvent, details }) {
  const opts = parseArgs(description, { systemWide: 'every process' });
  const target = await traceTarget(opts, workload, nodeArgs);
  const summary = new LatencySummary(syscalls);
  let obj, events;
  try {
    obj = loadBpfProgram(object);
    chooseThreadStorage(obj);
    obj.setGlobalVariable('target_pid', target.kernelPid ?? 0);
    configureCgroup(obj, opts);
    for (const name of syscalls) {
      obj.attachTracepoint('syscalls', `sys_enter_${name}`, obj.programs[`handle_enter_${name}`]);
      obj.attachTracepoint('syscalls', `sys_exit_${name}`, obj.programs[`handle_exit_${name}`]);
    }
    const onRecord = (record) => {
      const event = toEvent(record);
      summary.add(event.syscall, event.duration_ns);
      printEvent(opts, event, details);
    };
    // durations, returns and user-space addresses as numbers: exact, far below 2^53
    const options = { type, int64: /** @type {const} */ ('number') };
    const map = obj.getMap('events');
    events =
      buffer === 'perf'
        ? map.openPerfBuffer((cpu, record) => onRecord(record), { ...options, lost: (cpu, n) => console.error(`lost ${n} records on CPU ${cpu}`) })
        : map.openRingBuffer(onRecord, { ...options, lost: (n) => console.error(`lost ${n} records`) });
    await untilStopped(opts, target);
  } finally {
    events?.close();
    obj?.close();
    target.stop();
  }
  summary.print(opts);
}

/** Prints one record: as JSON with `--json`, else the article's line and `details(event)` (their control characters escaped). */
function printEvent(opts, event, details) {
  if (opts.json) {
    console.log(JSON.stringify(event));
  } else {
    const ms = (event.duration_ns / 1e6).toFixed(3);
    console.log(`[PID:${event.pid} TID:${event.tid} COMM:${escapeText(event.comm)}] ${event.syscall} took ${ms} ms ${escapeText(details(event))}`);
  }
}

module.exports = { traceSyscalls, printEvent };
