'use strict';
// Page-cache hits, misses and dirtied pages, and the hit ratio, per
// interval, system-wide or for one process, as bcc's cachestat. Counted in
// the kernel by fentry programs (or kprobes where fentry cannot attach) on
// the page-cache functions, chosen per function at load among the names
// that differ between kernel versions. Needs root, and kprobes or fentry.
//   npx node-libbpf cachestat [-p PID | --demo] [-i S] [-d S] [-j] [--kprobes]
//
// As bcc counts them: accesses = mark_page_accessed - mark_buffer_dirty,
// misses = pages added to the page cache - pages dirtied, hits = accesses
// - misses; DIRTIES is mark_buffer_dirty. BUFFERS_MB and CACHED_MB are
// /proc/meminfo's Buffers and Cached.
const fs = require('fs');
const path = require('path');
const bpf = require('..');
const { parseArgs, intervalOption } = require('../lib/tools/args');
const { traceTarget, untilStopped } = require('../lib/host/target');
const { ReportClock } = require('../lib/tools/report');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');
const { configureCgroup } = require('../lib/host/cgroup');
const { chooseKernelProbe } = require('../lib/tools/probes');

/**
 * The events, their programs (bpf/cachestat.bpf.c: `fentry_<program>`,
 * `kprobe_<program>`) and their functions, newest name first (folio_* since
 * 5.16); dirtied: the tracepoints where the functions are inlined.
 */
const EVENTS = {
  accessed: { program: 'accessed', functions: ['folio_mark_accessed', 'mark_page_accessed'] },
  added: { program: 'added', functions: ['filemap_add_folio', 'add_to_page_cache_lru'] },
  dirtied: { program: 'dirtied', functions: ['folio_account_dirtied', 'account_page_dirtied'], tracepoints: ['writeback_dirty_folio', 'writeback_dirty_page'] },
  bufferDirtied: { program: 'buffer_dirtied', functions: ['mark_buffer_dirty'] },
};

/**
 * Chooses, before load, a program for each event, function by function as
 * libbpf-tools' cachestat does: the fentry program retargeted to the first
 * function fentry can attach to (not with `kprobes`), else the kprobe
 * program for the first one a kprobe can; else its tracepoint. Returns `{
 * event: { kind, func } }` (kind `fentry`, `kprobe` or `tracepoint`, func
 * `writeback:<name>` for a tracepoint); ENOTSUP on a kernel with neither
 * kprobes nor fentry.
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
  const root = features.tracefs; // where tracefs is mounted (never mounted by node-libbpf), or undefined
  const chosen = {};
  for (const [event, { program, functions, tracepoints = [] }] of Object.entries(EVENTS)) {
    const probe = chooseKernelProbe(functions, { kprobes });
    const tp = !probe && tracepoints.find((t) => root && fs.existsSync(path.join(root, 'events', 'writeback', t)));
    if (probe?.kind === 'fentry') obj.programs[`fentry_${program}`].setAttachTarget(probe.func);
    if (probe) obj.programs[`${probe.kind}_${program}`].autoload = true;
    else if (tp) obj.programs.tp_dirtied.autoload = true;
    else {
      const ways = kprobes ? 'kprobes' : 'fentry or kprobes';
      throw Object.assign(new Error(`cachestat cannot count ${event}: this kernel has none of ${functions.join(', ')} for ${ways}${tracepoints.length ? `, nor the tracepoints writeback:${tracepoints.join(', writeback:')}` : ''}`), {
        code: 'ENOTSUP',
      });
    }
    chosen[event] = probe ?? { kind: 'tracepoint', func: `writeback:${tp}` };
  }
  return chosen;
}

/** Attaches the programs `choosePrograms` chose, after load. */
function attachPrograms(obj, chosen) {
  for (const [event, { kind, func }] of Object.entries(chosen)) {
    const { program } = EVENTS[event];
    if (kind === 'fentry') obj.attach(`fentry_${program}`);
    else if (kind === 'kprobe') obj.attachKprobe(func, `kprobe_${program}`);
    else obj.attachTracepoint('writeback', func.split(':')[1], 'tp_dirtied');
  }
}

/** `fentry: a, b; kprobe: c; tracepoint: writeback:d`: what counts each event. */
function describe(chosen) {
  const byKind = (kind) => Object.values(chosen).filter((c) => c.kind === kind).map((c) => c.func);
  return ['fentry', 'kprobe', 'tracepoint']
    .filter((kind) => byKind(kind).length)
    .map((kind) => `${kind}: ${byKind(kind).join(', ')}`)
    .join('; ');
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
    const chosen = choosePrograms(obj, { kprobes: opts.kprobes });
    obj.load();
    attachPrograms(obj, chosen);
    const read = () => obj.getGlobalVariable('counts', { int64: 'number' });
    let last = read();
    const since = () => {
      const now = read();
      const delta = now.map((n, i) => n - last[i]);
      last = now;
      return delta;
    };
    const first = read();
    clock.started();
    if (!opts.json) console.log(COLUMNS.map((c) => c.padStart(c.length + 2)).join(' '));
    // said by untilStopped once its signal handlers are in place (a SIGINT
    // sent on seeing the line killed the tool before, under TCG's timing)
    const banner = `Tracing the page cache of ${target.pid === undefined ? 'every process' : `pid ${target.pid}`} (${describe(chosen)})... Ctrl+C to end.`;
    await untilStopped(
      opts,
      target,
      () => {
        const head = clock.next();
        printRow(opts, head, cacheStats(since()));
      },
      banner,
    );
    const head = clock.end();
    const end = read();
    printRow(opts, head, cacheStats(end.map((n, i) => n - first[i])));
  } finally {
    target.stop();
    obj?.close();
  }
}

run(main);
