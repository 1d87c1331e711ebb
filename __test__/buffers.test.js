'use strict';
// Ring and perf buffers under load: every record accounted for (received +
// lost == made), bounded memory with a slow callback, records submitted
// without wakeups still delivered, and callback exceptions surfacing as
// 'uncaughtException' without stopping delivery.
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const { bpf, objectPath, waitFor, root, throwsCode, getppidLoop, streamer } = require('./helpers');

/**
 * Under qemu TCG (the kernel matrix's VMs: /init sets NODE_LIBBPF_QEMU_TCG)
 * the consumer can fall behind a traced loop that runs at full speed, so the
 * kernel's ring fills and drops records there (counted: ring_full); what
 * is asserted there is that every record is received or counted lost.
 * Natively, none is lost.
 */
const TCG = Boolean(process.env.NODE_LIBBPF_QEMU_TCG);

/** Waits until `count()` reaches `n`, as long as it keeps growing (2 s without progress ends it). */
async function waitForProgress(count, n, idleMs = 2000) {
  let last = -1;
  while (count() < n && count() !== last) {
    last = count();
    await waitFor(() => count() >= n, idleMs);
  }
  return count();
}

/** Checks that the seq numbers seen are distinct and in range. */
function checkSeqs(seqs, n) {
  assert.strictEqual(new Set(seqs).size, seqs.length, 'no record twice');
  assert.ok(seqs.every((s) => s >= 0 && s < n));
}

test(`ring buffer (4 MiB): 200k records at full speed, all received in order, ${TCG ? 'or counted lost (qemu TCG)' : 'none lost'}`, async (t) => {
  const N = 200_000;
  const { child, exited, go } = getppidLoop(N);
  const obj = streamer(child.pid);
  t.after(() => obj.close());
  let last = -1;
  let outOfOrder = 0;
  const rb = obj.getMap('events').openRingBuffer((d) => {
    const seq = Number(d.readBigUInt64LE(16));
    if (seq <= last) outOfOrder++;
    last = seq;
  });
  go();
  const { nsPerCall } = await exited;
  const ringFull = () => Number(obj.getGlobalVariable('ring_full'));
  await waitForProgress(() => rb.received + rb.lost + ringFull(), N);
  t.diagnostic(`traced loop: ${nsPerCall} ns per getppid; ${rb.received} received, ${rb.lost} dropped in user space, ${ringFull()} refused by the full ring`);
  assert.strictEqual(rb.received + rb.lost + ringFull(), N, 'every record received or counted lost');
  assert.strictEqual(outOfOrder, 0, 'in order');
  if (!TCG) {
    assert.strictEqual(ringFull(), 0);
    assert.strictEqual(rb.received, N);
    assert.strictEqual(rb.lost, 0);
  }
});

test('ring buffer with BPF_RB_NO_WAKEUP: delivered by the periodic pass', async (t) => {
  const N = 1000;
  const { child, exited, go } = getppidLoop(N);
  const obj = streamer(child.pid, { noWakeup: true });
  t.after(() => obj.close());
  const seqs = [];
  const rb = obj.getMap('events').openRingBuffer((d) => seqs.push(Number(d.readBigUInt64LE(16))), { pollInterval: 20 });
  go();
  await exited;
  assert.ok(await waitFor(() => seqs.length === N, 2000), `got ${seqs.length} of ${N}`);
  rb.close();
  checkSeqs(seqs, N);
});

test('perf buffer: every record received or reported lost, with a byte watermark', async (t) => {
  const N = 100_000;
  const { child, exited, go } = getppidLoop(N);
  const obj = streamer(child.pid, { sink: 2 });
  t.after(() => obj.close());
  const seqs = [];
  let lost = 0;
  const pb = obj.getMap('perf_events').openPerfBuffer((cpu, d) => seqs.push(Number(d.readBigUInt64LE(16))), {
    pageCount: 256, // 1 MiB per CPU, as the 4 MiB ring buffer of the other tests
    lost: (cpu, n) => (lost += n),
  });
  go();
  const { nsPerCall } = await exited;
  await waitForProgress(() => seqs.length + lost, N);
  pb.close();
  t.diagnostic(`perf buffer: ${seqs.length} received, ${lost} lost, traced loop ${nsPerCall} ns per call`);
  // a record the kernel could not write is a failed bpf_perf_event_output()
  // and one the buffer reports lost. Some are lost under qemu TCG, and
  // natively too where the producer fills a CPU's 1 MiB faster than the
  // poller comes back on 2 busy CPUs (this machine, 2026-11-25: 0 to 14% of
  // the 100k records, with this build and the one before it alike). `lost`
  // also counts the records the library dropped when JavaScript fell behind
  // (`dropped`), which the program cannot see.
  assert.strictEqual(Number(obj.getGlobalVariable('perf_errors')), lost - pb.dropped);
  assert.strictEqual(pb.lost, lost);
  assert.strictEqual(seqs.length + lost, N);
  assert.strictEqual(pb.received + pb.lost, N);
  checkSeqs(seqs, N);
});

