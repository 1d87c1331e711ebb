'use strict';
// What the V8 frame walk (bpf/v8.bpf.h) costs in the kernel: the profiler's
// programs (bpf/profile.bpf.c) on a flagless node child that runs a hot JS
// loop and sleeps in Atomics.wait, with the walk off (no layout: the stack
// ids alone, as before issue 27) and on, alternated ROUNDS times; the
// programs' own time from the kernel's counters (kernel.bpf_stats_enabled,
// turned on for the run and restored): ns per CPU sample (handle_sample)
// and per context switch of the main thread (handle_sched_switch), medians.
//   node bench/v8_walk_costs.js [--rounds N] [--seconds S] [--hz HZ] [--node PATH] [--json]
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const bpf = require('..');
const { objectPath } = require('../lib/core/objects');
const { V8Frames } = require('../lib/frames/v8');

const STATS = '/proc/sys/kernel/bpf_stats_enabled';
const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const ROUNDS = Number(opt('--rounds', 5));
const SECONDS = Number(opt('--seconds', 3));
const HZ = Number(opt('--hz', 99));
const NODE = opt('--node', process.execPath);

/** The workload (the child): ~8 ms of JS, then 2 ms asleep in a futex (Atomics.wait), until stdin closes. */
function workload() {
  const shared = new Int32Array(new SharedArrayBuffer(4));
  const hot = (ms) => {
    const end = Date.now() + ms;
    let x = 0;
    while (Date.now() < end) for (let i = 0; i < 5000; i++) x = (x + Math.sqrt(i)) % 1e9;
    return x;
  };
  let running = true;
  process.stdin.resume();
  process.stdin.on('end', () => (running = false));
  const tick = () => {
    hot(8);
    Atomics.wait(shared, 0, 0, 2);
    if (running) setImmediate(tick);
    else process.stdin.pause();
  };
  setTimeout(() => console.log('ready'), 1000);
  tick();
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** One window on process `pid`: the programs' ns per run, with the walk or without. */
async function window(pid, walk) {
  const obj = bpf.loadBpfProgram(objectPath('profile'));
  try {
    obj.setGlobalVariable('target_pid', pid);
    obj.setGlobalVariable('min_offcpu_ns', 0n);
    obj.load();
    if (walk) {
      const err = new V8Frames().watch(obj, pid);
      if (err) throw err;
    }
    const links = [obj.attachPerfEvent('handle_sample', { event: 'cpu-clock', frequency: HZ }), obj.attach('handle_sched_switch')];
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    for (const l of links) l.detach();
    const per = (name) => {
      const s = obj.programs[name].stats;
      return { runs: Number(s.runCount), ns: Number(s.runTimeNs) / Math.max(1, Number(s.runCount)) };
    };
    return { sample: per('handle_sample'), sw: per('handle_sched_switch'), walked: walk ? obj.getMap('v8_stacks').keys().length : 0 };
  } finally {
    obj.close();
  }
}

async function main() {
  const was = fs.readFileSync(STATS, 'utf8').trim();
  fs.writeFileSync(STATS, '1');
  const child = spawn(NODE, [__filename, '--child'], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    await new Promise((resolve, reject) => {
      child.stdout.once('data', resolve);
      child.once('exit', (code) => reject(new Error(`the workload exited ${code}`)));
    });
    const rows = { off: [], on: [] };
    for (let i = 0; i < ROUNDS; i++) {
      rows.off.push(await window(child.pid, false));
      rows.on.push(await window(child.pid, true));
    }
    const sum = (k) => ({
      sampleNs: Math.round(median(rows[k].map((r) => r.sample.ns))),
      samples: median(rows[k].map((r) => r.sample.runs)),
      switchNs: Math.round(median(rows[k].map((r) => r.sw.ns))),
      switches: median(rows[k].map((r) => r.sw.runs)),
      stacksKept: median(rows[k].map((r) => r.walked)),
    });
    const out = { node: NODE, hz: HZ, seconds: SECONDS, rounds: ROUNDS, walkOff: sum('off'), walkOn: sum('on') };
    if (argv.includes('--json')) console.log(JSON.stringify(out));
    else {
      console.log(`node ${NODE}, ${HZ} Hz, ${ROUNDS} x ${SECONDS} s windows each (medians):`);
      for (const [k, label] of [['walkOff', 'stack ids only'], ['walkOn', 'with the V8 walk']]) {
        const r = out[k];
        console.log(`  ${label.padEnd(18)} ${(r.sampleNs / 1000).toFixed(1)} µs per CPU sample (${r.samples}), ${r.switchNs} ns per switch (${r.switches})${k === 'walkOn' ? `, ${r.stacksKept} stacks kept` : ''}`);
      }
    }
  } finally {
    child.stdin.end();
    child.kill();
    fs.writeFileSync(STATS, was);
  }
}

if (argv.includes('--child')) workload();
else {
  main().catch((err) => {
    console.error(`v8_walk_costs: ${err.message}`);
    process.exitCode = 1;
  });
}
