'use strict';
// The bench's results as text: the head (machine, load), the table, the
// notes (backpressure, RSS, HTTP, startup), the targets met or not, every
// run for the spread; printed, and written to bench/RESULTS.md.
const fs = require('node:fs');
const os = require('node:os');
const { median, fmtRate, fmtInt, nsPerRecord, fmtNs } = require('./numbers');

// consumer CPU ns per record the node-libbpf rows must reach
const CPU_TARGETS = [
  ['ring-typed', 120, 'typed (decoded objects)'],
  ['ring-raw', 60, 'raw (a Buffer per record)'],
  ['ring-batch', 30, 'batches'],
];

// consumer CPU per record as a multiple of C no-wakeup's the node-libbpf
// rows must reach (issue 28), over the whole run: each target on the row
// whose callback does C's per-record work (the bitmap of seq numbers), and
// on the row without the cost that work has in JavaScript only (typed:
// 64-bit fields as numbers, not BigInts to make and convert; batches: the
// library alone, a callback that only counts)
/** @type {[mode: string, times: number, what: string][]} */
const RATIO_TARGETS = [
  ['ring-typed', 5, 'typed (decoded objects)'],
  ['ring-typed-number', 5, 'typed, int64: \'number\''],
  ['ring-batch', 2, 'batches'],
  ['ring-batch-count', 2, 'batches, the library alone'],
];

/**
 * Each consumer's row: the median run by delivered events/s ({ c, r,
 * slowdown, runs }), or why there is none ({ c, na } not available, { c,
 * failed } failed).
 */
function summarize(consumers, results, errors, tools, base) {
  return consumers.map((c) => {
    const runs = results.get(c.id);
    if (!runs.length) {
      const na = c.unavailable(tools);
      return na ? { c, na } : { c, failed: errors.get(c.id) || 'no run' };
    }
    const sorted = runs.slice().sort((a, b) => a.rate - b.rate);
    const r = sorted[(sorted.length - 1) >> 1];
    return { c, r, slowdown: r.ns / base, runs };
  });
}

function table(rows, ref) {
  const lines = [
    '| consumer | received | lost | missing | delivered events/s | traced slowdown | consumer CPU s | consumer CPU ns per record | warm: ns per record | vs C no-wakeup: events/s, slowdown |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const { c, r, slowdown, na, failed } of rows) {
    if (na || failed) {
      lines.push(`| ${c.label} | ${na ? 'not available' : '**failed**'}: ${(na || failed).replace(/\|/g, '/')} | | | | | | | | |`);
      continue;
    }
    const vs = c.ref ? 'reference' : ref ? `${((r.rate / ref.r.rate) * 100).toFixed(0)}%, ${(slowdown / ref.slowdown).toFixed(2)}x` : '';
    lines.push(`| ${c.label} | ${fmtInt(r.received)} | ${fmtInt(r.lost)} | ${fmtInt(r.missing)} | ${fmtRate(r.rate)} | ${slowdown.toFixed(1)}x | ${r.cpu_s.toFixed(2)} | ${fmtNs(nsPerRecord(r))} | ${fmtNs(r.warm_ns)} | ${vs} |`);
  }
  return lines;
}

