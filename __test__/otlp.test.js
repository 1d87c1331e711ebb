'use strict';
// w.otlp(): a profile window as OpenTelemetry profiles (an OTLP
// ExportProfilesServiceRequest, profiles/v1development), decoded with
// protobufjs from the official protos (fixtures/opentelemetry-proto/, their
// commit in its README): a real window of this process, a window with
// labels and trace links, and push({ otlp }) into a local receiver.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const path = require('node:path');
const protobuf = require('protobufjs');
const bpf = require('..');
const { ProfileWindow } = require('../lib/service/profile');

const skip = process.getuid?.() !== 0 ? 'profiles load BPF programs: run the tests as root' : false;
if (skip) console.log(`# skipping otlp.test.js's profiles: ${skip}`);

const PROTOS = path.join(__dirname, 'fixtures', 'opentelemetry-proto');
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => path.join(PROTOS, target);
root.loadSync('opentelemetry/proto/collector/profiles/v1development/profiles_service.proto', { keepCase: false });
const Request = root.lookupType('opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest');

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';

/** An AnyValue as JavaScript. */
function value(v) {
  if (!v) return undefined;
  if (v.stringValue !== undefined && v.stringValue !== null && v.value === 'stringValue') return v.stringValue;
  if (v.value === 'intValue') return Number(v.intValue);
  if (v.value === 'doubleValue') return v.doubleValue;
  if (v.value === 'boolValue') return v.boolValue;
  if (v.value === 'arrayValue') return v.arrayValue.values.map(value);
  throw new Error(`an AnyValue of ${v.value}`);
}

/**
 * A decoded request, read through its dictionary: `{ resource, scope,
 * dict, profiles: [{ type, periodType, period, time, duration, attributes,
 * samples: [{ frames, attributes, link, values }] }] }`, frames innermost
 * first `{ name, file, line, column, inlined, mapping, address }`.
 */
function read(buf) {
  const req = Request.toObject(Request.decode(buf), { longs: String, oneofs: true, arrays: true, defaults: true });
  const d = req.dictionary;
  const str = (i) => d.stringTable[i];
  const attrs = (indices) => Object.fromEntries(indices.map((i) => [str(d.attributeTable[i].keyStrindex), value(d.attributeTable[i].value)]));
  const fn = (line) => {
    const f = d.functionTable[line.functionIndex];
    return { name: str(f.nameStrindex), file: str(f.filenameStrindex), line: Number(line.line), column: Number(line.column) };
  };
  const frame = (li) => {
    const loc = d.locationTable[li];
    const lines = loc.lines.map(fn);
    const own = lines.pop();
    return { ...own, inlined: lines, mapping: str(d.mappingTable[loc.mappingIndex].filenameStrindex), address: Number(loc.address) };
  };
  assert.equal(req.resourceProfiles.length, 1);
  const rp = req.resourceProfiles[0];
  assert.equal(rp.scopeProfiles.length, 1);
  const sp = rp.scopeProfiles[0];
  return {
    dict: d,
    resource: Object.fromEntries(rp.resource.attributes.map((kv) => [kv.key, value(kv.value)])),
    scope: { name: sp.scope.name, version: sp.scope.version },
    profiles: sp.profiles.map((p) => ({
      type: `${str(p.sampleType.typeStrindex)}/${str(p.sampleType.unitStrindex)}`,
      periodType: `${str(p.periodType.typeStrindex)}/${str(p.periodType.unitStrindex)}`,
      period: Number(p.period),
      time: BigInt(p.timeUnixNano),
      duration: Number(p.durationNano),
      id: Buffer.from(p.profileId),
      attributes: attrs(p.attributeIndices),
      samples: p.samples.map((s) => ({
        frames: d.stackTable[s.stackIndex].locationIndices.map(frame),
        attributes: attrs(s.attributeIndices),
        link: s.linkIndex ? { trace: Buffer.from(d.linkTable[s.linkIndex].traceId).toString('hex'), span: Buffer.from(d.linkTable[s.linkIndex].spanId).toString('hex') } : null,
        values: s.values.map(Number),
      })),
    })),
  };
}

