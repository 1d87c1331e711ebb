'use strict';
// An HTTP service that profiles itself: bpf.profile() samples this very
// process's threads on the CPU and its main thread off it, with kernel,
// native and JavaScript frames, and the service mounts the pull handler
// that Parca and Pyroscope scrape (Go's convention):
//   GET /debug/pprof/profile?seconds=N   CPU (pprof, gzipped)
//   GET /debug/pprof/offcpu?seconds=N    the main thread off the CPU
//   GET /flame?seconds=N[&kind=offCpu]   a flame graph (SVG), for a person
// With --push URL it pushes a window every 15 s to Pyroscope's /ingest
// instead (the pull then answers 409: one window at a time). Run it as
// root, or with CAP_BPF + CAP_PERFMON; no node flag is needed (JavaScript
// frames are named from V8's own data):
//   node examples/profile_service.js [--port N] [--push URL]
// GET / does some work (JSON of a few thousand square roots); GET
// /block?ms=N blocks the main thread for N ms in Atomics.wait. Prints
// {"port": N} once it listens; SIGTERM stops it.
const http = require('node:http');
const bpf = require('..');

const argv = process.argv.slice(2);
const opt = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);

const profiler = bpf.profile();
const pprof = profiler.handler();
const pusher = opt('--push') ? profiler.push({ url: opt('--push'), name: 'profile_service', labels: { host: require('node:os').hostname() } }) : undefined;
const shared = new Int32Array(new SharedArrayBuffer(4));

function work() {
  const out = [];
  for (let i = 0; i < 5000; i++) out.push(Math.sqrt(i));
  return out.reduce((a, b) => a + b, 0);
}

function block(ms) {
  Atomics.wait(shared, 0, 0, ms);
}

const server = http.createServer((req, res) => {
  if (pprof(req, res)) return;
  const url = new URL(req.url, 'http://localhost');
  if (url.pathname === '/flame') {
    const kind = url.searchParams.get('kind') ?? 'cpu';
    profiler
      .collect({ seconds: Number(url.searchParams.get('seconds') ?? 10) })
      // another kind: flameGraph throws ERR_BPF_INVALID_VALUE, answered 400 below
      .then((w) => w.flameGraph(/** @type {import('..').ProfileKind} */ (kind)))
      .then(
        (svg) => {
          res.writeHead(200, { 'content-type': 'image/svg+xml' });
          res.end(svg);
        },
        (err) => {
          res.writeHead(err.code === 'ERR_BPF_BUSY' ? 409 : 400, { 'content-type': 'text/plain' });
          res.end(`${err.message}\n`);
        },
      );
    return;
  }
  if (url.pathname === '/block') block(Number(url.searchParams.get('ms') ?? 100));
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ sum: work() }));
});

server.listen(Number(opt('--port') ?? 0), () => console.log(JSON.stringify({ port: /** @type {import('node:net').AddressInfo} */ (server.address()).port })));
process.on('SIGTERM', async () => {
  server.close();
  await pusher?.stop();
  profiler.close();
  process.exit(0);
});
