'use strict';
// The profile row's server: bench/harness/hello_server.js's server,
// profiling itself (run with --perf-basic-prof). On a line "ROUNDS" on
// stdin it makes a profiler, then ROUNDS times runs a window for a second
// and none for a second, printing {"t", "on"} at each switch; after each
// window (after its {"on": false}) it names the stacks and encodes both
// pprofs on the main thread, timing that (a pull's main-thread time; the first pull also reads node's
// symbols). Then prints {"done", "pullMs": [...], "samples": [...]}.
const fs = require('node:fs');
const readline = require('node:readline');
const bpf = require('..');
const { helloServer } = require('./harness/hello_server');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// node never removes the perf map it writes (--perf-basic-prof); SIGTERM exits through process.exit (hello_server.js)
process.on('exit', () => fs.rmSync(`/tmp/perf-${process.pid}.map`, { force: true }));
const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function run(rounds) {
  // (PROFILE_OPTIONS: bpf.profile()'s options as JSON, to cost a part: {"offCpu": false})
  const profiler = bpf.profile(JSON.parse(process.env.PROFILE_OPTIONS || '{}'));
  const pullMs = [];
  const samples = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const ended = new AbortController();
      const window = profiler.collect({ seconds: 60, signal: ended.signal });
      say({ t: String(process.hrtime.bigint()), on: true });
      await sleep(1000);
      // the window ends here; the pull's own time (naming, encoding) is timed apart
      say({ t: String(process.hrtime.bigint()), on: false });
      const t = process.hrtime.bigint();
      ended.abort();
      const w = await window;
      w.pprof('cpu');
      w.pprof('offCpu');
      pullMs.push(Number(process.hrtime.bigint() - t) / 1e6);
      samples.push(w.cpu.reduce((n, s) => n + s.count, 0));
      await sleep(1000);
    }
  } finally {
    profiler.close();
  }
  say({ done: true, pullMs, samples });
}

helloServer(() => {
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    run(Number(line.trim())).catch((e) => say({ error: e.message, code: e.code }));
  });
});
