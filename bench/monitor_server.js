'use strict';
// The monitor row's server: bench/http_server.js's server
// (bench/harness/hello_server.js), monitoring itself. Prints {"port"}, then
// every 50 ms the requests served so far, {"t", "n"}. On a line "CONFIG ROUNDS" on stdin
// (CONFIG: a JSON object of monitor options) it starts that monitor paused,
// then ROUNDS times resumes it for a second and pauses it for a second,
// printing {"t", "on"} at each switch, and in the middle of each monitored
// second scrapes it through prom-client, timing the scrape on the main
// thread; then closes it and prints {"done": CONFIG, "scrapeUs": [...],
// "cpuUs": [...], "startMs", "perRequest"}: perRequest, what the monitor
// counted per request served while it was on (loop iterations, syscalls of
// the process, main-thread switches off the CPU), for bench/monitor_costs.js's
// costs per event.
const readline = require('node:readline');
const client = require('prom-client');
const bpf = require('..');
const { helloServer } = require('./harness/hello_server');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function run(config, rounds) {
  const t0 = process.hrtime.bigint();
  const m = bpf.monitor(config);
  const startMs = Number(process.hrtime.bigint() - t0) / 1e6;
  m.pause();
  const registry = new client.Registry();
  m.registerPrometheus(registry);
  const scrapeUs = [];
  const cpuUs = [];
  let requests = 0;
  for (let i = 0; i < rounds; i++) {
    const from = hello.served();
    m.resume();
    say({ t: String(process.hrtime.bigint()), on: true });
    await sleep(500);
    // (the text is built synchronously: wall time here is main-thread time)
    const cpu = process.cpuUsage();
    const t = process.hrtime.bigint();
    await registry.metrics();
    scrapeUs.push(Number(process.hrtime.bigint() - t) / 1e3);
    const used = process.cpuUsage(cpu);
    cpuUs.push(used.user + used.system);
    await sleep(500);
    m.pause();
    requests += hello.served() - from;
    say({ t: String(process.hrtime.bigint()), on: false });
    await sleep(1000);
  }
  const snap = m.read();
  const sum = (rows, f) => (rows ? rows.reduce((n, r) => n + f(r), 0) : undefined);
  const perRequest = {
    iterations: snap.eventLoop ? snap.eventLoop.find((p) => p.phase === 'poll').duration.count / requests : undefined,
    syscalls: snap.syscalls ? sum(snap.syscalls, (r) => r.count) / requests : undefined,
    offCpuSwitches: snap.offCpu ? sum(snap.offCpu.reasons, (r) => r.count) / requests : undefined,
  };
  m.close();
  say({ done: config, scrapeUs, cpuUs, startMs, perRequest });
}

const hello = helloServer(() => {
  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const [config, rounds] = line.trim().split(/\s+/);
    run(JSON.parse(config), Number(rounds)).catch((e) => say({ error: e.message, code: e.code }));
  });
});
