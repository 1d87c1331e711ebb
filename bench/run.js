'use strict';
// `npm run bench`: node-libbpf against C libbpf, BCC and bpftrace on one
// workload, side by side in one run, and prints one table (also written to
// bench/RESULTS.md). bench/setup.sh installs what it needs first (this
// script installs nothing).
//
// The workload: bench/loadgen.c makes N getppid() calls in a tight loop; a
// tracepoint program on syscalls:sys_enter_getppid (__test__/bpf/stream.bpf.c,
// built with an 8 MiB ring into bench/.build/stream.bpf.o, the same object
// for the C and node-libbpf consumers) emits a 24-byte record {u32 pid; u32
// tid; u64 ts; u64 seq} per call into the ring buffer or a perf buffer. Each
// consumer counts what it receives and checks the seq numbers for what is
// missing. Every consumer runs in turn, each repetition in the same order;
// every figure is from the median run of `--reps` (by delivered events/s).
//
//   node bench/run.js [--reps 3] [--n 2000000] [--only a,b] [--no-http] [--http-rounds 30] [--no-startup]
//                     [--patched DIR]   (DIR: another checkout of node-libbpf, built, e.g. with a proposed
//                                        change: its node-libbpf rows are added, labelled with DIR)
//
// delivered events/s = received / (time of the last delivery - loop start),
// both CLOCK_MONOTONIC. traced slowdown = ns per call traced / untraced (the
// untraced loop runs in every repetition too). consumer CPU = user + system
// seconds of the consumer process (all its threads) from attached to done;
// per record: over the records received.
//
// The parts, in bench/harness/: options, prereqs (what setup.sh installed),
// build, procs (child processes), loadgen, consumers (the rows: c, node,
// bcc, bpftrace, each run by consumer_process but bpftrace), http_row,
// startup_row, report. Every process it starts it stops by its own pid (and
// kills what is left on exit).
const os = require('node:os');
const { parseOptions } = require('./harness/options');
const { checkRequired, optionalTools } = require('./harness/prereqs');
const { buildAll } = require('./harness/build');
const { stop, killAll, sh } = require('./harness/procs');
const { loadgen, untraced } = require('./harness/loadgen');
const { consumers: consumerRows } = require('./harness/consumers');
const { httpRow } = require('./harness/http_row');
const { startupRow } = require('./harness/startup_row');
const { compose, writeResults } = require('./harness/report');
const { fmtInt, fmtRate, fmtNs, nsPerRecord } = require('./harness/numbers');

const loadavg = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const qemuCount = () => sh('pgrep', ['-c', 'qemu']).out.trim();

/** One run of consumer `c` against a fresh load generator (with `pin`: consumer on CPU 1, load on CPU 0). */
async function runOnce(c, opts, tools, pin = false) {
  const lg = loadgen(opts.n, pin);
  try {
    const r = await c.run(lg, { pin, tools });
    r.rate = r.received / ((r.last_ns - r.load.start_ns) / 1e9);
    r.ns = r.load.ns_per_call;
    return r;
  } finally {
    await stop(lg, 'SIGKILL');
  }
}

async function main() {
  const opts = parseOptions();
  const meta = { t0: Date.now(), startLoad: loadavg(), qemu: qemuCount() };
  checkRequired();
  buildAll();
  const tools = optionalTools();
  const consumers = consumerRows(opts);

  const results = new Map(consumers.map((c) => [c.id, []]));
  const errors = new Map();
  const untracedNs = [];
  for (let rep = 0; rep < opts.reps; rep++) {
    untracedNs.push(await untraced(opts.n));
    console.error(`bench: rep ${rep + 1}/${opts.reps}: untraced ${untracedNs[rep]} ns per call`);
    for (const c of consumers) {
      if (c.unavailable(tools) || errors.has(c.id)) continue;
      try {
        const r = await runOnce(c, opts, tools);
        results.get(c.id).push(r);
        console.error(`bench: rep ${rep + 1}/${opts.reps}: ${c.id}: ${fmtInt(r.received)} received, ${fmtInt(r.lost)} lost, ${fmtInt(r.missing)} missing, ${fmtRate(r.rate)} events/s, ${r.ns} ns per call, ${r.cpu_s.toFixed(2)} CPU s, ${fmtNs(nsPerRecord(r))} CPU ns per record${r.rss_growth_mb !== undefined ? `, RSS +${r.rss_growth_mb} MB` : ''}`);
      } catch (e) {
        // the row says it failed; the bench goes on
        errors.set(c.id, e.message.split('\n')[0]);
        console.error(`bench: ${c.id}: failed: ${e.message}`);
      }
    }
  }
  // diagnostic, once: the backpressure run with the consumer pinned to CPU 1
  // and the load to CPU 0, so that the slow callback cannot take the
  // traced loop's CPU: what slows the loop then is not the JS thread
  let pinned;
  const bp = consumers.find((c) => c.id === 'node-backpressure');
  if (bp && results.get(bp.id).length) {
    try {
      pinned = await runOnce(bp, opts, tools, true);
      console.error(`bench: node-backpressure pinned: ${fmtInt(pinned.received)} received, ${fmtInt(pinned.lost)} lost, ${pinned.load.ns_per_call} ns per call, RSS +${pinned.rss_growth_mb} MB`);
    } catch (e) {
      console.error(`bench: node-backpressure pinned: ${e.message}`);
    }
  }

  let http;
  if (opts.http) {
    if (tools.wrk) http = { error: `not available: ${tools.wrk}` };
    else {
      try {
        http = await httpRow(tools, opts.httpRounds);
      } catch (e) {
        http = { error: `failed: ${e.message.split('\n')[0]}` };
      }
    }
  }
  let startup;
  if (opts.startup) {
    try {
      startup = await startupRow(tools);
    } catch (e) {
      startup = { error: e.message.split('\n')[0] };
    }
  }

  meta.endLoad = loadavg();
  meta.qemuEnd = qemuCount();
  const text = compose({ opts, tools, consumers, results, errors, untracedNs, pinned, http, startup, meta });
  console.log(`\n${text}`);
  writeResults(opts.out, text);
}

main().then(
  // every child is stopped: what is left (a pipe a grandchild inherited) must not keep the bench alive
  () => process.exit(0),
  (e) => {
    // a wrong option or a missing package: its message says what to do
    console.error(/^ERR_BENCH_/.test(e.code) || /^ERR_PARSE_ARGS_/.test(e.code) ? `bench: ${e.message}` : e.stack || e.message);
    killAll();
    process.exit(1);
  },
);
