'use strict';
// examples/trace_event_loop.js: the phases of a Node.js process's libuv loop,
// measured with uprobes and uretprobes, against processes whose loop
// iterations are known (__test__/fixtures/trace_event_loop_ticks.js).
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const path = require('node:path');
const { bpf, sleep, startExample: startScript, workloadOf } = require('./helpers');

const EXAMPLE = path.join(__dirname, '..', 'examples', 'trace_event_loop.js');
const FIXTURE = path.join(__dirname, 'fixtures', 'trace_event_loop_ticks.js');
const RUN_TIMEOUT_MS = 30_000;

const skip = process.getuid?.() !== 0 ? 'trace_event_loop.js loads BPF programs: run the tests as root' : false;
if (skip) console.log(`# skipping trace_event_loop.test.js: ${skip}`);

/** Starts the example; `ready` resolves once it traces, `stop()` sends SIGTERM and resolves with its output. */
const startExample = (args) => startScript(EXAMPLE, args, RUN_TIMEOUT_MS);

/** The fixture, started and ready for 'go'. */
async function startFixture(...args) {
  const child = spawn(process.execPath, [FIXTURE, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const [info] = await once(child, 'message');
  return { child, info, stop: () => child.connected && child.disconnect() };
}

/** The --json output: one object per iteration, then the histograms. */
function parseJson(stdout) {
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
  const last = lines.pop();
  assert.ok(last.histograms, `the last line has the histograms: ${JSON.stringify(last)}`);
  return { iterations: lines, histograms: last.histograms };
}

/** How many values the histogram of `phase` holds at `low` µs and above. */
function countAbove(histograms, phase, low) {
  return (histograms[phase]?.buckets ?? []).filter((b) => b.low >= low).reduce((n, b) => n + b.count, 0);
}

const hasPending = () => bpf.elfSymbols(process.execPath).some((s) => s.name === 'uv__run_pending');

describe('examples/trace_event_loop.js', { skip }, () => {
  test('--pid: 5 ticks of 50 ms timers, ~145 ms polls and 5 ms setImmediates, one iteration each', async () => {
    const TICKS = 5;
    const fixture = await startFixture('ticks', String(TICKS));
    try {
      const { intervalMs, timerBurnMs, immediateBurnMs } = fixture.info;
      const run = startExample(['--pid', String(fixture.child.pid), '--json']);
      await run.ready;
      fixture.child.send('go');
      await once(fixture.child, 'message'); // 'done'
      await sleep(100);
      const { code, signal, stdout, stderr } = await run.stop();
      assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
      assert.match(stderr, new RegExp(`^Tracing pid ${fixture.child.pid} `, 'm'));
      if (!hasPending()) assert.match(stderr, /uv__run_pending is not in .*: the pending phase is not traced/);
      const { iterations, histograms } = parseJson(stdout);
      for (const it of iterations) {
        assert.equal(it.pid, fixture.child.pid);
        assert.equal(it.tid, fixture.child.pid, 'the main thread runs the loop');
      }
      assert.equal(new Set(iterations.map((it) => it.loop)).size, 1, 'one loop');

      // libuv 1.45+: idle, prepare, poll, check, timers; timers close the iteration
      const ticks = iterations.filter((it) => it.phases_ms.timers >= timerBurnMs);
      assert.equal(ticks.length, TICKS, `${TICKS} timers phases of ${timerBurnMs} ms or more`);
      // the loop waits in poll between ticks: the first for the interval from
      // 'go', the others for its rest after the two burns (summed over the
      // iterations between two ticks: V8's tasks from other threads, such as
      // a finished optimizing compile of burn(), may wake it up in between)
      const waits = ticks.map((tick, i) => {
        const from = i === 0 ? 0 : iterations.indexOf(ticks[i - 1]) + 1;
        return iterations.slice(from, iterations.indexOf(tick) + 1).reduce((ms, it) => ms + (it.phases_ms.poll ?? 0), 0);
      });
      assert.ok(waits[0] >= intervalMs - 20 && waits[0] < intervalMs + 60, `first wait ~${intervalMs} ms: ${waits[0]}`);
      // how the rest of an interval after the burns splits between the poll wait and the burns' phases, the machine
      // decides (a process that waits for a CPU after a burn spends that time in the burn's phase, not in poll); what
      // the loop controls: a tick comes an interval after the last one began at least (the loop's millisecond clock),
      // that time in its phases but for the loop's own untraced steps, and the phases are no longer than the time
      // that passed
      const sum = (it) => Object.values(it.phases_ms).reduce((a, b) => a + b, 0);
      const cycles = ticks.slice(1).map((tick, i) => {
        const from = iterations.indexOf(ticks[i]);
        const between = iterations.slice(from + 1, iterations.indexOf(tick) + 1).reduce((ms, it) => ms + sum(it), 0);
        return ticks[i].phases_ms.timers + between - tick.phases_ms.timers;
      });
      // (microseconds an iteration, unless the process waits for a CPU right there: once 7.5 ms of a 200 ms interval
      // beside a CPU hog, so 10% of the run)
      const inPhases = cycles.reduce((a, b) => a + b, 0);
      assert.ok(inPhases >= 0.9 * cycles.length * intervalMs, `from a tick's timers phase to the next's: ${intervalMs} ms at least, in the phases: ${cycles.map((c) => c.toFixed(1))}`);
      for (const [i, it] of iterations.slice(0, -1).entries()) {
        // (each phase in µs)
        const elapsed = (iterations[i + 1].start_ns - it.start_ns) / 1e6;
        assert.ok(sum(it) <= elapsed + 0.01, `iteration ${it.iteration}: its phases within the ${elapsed} ms to the next's start: ${JSON.stringify(it.phases_ms)}`);
      }
      console.log(`# poll waits ${waits.map((w) => w.toFixed(1))} ms; from a tick to the next ${cycles.map((c) => c.toFixed(1))} ms in the phases`);

      // each setImmediate runs in the check phase of the iteration after its timer
      const checks = iterations.filter((it) => it.phases_ms.check >= immediateBurnMs);
      assert.equal(checks.length, TICKS, `${TICKS} check phases of ${immediateBurnMs} ms or more`);
      for (const tick of ticks) {
        const next = iterations[iterations.indexOf(tick) + 1];
        assert.ok(next.phases_ms.check >= immediateBurnMs, `the check phase after a tick runs its setImmediate: ${JSON.stringify(next)}`);
        assert.ok(next.phases_ms.poll < 5, 'a pending setImmediate: poll does not wait');
      }

      // the kernel's histograms count the same phases as the records
      assert.equal(countAbove(histograms, 'timers', 32768), TICKS, 'timers >= 32 ms in the histogram');
      assert.equal(countAbove(histograms, 'check', 4096), TICKS, 'check >= 4 ms in the histogram');
      const longPolls = iterations.filter((it) => it.phases_ms.poll >= 131.072).length;
      assert.equal(countAbove(histograms, 'poll', 131072), longPolls, 'polls >= 128 ms in the histogram');
      for (const [phase, { unit, buckets }] of Object.entries(histograms)) {
        assert.equal(unit, 'us');
        const records = iterations.filter((it) => phase in it.phases_ms).length;
        assert.equal(buckets.reduce((n, b) => n + b.count, 0), records, `${phase}: as many in the histogram as in the records`);
      }
    } finally {
      fixture.stop();
    }
  });

  test('--pid: the loop of execFileSync runs nested in the timers phase, as a loop of its own', async () => {
    const fixture = await startFixture('nested');
    try {
      const run = startExample(['--pid', String(fixture.child.pid), '--json']);
      await run.ready;
      fixture.child.send('go');
      await once(fixture.child, 'message');
      await sleep(100);
      const { code, signal, stdout, stderr } = await run.stop();
      assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
      const { iterations } = parseJson(stdout);
      const loops = [...new Set(iterations.map((it) => it.loop))];
      assert.equal(loops.length, 2, `the main loop and execFileSync's: ${loops}`);
      const outer = iterations.filter((it) => it.loop === loops[0]);
      const inner = iterations.filter((it) => it.loop === loops[1]);
      const timer = outer.filter((it) => it.phases_ms.timers >= 100);
      assert.equal(timer.length, 1, 'one timers phase holds the 100 ms sleep');
      const innerPoll = inner.reduce((ms, it) => ms + (it.phases_ms.poll ?? 0), 0);
      assert.ok(innerPoll >= 90 && innerPoll <= timer[0].phases_ms.timers, `the inner loop waits for sleep in its polls: ${innerPoll} ms`);
      assert.ok(inner.every((it) => it.tid === fixture.child.pid), 'on the same thread');
    } finally {
      fixture.stop();
    }
  });

  test('the built-in workload, text output: a line per iteration and a histogram per phase', async () => {
    const run = startExample(['--demo', '--duration', '2']);
    await run.ready;
    const { code, signal, stdout, stderr } = await run.exited;
    assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
    const workload = workloadOf(stderr);
    assert.ok(workload, stderr);
    const { timerBurnMs } = workload.info;
    const [header, ...rest] = stdout.split('\n');
    const phases = header.trim().split(/\s+/).slice(4, -1);
    assert.deepEqual(header.trim().split(/\s+/).slice(0, 4), ['TIME', 'TID', 'LOOP', 'ITER']);
    assert.deepEqual(phases, ['pending', 'idle', 'prepare', 'poll', 'check', 'timers'].filter((p) => p !== 'pending' || hasPending()));
    const lines = rest.filter((l) => /^\d\d:\d\d:\d\d\.\d{3} /.test(l)).map((l) => l.trim().split(/\s+/));
    const ticks = lines.filter((cols) => Number(cols[4 + phases.indexOf('timers')]) >= timerBurnMs);
    // 2 s of a 200 ms interval: how many ticks a loaded machine let the workload run (and how late the tool stopped),
    // it decides; they are an interval apart at least (the loop's millisecond clock), from the start of the first
    // tick's iteration to that of the iteration after the last tick (its timers phase has ended), each printed to the ms
    assert.ok(ticks.length >= 2, `ticks: ${ticks.length}`);
    const ms = (cols) => cols[0].split(':').reduce((t, n) => t * 60 + Number(n), 0) * 1000;
    const after = lines[lines.indexOf(ticks.at(-1)) + 1];
    assert.ok(after, 'an iteration after the last tick');
    const span = (ms(after) - ms(ticks[0]) + 86_400_000) % 86_400_000;
    assert.ok(span >= (ticks.length - 1) * (workload.info.intervalMs - 1) - 2, `${ticks.length} ticks in ${span} ms`);
    console.log(`# ${ticks.length} ticks in ${span} ms`);
    for (const cols of lines) assert.equal(cols.length, 4 + phases.length, cols.join(' '));
    for (const phase of phases) assert.match(stdout, new RegExp(`^@usecs\\[${phase}\\]:$`, 'm'));
    assert.match(stdout, /^\[32K, 64K\) +\d+ \|@+ *\|$/m, 'the 50 ms timers in the histogram');
  });
});
