'use strict';
// Counts the events that probe patterns match: tracepoints, user-space
// functions (uprobes), in total or per process (-P), in the kernel; prints
// the counts every -i seconds and at the end, as bcc's funccount. Needs root.
//   node examples/funccount.js [--pid N] [-P] [-i S] [--max-probes N] [--duration S] [--json] PROBE...
//   node examples/funccount.js 't:syscalls:sys_enter_*'
//   node examples/funccount.js -i 1 'u:/lib/x86_64-linux-gnu/libc.so.6:pthread_mutex_*'
//
// One BPF program per kind of probe, attached to every probe with the
// probe's index as its attach cookie; a hash map keyed by that index (and
// the pid with -P) holds the counts, which only grow: each report takes
// the difference from the last. The syscalls:* tracepoints are counted
// from the raw sys_enter/sys_exit tracepoints instead (see lib/tools/probes.js:
// detaching hundreds of tracepoint perf events takes the kernel minutes).
const path = require('path');
const bpf = require('..');
const { parseArgs, intervalOption } = require('../lib/tools/args');
const { traceTarget, untilStopped } = require('../lib/host/target');
const probes = require('../lib/tools/probes');
const { Tally, formatTable, ReportClock, printReport } = require('../lib/tools/report');
const { escapeText } = require('../lib/core/format');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');
const { CgroupNames, configureCgroup, CONTAINER_COLUMN } = require('../lib/host/cgroup');

const PROBES_HELP = `what to count (globs: * ? [..]):
                         t:CATEGORY:EVENT  tracepoints         t:syscalls:sys_enter_*
                         u:LIBRARY:FUNC    uprobes             u:/lib/x86_64-linux-gnu/libc.so.6:pthread_mutex_*
                         c:FUNC            libc functions      c:malloc
                         k:FUNC            kprobes, where the kernel has them`;

// as bcc's funccount: a pattern wider than this is a mistake more often than not
const MAX_PROBES = 1000;

function positiveInteger(value) {
  const n = Number(value);
  if (!(Number.isInteger(n) && n > 0)) throw new Error(`not a positive integer: ${value}`);
  return n;
}

/** The error for `list` (what `specs` matched) past the cap `max`: how many each spec matched, and how to narrow them. */
function tooManyProbes(specs, list, max, pid) {
  const each = specs.length > 1 ? specs.map((s) => `'${s}': ${probes.expand([s], { pid }).length}`).join(', ') : undefined;
  const err = /** @type {NodeJS.ErrnoException} */ (new Error(
    `${specs.map((s) => `'${s}'`).join(' ')} match ${list.length} probes${each ? ` (${each})` : ''}, more than ${max}: ` +
      `each probe slows every call it matches and takes the kernel ~0.1 s to detach; narrow the pattern (a category or library and a function prefix, 't:sched:sched_process_*' rather than 't:*:*'), or raise the limit with --max-probes ${list.length}`,
  ));
  err.code = 'ERR_BPF_INVALID_VALUE';
  return err;
}

async function main() {
  const opts = parseArgs('Counts the events that probes match, in the kernel, as bcc\'s funccount.', {
    systemWide: 'every process',
    perContainer: true,
    options: {
      interval: intervalOption(),
      'per-process': { type: 'boolean', short: 'P', help: 'count per process (pid and name)' },
      'max-probes': { type: 'string', arg: 'N', help: `attach at most N probes, else stop with an error (default ${MAX_PROBES})`, parse: positiveInteger },
    },
    positionals: { name: 'PROBE...', help: PROBES_HELP, min: 1 },
  });
  for (const spec of opts.positionals) {
    try {
      probes.parseSpec(spec);
    } catch (err) {
      console.error(`funccount: ${err.message}`);
      process.exit(2);
    }
  }
  const target = await traceTarget(opts, path.join(__dirname, 'workloads', 'file_io.js'));
  const tally = new Tally();
  const clock = new ReportClock();
  let obj, list, attached;

  /**
   * Moves what the kernel counted since the last call into the tally. The
   * kernel's counts only grow (the map is never emptied): deleting an entry
   * while a program on another CPU adds to it loses that hit (the program
   * holds a pointer to the deleted value), which counted 99,999 of 100,000
   * unlocks on 6.1 under qemu (examples/README.md).
   */
  const seen = new Map();
  const cgroups = new CgroupNames();
  const collect = () => {
    cgroups.refresh();
    for (const [key, value] of obj.getMap('counts', { int64: 'number' }).entries()) {
      const id = `${key.probe}/${key.pid}/${key.cgroup}`;
      const count = value.count - (seen.get(id) ?? 0);
      seen.set(id, value.count);
      if (count === 0) continue;
      const probe = list[key.probe].label;
      const fields = { ...(opts.perContainer && cgroups.get(key.cgroup)), ...(opts.perProcess && { pid: key.pid, comm: value.comm }), probe };
      tally.add(id, fields, { count });
    }
  };
  const report = (head, rows, extra = {}) => {
    rows.sort((a, b) => b.count - a.count || (a.probe < b.probe ? -1 : 1));
    const columns = [
      ...(opts.perContainer ? [CONTAINER_COLUMN] : []),
      ...(opts.perProcess ? [{ title: 'PID', value: (r) => r.pid }, { title: 'COMM', value: (r) => r.comm, left: true }] : []),
      { title: 'FUNC', value: (r) => r.probe, left: true },
      { title: 'COUNT', value: (r) => r.count },
    ];
    const note = extra.missed ? `\n${extra.missed} hits not counted: the kernel skipped the program while a BPF map operation was running on that CPU (kprobes, and uprobes and tracepoints without multi links, share one guard)` : '';
    printReport(opts, head, { pid: target.pid, counts: rows, ...extra }, () => formatTable(columns, rows) + note);
  };

  try {
    list = probes.expand(opts.positionals, { pid: target.pid });
    if (list.length > (opts.maxProbes ?? MAX_PROBES)) throw tooManyProbes(opts.positionals, list, opts.maxProbes ?? MAX_PROBES, target.pid);
    obj = bpf.loadBpfProgram(objectPath('funccount'));
    obj.setGlobalVariable('target_pid', target.kernelPid ?? 0);
    obj.setGlobalVariable('per_process', Boolean(opts.perProcess));
    configureCgroup(obj, opts);
    attached = probes.attach(obj, list, {
      tracepoint: 'handle_tracepoint',
      uprobe: 'handle_uprobe',
      syscalls: { enter: 'handle_sys_enter', exit: 'handle_sys_exit', enterMap: 'enter_probes', exitMap: 'exit_probes' },
      pid: target.pid,
      perProbeWithoutCookies: true,
    });
    for (const { probe, error } of attached.failed) console.error(`funccount: not counting ${escapeText(probe.label)}: ${escapeText(error.message)}`);
    console.error(`Counting ${list.length - attached.failed.length} probes for ${opts.positionals.map((s) => `"${s}"`).join(' ')}`);
    clock.started();
    await untilStopped(opts, target, () => {
      const head = clock.next();
      collect();
      report(head, tally.takeInterval());
    });
    const head = clock.end();
    collect();
    // runs the kernel skipped: hits that no count has
    const missed = Object.values(obj.programs)
      .filter((p) => p.autoload)
      .reduce((n, p) => n + p.stats.recursionMisses, 0);
    report(head, tally.totals(), { missed });
  } finally {
    target.stop();
    // the kernel takes a grace period to close each tracepoint or uprobe perf event
    if (attached?.perfEvents > 10) console.error(`Detaching ${attached.perfEvents} probes (the kernel takes ~0.1 s for each)...`);
    obj?.close();
  }
}

run(main);
