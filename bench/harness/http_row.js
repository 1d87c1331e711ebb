'use strict';
// The HTTP server row: what tracing costs a busy Node.js HTTP server.
//
// One load run (wrk, for the whole row) against one server, while
// bench/syscall_toggle.js attaches a tracer's programs for a second, detaches
// them for a second, and so on: each traced second is compared with the
// untraced seconds around it (the server's speed drifts by 10% over a
// minute here, traced or not, so that tracers started in turn for minutes
// each measured the drift as much as the tracer). The first SETTLE_MS after
// each switch are not counted.
//   example: examples/node_syscalls.js's programs, tracing the server
//   idle:    the same, tracing an idle process (what the syscall
//            tracepoints cost every process by themselves)
//   stream:  a ring buffer record per syscall into a JS callback
//   bpftrace: the example's histograms as a bpftrace script would keep them
const fs = require('node:fs');
const path = require('node:path');
const { start, stop, waitLine, sleep, json } = require('./procs');
const { objectPath } = require('../../lib/core/objects');
const { median, fmtInt } = require('./numbers');

const EXAMPLE_OBJ = objectPath('node_syscalls');
const TOGGLE_MS = 1000;
const SETTLE_MS = 150;

/** The server's samples ({t, n, c, p}: requests served by CLOCK_MONOTONIC ns t; the main thread's CPU ns and the process's CPU µs by then, hello_server.js). */
function servedSamples(server) {
  return server.lines
    .map((l) => /^\{"t":(\d+),"n":(\d+)(?:,"c":(-?\d+),"p":(\d+))?\}$/.exec(l.line))
    .filter(Boolean)
    .map((m) => ({ t: BigInt(m[1]), n: Number(m[2]), c: m[3] === undefined || m[3] === '-1' ? NaN : Number(m[3]), p: m[4] === undefined ? NaN : Number(m[4]) * 1000 }));
}

/** Over [from, to] (ns), from the server's samples: { rate: requests/s, mainNs, procNs: CPU ns per request }; NaN with fewer than two. */
function windowBetween(samples, from, to) {
  const inside = samples.filter((x) => x.t >= from && x.t <= to);
  if (inside.length < 2) return { rate: NaN, mainNs: NaN, procNs: NaN };
  const [a, b] = [inside[0], inside.at(-1)];
  const n = b.n - a.n;
  return { rate: n / (Number(b.t - a.t) / 1e9), mainNs: (b.c - a.c) / n, procNs: (b.p - a.p) / n };
}

/**
 * What the tracer cost, from the server's samples and the switches ({t,
 * on}): each traced window (less its first SETTLE_MS) against the mean of
 * the untraced ones around it. { loss (median: fewer requests/s), losses,
 * traced, untraced (mean req/s), seconds (traced, counted), cpu: { main,
 * proc: { cost (median: more CPU per request), costs, traced, untraced
 * (mean ns per request) } } }.
 */
function pairedLoss(samples, switches) {
  const windows = [];
  for (let i = 0; i + 1 < switches.length; i++) {
    windows.push({ on: switches[i].on, ...windowBetween(samples, switches[i].t + BigInt(SETTLE_MS * 1e6), switches[i + 1].t) });
  }
  const mean = (xs) => xs.filter(Number.isFinite).reduce((a, b) => a + b, 0) / xs.filter(Number.isFinite).length;
  /** Each traced window's `change(traced, untraced around it)` of `key`, and the means. */
  const paired = (key, change) => {
    const out = [];
    windows.forEach((w, i) => {
      if (!w.on || i === 0 || i + 1 >= windows.length) return;
      const around = (windows[i - 1][key] + windows[i + 1][key]) / 2;
      if (Number.isFinite(w[key]) && Number.isFinite(around)) out.push(change(w[key], around));
    });
    return { changes: out, traced: mean(windows.filter((w) => w.on).map((w) => w[key])), untraced: mean(windows.filter((w) => !w.on).map((w) => w[key])) };
  };
  const rate = paired('rate', (on, off) => 1 - on / off);
  const cpu = (key) => {
    const r = paired(key, (on, off) => on / off - 1);
    return { cost: median(r.changes), costs: r.changes, traced: r.traced, untraced: r.untraced };
  };
  return { loss: median(rate.changes), losses: rate.changes, traced: rate.traced, untraced: rate.untraced, seconds: (windows.filter((w) => w.on).length * (TOGGLE_MS - SETTLE_MS)) / 1000, cpu: { main: cpu('mainNs'), proc: cpu('procNs') } };
}

