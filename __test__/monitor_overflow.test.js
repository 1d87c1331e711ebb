'use strict';
// The monitor's tables in the kernel are bounded (files and connects: 4,096
// keys): once full, a new key is refused, and the refusal is counted
// (read().tableOverflows, node_libbpf_monitor_table_overflow_total{table}).
// Each scenario runs in a child process of its own, whose opens and
// connects are only the scenario's. Also: a whole-map read of a hash map
// bigger than a batch returns every entry (it once stopped at the first
// short batch: 511 of 4,096).
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { bpf, objectPath } = require('./helpers');

const ROOT = path.join(__dirname, '..');
const skip = process.getuid?.() !== 0 ? 'the monitor loads BPF programs: run the tests as root' : false;
if (skip) console.log(`# skipping monitor_overflow.test.js: ${skip}`);

/** Runs `body` (a function's source, given `bpf`) in a new node process; its JSON result. */
function child(body) {
  const script = `const bpf = require(${JSON.stringify(ROOT)});
    (async () => { const out = await (${body})(bpf); process.stdout.write(JSON.stringify(out) + '\\n'); process.exit(0); })()
      .catch((e) => { process.stdout.write(JSON.stringify({ error: { code: e.code, message: e.message, stack: e.stack } }) + '\\n'); process.exit(0); });`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, `child exited ${r.status} ${r.signal}: ${r.stderr}`);
  const out = JSON.parse(r.stdout.trim().split('\n').at(-1));
  assert.equal(out.error, undefined, JSON.stringify(out.error));
  return out;
}

const EXTRA = 50; // distinct names past the table's size

test('files: past 4,096 distinct paths each new path\'s open is counted as an overflow, exactly, in read() and in a prom-client scrape', { skip }, () => {
  const out = child(`async (bpf) => {
    const fs = require('node:fs');
    const os = require('node:os');
    const path = require('node:path');
    const { Registry } = require('prom-client');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-overflow-'));
    const name = (i) => path.join(dir, 'f' + i);
    const open = (file) => { try { fs.closeSync(fs.openSync(file, 'r')); } catch {} };
    const m = bpf.monitor({ files: true, connects: true, offCpu: false, tcpRetransmits: false, top: 4096 });
    const registry = new Registry();
    m.registerPrometheus(registry); // (before the table fills: its require opens files)
    const size = m.tableSizes.files;
    const n = size + ${EXTRA};
    for (let i = 0; i < n; i++) open(name(i));
    const full = m.read();
    const ours = new Set(Array.from({ length: n }, (_, i) => name(i)));
    const kept = full.files.filter((f) => ours.has(f.path));
    // then: a path not in the table, K times (each refused), and one that is, J times (counted)
    const absent = Array.from({ length: n }, (_, i) => name(i)).find((f) => !kept.some((k) => k.path === f));
    for (let i = 0; i < 5; i++) open(absent);
    for (let i = 0; i < 3; i++) open(kept[0].path);
    const after = m.read();
    const scrape = await registry.metrics();
    m.close();
    fs.rmSync(dir, { recursive: true });
    return {
      size, n, entries: full.files.length, kept: kept.length, overflows: full.tableOverflows,
      after: after.tableOverflows, keptAfter: after.files.find((f) => f.path === kept[0].path).count, keptBefore: kept[0].count,
      lines: scrape.split('\\n').filter((l) => l.startsWith('node_libbpf_monitor_table_overflow_total')),
    };
  }`);
  assert.equal(out.size, 4096);
  assert.equal(out.entries, out.size, 'the table is full, and read() lists every entry of it');
  // every open of a path the table had no room for was refused and counted
  assert.equal(out.overflows.files, out.n - out.kept);
  assert.ok(out.overflows.files >= EXTRA, `${out.overflows.files} >= ${EXTRA}`);
  assert.equal(out.overflows.connects, 0);
  assert.deepEqual(Object.keys(out.overflows), ['files', 'connects']);
  assert.equal(out.after.files, out.overflows.files + 5, 'five more opens of a path not in the full table: five more refused');
  assert.equal(out.keptAfter, out.keptBefore + 3, 'a path in the table still counts');
  assert.deepEqual(out.lines.sort(), [
    `node_libbpf_monitor_table_overflow_total{table="connects"} 0`,
    `node_libbpf_monitor_table_overflow_total{table="files"} ${out.after.files}`,
  ]);
});

test('connects: past 4,096 distinct endpoints each new endpoint\'s connect is counted as an overflow, exactly, in read() and through OpenTelemetry', { skip }, () => {
  const out = child(`async (bpf) => {
    const fs = require('node:fs');
    const net = require('node:net');
    const os = require('node:os');
    const path = require('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nlb-'));
    const name = (i) => path.join(dir, 's' + i); // no such socket: connect() fails with ENOENT
    const connect = (file) => new Promise((resolve) => net.connect(file).on('error', resolve).on('connect', resolve));
    const m = bpf.monitor({ connects: true, offCpu: false, tcpRetransmits: false, top: 4096 });
    const size = m.tableSizes.connects;
    const n = size + ${EXTRA};
    for (let i = 0; i < n; i += 256) await Promise.all(Array.from({ length: Math.min(256, n - i) }, (_, j) => connect(name(i + j))));
    const full = m.read();
    const ours = new Set(Array.from({ length: n }, (_, i) => 'unix:' + name(i)));
    const kept = full.connects.filter((c) => ours.has(c.endpoint));
    const { metricProducer } = require(${JSON.stringify(path.join(ROOT, 'lib', 'service', 'opentelemetry'))});
    const { resourceMetrics } = await metricProducer(m).collect();
    const metric = resourceMetrics.scopeMetrics[0].metrics.find((x) => x.descriptor.name === 'node_libbpf.monitor.table.overflows');
    m.close();
    fs.rmSync(dir, { recursive: true });
    return {
      n, size, entries: full.connects.length, kept: kept.length, errors: kept.every((c) => c.count === 1 && c.errors === 1), overflows: full.tableOverflows,
      otel: metric && metric.dataPoints.map((p) => [p.attributes, p.value]),
    };
  }`);
  assert.equal(out.size, 4096);
  assert.equal(out.entries, out.size, 'the table is full, and read() lists every entry of it');
  assert.ok(out.errors, 'each kept endpoint: one connect, failed');
  assert.deepEqual(out.overflows, { connects: out.n - out.kept });
  assert.ok(out.overflows.connects >= EXTRA);
  assert.deepEqual(out.otel, [[{ table: 'connects' }, out.overflows.connects]]);
});

test('getBatch and lookupAndDeleteBatch of a hash map of 4,096 entries (16 batches, some short) return every entry, once', () => {
  const obj = bpf.loadBpfProgram(objectPath('big_hash'));
  try {
    const m = obj.getMap('big');
    for (let i = 0; i < 4096; i++) m.set(i, BigInt(i) * 3n);
    const all = m.getBatch();
    assert.equal(all.length, 4096);
    assert.equal(new Set(all.map(([k]) => k)).size, 4096);
    assert.ok(all.every(([k, v]) => v === BigInt(k) * 3n));
    assert.equal(m.size, 4096, 'getBatch deletes nothing');
    const drained = m.lookupAndDeleteBatch();
    assert.equal(drained.length, 4096);
    assert.equal(new Set(drained.map(([k]) => k)).size, 4096);
    assert.equal(m.size, 0, 'lookupAndDeleteBatch empties the map');
  } finally {
    obj.close();
  }
});
