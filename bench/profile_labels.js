'use strict';
// What request labels cost (docs/performance.md: Profiles). Needs root (or
// CAP_BPF + CAP_PERFMON); the dd rows need the devDependency @datadog/pprof,
// the OTel rows @opentelemetry/sdk-trace-base and instrumentation-http, the
// load autocannon (npm install).
//   ns:    per labelled context, in a child process per row, the median of
//          ROUNDS runs of 200,000 calls (fn does nothing):
//            als          AsyncLocalStorage.run: the floor
//            als-await    the same around an async fn with one await, no profiler
//            withLabels   bpf.withLabels({ route }, fn) with a window running
//            withLabels-await  the same around an async fn with one await
//                         (Node 20 and 22: the labels' async hook runs at each callback)
//            span         a span started, entered (context.with), ended: OTel alone
//            span-traceContext  the same with profile({ traceContext: true }) collecting
//            dd-setContext  @datadog/pprof's wall profiler, time.start({ withContexts: true }),
//                         time.setContext({ spanId, rootSpanId }) (dd-trace's span context)
//            dd-runWithContext  the same by time.runWithContext (useCPED: Node 24 on)
//   req/s: a fastify service (this file, --serve ROW) pinned to CPU 0,
//          autocannon on CPU 1 (10 connections), SECONDS a round, the rows
//          in turn ROUNDS times, the median of each, and of the server's CPU
//          time per request (process, from /proc: the measure the host's load moves least):
//            none         no profiler, no labels
//            profile      bpf.profile() at its default, windows of 5 s back to
//                         back, each encoded as pprof (what a pull or a push does)
//            labels       the same, every handler under withLabels({ route })
//            otel         OpenTelemetry's http instrumentation, no profiler
//            otel-labels  the same with bpf.profile() and the labels
//            traceContext the same with profile({ traceContext: true })
//            dd           @datadog/pprof's wall profiler at 100 Hz, 5 s profiles
//            dd-contexts  the same with withContexts and setContext per request
//   paired: one service (OTel's http instrumentation, bpf.profile()'s windows
//          running) switched every second between off, labels (withLabels)
//          and traceContext (the labels and the trace context): each mode's
//          seconds against the off ones beside them (the host's load moves
//          both alike)
//   node bench/profile_labels.js [--rounds N] [--seconds S] [--rows ns,none,...] [--json]
const path = require('node:path');
const { start, stop, waitLine, sleep, json, procCpu } = require('./harness/procs');
const { median } = require('./harness/numbers');

const argv = process.argv.slice(2);
const arg = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const ROUNDS = Number(arg('--rounds', 3));
const SECONDS = Number(arg('--seconds', 5));
const NS_ROWS = ['als', 'als-await', 'withLabels', 'withLabels-await', 'span', 'span-traceContext', 'dd-setContext', 'dd-runWithContext'];
const HTTP_ROWS = ['none', 'profile', 'labels', 'otel', 'otel-labels', 'traceContext', 'dd', 'dd-contexts', 'paired'];
const CALLS = Number(arg("--calls", 200_000));
const cpedNode = Number(process.versions.node.split('.')[0]) >= 24;

/** OpenTelemetry set up as a service does: a provider, the async-hooks context manager, W3C propagation; http instrumented when `http`. */
function otel({ http = false } = {}) {
  const api = require('@opentelemetry/api');
  const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base');
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core');
  const provider = new BasicTracerProvider();
  api.trace.setGlobalTracerProvider(provider);
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  if (http) new (require('@opentelemetry/instrumentation-http').HttpInstrumentation)().setTracerProvider(provider);
  return api;
}

/** Windows back to back while the process lives, each encoded as pprof. */
async function windows(profiler) {
  for (;;) {
    const w = await profiler.collect({ seconds: 5 });
    w.pprof('cpu');
    w.pprof('offCpu');
  }
}

