'use strict';
// Before/after numbers of issue 22's "libraries where we hand-wrote":
//   node bench/hand_written.js cost [RUNS] [OBJECT...]   per-event kernel
//     cost of syscall_hist's handle_sys_exit (where log2_slot runs, on ns
//     values: ~10 bits): runTimeNs / runCount over ~2 M syscalls of one dd
//     (1-byte reads and writes), kernel.bpf_stats_enabled=1 for the run
//     (restored after); UNIT=us: the tools' default unit (values of 0-3, a
//     short loop before). Several objects (syscall_hist.bpf.o built before
//     and after a change) run interleaved, RUNS rounds, medians per object.
//   node bench/hand_written.js start [RUNS] [TOOL ARGS...]   time from spawn
//     to the tool's "Tracing" line, median of RUNS (default 5)
// Needs root. Prints one JSON line per run and one with the medians.
const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');
const bpf = require('..');
const { objectPath } = require('../lib/core/objects');
const { SyscallLatency } = require('../lib/tools/syscalls');

const STATS = '/proc/sys/kernel/bpf_stats_enabled';
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** One run: syscall_hist on a dd of `count` 1-byte copies; the exit program's runs and ns. */
async function costRun(count, object = objectPath('syscall_hist')) {
  const child = spawn('sh', ['-c', `read go; exec dd if=/dev/zero of=/dev/null bs=1 count=${count} status=none`], { stdio: ['pipe', 'ignore', 'inherit'] });
  const obj = bpf.loadBpfProgram(object);
  try {
    // UNIT is ns, us or ms (SyscallLatency throws on another)
    new SyscallLatency({ unit: /** @type {'ns' | 'us' | 'ms'} */ (process.env.UNIT || 'ns') }).configure(obj, child.pid);
    obj.load();
    obj.attachRawTracepoint('sys_enter', 'handle_sys_enter');
    obj.attachRawTracepoint('sys_exit', 'handle_sys_exit');
    const before = obj.programs.handle_sys_exit.stats;
    const done = new Promise((resolve) => child.on('exit', resolve));
    child.stdin.end('go\n');
    await done;
    const after = obj.programs.handle_sys_exit.stats;
    const runs = after.runCount - before.runCount;
    return { runs, ns_per_run: (after.runTimeNs - before.runTimeNs) / runs };
  } finally {
    obj.close();
  }
}

/** One run of `args` (a tool): ms from spawn to its "Tracing" line. */
function startRun(args) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      if (/Tracing/.test(err)) {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        child.kill('SIGINT');
        child.on('exit', () => resolve(ms));
      }
    });
    child.on('exit', (code) => {
      if (!/Tracing/.test(err)) reject(new Error(`${args.join(' ')} exited ${code} before "Tracing": ${err}`));
    });
  });
}

async function main() {
  const [what = 'cost', runsArg = what === 'cost' ? '3' : '5', ...rest] = process.argv.slice(2);
  const toolArgs = rest;
  const runs = Number(runsArg);
  if (what === 'cost') {
    const was = fs.readFileSync(STATS, 'utf8').trim();
    fs.writeFileSync(STATS, '1');
    const objects = rest.length ? rest : [objectPath('syscall_hist')];
    const rows = new Map(objects.map((o) => [o, []]));
    try {
      for (let i = 0; i < runs; i++) {
        for (const object of objects) {
          const row = await costRun(1_000_000, object);
          rows.get(object).push(row.ns_per_run);
          console.log(JSON.stringify({ object, ...row }));
        }
      }
    } finally {
      fs.writeFileSync(STATS, was);
    }
    for (const [object, ns] of rows) console.log(JSON.stringify({ object, median_ns_per_run: median(ns) }));
  } else if (what === 'start') {
    const args = toolArgs.length ? toolArgs : [path.join(__dirname, '..', 'examples', 'syscall_hist.js'), '--duration', '30'];
    const ms = [];
    for (let i = 0; i < runs; i++) {
      ms.push(await startRun(args));
      console.log(JSON.stringify({ ms: ms.at(-1) }));
    }
    console.log(JSON.stringify({ median_ms: median(ms) }));
  } else {
    throw new Error(`not cost or start: ${what}`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