/** What a frame shows in both: name, file, line, column, inlined functions' too. */
const shown = (f) => `${f.name}@${f.file}:${f.line}:${f.column}`;
const frameKey = (frames) => frames.map((f) => [...(f.inlined ?? []).map(shown), shown(f)].join('+')).join(';');
/** Totals by stack and thread: what w[kind] has, what the decoded profile has. */
function totalsOfWindow(stacks, kind) {
  const out = {};
  for (const s of stacks) {
    const k = `${s.thread}/${s.tid}/${s.threadKind}/${s.state ?? ''}|${frameKey(s.frames.map((f) => ({ ...f, file: f.file ?? f.module ?? '', line: f.line ?? 0, column: f.column ?? 0 })))}`;
    out[k] = (out[k] ?? 0) + (kind === 'cpu' ? s.count : s.ns);
  }
  return out;
}
function totalsOfProfile(samples) {
  const out = {};
  for (const s of samples) {
    const a = s.attributes;
    const k = `${a['thread.name']}/${a['thread.id']}/${a['node_libbpf.thread_kind']}/${a['node_libbpf.off_cpu_state'] ?? ''}|${frameKey(s.frames)}`;
    out[k] = (out[k] ?? 0) + s.values[0];
  }
  return out;
}

function burn(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) for (let i = 0; i < 1e4; i++) x += Math.sqrt(i + x);
  return x;
}

/** A window of this process with `fn` run (synchronously, on the main thread) inside it. */
async function windowOf(profiler, fn) {
  const w = profiler.collect({ seconds: 1.2 });
  await new Promise((r) => setTimeout(r, 20));
  fn();
  return w;
}

