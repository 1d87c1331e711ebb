'use strict';
const { startExample, workloadOf, waitFor } = require('./helpers');
// examples/node_syscalls.js on its web service workload: the report names
// the file it serves and the endpoint it connects to, and its openat and
// connect histograms count what the workload did.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { fork, spawn } = require('node:child_process');
const { once } = require('node:events');
const path = require('node:path');
const fs = require('node:fs');

const SCRIPT = path.join(__dirname, '..', 'examples', 'node_syscalls.js');
const WORKLOAD = path.join(__dirname, '..', 'examples', 'workloads', 'http.js');
const TIMEOUT_MS = 60_000;

const skip = process.getuid?.() !== 0 ? 'node_syscalls loads BPF programs: run the tests as root' : false;
if (skip) console.log(`# skipping node_syscalls.test.js: ${skip}`);

/** Runs the tool with `args`: `ready` once it traces, `done` when it ends. */
const run = (args) => {
  const tool = startExample(SCRIPT, args, TIMEOUT_MS);
  return { ...tool, done: tool.exited };
};

/** The sections of a text report: its syscalls table, histograms and the files and endpoints tables. */
function parseReport(text) {
  const lines = text.split('\n');
  const section = (title) => {
    const start = lines.findIndex((l) => l.startsWith(title));
    assert.ok(start >= 0, `a ${title} section:\n${text}`);
    const rows = [];
    for (const line of lines.slice(start + 2)) {
      const m = /^\s*(\d+)\s+(\d+)\s+(\S.*)$/.exec(line);
      if (!m) break;
      rows.push({ count: Number(m[1]), errors: Number(m[2]), name: m[3] });
    }
    return new Map(rows.map((r) => [r.name, r]));
  };
  const syscalls = new Map();
  const header = lines.findIndex((l) => /^SYSCALL\s+COUNT\s+ERRORS\s+TOTAL ms\s+AVG µs$/.test(l));
  assert.ok(header >= 0, text);
  for (const line of lines.slice(header + 1)) {
    const m = /^(\w+)\s+(\d+)\s+(\d+)\s+[\d.]+\s+[\d.-]+$/.exec(line);
    if (!m) break;
    syscalls.set(m[1], { count: Number(m[2]), errors: Number(m[3]) });
  }
  const histograms = new Map();
  for (let i = 0; i < lines.length; i++) {
    const m = /^@usecs\[(\w+)\]:$/.exec(lines[i]);
    if (!m) continue;
    let sum = 0;
    for (const line of lines.slice(i + 1)) {
      const b = /^\[[^\]]*[\])]\s+(\d+) \|@* *\|$/.exec(line);
      if (!b) break;
      sum += Number(b[1]);
    }
    histograms.set(m[1], sum);
  }
  return { syscalls, histograms, files: section('Files opened'), endpoints: section('Endpoints connected to') };
}

