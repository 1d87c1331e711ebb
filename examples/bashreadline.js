'use strict';
// Prints the command lines typed into interactive bash: a uretprobe on bash's
// readline() reads the line it returns. Traces one bash (--pid), every bash
// on the system (--all, as bcc's bashreadline), or a bash of its own into
// which its workload types commands. Needs root.
//   node examples/bashreadline.js [--pid N | --all] [--duration S] [--json]
const path = require('path');
const bpf = require('..');
const { parseArgs } = require('../lib/tools/args');
const { traceTarget, untilStopped, drain } = require('../lib/host/target');
const { findFunctions } = require('../lib/host/procfs');
const { wallClock, formatTime, escapeText } = require('../lib/core/format');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');
const { configureCgroup } = require('../lib/host/cgroup');

const BASH = '/bin/bash';

async function main() {
  const opts = parseArgs('Prints the command lines typed into interactive bash shells, with pid and time.', {
    systemWide: `every bash (${BASH})`,
    pidHelp: `trace bash process PID (default: every bash running ${BASH}; --demo: a bash on a pseudo-terminal, typed into)`,
  });
  const target = await traceTarget(opts, path.join(__dirname, 'workloads', 'bashreadline.js'));
  let obj, events;
  try {
    // by symbol in /bin/bash, or where the traced bash has it (its binary, or a libreadline.so)
    let [binary, func] = [BASH, 'readline'];
    if (target.pid !== undefined) {
      const where = findFunctions(target.pid, ['readline']).get('readline');
      if (!where) throw new Error(`pid ${target.pid} has no readline function: is it bash?`);
      [binary, func] = [where.binary, where.fileOffset];
    }
    obj = bpf.loadBpfProgram(objectPath('bashreadline'));
    if (target.pid !== undefined) obj.setGlobalVariable('target_pid', target.kernelPid);
    configureCgroup(obj, opts);
    // with a pid, only that process gets the probe
    obj.attachUretprobe(binary, func, obj.programs.handle_readline_return, target.pid === undefined ? {} : { pid: target.pid });
    if (!opts.json) console.log(`${'TIME'.padEnd(9)} ${'PID'.padStart(7)}  COMMAND`);
    events = obj.getMap('events').openRingBuffer(
      (e) => {
        const time = wallClock(e.ts_ns);
        if (opts.json) console.log(JSON.stringify({ time: time.toISOString(), pid: e.pid, comm: e.comm, command: e.line }));
        else console.log(`${formatTime(time).padEnd(9)} ${String(e.pid).padStart(7)}  ${escapeText(e.line)}`);
      },
      { type: 'readline_event', lost: (count) => console.error(`lost ${count} records`) },
    );
    await untilStopped(opts, target);
    obj.detachAll();
    await drain([events]); // the lines typed up to the stop
  } finally {
    events?.close();
    obj?.close();
    target.stop();
  }
}

run(main);
