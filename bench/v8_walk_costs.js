'use strict';
// What the V8 frame walk (bpf/v8.bpf.h) costs in the kernel: the profiler's
// programs (bpf/profile.bpf.c) on a flagless node child that runs a hot JS
// loop and sleeps in Atomics.wait, with the walk off (no layout: the stack
// ids alone, as before issue 27) and on, alternated ROUNDS times; the
// programs' own time from the kernel's counters (kernel.bpf_stats_enabled,
// turned on for the run and restored): ns per CPU sample (handle_sample)
// and per context switch of the main thread (handle_sched_switch), medians.
// Then what a pull's naming costs in user space (lib/frames/v8.js: the JS
// frames of a window's walked stacks named from the child's memory, as
// stackcount names them): PULLS windows of --window seconds at HZ, the
// first (the node binary's symbols read, caches cold) and the others (steady
// state), in ms per pull; the layout's first read (watch: the v8dbg_*
// symbols) apart.
//   node bench/v8_walk_costs.js [--rounds N] [--seconds S] [--hz HZ] [--node PATH] [--window S] [--pulls N] [--json]
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
const WINDOW = Number(opt('--window', 10));
const PULLS = Number(opt('--pulls', 3));

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

/** PULLS windows of WINDOW s on `pid`, each named by one V8Frames (its caches kept between pulls): ms per pull. */
async function naming(pid) {
  const stacks = require('../lib/frames/stacks');
  const v8 = new V8Frames();
  const pulls = [];
  let watchMs = 0;
  try {
    for (let i = 0; i < PULLS; i++) {
      const obj = bpf.loadBpfProgram(objectPath('stackcount'));
      try {
        obj.setGlobalVariable('target_pid', pid);
        let t = process.hrtime.bigint();
        const err = v8.watch(obj, pid);
        if (err) throw err;
        if (i === 0) watchMs = Number(process.hrtime.bigint() - t) / 1e6;
        const link = obj.attachPerfEvent('handle_sample', { event: 'cpu-clock', frequency: HZ });
        await new Promise((r) => setTimeout(r, WINDOW * 1000));
        link.detach();
        const entries = stacks.readStacks(obj).filter((e) => e.pid === pid && e.v8);
        t = process.hrtime.bigint();
        const frames = entries.flatMap((e) => v8.align(e.user, e.v8));
        const named = v8.namesOf(pid, frames);
        pulls.push({ ms: Number(process.hrtime.bigint() - t) / 1e6, stacks: entries.length, frames: named.filter(Boolean).length });
      } finally {
        obj.close();
      }
    }
  } finally {
    v8.close();
  }
  const steady = pulls.slice(1);
  return { watchMs: +watchMs.toFixed(1), firstMs: +pulls[0].ms.toFixed(1), steadyMs: steady.length ? +median(steady.map((p) => p.ms)).toFixed(1) : null, stacks: median(pulls.map((p) => p.stacks)), jsFrames: median(pulls.map((p) => p.frames)) };
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
    // (first: nothing of the node binary read yet in this process)
    const names = PULLS > 0 ? await naming(child.pid) : null;
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
    const out = { node: NODE, hz: HZ, seconds: SECONDS, rounds: ROUNDS, walkOff: sum('off'), walkOn: sum('on'), naming: names && { window: WINDOW, pulls: PULLS, ...names } };
    if (argv.includes('--json')) console.log(JSON.stringify(out));
    else {
      console.log(`node ${NODE}, ${HZ} Hz, ${ROUNDS} x ${SECONDS} s windows each (medians):`);
      for (const [k, label] of [['walkOff', 'stack ids only'], ['walkOn', 'with the V8 walk']]) {
        const r = out[k];
        console.log(`  ${label.padEnd(18)} ${(r.sampleNs / 1000).toFixed(1)} µs per CPU sample (${r.samples}), ${r.switchNs} ns per switch (${r.switches})${k === 'walkOn' ? `, ${r.stacksKept} stacks kept` : ''}`);
      }
      const n = out.naming;
      if (n) console.log(`  naming a ${n.window} s pull: first ${n.firstMs} ms, then ${n.steadyMs} ms (median of ${n.pulls - 1}); ${n.stacks} stacks, ${n.jsFrames} JS frames; the layout's first read ${n.watchMs} ms`);
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
