'use strict';
// Perf event sampling: a CPU-bound child process gets cpu-clock samples at
// roughly the frequency asked for.
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const { bpf, objectPath, throwsCode } = require('./helpers');

/** A child that burns CPU for `ms` once it reads a line; `ready` once it has started. */
function spinner(ms) {
  const child = spawn(process.execPath, ['-e', `process.stdin.once('data', () => { const end = Date.now() + ${ms}; while (Date.now() < end); process.exit(0); }); console.log('ready');`], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const ready = new Promise((resolve) => child.stdout.once('data', resolve));
  return { child, ready, exited, go: () => child.stdin.write('go\n') };
}

async function sampled(options) {
  const { child, ready, exited, go } = spinner(1000);
  await ready; // its startup is not what we sample
  const obj = bpf.loadBpfProgram(objectPath('perf_sample'));
  try {
    obj.setGlobalVariable('target_pid', child.pid);
    const link = obj.attachPerfEvent(obj.programs.handle_cpu_clock, typeof options === 'function' ? options(child.pid) : options);
    go();
    await exited;
    link.detach();
    return { samples: Number(obj.getGlobalVariable('samples')), all: Number(obj.getGlobalVariable('all_samples')) };
  } finally {
    obj.close();
  }
}

test('cpu-clock at 99 Hz on every CPU samples a 1 s CPU-bound process ~99 times', async (t) => {
  const { samples, all } = await sampled({ event: 'cpu-clock', frequency: 99 });
  t.diagnostic(`${samples} samples of the busy process, ${all} on all CPUs`);
  assert.ok(samples >= 70 && samples <= 130, `${samples} samples`);
});

test('a perf event for one pid follows that process', async (t) => {
  const { samples, all } = await sampled((pid) => ({ frequency: 49, pid }));
  t.diagnostic(`${samples} samples at 49 Hz`);
  assert.ok(samples >= 30 && samples <= 70, `${samples} samples`);
  assert.strictEqual(all, samples, 'only that process was sampled');
});

test('an unknown perf event name is a clear error', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('perf_sample'));
  t.after(() => obj.close());
  throwsCode(assert, () => obj.attachPerfEvent('handle_cpu_clock', { event: 'cpu-clocks' }), 'ERR_BPF_INVALID_VALUE', /unknown perf event 'cpu-clocks'.*cpu-clock/);
});
