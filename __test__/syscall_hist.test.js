'use strict';
// examples/syscall_hist.js: latency histograms per syscall, counted in the
// kernel. A C workload sleeps K times 1 ms and K times 10 ms with the
// nanosleep syscall: every sleep lands in its bucket.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const { buildFixture, startExample } = require('./helpers');

const SCRIPT = path.join(__dirname, '..', 'examples', 'syscall_hist.js');
const TIMEOUT_MS = 60_000;
const K = 10;

const skip = process.getuid?.() !== 0 ? 'syscall_hist loads BPF programs: run the tests as root' : false;
if (skip) console.log(`# skipping syscall_hist.test.js: ${skip}`);

/** Runs the tool with `args`: `ready` once it traces, `done` when it ends. */
const run = (args) => {
  const tool = startExample(SCRIPT, args, TIMEOUT_MS);
  return { ...tool, done: tool.exited };
};

/** syscall_hist --pid on the sleeping fixture, to the fixture's exit. */
async function histOfSleeps(args) {
  const fixture = spawn(buildFixture('syscall_hist_sleeps'), [String(K)], { stdio: ['pipe', 'inherit', 'inherit'] });
  const exited = new Promise((resolve) => fixture.on('exit', resolve));
  const tool = run(['--pid', String(fixture.pid), ...args]);
  await tool.ready;
  // its sleeps lie between 'go' and its exit (the monotonic clock, as the kernel's)
  const sent = performance.now();
  fixture.stdin.end('go\n');
  assert.equal(await exited, 0);
  const sleptWithinMs = performance.now() - sent;
  const out = await tool.done;
  assert.equal(out.code, 0, `syscall_hist exits cleanly; stderr:\n${out.stderr}`);
  return { ...out, pid: fixture.pid, sleptWithinMs };
}

/** The last --json line, the total; its syscalls by name. */
function total(stdout) {
  const report = JSON.parse(stdout.trim().split('\n').at(-1));
  assert.equal(report.type, 'total');
  return new Map(report.syscalls.map((s) => [s.syscall, s]));
}

/** The counts of a JSON histogram by `low` (`null` for an open end). */
const bucketCounts = (s) => Object.fromEntries(s.buckets.filter((b) => b.count > 0).map((b) => [b.low, b.count]));

