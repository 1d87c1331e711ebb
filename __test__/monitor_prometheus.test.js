'use strict';
// The monitor end to end, against a real Prometheus server (Debian's
// prometheus, started here on a loopback port, stopped by its pid): the
// example service (examples/self_monitor_service.js) monitors itself and is
// scraped every second, through prom-client (/metrics) in one instance and
// through the OpenTelemetry SDK's Prometheus exporter in another. A client
// makes K requests; Prometheus's HTTP API must then hold the accept and
// write counts those requests imply, exactly, and an event-loop phase
// histogram whose quantile agrees with the blocking the service measured.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { sleep, tiedToThisProcess } = require('./helpers');

const SERVICE = path.join(__dirname, '..', 'examples', 'self_monitor_service.js');
const K = 40; // plain requests
const KB = 10; // requests that block the loop's check phase
const BLOCK_MS = 20; // above the bucket bound 16.384 ms
const LOW = 0.016384;

function whyskip() {
  if (process.getuid?.() !== 0) return 'the monitor loads BPF programs: run the tests as root';
  try {
    execFileSync('sh', ['-c', 'command -v prometheus'], { stdio: 'ignore' });
  } catch {
    return 'no prometheus binary (npm run setup installs Debian\'s prometheus)';
  }
  return false;
}
const skip = whyskip();
if (skip) console.log(`# skipping monitor_prometheus.test.js: ${skip}`);

/** A free loopback port. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** GET http://127.0.0.1:port/path on a new connection; the body. */
function get(port, p) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`GET ${p} timed out`)));
    req.on('error', reject);
  });
}

/** Starts the example service with `args`; resolves with { child, port, otel } once it listens. */
async function startService(args) {
  const [cmd, ...argv] = tiedToThisProcess([process.execPath, SERVICE, ...args]);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await Promise.race([lines.next(), sleep(30_000).then(() => ({ value: null }))]);
  assert.ok(first.value, 'the service printed its port');
  return { child, ...JSON.parse(first.value) };
}

/** A Prometheus server scraping `targets` ({ job: port }) every second; { child, port, dir }. */
async function startPrometheus(targets) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-prometheus-'));
  const port = await freePort();
  const jobs = Object.entries(targets).map(([job, p]) => `  - job_name: ${job}\n    static_configs:\n      - targets: ['127.0.0.1:${p}']`);
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n${jobs.join('\n')}\n`);
  const [cmd, ...argv] = tiedToThisProcess([
    'prometheus',
    `--config.file=${path.join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
  ]);
  const child = /** @type {import('node:child_process').ChildProcessByStdio<null, null, import('node:stream').Readable> & { log: string }} */ (spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] }));
  child.log = '';
  child.stderr.on('data', (d) => (child.log += d));
  for (let i = 0; i < 300; i++) {
    if (await get(port, '/-/ready').then((b) => /Ready/.test(b), () => false)) return { child, port, dir };
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`prometheus did not start:\n${child.log}`);
}

/** Prometheus's /api/v1/query result for `query` (at `time`, seconds, optional). */
async function query(port, q, time) {
  const params = new URLSearchParams({ query: q, ...(time ? { time: String(time) } : {}) });
  const body = JSON.parse(await get(port, `/api/v1/query?${params}`));
  assert.equal(body.status, 'success', `${q}: ${JSON.stringify(body)}`);
  return body.data.result;
}

/** The samples [[t, value]] of one series over the last `seconds`. */
async function samples(port, selector, seconds = 120) {
  const result = await query(port, `${selector}[${seconds}s]`);
  assert.equal(result.length, 1, `one series for ${selector}: ${JSON.stringify(result)}`);
  return result[0].values.map(([t, v]) => [t, Number(v)]);
}

/** Waits until `selector` has a sample scraped after `since` (seconds). */
async function scrapedAfter(port, selector, since) {
  for (let i = 0; i < 200; i++) {
    const r = await query(port, `timestamp(${selector})`);
    if (r.length && Number(r[0].value[1]) > since) return;
    await sleep(100);
  }
  throw new Error(`no sample of ${selector} after ${since}`);
}

const NAMES = {
  prom: {
    calls: (sc) => `node_libbpf_syscalls_total{job="prom",syscall="${sc}"}`,
    check: (le) => `node_libbpf_event_loop_phase_duration_seconds_bucket{job="prom",phase="check",le="${le}"}`,
    phases: 'node_libbpf_event_loop_phase_duration_seconds_count{job="prom"}',
  },
  otel: {
    calls: (sc) => `node_libbpf_syscall_calls_total{job="otel",syscall="${sc}"}`,
    check: (le) => `node_libbpf_eventloop_phase_duration_bucket{job="otel",nodejs_eventloop_phase="check",le="${le}"}`,
    phases: 'node_libbpf_eventloop_phase_duration_count{job="otel"}',
  },
};

