'use strict';
// The profile rows' server: bench/harness/hello_server.js's server,
// profiling itself (run with --perf-basic-prof). On a line "ROUNDS ROW" on
// stdin it starts ROW's profiler, then ROUNDS times runs a window for a
// second and none for a second, printing {"t", "on"} at each switch; after
// each window (after its {"on": false}) it makes that window's profile,
// timing that (pullMs: from the window's end until the profile is made,
// the requests served meanwhile included; the first pull also reads
// node's and the kernel's symbols) and the longest the event loop stood
// still meanwhile (stallMs: the longest gap between the runs of a 1 ms
// timer, the request handling between them included). Then prints
// {"done", "row", "pullMs", "stallMs", "samples", "programs"} and waits
// for the next line. ROW as
// bench/harness/profilers.js takes it (none, pprof, bpf:OPTIONS).
// "programs": per BPF program of this process (by name), its runs and
// run time over the windows (the kernel counts them only while the sysctl
// kernel.bpf_stats_enabled is 1), read from /proc/self/fdinfo.
const fs = require('node:fs');
const readline = require('node:readline');
const { helloServer } = require('./harness/hello_server');
const { profilerOf, programCounters } = require('./harness/profilers');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// node never removes the perf map it writes (--perf-basic-prof); SIGTERM exits through process.exit (hello_server.js)
process.on('exit', () => fs.rmSync(`/tmp/perf-${process.pid}.map`, { force: true }));
const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function run(rounds, row) {
  const p = profilerOf(row);
  const pullMs = [];
  const stallMs = [];
  const samples = [];
  const add = (a, b, sign) => Object.fromEntries(Object.keys({ ...a, ...b }).map((k) => [k, { runs: (a[k]?.runs ?? 0) + sign * (b[k]?.runs ?? 0), ns: (a[k]?.ns ?? 0) + sign * (b[k]?.ns ?? 0) }]));
  let programs = {};
  try {
    for (let i = 0; i < rounds; i++) {
      const before = programCounters();
      p.start();
      say({ t: String(process.hrtime.bigint()), on: true });
      await sleep(1000);
      // the window ends here; the pull's own time (naming, encoding) is timed apart
      say({ t: String(process.hrtime.bigint()), on: false });
      const t = process.hrtime.bigint();
      let last = t;
      let stall = 0;
      const beat = setInterval(() => {
        const now = process.hrtime.bigint();
        stall = Math.max(stall, Number(now - last) / 1e6);
        last = now;
      }, 1);
      samples.push(await p.stop());
      pullMs.push(Number(process.hrtime.bigint() - t) / 1e6);
      // (one more beat: a stall at the pull's end shows at the next run of the timer)
      await sleep(5);
      clearInterval(beat);
      stallMs.push(stall);
      programs = add(programs, add(programCounters(), before, -1), 1);
      await sleep(1000);
    }
  } finally {
    p.close();
  }
  say({ done: true, row, pullMs, stallMs, samples, programs });
}

helloServer(() => {
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    const [rounds, row] = line.trim().split(/\s+(.*)/s);
    run(Number(rounds), row ?? `bpf:${process.env.PROFILE_OPTIONS || '{}'}`).catch((e) => say({ error: e.message, code: e.code }));
  });
});
