'use strict';
// Traces the goroutines of a Go program: every state change (RUNNABLE,
// RUNNING, WAITING, DEAD, ...) with the goroutine's id, from a uprobe on
// runtime.casgstatus, through a ring buffer; a count per state at the end.
// The offset of goid in runtime.g comes from the binary's DWARF. Needs root.
//   node examples/goroutines.js [--pid N] [--goid-offset N] [--duration S] [--json]
const path = require('path');
const bpf = require('..');
const { parseArgs, integer } = require('../lib/tools/args');
const { traceTarget, untilStopped, drain } = require('../lib/host/target');
const { findFunctions } = require('../lib/host/procfs');
const { wallClock, formatTime, escapeText } = require('../lib/core/format');
const { GO_STATES, goStateName } = require('../lib/host/go');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');

const CASGSTATUS = 'runtime.casgstatus';

/** Where goid is in runtime.g: `--goid-offset`, or the binary's DWARF. */
function goidOffset(opts, binary, module) {
  if (opts.goidOffset !== undefined) return opts.goidOffset;
  try {
    return bpf.dwarfMemberOffset(binary, 'runtime.g', 'goid');
  } catch (err) {
    throw new Error(`the offset of goid in runtime.g of ${module}: ${err.message}; or give it with --goid-offset N`);
  }
}

async function main() {
  const opts = parseArgs('Prints the state changes of the goroutines of a Go program, with their ids.', {
    pidHelp: 'trace Go process N (default: build and start a Go program of its own and trace it)',
    options: {
      'goid-offset': {
        type: 'string',
        arg: 'N',
        help: "the offset of goid in runtime.g (default: from the binary's DWARF)",
        parse: integer(0, 65_535),
      },
    },
  });
  const target = await traceTarget(opts, path.join(__dirname, 'workloads', 'goroutines.js'));
  const goroutines = new Set();
  const exited = new Set();
  let obj, events;
  try {
    const where = findFunctions(target.pid, [CASGSTATUS]).get(CASGSTATUS);
    if (!where) throw new Error(`pid ${target.pid} has no ${CASGSTATUS}: is it a Go program (not stripped)?`);
    const offset = goidOffset(opts, where.binary, where.module);
    console.error(`${escapeText(where.module)}: ${CASGSTATUS}, runtime.g.goid at offset ${offset}${opts.goidOffset === undefined ? ' (DWARF)' : ''}`);

    obj = bpf.loadBpfProgram(objectPath('goroutines'));
    obj.setGlobalVariable('target_pid', target.kernelPid);
    obj.setGlobalVariable('goid_offset', offset);
    obj.attachUprobe(where.binary, where.fileOffset, obj.programs.handle_casgstatus, { pid: target.pid });
    if (!opts.json) console.log(`${'TIME'.padEnd(12)} ${'PID'.padStart(7)} ${'TID'.padStart(7)} ${'GOID'.padStart(7)}  TRANSITION`);
    events = obj.getMap('events').openRingBuffer(
      (e) => {
        const [from, to] = [goStateName(e.oldstate), goStateName(e.newstate)];
        // a goroutine is created as DEAD -> RUNNABLE on a g just allocated
        // (IDLE -> DEAD, goid 0) or reused, and Go (1.19 at least) gives it its
        // goid only after that: the g's goid is then 0 or its last goroutine's
        const goid = e.goid === 0 || (from === 'DEAD' && exited.has(e.goid)) ? null : e.goid;
        if (goid !== null) goroutines.add(goid);
        if (from === 'RUNNING' && to === 'DEAD') exited.add(goid); // goexit0
        if (opts.json) {
          console.log(JSON.stringify({ time: wallClock(e.ts_ns).toISOString(), pid: e.pid, tid: e.tid, goid, from, state: to }));
        } else {
          const time = formatTime(wallClock(e.ts_ns), { ms: true });
          console.log(`${time.padEnd(12)} ${String(e.pid).padStart(7)} ${String(e.tid).padStart(7)} ${String(goid ?? '-').padStart(7)}  ${from} -> ${to}`);
        }
      },
      {
        type: 'goroutine_event',
        int64: 'number', // goids and timestamps: far below 2^53
        lost: (count) => console.error(`lost ${count} records`),
      },
    );
    await untilStopped(opts, target);
    obj.detachAll();
    await drain([events]);

    // transitions into each state, counted in the kernel (even those the ring buffer had no room for)
    const counts = obj.getMap('transitions').values().map(Number);
    const states = Object.fromEntries(Object.entries(GO_STATES).map(([v, name]) => [name, counts[v]]).filter(([, n]) => n > 0));
    if (opts.json) {
      console.log(JSON.stringify({ summary: { transitions: states, goroutines: goroutines.size, exited: exited.size, lost: events.lost } }));
    } else {
      console.log(`\n${'STATE'.padEnd(16)}${'TRANSITIONS'.padStart(12)}`);
      for (const [name, n] of Object.entries(states)) console.log(`${name.padEnd(16)}${String(n).padStart(12)}`);
      console.log(`\n${goroutines.size} goroutines seen, ${exited.size} exited${events.lost ? `; ${events.lost} records lost` : ''}`);
    }
  } finally {
    events?.close();
    obj?.close();
    target.stop();
  }
}

run(main);
