'use strict';
// Which route costs what: a real fastify service profiles itself
// (__test__/fixtures/routes/server.js) under a loopback load of three
// async routes, each handler under bpf.withLabels({ route }): A burns the
// CPU, B three times A's work in the same function, C waits 50 ms in a
// sync read of a FIFO. The window's samples are read back by route: from
// its stacks, and from its pprof through `go tool pprof -tags`; with
// profile({ traceContext: true }), against the spans OpenTelemetry finished.
const { describe, test, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const FIXTURES = path.join(__dirname, 'fixtures', 'routes');
/** burn()'s iterations for route A (B: three times as many): ~20 ms of CPU */
const N = 1e6;
const WINDOW_S = 5;
const FIFO_MS = 50;

const goOk = spawnSync('go', ['version']).status === 0;
const skip = process.getuid?.() !== 0 ? 'profiles load BPF programs: run the tests as root' : !goOk ? 'no go toolchain: go tool pprof reads the profiles' : false;
if (skip) console.log(`# skipping routes.test.js: ${skip}`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'routes-test-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A child process whose stdout lines come as JSON objects, one at a time. */
function child(args, env) {
  const proc = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const pending = [];
  const got = [];
  readline.createInterface({ input: proc.stdout }).on('line', (line) => {
    let value;
    try {
      value = JSON.parse(line);
    } catch {
      return; // (not ours)
    }
    if (pending.length) pending.shift().resolve(value);
    else got.push(value);
  });
  proc.on('exit', (code) => {
    for (const p of pending.splice(0)) p.reject(new Error(`${args.join(' ')} exited ${code}: ${stderr}`));
  });
  return {
    proc,
    next: (ms = 60_000) =>
      got.length
        ? Promise.resolve(got.shift())
        : new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`${args.join(' ')}: no line in ${ms} ms: ${stderr}`)), ms);
            pending.push({ resolve: (v) => (clearTimeout(timer), resolve(v)), reject: (e) => (clearTimeout(timer), reject(e)) });
          }),
    stop: () => proc.kill('SIGTERM'),
  };
}

/**
 * One connection requesting /a, /b, /c in turn until stopped (so each
 * route runs as often as the others, give or take one); every other round
 * with a traceparent (a remote parent: the service's span is still its
 * local root). Returns stop(), which resolves with the rounds done.
 */
