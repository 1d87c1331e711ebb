'use strict';
// What the in-process monitor costs a busy Node.js HTTP server, part by
// part, measured as the HTTP row is (bench/harness/http_row.js): one wrk
// run against one server (bench/monitor_server.js), whose own monitor is
// resumed for a second and paused for a second, ROUNDS times per
// configuration; each monitored second against the unmonitored ones around
// it. Also the main-thread time of a prom-client scrape of each
// configuration. Needs root (or CAP_BPF + CAP_PERFMON) and wrk.
//   node bench/monitor_row.js [--rounds N] [--json]
const { start, stop, waitLine, sleep, json } = require('./harness/procs');
const { pairedLoss, servedSamples } = require('./harness/http_row');
const { median } = require('./harness/numbers');
const { execFileSync } = require('node:child_process');

const argv = process.argv.slice(2);
const rounds = Number(argv.includes('--rounds') ? argv[argv.indexOf('--rounds') + 1] : 15);
const ALONE = { offCpu: false, tcpRetransmits: false };
const CONFIGS = [
  ['default set (offCpu, tcpRetransmits)', {}],
  ['eventLoop', { ...ALONE, eventLoop: true }],
  ['offCpu', { ...ALONE, offCpu: true }],
  ['tcpRetransmits', { ...ALONE, tcpRetransmits: true }],
  ['syscalls', { ...ALONE, syscalls: true }],
  ['files + connects', { ...ALONE, files: true, connects: true }],
  ['everything', { eventLoop: true, syscalls: true, files: true, connects: true }],
];

(async () => {
  const server = start(process.execPath, [require('node:path').join(__dirname, 'monitor_server.js')]);
  let load;
  const rows = [];
  try {
    const { port } = json(await waitLine(server, /^\{"port"/, 10_000));
    load = start('wrk', ['-t1', '-c16', '-d3600s', `http://127.0.0.1:${port}/`]);
    await sleep(3000); // the server's JIT warms up
    // context switches of the whole machine (the offCpu part runs on each)
    const ctxt = () => Number(/^ctxt (\d+)/m.exec(require('node:fs').readFileSync('/proc/stat', 'utf8'))[1]);
    const served = () => servedSamples(server).at(-1)?.n ?? 0;
    for (const [name, config] of CONFIGS) {
      const from = server.lines.length;
      const [c0, n0] = [ctxt(), served()];
      server.stdin.write(`${JSON.stringify(config)} ${rounds}\n`);
      const done = json(await waitLine(server, /^\{"(done|error)"/, rounds * 2000 + 60_000, from));
      if (done.error) throw new Error(`${name}: ${done.error}`);
      const switchesPerRequest = (ctxt() - c0) / (served() - n0);
      const switches = server.lines.slice(from).map((l) => l.line).filter((l) => /^\{"t":"/.test(l)).map((l) => JSON.parse(l)).map((x) => ({ t: BigInt(x.t), on: x.on }));
      await sleep(100);
      const r = pairedLoss(servedSamples(server), switches);
      const row = { name, config, loss: r.loss, losses: r.losses, traced: r.traced, untraced: r.untraced, scrapeUs: median(done.scrapeUs), scrapeCpuUs: median(done.cpuUs), startMs: done.startMs, perRequest: { ...done.perRequest, machineSwitches: switchesPerRequest } };
      rows.push(row);
      console.error(`bench: monitor ${name}: ${r.untraced.toFixed(0)} req/s unmonitored, ${r.traced.toFixed(0)} monitored: ${(r.loss * 100).toFixed(1)}% fewer (median of ${r.losses.length} seconds); scrape ${row.scrapeUs.toFixed(0)} µs main thread; start ${done.startMs.toFixed(0)} ms; per request ${JSON.stringify(row.perRequest)}`);
    }
  } finally {
    if (load) await stop(load, 'SIGINT');
    await stop(server, 'SIGTERM');
  }
  const loadavg = execFileSync('uptime', { encoding: 'utf8' }).trim();
  if (argv.includes('--json')) console.log(JSON.stringify({ rounds, loadavg, rows }));
  else {
    console.log(`| part | req/s unmonitored | monitored | cost (median of ${rounds} paired seconds) | scrape, main thread |`);
    console.log('|---|---:|---:|---:|---:|');
    for (const r of rows) console.log(`| ${r.name} | ${r.untraced.toFixed(0)} | ${r.traced.toFixed(0)} | ${(r.loss * 100).toFixed(1)}% | ${(r.scrapeUs / 1000).toFixed(2)} ms |`);
    console.log(`\n${loadavg}`);
  }
})();
