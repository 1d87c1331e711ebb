'use strict';
// Perf event sampling: a CPU-bound child process gets cpu-clock samples at
// the frequency asked for, per second of the CPU time it got (the clock runs
// while the process runs, not while it waits for a CPU another one holds).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const { bpf, objectPath, throwsCode } = require('./helpers');

// USER_HZ, the unit of /proc's utime and stime on every Linux architecture
const CLK_TCK = 100;

/**
 * A child that burns `ms` of its own CPU time (not of the wall clock, which a
 * loaded machine stretches) once it reads a line, then prints `done` and
 * exits when its stdin ends; `ready` once it has started.
 */
function spinner(ms) {
  const script = `process.stdin.once('data', () => {
    const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
    const end = cpu() + ${ms};
    while (cpu() < end) { const t = Date.now() + 1; while (Date.now() < t); }
    console.log('done');
    process.stdin.on('end', () => process.exit(0)).resume();
  });
  console.log('ready');`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  let out = '';
  const said = (word) => new Promise((resolve) => child.stdout.on('data', (d) => (out += d).split('\n').includes(word) && resolve()));
  child.stdout.setEncoding('utf8');
  return { child, ready: said('ready'), done: said('done'), exited, go: () => child.stdin.write('go\n') };
}

/** utime + stime in seconds of process `pid` (all its threads), or of its thread `tid`. */
function cpuSeconds(pid, tid) {
  const stat = fs.readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  // the fields after the command (which may hold spaces and parentheses): the state, 3rd; utime, 14th; stime, 15th
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** Samples of the spinner's second of CPU, and the CPU time it got meanwhile: its main thread's with `thread`. */
async function sampled(options, { thread = false } = {}) {
  const { child, ready, done, exited, go } = spinner(1000);
  try {
    await ready; // its startup is not what we sample
    const obj = bpf.loadBpfProgram(objectPath('perf_sample'));
    try {
      obj.setGlobalVariable('target_pid', child.pid);
      const cpu = () => cpuSeconds(child.pid, thread ? child.pid : undefined);
      const link = obj.attachPerfEvent(obj.programs.handle_cpu_clock, typeof options === 'function' ? options(child.pid) : options);
      const before = cpu();
      go();
      await done;
      link.detach();
      const used = cpu() - before;
      return { samples: Number(obj.getGlobalVariable('samples')), all: Number(obj.getGlobalVariable('all_samples')), cpu: used };
    } finally {
      obj.close();
    }
  } finally {
    child.stdin.end();
    await exited;
  }
}

/** At `hz`, `cpu` seconds of CPU time are ~hz * cpu samples: within 15%, and 3 samples (a period's phase at each end, /proc's 10 ms ticks). */
function assertRate(samples, hz, cpu) {
  // the spinner burnt 1 s of CPU by its own count: nearly all of it on its main thread
  assert.ok(cpu >= 0.8, `the spinner's CPU time: ${cpu} s`);
  const expected = hz * cpu;
  assert.ok(Math.abs(samples - expected) <= 0.15 * expected + 3, `${samples} samples at ${hz} Hz for ${cpu.toFixed(2)} s of CPU: ~${expected.toFixed(0)} expected`);
}

test('cpu-clock at 99 Hz on every CPU samples a process ~99 times a second of its CPU time', async (t) => {
  const { samples, all, cpu } = await sampled({ event: 'cpu-clock', frequency: 99 });
  t.diagnostic(`${samples} samples of the busy process for ${cpu.toFixed(2)} s of its CPU time, ${all} on all CPUs`);
  assertRate(samples, 99, cpu);
});

test('a perf event for one pid follows that thread, ~49 times a second of its CPU time at 49 Hz', async (t) => {
  // (pid, cpu -1) is one task: the main thread, not the threads it had already started
  const { samples, all, cpu } = await sampled((pid) => ({ frequency: 49, pid }), { thread: true });
  t.diagnostic(`${samples} samples at 49 Hz for ${cpu.toFixed(2)} s of the main thread's CPU time`);
  assertRate(samples, 49, cpu);
  assert.strictEqual(all, samples, 'only that process was sampled');
});

test('an unknown perf event name is a clear error', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('perf_sample'));
  t.after(() => obj.close());
  throwsCode(assert, () => obj.attachPerfEvent('handle_cpu_clock', { event: 'cpu-clocks' }), 'ERR_BPF_INVALID_VALUE', /unknown perf event 'cpu-clocks'.*cpu-clock/);
});
