'use strict';
// Which route costs what: an HTTP service of three routes that profiles
// itself, each request's handler under bpf.withLabels({ route }), and
// prints the CPU and the off-CPU time by route after each window:
//   GET /a   burns the CPU (a fixed loop)
//   GET /b   three times A's work
//   GET /c   blocks 50 ms in a sync wait (Atomics.wait, as a sync lock does): off the CPU
// Run it as root, or with CAP_BPF + CAP_PERFMON; no node flag is needed:
//   node examples/routes-profile.js [--port N] [--seconds S] [--demo]
// --demo drives the routes itself (a client process, A, B, C in turn);
// else drive them yourself (curl, autocannon). With --pprof DIR it also
// writes each window's CPU profile, for `go tool pprof -tags` or
// `-tagfocus=route=/b`. SIGTERM (or Ctrl+C) stops it.
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const bpf = require('..');

const argv = process.argv.slice(2);
const opt = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);

if (argv[0] === '--client') {
  // the demo's load: one connection, /a, /b, /c in turn
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (p) => new Promise((resolve) => http.get({ host: '127.0.0.1', port: Number(argv[1]), path: p, agent }, (res) => res.resume().on('end', resolve)).on('error', () => process.exit(0)));
  (async () => {
    for (;;) for (const p of ['/a', '/b', '/c']) await get(p);
  })();
} else {
  serve();
}

function burn(n) {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x + Math.sqrt(i) * 1.0001) % 1e9;
  return x;
}

const lock = new Int32Array(new SharedArrayBuffer(4));
const routes = {
  '/a': () => burn(1e6),
  '/b': () => burn(3e6),
  '/c': () => Atomics.wait(lock, 0, 0, 50),
};

/** The window's CPU samples and off-CPU ms by the label `route` (`-` for none). */
function byRoute(w) {
  const rows = new Map();
  const row = (s) => {
    const k = s.labels.route ?? '-';
    if (!rows.has(k)) rows.set(k, { route: k, samples: 0, offCpuMs: 0 });
    return rows.get(k);
  };
  for (const s of w.cpu) row(s).samples += s.count;
  for (const s of w.offCpu) row(s).offCpuMs += s.ns / 1e6;
  const total = w.cpu.reduce((n, s) => n + s.count, 0) || 1;
  return [...rows.values()].sort((a, b) => b.samples - a.samples).map((r) => ({ ...r, cpu: `${((100 * r.samples) / total).toFixed(1)}%`, offCpuMs: Math.round(r.offCpuMs) }));
}

function serve() {
  const seconds = Number(opt('--seconds') ?? 10);
  const profiler = bpf.profile();
  const server = http.createServer((req, res) => {
    const route = new URL(req.url, 'http://localhost').pathname;
    const handler = routes[route];
    if (!handler) {
      res.writeHead(404).end();
      return;
    }
    // every sample of the handler, and of what it awaits, carries { route }
    bpf.withLabels({ route }, async () => {
      await null;
      const out = handler();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ out }));
    });
  });
  let client;
  let stopped = false;
  server.listen(Number(opt('--port') ?? 0), '127.0.0.1', async () => {
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
    console.log(`listening on ${port}; a window every ${seconds} s`);
    if (argv.includes('--demo')) client = spawn(process.execPath, [__filename, '--client', String(port)], { stdio: 'ignore' });
    while (!stopped) {
      const w = await profiler.collect({ seconds }).catch((err) => (stopped ? null : Promise.reject(err)));
      if (!w) break;
      console.table(byRoute(w));
      if (opt('--pprof')) fs.writeFileSync(path.join(opt('--pprof'), 'cpu.pb.gz'), w.pprof('cpu'));
    }
  });
  const stop = () => {
    stopped = true;
    client?.kill();
    server.close();
    profiler.close();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