test('a slow callback: records are dropped and counted, memory stays bounded', async (t) => {
  const N = 300_000;
  const { child, exited, go } = getppidLoop(N);
  const obj = streamer(child.pid);
  t.after(() => obj.close());
  let received = 0;
  let lostReported = 0;
  const rssBefore = process.memoryUsage().rss;
  let rssMax = rssBefore;
  const rb = obj.getMap('events').openRingBuffer(
    () => {
      received++;
      const end = process.hrtime.bigint() + 20_000n; // 20 µs of work per record
      while (process.hrtime.bigint() < end);
      if ((received & 1023) === 0) rssMax = Math.max(rssMax, process.memoryUsage().rss);
    },
    { queueSize: 4, lost: (n) => (lostReported += n) },
  );
  go();
  await exited;
  const ringFull = () => Number(obj.getGlobalVariable('ring_full'));
  await waitFor(() => received + rb.lost + ringFull() >= N, 20_000);
  rb.close();
  t.diagnostic(`slow callback: ${received} received, ${rb.lost} dropped here, ${ringFull()} refused by the full ring, RSS +${((rssMax - rssBefore) / 1e6).toFixed(1)} MB`);
  assert.strictEqual(received + rb.lost + ringFull(), N, 'received + lost == N exactly');
  assert.ok(rb.lost > 0, 'JavaScript fell behind and records were dropped');
  assert.strictEqual(lostReported, rb.lost, 'the lost callback reported every drop');
  assert.strictEqual(rb.dropped, rb.lost, "a ring buffer's losses are all the library's");
  assert.ok(rssMax - rssBefore < 100e6, 'RSS growth under 100 MB');
});

test('an exception in a callback is an uncaughtException; delivery goes on', async () => {
  const child = spawn(process.execPath, ['-e', `
    const bpf = require(${JSON.stringify(root)});
    const fs = require('fs');
    const obj = bpf.loadBpfProgram(${JSON.stringify(objectPath('openat'))});
    obj.setGlobalVariable('target_pid', process.pid);
    obj.setGlobalVariable('sinks', 1);
    obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
    obj.attachTracepoint('syscalls', 'sys_exit_openat', 'handle_exit_openat');
    let calls = 0, caught = 0;
    process.on('uncaughtException', (e) => { if (e.message === 'boom') caught++; });
    // (only the test's own opens: node itself may open a file meanwhile, Node 24 did once)
    obj.getMap('rb_events').openRingBuffer((data) => { if (!data.includes('/etc/hostname')) return; calls++; throw new Error('boom'); });
    for (let i = 0; i < 5; i++) fs.closeSync(fs.openSync('/etc/hostname', 'r'));
    setTimeout(() => { console.log(JSON.stringify({ calls, caught })); obj.close(); }, 500);
  `], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.strictEqual(code, 0);
  assert.deepStrictEqual(JSON.parse(out), { calls: 5, caught: 5 });
});

test('batch: true hands over whole batches: (data, ends), every record once', async (t) => {
  const N = 100_000;
  const { child, exited, go } = getppidLoop(N);
  const obj = streamer(child.pid);
  t.after(() => obj.close());
  const seqs = [];
  let calls = 0;
  const rb = obj.getMap('events').openRingBuffer((data, ends) => {
    calls++;
    let start = 0;
    for (const end of ends) {
      seqs.push(Number(data.readBigUInt64LE(start + 16)));
      start = end;
    }
  }, { batch: true });
  throwsCode(assert, () => obj.getMap('events').openRingBuffer(() => {}, { batch: true, type: 'stream_event' }), 'ERR_BPF_INVALID_VALUE', /batch and type do not go together/);
  go();
  await exited;
  const ringFull = () => Number(obj.getGlobalVariable('ring_full'));
  await waitForProgress(() => seqs.length + rb.lost + ringFull(), N);
  rb.close();
  assert.strictEqual(seqs.length + rb.lost + ringFull(), N, 'every record received or counted lost');
  if (!TCG) assert.strictEqual(seqs.length, N);
  checkSeqs(seqs, N);
  assert.ok(calls < N / 10, `${calls} calls for ${N} records`);
});