/** `--ns ROW`: ns per call of the row's labelled context; one JSON line. */
async function nsRow(row) {
  const bpf = require('..');
  const noop = () => 0;
  let run;
  let profiler;
  if (row === 'als' || row === 'als-await') {
    const als = new (require('node:async_hooks').AsyncLocalStorage)();
    const fn = /** @type {() => unknown} */ (row === 'als' ? noop : async () => await null);
    run = () => als.run(1, fn);
  } else if (row === 'withLabels' || row === 'withLabels-await') {
    profiler = bpf.profile();
    const fn = /** @type {() => unknown} */ (row === 'withLabels' ? noop : async () => await null);
    const labels = { route: '/users/:id' };
    run = () => bpf.withLabels(labels, fn);
  } else if (row === 'span' || row === 'span-traceContext') {
    if (row === 'span-traceContext') profiler = bpf.profile({ traceContext: true });
    const api = otel();
    const tracer = api.trace.getTracer('bench');
    run = () => {
      const span = tracer.startSpan('GET');
      api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, span), noop);
      span.end();
    };
  } else if (row === 'dd-setContext' || row === 'dd-runWithContext') {
    const { time } = require('@datadog/pprof');
    const cped = row === 'dd-runWithContext';
    if (cped && !cpedNode) return { row, skipped: 'runWithContext needs the AsyncContextFrame (Node 24 on)' };
    time.start({ intervalMicros: 10_000, withContexts: true, useCPED: cped });
    let id = 0;
    run = cped ? () => time.runWithContext({ spanId: String(++id), rootSpanId: '1' }, noop) : () => time.setContext({ spanId: String(++id), rootSpanId: '1' });
  } else throw new Error(`--ns: no row ${row}; the rows are ${NS_ROWS.join(', ')}`);
  const collecting = profiler && profiler.collect({ seconds: 300 });
  await sleep(200); // (the window attached)
  const per = [];
  for (let r = 0; r < 5; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) run();
    if (row.endsWith('-await')) await sleep(0); // (the awaits' reactions run here, on the clock)
    per.push(Number(process.hrtime.bigint() - t) / CALLS);
  }
  profiler?.close();
  await collecting?.catch(() => {});
  return { row, ns: median(per.slice(1)) };
}