describe('examples/node_syscalls.js', { skip, timeout: 5 * TIMEOUT_MS }, () => {
  test('its default run: refreshed every 2 s, a total at the end, with the workload\'s file and endpoint', async () => {
    const { code, stdout, stderr } = await run(['--demo', '--duration', '5']).done;
    assert.equal(code, 0, stderr);
    const workload = workloadOf(stderr);
    assert.ok(workload, stderr);
    const { info } = workload;
    assert.match(info.endpoint, /^127\.0\.0\.1:\d+$/);
    const reports = stdout.split(/\n(?=\d\d:\d\d:\d\d, last |Total, )/).filter(Boolean);
    assert.equal(reports.length, 3, `two refreshes and the total:\n${stdout}`);
    assert.match(reports[0], /^\d\d:\d\d:\d\d, last \d+\.\d s:\npid \d+ \((?:node|MainThread|node-MainThread)\): \d+ syscalls\n/);
    assert.match(reports[1], /^\d\d:\d\d:\d\d, last \d+\.\d s:\n/);
    assert.match(reports[2], /^Total, \d+\.\d s:\n/);
    // a span is the time between the tool's reads of the clock: since the start (before the object's load), the last
    // refresh and the start again for the total. How much longer than the interval it is, the machine decides; what
    // the tool controls is that its timers wait at least the interval (2 s) and the duration (5 s) from the start
    // (a refresh that read the clock late makes the next span shorter: the sum is what they bound), that the
    // refreshes lie within the total, and that each span is the gap between its report's clock time and the last's
    const spans = reports.map((r) => Number(/^(?:\d\d:\d\d:\d\d, last|Total,) (\d+\.\d) s:/.exec(r)[1]));
    const clock = reports.slice(0, 2).map((r) => r.slice(0, 8).split(':').reduce((s, n) => s * 60 + Number(n), 0));
    assert.ok(spans[0] >= 2, `the first refresh an interval after the start at least: ${spans}`);
    // (each span printed to 0.1 s: 0.05 s off at most)
    assert.ok(spans[0] + spans[1] >= 4 - 0.1, `the second refresh two intervals after the start at least: ${spans}`);
    assert.ok(spans[2] >= 5, `the total spans the duration at least: ${spans}`);
    assert.ok(spans[0] + spans[1] <= spans[2] + 0.1, `the refreshes within the total: ${spans}`);
    // (the report's clock time to the second: up to 1 s off, and the span's 0.05)
    assert.ok(Math.abs(((clock[1] - clock[0] + 86400) % 86400) - spans[1]) <= 1.05, `the second span is the gap between the reports' clock times: ${reports[0].slice(0, 8)}, ${reports[1].slice(0, 8)}, ${spans[1]} s`);
    for (const [i, report] of reports.entries()) {
      const { syscalls, histograms, files, endpoints } = parseReport(report);
      // a refresh reads the kernel's maps one after the other: a call that ends in between is in
      // one map now and in the other at the next refresh; the total is read once tracing stopped
      const same = i === reports.length - 1 ? (a, b, what) => assert.equal(a, b, what) : (a, b, what) => assert.ok(Math.abs(a - b) <= 2, `${what}: ${a} and ${b}`);
      const page = files.get(info.file);
      const peer = endpoints.get(info.endpoint);
      assert.ok(page && page.count > 0 && page.errors === 0, `${info.file} opened:\n${report}`);
      assert.ok(peer && peer.count > 0 && peer.errors === 0, `${info.endpoint} connected to:\n${report}`);
      assert.ok(files.get(info.log)?.count > 0, `${info.log} opened`);
      // every request: a connect to the server, whose handler opens the page
      assert.ok(Math.abs(page.count - peer.count) <= 2, `one page open per connect: ${page.count} and ${peer.count}`);
      // the histograms (always shown for openat and connect) and the tables count the same calls
      same(histograms.get('connect'), [...endpoints.values()].reduce((n, e) => n + e.count, 0), 'the connects are those of the endpoints table');
      same(histograms.get('openat'), [...files.values()].reduce((n, f) => n + f.count, 0), 'the openats are those of the files table');
      for (const name of ['openat', 'connect']) {
        if (syscalls.has(name)) same(syscalls.get(name).count, histograms.get(name), `the ${name} row of the top syscalls`);
      }
      assert.ok(syscalls.size > 0 && syscalls.size <= 10, 'the 10 most frequent syscalls');
      // the workload's timer starts a request every 50 ms at most (every 49 ms of the event loop's millisecond clock):
      // no more in a report's span, and one it started just before that span
      assert.ok(peer.count <= (spans[i] + 0.05) * 1000 / 49 + 2, `one request every 50 ms at most: ${peer.count} in ${spans[i]} s`);
    }
    // the refreshes are parts of the total (which has the calls after the last refresh too)
    const [first, second, total] = reports.map((r) => parseReport(r).endpoints.get(info.endpoint).count);
    assert.ok(total >= first + second, `the total counts the refreshes' connects: ${first}, ${second}, total ${total}`);
    console.log(`# spans ${spans.join(', ')} s; connects ${first}, ${second}, total ${total}`);
  });

  test('--pid, --json: exactly the N requests of the workload', async () => {
    const N = 20;
    const workload = fork(WORKLOAD, ['--requests', String(N)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    try {
      const [info] = await once(workload, 'message');
      const tool = run(['--pid', String(workload.pid), '--json', '-i', '1']);
      await tool.ready;
      workload.send('go');
      const [done] = await once(workload, 'message');
      assert.deepEqual(done, { done: N });
      // two refreshes after the last request: the refreshes have all of them, and two spans follow one another
      const lines = () => tool.out.stdout.split('\n').length - 1;
      const before = lines();
      assert.ok(await waitFor(() => lines() >= before + 2, 20_000), `a refresh every second:\n${tool.out.stdout}`);
      tool.child.kill('SIGINT');
      const { code, stdout, stderr } = await tool.done;
      assert.equal(code, 0, stderr);
      const reports = stdout.trim().split('\n').map((l) => JSON.parse(l));
      const total = reports.at(-1);
      assert.equal(total.type, 'total');
      assert.equal(total.pid, workload.pid);
      assert.equal(total.comm, fs.readFileSync(`/proc/${workload.pid}/comm`, 'utf8').trim(), "the process's name ('node'; 'MainThread' on Node 24, 'node-MainThread' on Node 26)");
      assert.match(total.comm, /^(node|MainThread|node-MainThread)$/);

      const files = new Map(total.files.map((f) => [f.file, f]));
      assert.deepEqual(files.get(info.file), { file: info.file, count: N, errors: 0 }, 'the page, once per request');
      assert.deepEqual(files.get(info.log), { file: info.log, count: N, errors: 0 }, 'the log, once per request');
      assert.deepEqual(total.endpoints, [{ endpoint: info.endpoint, family: 'AF_INET', count: N, errors: 0 }], 'one connect per request, nothing else');

      const syscalls = new Map(total.syscalls.map((s) => [s.syscall, s]));
      const connect = syscalls.get('connect');
      assert.equal(connect.count, N);
      assert.equal(connect.buckets.reduce((n, b) => n + b.count, 0), N, 'the connect histogram counts N calls');
      const openat = syscalls.get('openat');
      assert.equal(openat.count, total.files.reduce((n, f) => n + f.count, 0), 'every openat is in the files table');
      assert.equal(openat.buckets.reduce((n, b) => n + b.count, 0), openat.count);
      assert.equal(syscalls.get('accept4').count, N, 'the server accepted N connections');

      // the refreshes are parts of the total: all of it, the last one after the last request
      const intervals = reports.slice(0, -1);
      assert.ok(intervals.length >= 2 && intervals.every((r) => r.type === 'interval'));
      const served = intervals.flatMap((r) => r.files).filter((f) => f.file === info.file).reduce((n, f) => n + f.count, 0);
      assert.equal(served, N);
      const connects = intervals.flatMap((r) => r.endpoints).reduce((n, e) => n + e.count, 0);
      assert.equal(connects, N);

      // a report's seconds are the gap between its time and the last report's (the start's, for the first and the
      // total): the interval at least for the first, and every n refreshes n intervals at least after the start
      const ms = (r) => Date.parse(r.time);
      const start = ms(intervals[0]) - intervals[0].seconds * 1000;
      assert.ok(Math.abs(ms(total) - total.seconds * 1000 - start) <= 1, `the total from the start: ${JSON.stringify(reports.map((r) => [r.time, r.seconds]))}`);
      let sum = 0;
      for (const [i, r] of intervals.entries()) {
        if (i > 0) assert.ok(Math.abs(ms(r) - ms(intervals[i - 1]) - r.seconds * 1000) <= 1, `${r.seconds} s since the last report: ${intervals[i - 1].time}, ${r.time}`);
        sum += r.seconds;
        assert.ok(sum >= i + 1 - 0.001 * (i + 1), `refresh ${i + 1} at ${sum} s: -i 1 after the start`);
      }
      assert.ok(total.seconds >= sum - 0.001 * intervals.length, `the total spans the refreshes: ${total.seconds} s, ${sum} s`);
      console.log(`# -i 1: ${intervals.map((r) => r.seconds).join(', ')} s, total ${total.seconds} s`);
    } finally {
      workload.kill();
    }
  });
});
