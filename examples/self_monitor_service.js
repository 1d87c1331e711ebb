'use strict';
// An HTTP service that monitors itself: bpf.monitor() counts, in the kernel,
// what this very process does (main-thread off-CPU time, TCP retransmits;
// with --event-loop the libuv phases; with --syscalls its syscalls, files
// and connects: each costs more, docs/service.md: What it costs),
// and GET /metrics serves it with prom-client, beside the service's own
// metrics. With --otel PORT the same monitor is also exported through the
// OpenTelemetry SDK's Prometheus exporter on PORT. Needs root, or CAP_BPF +
// CAP_PERFMON (docs/service.md: Least privilege).
//   node examples/self_monitor_service.js [--port N] [--event-loop] [--syscalls] [--otel PORT]
// With --otel-only, /metrics is not served (the OTel exporter's port is).
// Prints {"port": N, "otel": PORT|null} once it listens. GET / answers a
// small JSON body; GET /block?ms=N blocks the event loop for N ms in a
// setImmediate callback (the loop's check phase: a slow handler) and
// answers how long it measured; GET /latencies gives the request
// durations the service measured itself (for the tests). SIGTERM stops it.
const http = require('node:http');
const client = require('prom-client');
const bpf = require('..');

const argv = process.argv.slice(2);
const opt = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const syscalls = argv.includes('--syscalls');

const monitor = bpf.monitor({ eventLoop: argv.includes('--event-loop'), syscalls, files: syscalls, connects: syscalls });
const registry = new client.Registry();
monitor.registerPrometheus(registry);
const requestSeconds = new client.Histogram({
  name: 'service_request_duration_seconds',
  help: 'Request durations as the service measures them (from the request event to the end of the response)',
  buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1],
  registers: [registry],
});

let otel = null;
if (opt('--otel')) {
  const { MeterProvider } = require('@opentelemetry/sdk-metrics');
  const { PrometheusExporter } = require('@opentelemetry/exporter-prometheus');
  const exporter = new PrometheusExporter({ host: '127.0.0.1', port: Number(opt('--otel')), metricProducers: [monitor.metricProducer()] });
  otel = { exporter, provider: new MeterProvider({ readers: [exporter] }) };
}

const latencies = [];
const blocked = []; // seconds each /block measured
// Buffer bodies: Node writes the head and a Buffer body with one writev(2)
// on every version (a string body is joined to the head in one write(2)
// since Node 24), so a response is one syscall the monitor can count
const body = Buffer.from(JSON.stringify({ hello: 'world' }));
const json = (value) => Buffer.from(JSON.stringify(value));
const server = http.createServer(async (req, res) => {
  if (req.url === '/metrics' && !argv.includes('--otel-only')) {
    res.writeHead(200, { 'content-type': registry.contentType });
    res.end(Buffer.from(await registry.metrics()));
    return;
  }
  if (req.url === '/latencies') {
    res.end(json(latencies));
    return;
  }
  const block = /^\/block\?ms=(\d+)$/.exec(req.url);
  if (block) {
    setImmediate(() => {
      const t = process.hrtime.bigint();
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(block[1]));
      const seconds = Number(process.hrtime.bigint() - t) / 1e9;
      blocked.push(seconds);
      res.end(json({ seconds }));
    });
    return;
  }
  if (req.url === '/blocked') {
    res.end(json(blocked));
    return;
  }
  const start = process.hrtime.bigint();
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body, () => {
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    requestSeconds.observe(seconds);
    if (latencies.length < 100_000) latencies.push(seconds);
  });
});

server.listen(Number(opt('--port') ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: /** @type {import('net').AddressInfo} */ (server.address()).port, otel: otel ? Number(opt('--otel')) : null, parts: monitor.parts })}\n`);
});

process.on('SIGTERM', async () => {
  server.close();
  await otel?.provider.shutdown();
  monitor.close();
  process.exit(0);
});