/** The whole text. */
function compose({ opts, tools, consumers, results, errors, untracedNs, pinned, http, startup, meta }) {
  const N = opts.n;
  const base = median(untracedNs);
  const rows = summarize(consumers, results, errors, tools, base);
  const ref = rows.find((x) => x.c.ref && x.r);
  const row = (id) => rows.find((x) => x.c.id === id && x.r);
  const notes = [];
  const targets = [];
  const check = (ok, text) => targets.push(`- ${ok ? 'met' : '**not met**'}: ${text}`);

  const bp = row('node-backpressure');
  if (bp) {
    const exact = bp.runs.every((r) => r.received + r.lost === N);
    notes.push(`- Backpressure (20 µs of work per record): received + lost == N in ${bp.runs.filter((r) => r.received + r.lost === N).length} of ${bp.runs.length} runs${exact ? ' (all)' : ''}; lost == missing by seq in ${bp.runs.filter((r) => r.lost === r.missing).length} of ${bp.runs.length}; RSS growth ${bp.runs.map((r) => `${r.rss_growth_mb} MB`).join(', ')} (peak RSS over RSS once attached); traced slowdown in the runs ${bp.runs.map((r) => `${(r.ns / base).toFixed(1)}x`).join(', ')}${pinned ? `; once more with the consumer pinned to CPU 1 and the load to CPU 0 (the 100%-busy JS thread cannot take the loop's CPU): ${(pinned.load.ns_per_call / base).toFixed(1)}x, ${fmtInt(pinned.received)} received + ${fmtInt(pinned.lost)} lost, RSS +${pinned.rss_growth_mb} MB` : ''}.`);
  }
  const nodeRss = rows.filter((x) => x.c.node && x.r && x.c.id !== 'node-backpressure').map((x) => `${x.c.id} +${x.r.rss_growth_mb} MB`);
  if (nodeRss.length) notes.push(`- RSS growth of the other node-libbpf consumers: ${nodeRss.join(', ')}.`);

  if (ref) {
    for (const prefix of ['node', 'patched']) {
      const who = prefix === 'node' ? 'node-libbpf' : `node-libbpf at ${opts.patchedLabel}`;
      const typed = row(`${prefix}-ring-typed`);
      if (typed) {
        const share = typed.r.rate / ref.r.rate;
        const slow = typed.slowdown / ref.slowdown;
        check(share >= 0.7 && typed.r.rate >= 1e6 && typed.r.lost === 0 && typed.r.missing === 0 && slow <= 1.15,
          `${who} ring → objects: ${(share * 100).toFixed(0)}% of C no-wakeup events/s (≥ 70%), ${fmtRate(typed.r.rate)}/s (≥ 1 M), ${typed.r.lost} lost, ${typed.r.missing} missing, slowdown ${slow.toFixed(2)}x C's (≤ 1.15x)`);
      }
      const raw = [row(`${prefix}-ring-batch`), row(`${prefix}-ring-raw`)].filter(Boolean).sort((a, b) => b.r.rate - a.r.rate)[0];
      if (raw) {
        const share = raw.r.rate / ref.r.rate;
        check(share >= 0.9 && raw.r.missing === 0, `${who} raw (best of Buffers and batches: ${raw.c.id}): ${(share * 100).toFixed(0)}% of C no-wakeup events/s (≥ 90%)`);
      }
    }
  }
  const cPerf = row('c-perf');
  const wake1 = row('node-perf-wake1');
  if (cPerf && wake1) check(wake1.r.rate >= cPerf.r.rate, `perf buffer with C's settings (wakeupBytes 1, 64 pages): ${fmtRate(wake1.r.rate)}/s vs C ${fmtRate(cPerf.r.rate)}/s, slowdown ${wake1.slowdown.toFixed(1)}x vs ${cPerf.slowdown.toFixed(1)}x`);
  for (const id of ['node-perf', 'patched-perf-typed']) {
    const p = row(id);
    if (p) check(p.slowdown < 5 && p.runs.every((r) => r.missing === 0), `${id} (library defaults): slowdown ${p.slowdown.toFixed(1)}x (< 5x); missing in the ${p.runs.length} runs: ${p.runs.map((r) => `${fmtInt(r.missing)} (${((r.missing / N) * 100).toFixed(2)}%)`).join(', ')} (none anywhere wanted)`);
  }
  if (bp) {
    const typed = row('node-ring-typed');
    const exact = bp.runs.every((r) => r.received + r.lost === N);
    const rss = Math.max(...bp.runs.map((r) => r.rss_growth_mb));
    check(exact && rss < 100 && (!typed || bp.slowdown <= typed.slowdown * 1.15),
      `backpressure: received + lost == N in every run: ${exact}; RSS growth ≤ ${rss} MB (< 100 MB); traced slowdown ${bp.slowdown.toFixed(1)}x vs ${typed ? `${typed.slowdown.toFixed(1)}x with a fast callback` : '?'}`);
  }

  if (http && http.error) notes.push(`- HTTP server: ${http.error}`);
  else if (http) httpNotes(http, tools, notes, check);
  if (startup && startup.error) notes.push(`- Startup: failed: ${startup.error}`);
  else if (startup) startupNotes(startup, notes, check);

  // judged on the median of the runs' CPU per record (the row's run is the
  // median by events/s); warm: the same between half and nine tenths of N
  const cpuTargets = [];
  const ns = (x) => median(x.runs.map(nsPerRecord));
  const warm = (x) => median(x.runs.map((r) => r.warm_ns));
  for (const prefix of ['node', 'patched']) {
    for (const [mode, limit, what] of CPU_TARGETS) {
      const x = row(`${prefix}-${mode}`);
      if (!x) continue;
      const c = ref ? `; C no-wakeup: ${fmtNs(ns(ref))} ns, warm ${fmtNs(warm(ref))} ns` : '';
      cpuTargets.push(`- ${ns(x) <= limit ? 'met' : '**not met**'}: ${x.c.id}, ${what}: ${fmtNs(ns(x))} ns of consumer CPU per record over the whole run (≤ ${limit} ns; median of ${x.runs.length} runs: ${x.runs.map((r) => fmtNs(nsPerRecord(r))).join(', ')}), warm ${fmtNs(warm(x))} ns${c}`);
    }
    for (const [mode, times, what] of ref ? RATIO_TARGETS : []) {
      const x = row(`${prefix}-${mode}`);
      if (!x) continue;
      const ratio = ns(x) / ns(ref);
      cpuTargets.push(`- ${ratio <= times ? 'met' : '**not met**'}: ${x.c.id}, ${what}: ${ratio.toFixed(1)}x C no-wakeup's consumer CPU per record over the whole run (≤ ${times}x; ${fmtNs(ns(x))} against ${fmtNs(ns(ref))} ns), warm ${(warm(x) / warm(ref)).toFixed(1)}x (${fmtNs(warm(x))} against ${fmtNs(warm(ref))} ns)`);
    }
  }

  const date = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const head = [
    `${date}, kernel ${os.release()}, ${os.cpus().length} vCPU, Node.js ${process.version}; load average (1, 5, 15 min) ${meta.startLoad} at start, ${meta.endLoad} at end; qemu processes at start: ${meta.qemu || 0}, at end: ${meta.qemuEnd || 0}.`,
    `N = ${fmtInt(N)} getppid calls per run, untraced ${base.toFixed(1)} ns per call (median); ${opts.reps} repetitions, each row the median run by delivered events/s. Ring buffer 8 MiB; perf buffers 64 pages (256 KiB) per CPU for C, BCC and node-perf-wake1, node-libbpf's default (256 pages, 1 MiB) for node-perf. Consumer CPU: user + system time of the consumer process, every thread, from attached to done (getrusage(RUSAGE_SELF); bpftrace: its /proc/PID/stat), over the records received; warm: the same between the moments half and nine tenths of N had been received (C and node-libbpf consumers). BCC: ${tools.bccSource ? tools.bccSource.note : tools.bcc}. Total time ${((Date.now() - meta.t0) / 1000).toFixed(0)} s.`,
  ];
  const perRun = rows.filter((x) => x.r).map(({ c, runs }) => `| ${c.id} | ${runs.map((r) => `${(r.ns / base).toFixed(2)}x`).join(', ')} | ${runs.map((r) => fmtInt(r.missing)).join(', ')} | ${runs.map((r) => r.cpu_s.toFixed(2)).join(', ')} | ${runs.map((r) => fmtNs(nsPerRecord(r))).join(', ')} | ${runs.map((r) => fmtNs(r.warm_ns)).join(', ')} |`);
  const appendix = `Every run (in order), for the spread: traced slowdown, missing, consumer CPU s, consumer CPU ns per record, warm; untraced ns per call ${untracedNs.map((x) => x.toFixed(0)).join(', ')}.\n\n| consumer | slowdown | missing | CPU s | CPU ns per record | warm |\n|---|---|---|---|---|---|\n${perRun.join('\n')}`;
  const sections = [
    head.join('\n'),
    table(rows, ref).join('\n'),
    notes.join('\n'),
    `Targets (issue 4):\n\n${targets.join('\n')}`,
    ...(cpuTargets.length ? [`Targets (consumer CPU per record: issue 4's in ns, issue 28's against C):\n\n${cpuTargets.join('\n')}`] : []),
    appendix,
  ];
  return `${sections.filter(Boolean).join('\n\n')}\n`;
}

function httpNotes(http, tools, notes, check) {
  const { rounds, toggleMs, settleMs } = http.params;
  const pct = (k) => `${(http[k].loss * 100).toFixed(1)}%`;
  const spread = (k) => {
    const xs = http[k].losses.slice().sort((x, y) => x - y);
    return `quartiles ${(xs[Math.floor(xs.length / 4)] * 100).toFixed(1)}% to ${(xs[Math.floor((xs.length * 3) / 4)] * 100).toFixed(1)}%`;
  };
  check(http.example.loss <= 0.05, `HTTP server traced by examples/node_syscalls.js: ${pct('example')} fewer requests/s (≤ 5%)`);
  const controls = [
    http.idle && `the same programs tracing an idle process (what the syscall tracepoints cost every syscall on the machine, wrk's included) ${pct('idle')} fewer (${spread('idle')})`,
    http.stream && `a 32-byte ring buffer record per syscall streamed into a JS callback (decoded objects, log2 histograms in JS) ${pct('stream')} fewer (${spread('stream')}; ${fmtInt(http.stream.calls)} records, ${fmtRate(http.stream.calls / http.stream.seconds)}/s while attached, ${http.stream.lost} lost, tracer CPU ${http.stream.cpu_s.toFixed(2)} s)`,
    http.bpftrace && `bpftrace ${tools.bpftraceVersion || ''} keeping the same histograms (\`@start[tid] = nsecs\` at sys_enter, \`hist()\` by syscall at sys_exit: hash maps) ${pct('bpftrace')} fewer (${spread('bpftrace')}; ${fmtInt(http.bpftrace.calls)} syscalls counted)`,
    ...(http.failed ?? []).map((f) => `failed: ${f}`),
  ].filter(Boolean);
  notes.push(`- HTTP server (bench/http_server.js on 127.0.0.1) under one wrk run (-t1 -c16), its requests counted by itself every 50 ms, while bench/syscall_toggle.js attaches a tracer's programs for ${toggleMs / 1000} s and detaches them for ${toggleMs / 1000} s, ${rounds} times (the first ${settleMs} ms after each switch not counted; each traced second against the untraced seconds around it; median). The syscall-latency example's programs (\`examples/node_syscalls.js --pid <server>\`: raw_syscalls sys_enter/sys_exit, per-syscall latency histograms counted in the kernel): untraced ${http.example.untraced.toFixed(0)} req/s, traced **${pct('example')} fewer requests/s** (${spread('example')}; ${fmtInt(http.example.calls)} syscalls counted). Controls: ${controls.join('; ')}.`);
}

function startupNotes(s, notes, check) {
  const bt = s.bpftraceAll.length ? `bpftrace (8 probes, same canary): **${median(s.bpftraceAll).toFixed(0)} ms** from spawn to all 8 probes firing` : `bpftrace: not available: ${s.bpftraceError}`;
  check(median(s.lib) < 100, `startup: loadBpfProgram + load + attach ×8 ${median(s.lib).toFixed(1)} ms (well under 100 ms)${s.bpftraceAll.length ? `; bpftrace from spawn to all 8 probes firing ${median(s.bpftraceAll).toFixed(0)} ms, node-libbpf from spawn (Node.js boot included) ${median(s.nodeAll).toFixed(0)} ms` : ''}`);
  notes.push(`- Startup, median of ${s.lib.length} fresh processes, bpf/file_io.bpf.o (8 syscall tracepoints): loadBpfProgram + load + attach ×8 **${median(s.lib).toFixed(1)} ms** (runs ${s.lib.map((x) => x.toFixed(1)).join(', ')}); node process spawn to attached ${median(s.nodeReady).toFixed(0)} ms, to the first record of each of the 4 syscalls (all 8 probes fired) ${median(s.nodeAll).toFixed(0)} ms; ${bt}.`);
}

/** The hand-kept history of the figures: everything from this heading on survives a new run. */
const HISTORY = '\n## History\n';

/** Writes RESULTS.md: the new run, then the History section of the file it replaces (kept as it was). */
function writeResults(file, text) {
  let history = '';
  try {
    const old = fs.readFileSync(file, 'utf8');
    const at = old.indexOf(HISTORY);
    if (at >= 0) history = old.slice(at);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
  }
  const body = `# Benchmark results\n\nWritten by \`npm run bench\` (bench/run.js); see bench/README.md for what each row measures.\n\n${text}`;
  fs.writeFileSync(file, history ? `${body.trimEnd()}\n${history}` : body);
}

module.exports = { compose, writeResults };