describe('a window of this process', { skip }, () => {
  let profiler;
  let w;
  before(async () => {
    profiler = bpf.profile();
    w = await windowOf(profiler, () => burn(800));
  });
  after(() => profiler?.close());

  test("both kinds in one request: the busy function's samples, every stack's total and frames as w.cpu's and w.offCpu's", () => {
    const got = read(w.otlp('all', { serviceName: 'otlp-test', attributes: { 'deployment.environment.name': 'test' } }));
    assert.deepEqual(got.resource, {
      'service.name': 'otlp-test',
      'process.pid': process.pid,
      'process.runtime.name': 'nodejs',
      'process.runtime.version': process.versions.node,
      'process.runtime.description': 'Node.js',
      'deployment.environment.name': 'test',
    });
    assert.equal(got.scope.name, 'node-libbpf');
    assert.equal(got.scope.version, require('../package.json').version);
    assert.equal(got.profiles.length, 2);
    const [cpu, off] = got.profiles;
    assert.equal(cpu.type, 'samples/count');
    assert.equal(cpu.periodType, 'cpu/nanoseconds');
    assert.equal(cpu.period, w.periodNs);
    assert.equal(off.type, 'off_cpu/nanoseconds');
    assert.equal(off.periodType, 'off_cpu/nanoseconds');
    for (const p of [cpu, off]) {
      assert.equal(p.time, w.startNs);
      assert.equal(p.duration, Math.round(w.durationNs));
      assert.equal(p.id.length, 16);
      assert.deepEqual(p.attributes['node_libbpf.notes'], w.notes);
    }
    assert.notDeepEqual(cpu.id, off.id);
    assert.deepEqual(totalsOfProfile(cpu.samples), totalsOfWindow(w.cpu, 'cpu'));
    assert.deepEqual(totalsOfProfile(off.samples), totalsOfWindow(w.offCpu, 'offCpu'));
    // the busy function: named in both, the same samples
    const inBurn = (frames) => frames.some((f) => f.name === 'burn' && f.file === __filename);
    const want = w.cpu.filter((s) => inBurn(s.frames)).reduce((n, s) => n + s.count, 0);
    assert.ok(want >= 10, `burn's samples in w.cpu: ${want} (of ${w.cpu.reduce((n, s) => n + s.count, 0)})`);
    assert.equal(
      cpu.samples.filter((s) => inBurn(s.frames)).reduce((n, s) => n + s.values[0], 0),
      want,
    );
    const burnFrame = cpu.samples.flatMap((s) => s.frames).find((f) => f.name === 'burn');
    assert.ok(burnFrame.line > 0 && burnFrame.column > 0, `burn at ${shown(burnFrame)}`);
    // the main thread's samples say so
    assert.ok(cpu.samples.some((s) => s.attributes['thread.id'] === process.pid && s.attributes['node_libbpf.thread_kind'] === 'main'));
  });

  test("one kind, the dictionary's zero entries, bad kinds and options", () => {
    const got = read(w.otlp());
    assert.deepEqual(got.profiles.map((p) => p.type), ['samples/count']);
    assert.equal(got.resource['service.name'], process.env.OTEL_SERVICE_NAME || 'unknown_service:node');
    assert.deepEqual(read(w.otlp('offCpu')).profiles.map((p) => p.type), ['off_cpu/nanoseconds']);
    const d = got.dict;
    assert.equal(d.stringTable[0], '');
    for (const table of ['mappingTable', 'locationTable', 'functionTable', 'attributeTable', 'stackTable']) {
      assert.deepEqual(JSON.parse(JSON.stringify(d[table][0], (k, v) => (v === '0' || v === 0 || v === null || (Array.isArray(v) && !v.length) ? undefined : v))), {}, `${table}[0] is the zero value`);
    }
    assert.deepEqual([Buffer.from(d.linkTable[0].traceId), Buffer.from(d.linkTable[0].spanId)], [Buffer.alloc(16), Buffer.alloc(8)]);
    // no duplicates in the tables the encoder dedups
    assert.equal(new Set(d.stringTable).size, d.stringTable.length);
    assert.equal(new Set(d.stackTable.map((s) => s.locationIndices.join())).size, d.stackTable.length);
    // bad on purpose: no kind is named heap, no option threads
    assert.throws(() => w.otlp(/** @type {any} */ ('heap')), { code: 'ERR_BPF_INVALID_VALUE', message: /'cpu', 'offCpu' or 'all'/ });
    assert.throws(() => w.otlp('cpu', /** @type {any} */ ({ threads: 'main' })), { code: 'ERR_BPF_UNKNOWN_NAME' });
    assert.throws(() => w.otlp('cpu', { serviceName: '' }), { code: 'ERR_BPF_INVALID_VALUE', message: /serviceName/ });
    assert.throws(() => w.otlp('cpu', { attributes: /** @type {any} */ ({ region: {} }) }), { code: 'ERR_BPF_INVALID_VALUE', message: /region/ });
  });

  test('labels taken at the sample (withLabels): attributes, and trace_id with span_id as the link', async () => {
    const w2 = await windowOf(profiler, () => profiler.withLabels({ route: '/burn', trace_id: TRACE, span_id: SPAN }, () => burn(600)));
    const [cpu] = read(w2.otlp('cpu')).profiles;
    const inBurn = cpu.samples.filter((s) => s.frames.some((f) => f.name === 'burn'));
    assert.ok(inBurn.length > 0, 'burn was sampled');
    for (const s of inBurn) {
      assert.equal(s.attributes.route, '/burn');
      assert.equal(s.attributes.trace_id, undefined, 'the trace id is the link, not an attribute');
      assert.deepEqual(s.link, { trace: TRACE, span: SPAN });
    }
    const want = w2.cpu.filter((s) => s.labels.route === '/burn').reduce((n, s) => n + s.count, 0);
    assert.equal(cpu.samples.filter((s) => s.attributes.route === '/burn').reduce((n, s) => n + s.values[0], 0), want);
  });
});