/** `--serve ROW`: the service; prints {"port"} once it listens. */
async function serve(row) {
  const bpf = require('..');
  // paired: one service, OpenTelemetry on, a profiler's windows running; the mode switched each second on stdin
  const mode = { labels: false, requests: 0 };
  if (row === 'paired') {
    otel({ http: true });
    windows(bpf.profile());
    // (what profile({ traceContext: true }) does, switched on and off)
    const traceContext = require('../lib/service/trace_context');
    let stopTrace = traceContext.start(traceContext.checkOption(true));
    stopTrace();
    require('node:readline')
      .createInterface({ input: process.stdin })
      .on('line', (line) => {
        const next = line.trim();
        stopTrace();
        mode.labels = next !== 'off';
        if (next === 'traceContext') stopTrace = traceContext.start(['http.route']);
        const { user, system } = process.cpuUsage();
        console.log(JSON.stringify({ requests: mode.requests, cpuUs: user + system }));
      });
  }
  if (row === 'otel' || row === 'otel-labels' || row === 'traceContext') otel({ http: true });
  if (row === 'profile' || row === 'labels' || row === 'otel-labels' || row === 'traceContext') windows(bpf.profile(row === 'traceContext' ? { traceContext: true } : {}));
  let dd;
  if (row === 'dd' || row === 'dd-contexts') {
    const { time } = require('@datadog/pprof');
    time.start({ intervalMicros: 10_000, withContexts: row === 'dd-contexts' });
    dd = time;
    setInterval(() => time.stop(true), 5000);
  }
  const app = require('fastify')();
  app.addHook('onResponse', (req, reply, done) => {
    mode.requests++;
    done();
  });
  const labelled = row === 'labels' || row === 'otel-labels' || row === 'traceContext';
  const labelling = () => labelled || mode.labels;
  let id = 0;
  app.addHook('onRoute', (opts) => {
    const handler = opts.handler;
    if (labelled || row === 'paired') opts.handler = function (req, reply) { return labelling() ? bpf.withLabels({ route: opts.url }, handler.bind(this), req, reply) : handler.call(this, req, reply); };
    else if (row === 'dd-contexts')
      opts.handler = function (req, reply) {
        dd.setContext({ spanId: String(++id), rootSpanId: String(id), endpoint: opts.url });
        return handler.call(this, req, reply);
      };
  });
  app.get('/users/:id', async (/** @type {any} */ req) => {
    let x = 0;
    for (let i = 0; i < 200; i++) x += Math.sqrt(i);
    return { id: req.params.id, x };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  console.log(JSON.stringify({ port: /** @type {import('node:net').AddressInfo} */ (app.server.address()).port }));
}

async function main() {
  const rows = arg('--rows', [...NS_ROWS, ...HTTP_ROWS].join(',')).split(',');
  for (const r of rows) if (!NS_ROWS.includes(r) && !HTTP_ROWS.includes(r)) throw new Error(`--rows: no row ${r}; the rows are ${[...NS_ROWS, ...HTTP_ROWS].join(', ')}`);
  const out = { date: new Date().toISOString(), node: process.version, ns: {}, rps: {} };
  for (const row of rows.filter((r) => NS_ROWS.includes(r))) {
    const runs = [];
    for (let r = 0; r < ROUNDS; r++) {
      const child = start(process.execPath, [__filename, '--ns', row]);
      runs.push(json(await waitLine(child, /^\{/, 60_000)));
      await child.exited;
    }
    out.ns[row] = runs[0].skipped ? runs[0].skipped : +median(runs.map((x) => x.ns)).toFixed(1);
    if (!argv.includes('--json')) console.log(`ns  ${row.padEnd(20)} ${out.ns[row]}`);
  }
  const httpRows = rows.filter((r) => HTTP_ROWS.includes(r) && r !== 'paired');
  const got = Object.fromEntries(httpRows.map((r) => [r, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const row of httpRows) {
      const server = start('taskset', ['-c', '0', process.execPath, __filename, '--serve', row]);
      try {
        const { port } = json(await waitLine(server, /"port"/, 30_000));
        await sleep(1000); // (the first window attached, fastify warm)
        const cpu0 = procCpu(server.pid);
        const load = start('taskset', ['-c', '1', process.execPath, require.resolve('autocannon/autocannon.js'), '-j', '-c', '10', '-d', String(SECONDS), `http://127.0.0.1:${port}/users/42`]);
        const result = json(await waitLine(load, /^\{/, (SECONDS + 30) * 1000));
        // (the server's CPU time a request: what the host's other load moves least)
        got[row].push({ rps: result.requests.average, us: ((procCpu(server.pid) - cpu0) * 1e6) / result.requests.total });
      } finally {
        await stop(server);
      }
    }
  }
  if (rows.includes('paired')) out.paired = await paired();
  for (const row of httpRows) {
    out.rps[row] = { median: Math.round(median(got[row].map((g) => g.rps))), runs: got[row].map((g) => Math.round(g.rps)), cpuUs: +median(got[row].map((g) => g.us)).toFixed(1) };
    if (!argv.includes('--json')) console.log(`req/s ${row.padEnd(14)} ${out.rps[row].median} (${out.rps[row].runs.join(', ')}); CPU ${out.rps[row].cpuUs} µs a request`);
  }
  if (argv.includes('--json')) console.log(JSON.stringify(out));
}

/**
 * The paired row: one service under one load, its mode switched every
 * second (off, labels, traceContext in turn, ROUNDS * SECONDS times); each
 * mode's seconds against the off seconds beside them: req/s and the
 * process's CPU per request, medians of the pairs.
 */
async function paired() {
  const MODES = ['off', 'labels', 'traceContext'];
  const server = start('taskset', ['-c', '0', process.execPath, __filename, '--serve', 'paired']);
  try {
    const { port } = json(await waitLine(server, /"port"/, 30_000));
    const seconds = ROUNDS * SECONDS * MODES.length;
    const load = start('taskset', ['-c', '1', process.execPath, require.resolve('autocannon/autocannon.js'), '-j', '-c', '10', '-d', String(seconds + 3), `http://127.0.0.1:${port}/users/42`]);
    await sleep(2000); // (warm)
    let from = server.lines.length;
    const read = async (mode) => {
      server.stdin.write(`${mode}\n`);
      const l = json(await waitLine(server, /"requests"/, 10_000, from));
      from = server.lines.length;
      return { ...l, at: process.hrtime.bigint() };
    };
    const per = Object.fromEntries(MODES.map((m) => [m, []]));
    let last = await read(MODES[0]);
    for (let i = 0; i < seconds; i++) {
      const mode = MODES[i % MODES.length];
      const next = MODES[(i + 1) % MODES.length];
      await sleep(1000);
      const now = await read(next);
      const n = now.requests - last.requests;
      per[mode].push({ rps: (n * 1e9) / Number(now.at - last.at), us: (now.cpuUs - last.cpuUs) / n });
      last = now;
    }
    await stop(load);
    const result = {};
    for (const mode of MODES) {
      // each second against the off second of its triple
      const vs = per[mode].map((x, i) => ({ rps: x.rps / per.off[i].rps - 1, us: x.us - per.off[i].us }));
      result[mode] = { rps: Math.round(median(per[mode].map((x) => x.rps))), cpuUs: +median(per[mode].map((x) => x.us)).toFixed(1), vsOff: { rps: `${(100 * median(vs.map((v) => v.rps))).toFixed(1)}%`, cpuUs: +median(vs.map((v) => v.us)).toFixed(1) }, pairs: per[mode].length };
      if (!argv.includes('--json')) console.log(`paired ${mode.padEnd(13)} ${result[mode].rps} req/s, CPU ${result[mode].cpuUs} µs a request; against off: ${result[mode].vsOff.rps} req/s, ${result[mode].vsOff.cpuUs >= 0 ? '+' : ''}${result[mode].vsOff.cpuUs} µs (${result[mode].pairs} pairs)`);
    }
    return result;
  } finally {
    await stop(server);
  }
}

if (argv[0] === '--ns') nsRow(argv[1]).then((r) => console.log(JSON.stringify(r)));
else if (argv[0] === '--serve') serve(argv[1]);
else main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
