'use strict';
// The example tracers of examples/, run for real against their built-in
// workloads: each must report the calls its workload is known to make.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { workloadOf } = require('./helpers');

const EXAMPLES = path.join(__dirname, '..', 'examples');
const RUN_TIMEOUT_MS = 30_000;

const skip = process.getuid?.() !== 0 ? 'the examples load BPF programs: run the tests as root' : false;
if (skip) console.log(`# skipping examples.test.js: ${skip}`);

/** Runs an example on its built-in workload (--demo) to its end (killed after RUN_TIMEOUT_MS); `signalAfter`: send SIGTERM once it has printed a record. */
function runExample(script, args, { signalAfter = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(EXAMPLES, script), '--demo', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      stdout += chunk;
      if (signalAfter && stdout.includes('\n')) {
        signalAfter = false;
        child.kill('SIGTERM');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} ${args.join(' ')} still running after ${RUN_TIMEOUT_MS} ms; stderr:\n${stderr}`));
    }, RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, workload: workloadOf(stderr) });
    });
  });
}

const LINE = /^\[PID:(\d+) TID:(\d+) COMM:(.*?)\] (\w+) took (\d+\.\d{3}) ms \(ret=(-?\w+)(?: (E[A-Z]+))?\)(?: (.*))?$/;
const SUMMARY_HEADER = /^syscall +count +p50 µs +p99 µs +max µs$/;
const SUMMARY_ROW = /^(\w+) +(\d+) +([\d.]+|-) +([\d.]+|-) +([\d.]+|-)$/;

/** The text output: its records and its summary rows; fails on any other line. */
function parseText(stdout) {
  const events = [];
  const summary = new Map();
  let inSummary = false;
  for (const line of stdout.split('\n')) {
    let m;
    if (line === '') continue;
    if (!inSummary && (m = LINE.exec(line))) {
      const [, pid, tid, comm, syscall, ms, ret, errno, details] = m;
      events.push({ pid: Number(pid), tid: Number(tid), comm, syscall, ms: Number(ms), ret, errno, details: details ?? '', line });
    } else if (!inSummary && SUMMARY_HEADER.test(line)) {
      inSummary = true;
    } else if (inSummary && (m = SUMMARY_ROW.exec(line))) {
      const [, syscall, count, p50, p99, max] = m;
      summary.set(syscall, { count: Number(count), p50: Number(p50), p99: Number(p99), max: Number(max) });
    } else {
      assert.fail(`unexpected output line: ${JSON.stringify(line)}`);
    }
  }
  return { events, summary };
}

/** The --json output: records, then one `{ summary }` line. */
function parseJson(stdout) {
  const objects = stdout.trim().split('\n').map((line) => JSON.parse(line));
  const last = objects.pop();
  assert.ok(last.summary, `the last line is the summary: ${JSON.stringify(last)}`);
  for (const o of objects) assert.equal(o.summary, undefined, 'one summary, at the end');
  return { events: objects, summary: new Map(last.summary.map((row) => [row.syscall, row])) };
}

/** A clean exit, with the workload named on stderr. */
function assertRun(run) {
  assert.equal(run.code, 0, `exit code; stderr:\n${run.stderr}`);
  assert.ok(run.workload, `the example names its workload on stderr:\n${run.stderr}`);
  assert.match(run.stderr, /^Tracing pid \d+ /m);
}

/** The workload's pid in every record, and a summary row per syscall counting them. */
function assertEventsAndSummary(run, { events, summary }, syscalls) {
  assert.ok(events.length > 0, 'records were printed');
  for (const e of events) {
    assert.equal(e.pid, run.workload.pid, `every record is of the workload: ${JSON.stringify(e)}`);
    assert.equal(e.comm, 'node');
    assert.ok(syscalls.includes(e.syscall), `a traced syscall: ${e.syscall}`);
  }
  assert.deepEqual([...summary.keys()], syscalls, 'a summary row per syscall');
  for (const name of syscalls) {
    const row = summary.get(name);
    const count = events.filter((e) => e.syscall === name).length;
    assert.ok(count > 0, `the workload made ${name} calls`);
    assert.equal(row.count, count, `the ${name} row counts its records`);
    const [p50, p99, max] = row.p50_us === undefined ? [row.p50, row.p99, row.max] : [row.p50_us, row.p99_us, row.max_us];
    assert.ok(p50 >= 0 && p50 <= p99 && p99 <= max, `${name}: 0 <= p50 <= p99 <= max: ${JSON.stringify(row)}`);
  }
}

/** The workload is gone after the example exits (killed by it), within a second. */
async function assertWorkloadGone(pid) {
  for (let i = 0; i < 20; i++) {
    try {
      process.kill(pid, 0);
    } catch (err) {
      assert.equal(err.code, 'ESRCH');
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`workload ${pid} still runs after the example exited`);
}

describe('examples/trace_file_io.js', { skip }, () => {
  const SYSCALLS = ['openat', 'read', 'write', 'close'];

  test('text: the workload file opened, written, read and closed', async () => {
    const run = await runExample('trace_file_io.js', ['--duration', '2']);
    assertRun(run);
    const out = parseText(run.stdout);
    assertEventsAndSummary(run, out, SYSCALLS);
    const { file, bytes } = run.workload.info;
    assert.match(file, /node-libbpf-file-io-.*\/data\.txt$/);

    const opens = out.events.filter((e) => e.syscall === 'openat' && e.details.startsWith(`file=${file} `));
    const writeOpen = opens.find((e) => e.details.endsWith(' flags=O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC mode=0666'));
    const readOpen = opens.find((e) => e.details.endsWith(' flags=O_RDONLY|O_CLOEXEC'));
    assert.ok(writeOpen && readOpen, `openat of ${file} for writing and for reading:\n${opens.map((e) => e.line).join('\n')}`);
    for (const open of [writeOpen, readOpen]) {
      const fd = Number(open.ret);
      assert.ok(fd >= 0, `openat succeeded: ${open.line}`);
      assert.ok(out.events.some((e) => e.syscall === 'close' && e.ret === '0' && e.details === `fd=${fd}`), `close(${fd})`);
    }
    const hasIo = (syscall, fd) => out.events.some((e) => e.syscall === syscall && e.ret === String(bytes) && e.details === `fd=${fd}`);
    assert.ok(hasIo('write', writeOpen.ret), `write of ${bytes} bytes to fd ${writeOpen.ret}`);
    assert.ok(hasIo('read', readOpen.ret), `read of ${bytes} bytes from fd ${readOpen.ret}`);

    await assertWorkloadGone(run.workload.pid);
    assert.ok(!fs.existsSync(path.dirname(file)), 'the workload removed its temp directory');
  });

  test('--json: the same calls as objects', async () => {
    const run = await runExample('trace_file_io.js', ['--duration', '2', '--json']);
    assertRun(run);
    const out = parseJson(run.stdout);
    assertEventsAndSummary(run, out, SYSCALLS);
    const { file, bytes } = run.workload.info;
    const open = out.events.find((e) => e.syscall === 'openat' && e.filename === file && e.flags === 'O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC');
    assert.ok(open, `openat of ${file} for writing`);
    assert.equal(open.mode, 0o666);
    assert.ok(open.ret >= 0 && open.duration_ns > 0);
    assert.ok(out.events.some((e) => e.syscall === 'write' && e.fd === open.ret && e.ret === bytes));
    assert.ok(out.events.some((e) => e.syscall === 'read' && e.ret === bytes));
    assert.ok(out.events.some((e) => e.syscall === 'close' && e.fd === open.ret && e.ret === 0));
    await assertWorkloadGone(run.workload.pid);
  });

  test('SIGTERM stops it: summary printed, workload killed', async () => {
    const run = await runExample('trace_file_io.js', [], { signalAfter: true });
    assertRun(run);
    const out = parseText(run.stdout);
    assert.deepEqual([...out.summary.keys()], SYSCALLS);
    assert.ok(out.events.length > 0);
    await assertWorkloadGone(run.workload.pid);
  });
});

describe('examples/trace_network_latency.js', { skip }, () => {
  const SYSCALLS = ['socket', 'connect'];
  const SOCKET_TYPE = 'SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC';

  test('text: TCP sockets and connects to 127.0.0.1 and ::1', async () => {
    const run = await runExample('trace_network_latency.js', ['--duration', '2']);
    assertRun(run);
    const out = parseText(run.stdout);
    assertEventsAndSummary(run, out, SYSCALLS);
    const { ipv4, ipv6 } = run.workload.info;
    assert.match(ipv4, /^127\.0\.0\.1:\d+$/);
    assert.match(ipv6, /^\[::1\]:\d+$/);

    for (const [family, dest] of [['AF_INET', ipv4], ['AF_INET6', ipv6]]) {
      const connects = out.events.filter((e) => e.syscall === 'connect' && e.details.endsWith(` to ${dest}`));
      assert.ok(connects.length > 0, `connect to ${dest}`);
      for (const c of connects) {
        // non-blocking: EINPROGRESS, or 0 when it completed at once
        assert.ok(c.ret === '0' || (c.ret === '-115' && c.errno === 'EINPROGRESS'), c.line);
      }
      const fd = /^fd=(\d+) /.exec(connects[0].details)[1];
      assert.ok(
        out.events.some((e) => e.syscall === 'socket' && e.ret === fd && e.details === `${family} ${SOCKET_TYPE} protocol=0`),
        `the socket(${family}, ${SOCKET_TYPE}) that returned fd ${fd}`,
      );
    }
    await assertWorkloadGone(run.workload.pid);
  });

  test('--json: addresses and ports decoded', async () => {
    const run = await runExample('trace_network_latency.js', ['--duration', '2', '--json']);
    assertRun(run);
    const out = parseJson(run.stdout);
    assertEventsAndSummary(run, out, SYSCALLS);
    const { ipv4, ipv6 } = run.workload.info;
    const c4 = out.events.find((e) => e.syscall === 'connect' && e.family === 'AF_INET');
    const c6 = out.events.find((e) => e.syscall === 'connect' && e.family === 'AF_INET6');
    assert.equal(`${c4.addr}:${c4.port}`, ipv4);
    assert.equal(`[${c6.addr}]:${c6.port}`, ipv6);
    for (const c of [c4, c6]) {
      assert.ok(c.ret === 0 || c.ret === -115, `connect returned ${c.ret}`);
      assert.ok(out.events.some((e) => e.syscall === 'socket' && e.ret === c.fd && e.family === c.family && e.type === SOCKET_TYPE));
    }
    await assertWorkloadGone(run.workload.pid);
  });
});

describe('examples/trace_mem_latency.js', { skip }, () => {
  const SYSCALLS = ['mmap', 'munmap', 'madvise'];

  test('text: the workload Buffers mapped and unmapped, madvise advice named', async () => {
    const run = await runExample('trace_mem_latency.js', ['--duration', '2']);
    assertRun(run);
    const out = parseText(run.stdout);
    assertEventsAndSummary(run, out, SYSCALLS);
    const { bufferSize } = run.workload.info;

    // each Buffer: glibc mmaps its size plus a page of header
    const MMAP = /^addr=0x0 len=(\d+) PROT_READ\|PROT_WRITE MAP_PRIVATE\|MAP_ANONYMOUS$/;
    const buffers = out.events.filter((e) => {
      const m = e.syscall === 'mmap' && MMAP.exec(e.details);
      return m && Number(m[1]) >= bufferSize && Number(m[1]) < bufferSize + 65536;
    });
    assert.ok(buffers.length >= 2, `mmap of the ${bufferSize}-byte Buffers:\n${run.stdout.slice(0, 2000)}`);
    for (const b of buffers) assert.match(b.ret, /^0x[0-9a-f]+$/, 'mmap returns the address, in hex');
    const len = MMAP.exec(buffers[0].details)[1];
    const freed = buffers.filter((b) => out.events.some((e) => e.syscall === 'munmap' && e.ret === '0' && e.details === `addr=${b.ret} len=${len}`));
    assert.ok(freed.length > 0, 'munmap of a Buffer, at the address its mmap returned');

    const advice = out.events.filter((e) => e.syscall === 'madvise');
    for (const e of advice) assert.match(e.details, /^addr=0x[0-9a-f]+ len=\d+ MADV_[A-Z_]+$/);
    assert.ok(out.events.some((e) => e.syscall === 'mmap' && / PROT_NONE MAP_PRIVATE\|MAP_ANONYMOUS\|MAP_NORESERVE$/.test(e.details)), "V8's reservations");
    await assertWorkloadGone(run.workload.pid);
  });

  test('--json: flags named, addresses as numbers', async () => {
    const run = await runExample('trace_mem_latency.js', ['--duration', '2', '--json']);
    assertRun(run);
    const out = parseJson(run.stdout);
    assertEventsAndSummary(run, out, SYSCALLS);
    const { bufferSize } = run.workload.info;
    const buffers = out.events.filter(
      (e) => e.syscall === 'mmap' && e.len >= bufferSize && e.len < bufferSize + 65536 && e.prot === 'PROT_READ|PROT_WRITE' && e.flags === 'MAP_PRIVATE|MAP_ANONYMOUS',
    );
    assert.ok(buffers.length >= 2);
    assert.ok(buffers.every((b) => b.fd === -1 && b.addr === 0 && b.ret > 0));
    assert.ok(buffers.some((b) => out.events.some((e) => e.syscall === 'munmap' && e.addr === b.ret && e.len === b.len && e.ret === 0)));
    assert.ok(out.events.filter((e) => e.syscall === 'madvise').every((e) => /^MADV_[A-Z_]+$/.test(e.advice)));
    await assertWorkloadGone(run.workload.pid);
  });
});