describe('a window with labels (built by hand: every value known)', () => {
  const mapping = { start: 0x400000, end: 0x800000, offset: 0x1000, path: '/usr/bin/node', file: true };
  const kernel = { start: 0, end: 0, offset: 0, path: '[kernel]', file: false };
  const leaf = { name: 'leaf', kind: 'js', file: '/app/a.js', line: 12, column: 5, address: 0x401000, mapping, inlined: [{ name: 'inner', kind: 'js', file: '/app/b.js', line: 3, column: 9 }] };
  // (a lone surrogate, as a hostile process's memory may give: protobuf strings are UTF-8, it is U+FFFD there)
  const main = { name: 'main\ud800', kind: 'native', module: '/usr/bin/node', address: 0x402000, mapping };
  const read_ = { name: 'pipe_read', kind: 'kernel', address: 0xffffffff81000000, mapping: kernel };
  const thread = { tid: 1234, thread: 'node', threadKind: 'main' };
  const window = new ProfileWindow({
    startNs: 1_700_000_000_123_456_789n,
    durationNs: 10e9,
    periodNs: 10_101_010,
    frequency: 99,
    notes: ['a note'],
    cpu: [
      { ...thread, frames: [leaf, main], count: 5, labels: { route: '/a', trace_id: TRACE, span_id: SPAN, n: 7, ratio: 0.5 } },
      // the same stack and labels once more (two kernel stacks that name alike): one sample, 5 + 2
      { ...thread, frames: [leaf, main], count: 2, labels: { route: '/a', trace_id: TRACE, span_id: SPAN, n: 7, ratio: 0.5 } },
      { ...thread, frames: [leaf, main], count: 3, labels: {} },
      // not an id (not hex, or all zeros): attributes, no link; a label named as ours: ours
      { ...thread, frames: [main], count: 4, labels: { trace_id: 'not-a-trace-id', span_id: SPAN, 'thread.name': 'forged' } },
      { ...thread, frames: [main], count: 1, labels: { trace_id: '0'.repeat(32), span_id: SPAN } },
    ],
    offCpu: [{ ...thread, frames: [read_, leaf, main], count: 2, ns: 61_000_000, state: 'blocked', labels: { route: '/b', trace_id: TRACE.toUpperCase(), span_id: SPAN } }],
  });

  test('labels as attributes (numbers as numbers), trace_id and span_id as a link (16 and 8 bytes), samples of one identity merged', () => {
    const got = read(window.otlp('all'));
    const [cpu, off] = got.profiles;
    assert.equal(cpu.time, 1_700_000_000_123_456_789n);
    assert.equal(cpu.period, 10_101_010);
    const ours = { 'thread.name': 'node', 'thread.id': 1234, 'node_libbpf.thread_kind': 'main' };
    assert.deepEqual(
      cpu.samples.map((s) => ({ attributes: s.attributes, link: s.link, values: s.values, frames: s.frames.map((f) => f.name.replace('\ufffd', '')) })),
      [
        { attributes: { ...ours, route: '/a', n: 7, ratio: 0.5 }, link: { trace: TRACE, span: SPAN }, values: [7], frames: ['leaf', 'main'] },
        { attributes: ours, link: null, values: [3], frames: ['leaf', 'main'] },
        { attributes: { ...ours, trace_id: 'not-a-trace-id', span_id: SPAN }, link: null, values: [4], frames: ['main'] },
        { attributes: { ...ours, trace_id: '0'.repeat(32), span_id: SPAN }, link: null, values: [1], frames: ['main'] },
      ],
    );
    assert.deepEqual(off.samples.length, 1);
    assert.deepEqual(off.samples[0].attributes, { ...ours, 'node_libbpf.off_cpu_state': 'blocked', route: '/b' });
    assert.deepEqual(off.samples[0].link, { trace: TRACE, span: SPAN }, 'upper-case hex: the same link');
    assert.deepEqual(off.samples[0].values, [61_000_000]);
    // one link besides the zero one: both profiles share the dictionary
    assert.equal(got.dict.linkTable.length, 2);
    // frames: inlined functions as lines of one location, before the physical one; mappings; kernel frames
    const [k, l, m] = off.samples[0].frames;
    assert.deepEqual(l, { name: 'leaf', file: '/app/a.js', line: 12, column: 5, inlined: [{ name: 'inner', file: '/app/b.js', line: 3, column: 9 }], mapping: '/usr/bin/node', address: 0x401000 });
    assert.deepEqual(m, { name: 'main\ufffd', file: '/usr/bin/node', line: 0, column: 0, inlined: [], mapping: '/usr/bin/node', address: 0x402000 });
    assert.equal(k.name, 'pipe_read');
    assert.equal(k.mapping, '[kernel]');
    assert.equal(BigInt(got.dict.locationTable[got.dict.stackTable[1].locationIndices[0]].address), 0x401000n);
    assert.equal(Number(got.dict.mappingTable[1].fileOffset), 0x1000);
    assert.equal(Number(got.dict.mappingTable[1].memoryLimit), 0x800000);
  });
});