/** Runs syscall_toggle.js KIND on `pid` for `rounds` on/off pairs; the req/s of each window. */
async function toggled(server, kind, pid, rounds) {
  const seconds = (rounds * 2 * TOGGLE_MS) / 1000;
  const t = start(process.execPath, [path.join(__dirname, '..', 'syscall_toggle.js'), kind, String(pid), String(TOGGLE_MS), String(seconds)]);
  try {
    // bpftrace starts (compiles) and stops (prints) once per traced second
    const done = json(await waitLine(t, /"done":true/, seconds * 1000 * (kind === 'bpftrace' ? 4 : 1) + 60_000));
    const switches = t.lines.map((l) => l.line).filter((l) => l.startsWith('{"t"')).map((l) => JSON.parse(l)).map((x) => ({ t: BigInt(x.t), on: x.on }));
    await sleep(100); // the server's sample after the last switch
    const { loss, losses, traced, untraced, seconds: tracedSeconds } = pairedLoss(servedSamples(server), switches);
    return { kind, loss, losses, traced, untraced, calls: done.calls, lost: done.lost, cpu_s: done.cpu_s, seconds: tracedSeconds };
  } finally {
    await stop(t, 'SIGTERM');
  }
}

/**
 * The HTTP row: { example, idle, stream, bpftrace (each as toggled() returns,
 * those that ran), failed: [why], params: { rounds, toggleMs, settleMs } }.
 */
async function httpRow(tools, rounds) {
  if (!fs.existsSync(EXAMPLE_OBJ)) throw new Error(`${EXAMPLE_OBJ} is missing (npm run build)`);
  const server = start(process.execPath, [path.join(__dirname, '..', 'http_server.js')]);
  const idle = start('sleep', ['3600'], { stdio: 'ignore' });
  let load;
  try {
    const { port } = json(await waitLine(server, /^\{"port"/, 10_000));
    load = start('wrk', ['-t1', '-c16', '-d3600s', `http://127.0.0.1:${port}/`]);
    await sleep(3000); // the server's JIT warms up
    const row = { params: { rounds, toggleMs: TOGGLE_MS, settleMs: SETTLE_MS } };
    for (const kind of ['example', 'idle', 'stream', ...(tools.bpftrace ? [] : ['bpftrace'])]) {
      try {
        row[kind] = await toggled(server, kind === 'idle' ? 'example' : kind, kind === 'idle' ? idle.pid : server.pid, rounds);
      } catch (e) {
        if (kind === 'example') throw e;
        row.failed = [...(row.failed ?? []), `${kind}: ${e.message.split('\n')[0].slice(0, 300)}`];
        console.error(`bench: http ${kind}: ${e.message}`);
        continue;
      }
      const r = row[kind];
      console.error(`bench: http ${kind}: ${r.untraced.toFixed(0)} req/s untraced, ${r.traced.toFixed(0)} traced: ${(r.loss * 100).toFixed(1)}% fewer (median of ${r.losses.length} traced seconds), ${fmtInt(r.calls)} syscalls, ${r.lost} lost, tracer CPU ${r.cpu_s.toFixed(2)} s`);
    }
    return row;
  } finally {
    if (load) await stop(load, 'SIGINT');
    await stop(server, 'SIGTERM');
    await stop(idle, 'SIGKILL');
  }
}

module.exports = { httpRow, pairedLoss, servedSamples, TOGGLE_MS };