function load(port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let stopped = false;
  const get = (route, traced) =>
    new Promise((resolve, reject) => {
      const headers = traced ? { traceparent: `00-${'ab'.repeat(8)}${(Date.now() % 1e8).toString(16).padStart(16, '0')}-${'cd'.repeat(8)}-01` } : {};
      const req = http.get({ host: '127.0.0.1', port, path: `/${route}`, agent, headers }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET /${route}: ${res.statusCode}`))));
      });
      req.on('error', reject);
    });
  const loop = (async () => {
    let rounds = 0;
    while (!stopped) {
      for (const route of ['a', 'b', 'c']) await get(route, rounds % 2 === 1);
      rounds++;
    }
    agent.destroy();
    return rounds;
  })();
  return () => {
    stopped = true;
    return loop;
  };
}

/** Runs the service under load for one window: its JSON and the pprof files' directory. */
async function routesWindow(env = {}) {
  const dir = fs.mkdtempSync(path.join(tmp, 'window-'));
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const writer = spawn(process.execPath, [path.join(FIXTURES, 'writer.js'), fifo, String(FIFO_MS)], { stdio: 'ignore' });
  const server = child([path.join(FIXTURES, 'server.js')], { ROUTES_FIFO: fifo, ROUTES_N: String(N), ROUTES_DIR: dir, ...env });
  let stop;
  try {
    const { port } = await server.next();
    stop = load(port);
    // warm: burn() compiled, the first requests' one-time work done
    await new Promise((resolve) => setTimeout(resolve, 1000));
    server.proc.stdin.write(`window ${WINDOW_S}\n`);
    const w = await server.next();
    return { w, dir };
  } finally {
    server.stop();
    writer.kill();
    await stop?.().catch(() => {}); // (its last request cut by the stop)
  }
}

const names = (s) => s.frames;
const inBurn = (s) => names(s).includes('burn');

describe('which route costs what', { skip, timeout: 120_000 }, () => {
  test('withLabels({ route }): CPU samples in burn() by route, B at 3x A; C\'s FIFO reads off the CPU under route C alone; go tool pprof -tags', async (t) => {
    const { w, dir } = await routesWindow();
    const { requests } = w;
    const why = `requests in the window ${JSON.stringify(requests)}; notes: ${w.notes?.join(' | ')}`;
    assert.ok(requests.A >= 10 && Math.abs(requests.A - requests.B) <= 1 && Math.abs(requests.B - requests.C) <= 1, `each route ran as often as the others: ${why}`);

    // CPU: the samples in burn() (the work that differs; the rest of a request is the same for every route), by route
    const burnBy = { A: 0, B: 0, C: 0, none: 0 };
    for (const s of w.cpu.filter(inBurn)) burnBy[s.labels.route ?? 'none'] += s.count;
    assert.equal(burnBy.C, 0, `route C runs no burn(): ${JSON.stringify(burnBy)}`);
    assert.equal(burnBy.none, 0, `every sample in burn() has its route: ${JSON.stringify(burnBy)}`);
    assert.ok(burnBy.A >= 20, `enough samples in A's burn() to weigh: ${JSON.stringify(burnBy)}; ${why}`);
    const ratio = burnBy.B / burnBy.A;
    assert.ok(Math.abs(ratio - 3) <= 0.45, `B's samples in burn() are 3x A's within 15%: ${burnBy.B} / ${burnBy.A} = ${ratio.toFixed(2)}; ${why}`);
    // samples outside a request (the window's own reading, timers) carry no route
    for (const s of w.cpu.filter((x) => x.labels.route !== undefined)) assert.ok(['A', 'B', 'C'].includes(s.labels.route), JSON.stringify(s.labels));

    // off CPU: route C's reads wait ~50 ms each in the kernel's pipe_read, under route C and no other
    const reads = w.offCpu.filter((s) => names(s).includes('pipe_read') || (names(s).includes('readFifo') && names(s).includes('vfs_read')));
    assert.ok(reads.length, `off-CPU stacks in pipe_read: ${w.offCpu.map((s) => names(s).slice(0, 8).join(' <- ')).join('\n')}`);
    for (const s of reads) {
      assert.deepEqual(s.labels, { route: 'C' }, `a FIFO read is route C's: ${JSON.stringify(s.labels)} ${names(s).slice(0, 12).join(' <- ')}`);
      assert.ok(names(s).includes('readFifo') && names(s).includes('vfs_read'), `the kernel's read frames under readFifo: ${names(s).join(' <- ')}`);
    }
    const intervals = reads.reduce((n, s) => n + s.count, 0);
    const ms = reads.reduce((n, s) => n + s.ns, 0) / 1e6 / intervals;
    assert.ok(Math.abs(intervals - requests.C) <= 2, `one interval a read of route C: ${intervals} intervals, ${requests.C} requests`);
    assert.ok(ms >= FIFO_MS * 0.9 && ms <= FIFO_MS * 3, `a read waits ~${FIFO_MS} ms: ${ms.toFixed(1)} ms on average`);

    // pprof: the route is a tag go tool pprof lists, and -tagfocus keeps one route's samples
    const cpu = path.join(dir, 'cpu.pb.gz');
    const tags = execFileSync('go', ['tool', 'pprof', '-tags', cpu], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const routeTag = tags.split(/\n(?=\s*\S+: Total)/).find((b) => /^\s*route: Total/.test(b));
    assert.ok(routeTag, `go tool pprof -tags lists route:\n${tags}`);
    // (C's handler spends next to no CPU: its route is in the off-CPU profile's tags)
    for (const r of ['A', 'B']) assert.match(routeTag, new RegExp(`\\(\\s*[\\d.]+%\\): ${r}$`, 'm'), `route ${r} in -tags:\n${routeTag}`);
    const top = (args, file) => execFileSync('go', ['tool', 'pprof', '-top', '-nodecount=400', ...args, file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const burnMs = (out) => {
      const row = out.split('\n').find((l) => /\sburn$/.test(l));
      // (-top's cum column: ms, or s past a second)
      const m = row && /^\s*\S+\s+\S+\s+\S+\s+([\d.]+)(m?s)/.exec(row);
      return m ? Number(m[1]) * (m[2] === 's' ? 1000 : 1) : 0;
    };
    const b = burnMs(top(['-tagfocus=route=B'], cpu));
    const a = burnMs(top(['-tagfocus=route=A'], cpu));
    assert.ok(a > 0 && Math.abs(b / a - 3) <= 0.45, `-tagfocus: burn's cum under route=B is 3x route=A's: ${b} / ${a} ms`);
    t.diagnostic(`burn() samples by route ${JSON.stringify(burnBy)} (B/A ${ratio.toFixed(2)}), requests ${JSON.stringify(requests)}; C's reads: ${intervals} intervals of ${ms.toFixed(1)} ms on average`);
    const off = execFileSync('go', ['tool', 'pprof', '-tags', path.join(dir, 'offcpu.pb.gz')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.match(off, /route: Total[^]*\): C$/m, `the off-CPU profile's route tag:\n${off}`);
  });

  test("traceContext: true, the context manager registered after profile(): samples carry the finished spans' trace_id and span_id, and the local root's http.route set as the request ended", async (t) => {
    const { w } = await routesWindow({ ROUTES_TRACE: 'after', ROUTES_OPTIONS: JSON.stringify({ traceContext: true }) });
    t.diagnostic(checkTraces(w));
  });

  test('traceContext: the context manager registered before profile()', async (t) => {
    const { w } = await routesWindow({ ROUTES_TRACE: 'before', ROUTES_OPTIONS: JSON.stringify({ traceContext: true, offCpu: false }) });
    t.diagnostic(checkTraces(w, { offCpu: false }));
  });

  test("traceContext's records as getLabels() resolves them: the local root through a remote parent, a child, a child entered outside its parent, a route set late, a profiler closed", async () => {
    const bpf = require('..');
    const api = require('@opentelemetry/api');
    const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base');
    const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
    const profiler = bpf.profile({ traceContext: ['http.route', 'tenant'], offCpu: false });
    api.trace.setGlobalTracerProvider(new BasicTracerProvider());
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const tracer = api.trace.getTracer('routes.test');
    const remote = api.trace.setSpanContext(api.ROOT_CONTEXT, { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true });
    const server = tracer.startSpan('GET', { attributes: { tenant: 'acme', 'http.route': 'x'.repeat(300) } }, remote);
    const id = (s) => ({ trace_id: s.spanContext().traceId, span_id: s.spanContext().spanId });
    let orphan;
    await api.context.with(api.trace.setSpan(remote, server), async () => {
      await null;
      assert.deepEqual({ ...bpf.getLabels() }, { ...id(server), tenant: 'acme', 'http.route': 'x'.repeat(256) }, 'the server span is the local root (its parent remote); a value cut to 256');
      server.setAttribute('http.route', '/users/:id');
      await bpf.withLabels({ route: 'B' }, () =>
        tracer.startActiveSpan('db', async (child) => {
          await null;
          assert.deepEqual({ ...bpf.getLabels() }, { ...id(child), tenant: 'acme', 'http.route': '/users/:id', route: 'B' }, "a child: its ids, its root's attributes, the labels it was entered under");
          child.end();
        }),
      );
      orphan = tracer.startSpan('later', {}, api.context.active());
      assert.deepEqual({ ...bpf.getLabels() }, { ...id(server), tenant: 'acme', 'http.route': '/users/:id' });
      api.context.with(api.ROOT_CONTEXT, () => assert.equal(bpf.getLabels().span_id, server.spanContext().spanId, 'a context without a span keeps the labels it runs under'));
    });
    // entered where its parent is not the active span: the trace's root all the same
    api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, orphan), () => assert.deepEqual({ ...bpf.getLabels() }, { ...id(orphan), tenant: 'acme', 'http.route': '/users/:id' }));
    assert.deepEqual({ ...bpf.getLabels() }, {}, 'outside every span');
    profiler.close();
    const after = tracer.startSpan('after close');
    api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, after), () => assert.deepEqual({ ...bpf.getLabels() }, {}, 'no profiler asks: with() is left alone'));
  });

  test('traceContext: a bad value, and no @opentelemetry/api: coded errors that name the fix', () => {
    const bpf = require('..');
    for (const value of [1, 'not a name', ['http.route', 2], 'span_id', {}]) {
      assert.throws(() => bpf.profile(/** @type {any} */ ({ traceContext: value })), (/** @type {any} */ err) => err.code === 'ERR_BPF_INVALID_VALUE' && /traceContext/.test(err.message), JSON.stringify(value));
    }
    // (the package hidden from require: what a service without it gets, before anything loads)
    const script = `
      const Module = require('node:module');
      const resolve = Module._resolveFilename;
      Module._resolveFilename = function (request, ...rest) {
        if (request === '@opentelemetry/api') throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: 'MODULE_NOT_FOUND' });
        return resolve.call(this, request, ...rest);
      };
      try { require(${JSON.stringify(path.join(__dirname, '..'))}).profile({ traceContext: true }); } catch (err) { console.log(JSON.stringify({ code: err.code, message: err.message })); }`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim());
    assert.equal(out.code, 'ERR_BPF_NOT_SUPPORTED');
    assert.match(out.message, /npm install @opentelemetry\/api/);
  });
});

