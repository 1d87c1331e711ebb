'use strict';
// Prints the command lines typed into interactive bash: a uretprobe on bash's
// readline() reads the line it returns. Traces one bash (--pid), every bash
// on the system (--all, as bcc's bashreadline), or a bash of its own into
// which its workload types commands. Needs root.
//   node examples/bashreadline.js [--pid N | --all] [--duration S] [--json]
const path = require('path');
const bpf = require(path.join(__dirname, '..'));
const tools = require(path.join(__dirname, '..', 'lib', 'tools'));

const BASH = '/bin/bash';

async function main() {
  const opts = tools.parseArgs('Prints the command lines typed into interactive bash shells, with pid and time.', {
    pidHelp: 'trace bash process N (default: start a bash on a pseudo-terminal, type commands into it and trace it)',
    options: { all: { type: 'boolean', help: `trace every bash running ${BASH}`, conflicts: 'pid' } },
  });
  const target = opts.all ? { pid: undefined, what: `every bash (${BASH})`, stop() {} } : await tools.traceTarget(opts, path.join(__dirname, 'workloads', 'bashreadline.js'));
  let obj, events;
  try {
    // by symbol in /bin/bash, or where the traced bash has it (its binary, or a libreadline.so)
    let [binary, func] = [BASH, 'readline'];
    if (target.pid !== undefined) {
      const where = tools.findFunctions(bpf, target.pid, ['readline']).get('readline');
      if (!where) throw new Error(`pid ${target.pid} has no readline function: is it bash?`);
      [binary, func] = [where.binary, where.fileOffset];
    }
    obj = bpf.loadBpfProgram(path.join(__dirname, '..', 'bpf', '.output', 'bashreadline.bpf.o'));
    if (target.pid !== undefined) obj.setGlobalVariable('target_pid', target.pid);
    // with a pid, only that process gets the probe
    obj.attachUretprobe(binary, func, obj.programs.handle_readline_return, target.pid === undefined ? {} : { pid: target.pid });
    if (!opts.json) console.log(`${'TIME'.padEnd(9)} ${'PID'.padStart(7)}  COMMAND`);
    events = obj.getMap('events').openRingBuffer(
      (e) => {
        const time = tools.wallClock(e.ts_ns);
        if (opts.json) console.log(JSON.stringify({ time: time.toISOString(), pid: e.pid, comm: e.comm, command: e.line }));
        else console.log(`${tools.formatTime(time).padEnd(9)} ${String(e.pid).padStart(7)}  ${e.line}`);
      },
      { type: 'readline_event', lost: (count) => console.error(`lost ${count} records`) },
    );
    await tools.untilStopped(opts, target);
    obj.detachAll();
    await tools.drain([events]); // the lines typed up to the stop
  } finally {
    events?.close();
    obj?.close();
    target.stop();
  }
}

main().catch((err) => {
  console.error(`bashreadline: ${err.code ? `${err.code}: ` : ''}${err.message}`);
  process.exitCode = 1;
});