describe('examples/syscall_hist.js', { skip, timeout: 5 * TIMEOUT_MS }, () => {
  test('log2 in ms: K sleeps of 1 ms in [1], K of 10 ms in [8, 16)', async () => {
    const { stdout, sleptWithinMs } = await histOfSleeps(['--json', '--unit', 'ms']);
    const nanosleep = total(stdout).get('nanosleep');
    assert.equal(nanosleep.count, 2 * K);
    assert.equal(nanosleep.errors, 0);
    assert.equal(nanosleep.unit, 'ms');
    // (a 1 ms sleep woken late on a loaded machine lands in [2, 4): still one of the K, never in [8, 16))
    const { 1: one = 0, 2: two = 0, ...rest } = bucketCounts(nanosleep);
    assert.deepEqual([one + two, rest], [K, { 8: K }], JSON.stringify(nanosleep.buckets));
    assert.ok(one >= K - 2, `the 1 ms sleeps in [1, 2) ms but for a late one or two: ${JSON.stringify(nanosleep.buckets)}`);
    assert.deepEqual(nanosleep.buckets.map((b) => [b.low, b.high]), [[1, 2], [2, 4], [4, 8], [8, 16]], 'log2 buckets, empty ones between');
    const ms = nanosleep.total_ns / 1e6;
    // each sleep as long as asked at least; how much longer, the machine's load decides: no longer than the sleeper lived
    assert.ok(ms >= 11 * K && ms <= sleptWithinMs, `the sleeps add up: ${ms} ms, within the ${sleptWithinMs.toFixed(1)} ms from 'go' to the sleeper's exit`);
    console.log(`# ${ms.toFixed(1)} ms of sleeps of ${11 * K} asked, in ${sleptWithinMs.toFixed(1)} ms`);
  });

  test('log2 in µs, printed as bpftrace prints hist()', async () => {
    const { stdout } = await histOfSleeps(['-s', 'nanosleep']);
    const lines = stdout.trimEnd().split('\n');
    assert.match(lines[1], /^Total, \d+\.\d s:$/);
    assert.match(lines[2], /^SYSCALL\s+COUNT\s+ERRORS\s+TOTAL ms\s+AVG µs$/);
    assert.match(lines[3], new RegExp(`^nanosleep\\s+${2 * K}\\s+0\\s+[\\d.]+\\s+[\\d.]+$`));
    assert.equal(lines.length, 4 + 1 + 1 + lines.slice(6).length, 'one syscall only (-s nanosleep)');
    assert.equal(lines[5], '@usecs[nanosleep]:');
    const buckets = new Map(
      lines.slice(6).map((line) => {
        const m = /^(\[\S+(?:, \S+)?\))\s+(\d+) \|(@*) *\|$/.exec(line) ?? /^(\[\S+\])\s+(\d+) \|(@*) *\|$/.exec(line);
        assert.ok(m, `a histogram line: ${JSON.stringify(line)}`);
        return [m[1], Number(m[2])];
      }),
    );
    // 1 ms sleeps take 1000 µs and the timer slack (50 µs): [1K, 2K), or [512, 1K) when woken early
    assert.equal((buckets.get('[512, 1K)') ?? 0) + (buckets.get('[1K, 2K)') ?? 0), K, stdout);
    assert.equal(buckets.get('[8K, 16K)'), K, stdout);
    assert.equal([...buckets.values()].reduce((a, b) => a + b, 0), 2 * K, 'no other nanosleep');
  });

  test('--linear as lhist(): K in [0, 5) ms, K in [10, 15) ms', async () => {
    const { stdout } = await histOfSleeps(['--json', '--unit', 'ms', '--linear', '0,20,5', '--syscall', 'nanosleep']);
    const syscalls = total(stdout);
    assert.deepEqual([...syscalls.keys()], ['nanosleep'], '-s: one syscall traced');
    const nanosleep = syscalls.get('nanosleep');
    assert.deepEqual(bucketCounts(nanosleep), { 0: K, 10: K }, JSON.stringify(nanosleep.buckets));
    assert.deepEqual(nanosleep.buckets.map((b) => [b.low, b.high]), [[0, 5], [5, 10], [10, 15]]);
  });

  test('on its built-in workload: intervals and a total, every syscall counted once', async () => {
    const { code, stdout, stderr } = await run(['--demo', '--json', '-i', '1', '--duration', '2.5']).done;
    assert.equal(code, 0, stderr);
    const reports = stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(reports.map((r) => r.type), ['interval', 'interval', 'total']);
    const sums = new Map();
    for (const r of reports.slice(0, -1)) for (const s of r.syscalls) sums.set(s.syscall, (sums.get(s.syscall) ?? 0) + s.count);
    for (const s of reports.at(-1).syscalls) {
      assert.equal(s.buckets.reduce((n, b) => n + b.count, 0), s.count, `${s.syscall}: its histogram counts every call`);
      assert.ok((sums.get(s.syscall) ?? 0) <= s.count, `${s.syscall}: the intervals are parts of the total`);
    }
    const totals = new Map(reports.at(-1).syscalls.map((s) => [s.syscall, s.count]));
    for (const name of ['openat', 'connect', 'accept4', 'epoll_pwait']) assert.ok(totals.get(name) > 0, `the web service's ${name}`);
  });

  test('bad options are usage errors', async () => {
    for (const args of [['--linear', '10,5,1'], ['--linear', '0,1000,1'], ['--unit', 's'], ['-s', 'nosuchcall']]) {
      const { code, stderr } = await run(['--pid', String(process.pid), ...args]).done;
      assert.equal(code, 2, `${args.join(' ')}: ${stderr}`);
    }
    const { stderr } = await run(['--pid', String(process.pid), '--linear', '0,1000,1']).done;
    assert.match(stderr, /1000 steps; at most 64/);
  });
});