describe('push({ otlp })', { skip }, () => {
  /** A receiver answering `status` with `body`: its requests. */
  async function receiver(status, body = '') {
    const got = [];
    const server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        got.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(body);
      });
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', () => r(undefined)));
    return { got, server, url: `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}` };
  }

  /** Pushes until `got` has a request (or an error was heard), then stops. */
  async function pushOnce(profiler, options, got) {
    const errors = [];
    const push = profiler.push({ name: 'otlp-push-test', every: 0.5, ...options, onError: (e) => errors.push(e) });
    const until = Date.now() + 20_000;
    while (!got.length && !errors.length && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    await push.stop();
    return { errors, pushed: push.pushed };
  }

  test('POST {url}/v1development/profiles, application/x-protobuf, the headers; the body decodes; a URL with a path as given', async () => {
    const profiler = bpf.profile();
    const r = await receiver(200);
    try {
      const { errors, pushed } = await pushOnce(profiler, { otlp: r.url, labels: { 'deployment.environment.name': 'test' }, headers: { authorization: 'Bearer t0k3n', 'Content-Type': 'text/plain' } }, r.got);
      assert.deepEqual(errors, []);
      assert.ok(pushed >= 1);
      const [g] = r.got;
      assert.equal(g.method, 'POST');
      assert.equal(g.url, '/v1development/profiles');
      assert.equal(g.headers['content-type'], 'application/x-protobuf');
      assert.equal(g.headers.authorization, 'Bearer t0k3n');
      const got = read(g.body);
      assert.equal(got.resource['service.name'], 'otlp-push-test');
      assert.equal(got.resource['deployment.environment.name'], 'test', "a resource attribute's name (Pyroscope's labels are identifiers)");
      assert.deepEqual(got.profiles.map((p) => p.type), ['samples/count', 'off_cpu/nanoseconds']);
      // a path of its own: posted there (a signal-specific endpoint); one kind: one profile
      r.got.length = 0;
      const again = await pushOnce(profiler, { otlp: `${r.url}/otlp/profiles`, kinds: ['offCpu'] }, r.got);
      assert.deepEqual(again.errors, []);
      assert.equal(r.got[0].url, '/otlp/profiles');
      assert.deepEqual(read(r.got[0].body).profiles.map((p) => p.type), ['off_cpu/nanoseconds']);
    } finally {
      r.server.close();
      profiler.close();
    }
  });

  test("an answer not 2xx reaches onError: its status and the body's first 200 bytes; bad endpoints", async () => {
    const profiler = bpf.profile();
    const reason = `profiles are not enabled here ${'x'.repeat(300)}`;
    const r = await receiver(500, reason);
    try {
      const { errors, pushed } = await pushOnce(profiler, { otlp: r.url }, r.got);
      assert.equal(pushed, 0);
      // (stop() pushes the window it ends: a second error, the same)
      assert.ok(errors.length >= 1 && errors.length === r.got.length, `${errors.length} errors, ${r.got.length} requests`);
      for (const e of /** @type {NodeJS.ErrnoException[]} */ (errors)) {
        assert.equal(e.code, 'ERR_BPF_PUSH');
        assert.equal(e.message, `POST ${r.url}/v1development/profiles: HTTP 500: ${JSON.stringify(reason.slice(0, 200))} (cut at 200 bytes)`);
      }
      for (const otlp of ['collector:4318', 'ftp://collector', '']) {
        assert.throws(() => profiler.push({ otlp, name: 'x' }), { code: 'ERR_BPF_INVALID_VALUE', message: /otlp must be an OTLP\/HTTP endpoint/ }, otlp);
      }
      assert.throws(() => profiler.push({ name: 'x' }), { code: 'ERR_BPF_INVALID_VALUE', message: /or otlp/ });
      // bad on purpose: a resource attribute is a string, a number or a boolean
      assert.throws(() => profiler.push({ otlp: r.url, name: 'x', labels: /** @type {any} */ ({ region: {} }) }), { code: 'ERR_BPF_INVALID_VALUE', message: /profiler\.push\(\): resource attribute region/ });
      assert.equal(profiler.busy, false, 'no push started');
    } finally {
      r.server.close();
      profiler.close();
    }
  });
});