/** The window's labelled samples against the spans the in-memory exporter finished: what was checked. */
function checkTraces(w, { offCpu = true } = {}) {
  const spans = new Map(w.spans.map((s) => [s.spanId, s]));
  const servers = w.spans.filter((s) => s.name.startsWith('GET'));
  assert.ok(servers.length >= 30, `the server's spans: ${servers.length}`);
  assert.ok(servers.some((s) => s.parent?.remote) && servers.some((s) => !s.parent), 'roots with a remote parent and without one');
  let checked = 0;
  for (const s of [...w.cpu, ...(offCpu ? w.offCpu : [])]) {
    const { route, trace_id: traceId, span_id: spanId } = s.labels;
    if (route === undefined) continue;
    const at = `${JSON.stringify(s.labels)} ${s.frames.slice(0, 10).join(' <- ')}`;
    assert.match(String(traceId), /^[0-9a-f]{32}$/, `a route's sample has its trace: ${at}`);
    assert.match(String(spanId), /^[0-9a-f]{16}$/, at);
    const span = spans.get(spanId);
    if (!span) continue; // (a request the window's end cut: its span ended after the spans were read)
    assert.equal(span.traceId, traceId, `the sample's trace_id is its span's: ${at}`);
    // the local root's http.route, set through the RPC metadata: on the span only at its end
    assert.equal(s.labels['http.route'], `/${route.toLowerCase()}`, at);
    const root = span.parent && !span.parent.remote ? spans.get(span.parent.spanId) : span;
    assert.equal(root?.route, s.labels['http.route'], `the root span's http.route: ${at}`);
    // route B's burn() runs in a child span of its own
    if (route === 'B' && s.frames.includes('burn')) assert.equal(span.name, 'burn', at);
    checked += s.count;
  }
  assert.ok(checked >= 50, `samples checked against their spans: ${checked}`);
  const unknown = [...w.cpu, ...w.offCpu].filter((s) => s.labels.span_id && !spans.has(s.labels.span_id)).reduce((n, s) => n + s.count, 0);
  assert.ok(unknown <= 3, `samples of spans that never finished: ${unknown}`);
  return `${checked} samples checked against ${w.spans.length} spans (${servers.length} the server's), ${unknown} of spans not finished`;
}
