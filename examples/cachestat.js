'use strict';
// Page-cache hits, misses and dirtied pages, and the hit ratio, per
// interval, system-wide or for one process, as bcc's cachestat. Counted in
// the kernel by fentry programs (or kprobes where the kernel refuses fentry)
// on the page-cache functions, chosen at load among the names that differ
// between kernel versions. Needs root, and kprobes or fentry.
//   npx node-libbpf cachestat [-p PID | --demo] [-i S] [-d S] [-j] [--kprobes]
//
// As bcc counts them: accesses = mark_page_accessed - mark_buffer_dirty,
// misses = pages added to the page cache - pages dirtied, hits = accesses
// - misses; DIRTIES is mark_buffer_dirty. BUFFERS_MB and CACHED_MB are
// /proc/meminfo's Buffers and Cached.
const fs = require('fs');
const path = require('path');
const bpf = require('..');
const { parseArgs, intervalOption } = require('../lib/args');
const { traceTarget, untilStopped } = require('../lib/target');
const { ReportClock } = require('../lib/report');
const { run } = require('../lib/run');
const { objectPath } = require('../lib/objects');
const { configureCgroup } = require('../lib/cgroup');

/** The functions of each event, newest name first (folio_* since 5.16); dirtied: the tracepoints where the functions are inlined. */
const EVENTS = {
  accessed: { functions: ['folio_mark_accessed', 'mark_page_accessed'] },
  added: { functions: ['filemap_add_folio', 'add_to_page_cache_lru'] },
  dirtied: { functions: ['folio_account_dirtied', 'account_page_dirtied'], tracepoints: ['writeback_dirty_folio', 'writeback_dirty_page'] },
  bufferDirtied: { functions: ['mark_buffer_dirty'] },
};

/** The kernel's function names (/proc/kallsyms: text symbols). */
function kernelFunctions() {
  const names = new Set();
  for (const line of fs.readFileSync('/proc/kallsyms', 'utf8').split('\n')) {
    const [, type, name] = line.split(' ');
    if (type === 't' || type === 'T') names.add(name);
  }
  return names;
}

/**
 * Chooses, before load, a program for each event: fentry where the kernel
 * allows it, else (or with `kprobes`) kprobes; the first of its functions this kernel has, else
 * its tracepoint. Returns `{ kind, chosen: { event: 'function' } }`; ENOTSUP
 * on a kernel with neither kprobes nor fentry.
 */
function choosePrograms(obj, { kprobes = false } = {}) {
  const features = bpf.features();
  if (kprobes && !features.kprobes) throw Object.assign(new Error(`--kprobes: this kernel (${features.release}) has no kprobes (CONFIG_KPROBES off)`), { code: 'ENOTSUP' });
  if (!features.fentry && !features.kprobes) {
    const why = `this kernel (${features.release}) has neither: ${features.kprobes ? '' : 'no kprobes (CONFIG_KPROBES off)'}${features.fentry ? '' : ', fentry/fexit refused at load'}`;
    throw Object.assign(new Error(`cachestat needs kprobes or fentry on the page-cache functions, and ${why}; run it on a kernel with either (bpf.features())`), {
      code: 'ENOTSUP',
    });
  }
  const kind = features.fentry && !kprobes ? 'fentry' : 'kprobe';
  const have = kernelFunctions();
  const root = features.tracefs; // where tracefs is mounted (never mounted by node-libbpf), or undefined
  const chosen = {};
  for (const [event, { functions, tracepoints = [] }] of Object.entries(EVENTS)) {
    const func = functions.find((f) => have.has(f));
    const tp = !func && tracepoints.find((t) => root && fs.existsSync(path.join(root, 'events', 'writeback', t)));
    if (func) obj.programs[`${kind}_${func}`].autoload = true;
    else if (tp) obj.programs[`tp_${tp}`].autoload = true;
    else throw Object.assign(new Error(`this kernel has none of ${[...functions, ...tracepoints].join(', ')}: cachestat cannot count ${event}`), { code: 'ENOTSUP' });
    chosen[event] = func || `writeback:${tp}`;
  }
  return { kind, chosen };
}

/** hits, misses, dirties and the hit ratio (%) from the kernel's counts, as libbpf-tools' cachestat computes them. */
function cacheStats([accessed, added, dirtied, bufferDirtied]) {
  const total = Math.max(accessed - bufferDirtied, 0);
  let misses = Math.max(added - dirtied, 0);
  let hits = total - misses;
  if (hits < 0) [misses, hits] = [total, 0];
  return { hits, misses, dirties: bufferDirtied, ratio: total ? Math.round((hits / total) * 10000) / 100 : 0 };
}

/** /proc/meminfo's Buffers and Cached, in MB. */
function meminfo() {
  const text = fs.readFileSync('/proc/meminfo', 'utf8');
  const mb = (key) => Math.round(Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) / 1024);
  return { buffers_mb: mb('Buffers'), cached_mb: mb('Cached') };
}

const COLUMNS = ['HITS', 'MISSES', 'DIRTIES', 'HITRATIO', 'BUFFERS_MB', 'CACHED_MB'];

function printRow(opts, head, stats) {
  const row = { ...head, ...stats, ...meminfo() };
  if (opts.json) return console.log(JSON.stringify(row));
  const cells = [row.hits, row.misses, row.dirties, `${row.ratio.toFixed(2)}%`, row.buffers_mb, row.cached_mb];
  console.log(`${cells.map((c, i) => String(c).padStart(COLUMNS[i].length + 2)).join(' ')}${head.type === 'total' ? `  (total, ${head.seconds} s)` : ''}`);
}

async function main() {
  const opts = parseArgs("Page-cache hits, misses and dirtied pages per interval, as bcc's cachestat.", {
    systemWide: 'every process',
    options: {
      interval: intervalOption(),
      kprobes: { type: 'boolean', help: 'use kprobes where the kernel allows fentry too (fentry costs less)' },
    },
    pidHelp: 'count only process PID (default: every process; --demo: a workload that reads and rewrites a file)',
  });
  const target = await traceTarget(opts, path.join(__dirname, 'workloads', 'cache.js'));
  const clock = new ReportClock();
  let obj;
  try {
    obj = bpf.loadBpfProgram(objectPath('cachestat'));
    obj.setGlobalVariable('target_pid', target.kernelPid ?? 0);
    configureCgroup(obj, opts);
    const { kind, chosen } = choosePrograms(obj, { kprobes: opts.kprobes });
    obj.load();
    for (const prog of Object.values(obj.programs).filter((p) => p.autoload)) obj.attach(prog);
    const read = () => obj.getGlobalVariable('counts', { int64: 'number' });
    let last = read();
    const since = () => {
      const now = read();
      const delta = now.map((n, i) => n - last[i]);
      last = now;
      return delta;
    };
    const first = read();
    if (!opts.json) console.log(COLUMNS.map((c) => c.padStart(c.length + 2)).join(' '));
    // said by untilStopped once its signal handlers are in place (a SIGINT
    // sent on seeing the line killed the tool before, under TCG's timing)
    const banner = `Tracing the page cache of ${target.pid === undefined ? 'every process' : `pid ${target.pid}`} (${kind}: ${Object.values(chosen).join(', ')})... Ctrl+C to end.`;
    await untilStopped(opts, target, () => printRow(opts, clock.next(), cacheStats(since())), banner);
    const end = read();
    printRow(opts, clock.end(), cacheStats(end.map((n, i) => n - first[i])));
  } finally {
    target.stop();
    obj?.close();
  }
}

run(main);
