'use strict';
// What a running Node.js process asks of the kernel, from one command: a
// latency histogram per syscall (the most frequent ones, and openat and
// connect), the files it opens and the endpoints it connects to, all
// counted in the kernel, refreshed every 2 s and in total at the end. Needs
// root.
//   node examples/node_syscalls.js [--pid N] [-i S] [--top N] [--hist N] [--sort count|time]
//                                  [--duration S] [--json]
// Without --pid it starts a small web service (examples/workloads/http.js)
// and traces that.
const fs = require('fs');
const net = require('net');
const path = require('path');
const bpf = require('..');
const { parseArgs, intervalOption, integer } = require('../lib/tools/args');
const { traceTarget, untilStopped } = require('../lib/host/target');
const { SyscallLatency, syscallNumber } = require('../lib/tools/syscalls');
const { Tally, formatTable, ReportClock, printReport } = require('../lib/tools/report');
const { escapeText } = require('../lib/core/format');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');
const { configureCgroup } = require('../lib/host/cgroup');

const FAMILIES = { 0: 'AF_UNSPEC', 1: 'AF_UNIX', 2: 'AF_INET', 10: 'AF_INET6' };

/** A connect destination (struct node_endpoint, bpf/node_syscalls.h) as text: `127.0.0.1:80`, `[::1]:80`, a socket path. */
function formatEndpoint(e) {
  if (e.family === 2) return `${[...e.addr.v4].join('.')}:${e.port}`;
  if (e.family === 10) {
    const address = new net.SocketAddress({ address: e.addr.v6.toString('hex').match(/.{4}/g).join(':'), family: 'ipv6' }).address;
    return `[${address}]:${e.port}`;
  }
  if (e.family === 1) return e.addr.path || '(unnamed unix socket)';
  return FAMILIES[e.family] ?? `family ${e.family}`;
}

// a count of rows: at most 100000
const positiveInteger = integer(1, 100_000);

function sortKey(value) {
  if (value !== 'count' && value !== 'time') throw new Error(`not count or time: ${value}`);
  return value;
}

async function main() {
  const opts = parseArgs(
    'Shows what a Node.js process (or every process) asks of the kernel: syscall latency histograms, the files it opens, the endpoints it connects to.',
    {
      systemWide: 'every process',
      options: {
        interval: intervalOption('2'),
        top: { type: 'string', arg: 'N', help: 'rows of each table (default 10)', parse: positiveInteger },
        hist: { type: 'string', arg: 'N', help: 'histograms of the N first syscalls, and of openat and connect (default 1)', parse: positiveInteger },
        sort: { type: 'string', arg: 'KEY', help: 'syscalls by count (default) or by total time', parse: sortKey },
      },
    },
  );
  opts.interval ??= 2;
  const top = opts.top ?? 10;
  const target = await traceTarget(opts, path.join(__dirname, 'workloads', 'http.js'));
  const comm = target.pid === undefined ? undefined : fs.readFileSync(`/proc/${target.pid}/comm`, 'utf8').trim();
  const latency = new SyscallLatency({ unit: 'us' });
  const files = new Tally();
  const endpoints = new Tally();
  const clock = new ReportClock();
  let obj;

  /** Moves what the kernel counted into the tallies (and empties its maps). */
  const collect = () => {
    latency.collect();
    for (const [key, calls] of obj.getMap('files', { int64: 'number' }).lookupAndDeleteBatch()) {
      files.add(key.filename, { file: key.filename }, calls);
    }
    for (const [key, calls] of obj.getMap('endpoints', { int64: 'number' }).lookupAndDeleteBatch()) {
      const endpoint = formatEndpoint(key);
      endpoints.add(endpoint, { endpoint, family: FAMILIES[key.family] ?? key.family }, calls);
    }
  };

  const report = (head, syscalls, fileRows, endpointRows) => {
    if (opts.sort === 'time') syscalls.sort((a, b) => b.total_ns - a.total_ns);
    const byCount = (a, b) => b.count - a.count || b.errors - a.errors;
    fileRows.sort(byCount);
    endpointRows.sort(byCount);
    const histograms = [...syscalls.slice(0, opts.hist ?? 1), ...syscalls.filter((r) => r.syscall === 'openat' || r.syscall === 'connect')];
    const text = () =>
      [
        `${target.pid === undefined ? target.what : `pid ${target.pid} (${escapeText(comm)})`}: ${syscalls.reduce((n, r) => n + r.count, 0)} syscalls`,
        '',
        latency.formatTable(syscalls.slice(0, top)),
        ...[...new Set(histograms)].map((r) => `\n${latency.formatHistogram(r)}`),
        '',
        'Files opened (open, openat, openat2):',
        fileRows.length ? formatTable(callColumns('FILE', (r) => r.file), fileRows.slice(0, top)) : '  none',
        '',
        'Endpoints connected to (connect):',
        endpointRows.length ? formatTable(callColumns('ENDPOINT', (r) => r.endpoint), endpointRows.slice(0, top)) : '  none',
      ].join('\n');
    // on a terminal, each report replaces the last, as top's
    if (!opts.json && process.stdout.isTTY) process.stdout.write('\x1b[2J\x1b[H');
    printReport(opts, head, { pid: target.pid, comm, syscalls: latency.toJSON(syscalls), files: fileRows, endpoints: endpointRows }, text);
  };

  try {
    obj = bpf.loadBpfProgram(objectPath('node_syscalls'));
    latency.configure(obj, target.kernelPid);
    configureCgroup(obj, opts);
    for (const name of ['open', 'openat', 'openat2', 'connect']) obj.setGlobalVariable(`nr_${name}`, syscallNumber(name) ?? -1);
    obj.attachRawTracepoint('sys_enter', 'handle_sys_enter');
    obj.attachRawTracepoint('sys_exit', 'handle_sys_exit');
    clock.started();
    await untilStopped(opts, target, () => {
      const head = clock.next();
      collect();
      report(head, latency.interval(), files.takeInterval(), endpoints.takeInterval());
    });
    obj.detachAll(); // then the counts are final
    const head = clock.end();
    collect();
    report(head, latency.totals(), files.totals(), endpoints.totals());
  } finally {
    obj?.close();
    target.stop();
  }
}

/** The columns of the files and endpoints tables. */
function callColumns(title, value) {
  return [
    { title: 'COUNT', value: (r) => r.count },
    { title: 'ERRORS', value: (r) => r.errors },
    { title, value, left: true },
  ];
}

run(main);