describe('the monitor, scraped by a real Prometheus', { skip, timeout: 180_000 }, () => {
  const services = {};
  let prom;

  before(async () => {
    services.prom = await startService(['--syscalls', '--event-loop']);
    services.otel = await startService(['--syscalls', '--event-loop', '--otel', String(await freePort()), '--otel-only']);
    prom = await startPrometheus({ prom: services.prom.port, otel: services.otel.otel });
  });

  after(async () => {
    for (const s of Object.values(services)) s.child.kill('SIGTERM');
    if (prom) {
      process.kill(prom.child.pid, 'SIGTERM');
      await Promise.race([new Promise((r) => prom.child.on('exit', r)), sleep(10_000)]);
      if (prom.child.exitCode === null) process.kill(prom.child.pid, 'SIGKILL');
      fs.rmSync(prom.dir, { recursive: true, force: true });
    }
  });

  for (const via of ['prom', 'otel']) {
    test(`through ${via === 'prom' ? 'prom-client' : 'the OpenTelemetry SDK (MetricProducer, Prometheus exporter)'}: K requests are K accepts and K writes, and the blocked check phases are in their bucket`, async () => {
      const names = NAMES[via];
      const service = services[via];
      // a sample from before the requests, then the requests, then a sample after
      await scrapedAfter(prom.port, names.calls('accept4'), 0);
      const t0 = Date.now() / 1000;
      await sleep(300);
      for (let i = 0; i < K; i++) await get(service.port, '/');
      for (let i = 0; i < KB; i++) await get(service.port, `/block?ms=${BLOCK_MS}`);
      const t1 = Date.now() / 1000;
      await scrapedAfter(prom.port, names.calls('accept4'), t1 + 0.3);
      await sleep(1200); // every series has its sample after t1 too

      // the last sample before the requests (and its scrape) and the first after
      const series = async (sel) => samples(prom.port, sel);
      const accepts = await series(names.calls('accept4'));
      const i0 = accepts.findLastIndex(([t]) => t < t0);
      const i1 = accepts.findIndex(([t]) => t > t1 + 0.3);
      assert.ok(i0 >= 0 && i1 > i0, `samples around the requests: ${JSON.stringify(accepts)}`);
      const [ta, tb] = [accepts[i0][0], accepts[i1][0]];
      const at = (s, t) => s.find(([ts]) => ts === t)?.[1] ?? 0; // (a series appears at its first call)
      const delta = async (sel) => {
        const s = await series(sel).catch(() => []);
        return at(s, tb) - at(s, ta);
      };
      // each scrape in [ta, tb) writes its response once, on its own kept-alive connection
      const scrapes = i1 - i0;
      assert.equal(await delta(names.calls('accept4')), K + KB, 'one accept per request (the scrapes reuse one connection)');
      // a response of the service is one writev (head and a Buffer body);
      // the OpenTelemetry exporter's server sends string bodies, joined to
      // the head in one write(2) since Node 24; write(2) is also the
      // eventfd wakeups of the loop by V8's and libuv's worker threads
      const writes = await delta(names.calls('writev'));
      const scrapeWritevs = via === 'prom' || Number(process.versions.node.split('.')[0]) < 24 ? scrapes : 0;
      assert.equal(writes, K + KB + scrapeWritevs, `one writev per response: ${K + KB} requests and ${scrapeWritevs} scrapes`);
      const reads = await delta(names.calls('read'));
      // a read for each request at least (the others: EAGAIN ends of the
      // read loops, eventfd wakeups of the loop; more on a busy machine)
      assert.ok(reads >= K + KB, `reads: ${reads} for ${K + KB} requests`);
      console.log(`# ${via}: ${reads} reads for ${K + KB} requests and ${scrapes} scrapes`);

      // the check phase: exactly KB runs above 16 ms, and the quantile that
      // falls among them is in the bucket of the blocking the service measured
      const blocked = JSON.parse(await get(service.port, '/blocked'));
      assert.equal(blocked.length, KB);
      for (const s of blocked) assert.ok(s > LOW, `the service measured ${s} s`);
      const long = (await delta(names.check('+Inf'))) - (await delta(names.check(String(LOW))));
      assert.equal(long, KB, 'check-phase runs above 16.384 ms: the blocked requests');
      const runs = await delta(names.check('+Inf'));
      const q = 1 - KB / (2 * runs);
      const bucket = names.check('').replace(',le=""', '');
      const [r] = await query(prom.port, `histogram_quantile(${q}, sum by (le) (${bucket} @ ${tb} - ${bucket} @ ${ta}))`, tb);
      // in the log2 bucket of the median the service measured (a phase run
      // is its callback and a little more: at most the bucket above)
      const quantile = Number(r.value[1]);
      const bucketOf = (seconds) => Math.ceil(Math.log2(seconds * 1e6));
      const median = [...blocked].sort((a, b) => a - b)[KB >> 1];
      const [qb, mb] = [bucketOf(quantile), bucketOf(median)];
      assert.ok(qb === mb || qb === mb + 1, `histogram_quantile(${q}) of the check phase: ${quantile} s (bucket le=${2 ** qb} µs); the service measured ${blocked.join(', ')} s (median in le=${2 ** mb} µs)`);

      // every phase traced has its histogram
      const phases = await query(prom.port, names.phases);
      assert.ok(phases.length >= 4, `phase histograms: ${JSON.stringify(phases.map((p) => p.metric))}`);
    });
  }
});
