'use strict';
// Counts the stacks that lead to an event (a tracepoint, a user-space
// function), or that CPU samples land in (--profile: cpu-clock at 99 Hz),
// in the kernel; names their frames (kernel, native and JavaScript) at the
// end and prints the most frequent, folded stacks (--folded) or a flame
// graph (--svg FILE), as bcc's stackcount and profile. Needs root.
//   node examples/stackcount.js [--pid N] [--profile [-F HZ]] [-t CATEGORY:EVENT] [PROBE...]
//                               [--top N] [--folded] [--svg FILE] [-K|-U] [--duration S] [--json]
//   node examples/stackcount.js -t syscalls:sys_enter_openat
//   node examples/stackcount.js --profile --svg node.svg
//
// Names of JavaScript functions come from V8's own data: the kernel walks
// the stacks of the node process traced (-p PID, or the node processes
// running at the start without one) and records what identifies each JS
// frame, which is named from the process's memory at the end
// (lib/frames/v8.js; no node flags). Where that fails (not a node, an
// unknown V8), from the perf map of a Node.js run with --perf-basic-prof
// or, with --perf-prof, from its jitdump (jit-PID.dump, with the functions
// V8 inlined: lib/frames/jitdump.js).
const fs = require('fs');
const path = require('path');
const bpf = require('..');
const { parseArgs, integer } = require('../lib/tools/args');
const { maxSampleRate } = require('../lib/core/validate');
const { traceTarget, untilStopped } = require('../lib/host/target');
const probes = require('../lib/tools/probes');
const stacks = require('../lib/frames/stacks');
const { ReportClock, printReport } = require('../lib/tools/report');
const { escapeText } = require('../lib/core/format');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');
const { perfMapPath } = require('../lib/host/procfs');
const { CgroupNames, configureCgroup, containerLabel } = require('../lib/host/cgroup');
const { kernelPid } = require('../lib/host/pidns');

// a count of rows: at most 100000
const positiveInteger = integer(1, 100_000);

async function main() {
  const opts = parseArgs('Counts the stacks of an event or of CPU samples in the kernel, and names their frames.', {
    systemWide: 'every process',
    perContainer: true,
    options: {
      profile: { type: 'boolean', help: 'sample the CPU (cpu-clock perf event; the default without an event)' },
      frequency: { type: 'string', short: 'F', arg: 'HZ', help: 'samples per second with --profile (default 99)', parse: (v) => integer(1, maxSampleRate())(v) },
      tracepoint: { type: 'string', short: 't', arg: 'CAT:EVENT', help: 'count the stacks of a tracepoint (globs: syscalls:sys_enter_open*)' },
      top: { type: 'string', arg: 'N', help: 'print the N most frequent stacks (default 10)', parse: positiveInteger },
      folded: { type: 'boolean', help: 'print every stack folded (comm;outer;...;inner count) instead', conflicts: 'top' },
      svg: { type: 'string', arg: 'FILE', help: 'write a flame graph of the stacks to FILE' },
      'kernel-only': { type: 'boolean', short: 'K', help: 'kernel stacks only' },
      'user-only': { type: 'boolean', short: 'U', help: 'user-space stacks only', conflicts: 'kernel-only' },
      'no-source-maps': { type: 'boolean', help: "JS frames where the script runs, not at their source map's place (TypeScript, a bundle)" },
    },
    positionals: { name: '[PROBE...]', help: 'more events, as funccount takes them: t:CAT:EVENT, u:LIBRARY:FUNC, c:FUNC' },
  });
  const specs = [...(opts.tracepoint ? [`t:${opts.tracepoint}`] : []), ...opts.positionals];
  const profile = opts.profile || specs.length === 0;
  for (const spec of specs) {
    try {
      probes.parseSpec(spec);
    } catch (err) {
      console.error(`stackcount: ${err.message}`);
      process.exit(2);
    }
  }
  // interpreted functions get frames of their own too (else: Builtins_InterpreterEntryTrampoline);
  // no isolate-*-v8.log in the current directory (--perf-basic-prof starts V8's log)
  const nodeArgs = ['--perf-basic-prof', '--interpreted-frames-native-stack', '--no-logfile-per-isolate', '--logfile=+'];
  const target = await traceTarget(opts, path.join(__dirname, 'workloads', 'hot_loop.js'), nodeArgs);
  const what = [...(profile ? [`cpu-clock samples at ${opts.frequency ?? 99} Hz`] : []), ...specs].join(', ');
  let obj, attached;
  try {
    const list = probes.expand(specs, { pid: target.pid });
    obj = bpf.loadBpfProgram(objectPath('stackcount'));
    obj.setGlobalVariable('target_pid', target.kernelPid ?? 0);
    obj.setGlobalVariable('kernel_stacks', !opts.userOnly);
    obj.setGlobalVariable('user_stacks', !opts.kernelOnly);
    configureCgroup(obj, opts);
    if (list.length) {
      attached = probes.attach(obj, list, { tracepoint: 'handle_tracepoint', uprobe: 'handle_uprobe', pid: target.pid });
      for (const { probe, error } of attached.failed) console.error(`stackcount: not counting ${escapeText(probe.label)}: ${escapeText(error.message)}`);
    }
    const symbolizer = new stacks.StackSymbolizer(bpf, { sourceMaps: !opts.noSourceMaps });
    // the node processes whose JS frames the kernel walks (bpf/v8.bpf.h): the target, else those running now
    const v8Error = target.pid !== undefined ? symbolizer.v8.watch(obj, target.pid, target.kernelPid) : watchNodes(obj, symbolizer);
    // every CPU, filtered in the kernel: a perf event for a pid samples only its main thread
    if (profile) obj.attachPerfEvent('handle_sample', { event: 'cpu-clock', frequency: opts.frequency ?? 99 });
    if (target.pid !== undefined && isNode(target.pid) && (v8Error || !symbolizer.v8.names)) {
      if (v8Error) console.error(`stackcount: JavaScript frames not named from V8's data: ${escapeText(v8Error.message)}`);
      // (walked but not named: the perf map's names win, as before)
      warnJit(target.pid, symbolizer);
    }
    console.error(`Counting stacks of ${what}`);
    const clock = new ReportClock();
    // user frames are named from the process's mappings: name them every second while it
    // runs (the names are kept), in case it is gone at the end
    // the layout is checked on the first JS frames walked, before they are named: a node whose
    // layout does not match gets unnamed frames and a reason, never wrong names
    let checked = target.pid === undefined || v8Error !== null;
    const check = () => {
      if (checked) return;
      const err = symbolizer.v8.selfCheck(obj, target.pid, { kernelPid: target.kernelPid });
      if (err === undefined) return; // (no JS frame walked yet)
      checked = true;
      if (err) console.error(`stackcount: JavaScript frames not named from V8's data: ${escapeText(err.message)}`);
    };
    const warm = setInterval(() => {
      check();
      named(obj, symbolizer);
    }, 1000);
    await untilStopped(opts, target);
    clearInterval(warm);
    obj.detachAll();
    const span = clock.end(); // (what was counted: naming the stacks after it is not)
    check();
    const counted = named(obj, symbolizer);
    if (opts.perContainer) {
      const cgroups = new CgroupNames();
      for (const s of counted) {
        const names = cgroups.get(s.cgroup ?? 0);
        Object.assign(s, names, { container: containerLabel(names) });
      }
    }
    // what the naming could not read of a target, or left out (each reason once)
    for (const note of symbolizer.takeNotes()) console.error(`stackcount: ${escapeText(note)}`);
    const v8Dropped = Number(obj.getGlobalVariable('v8_dropped'));
    if (v8Dropped) console.error(`stackcount: the JS frames of ${v8Dropped} walked stacks were not kept (their table was full): those are named from the perf map, if any; a shorter --duration keeps them all`);
    const folded = stacks.foldStacks(counted);
    if (opts.svg) {
      fs.writeFileSync(opts.svg, bpf.flameGraph(folded, { title: `stackcount: ${what}, ${target.pid === undefined ? target.what : `pid ${target.pid}`}`, countName: profile ? 'samples' : 'events' }));
      console.error(`wrote ${opts.svg}`);
    }
    const total = counted.reduce((sum, s) => sum + s.count, 0);
    if (opts.folded && !opts.json) {
      console.log(folded);
    } else {
      const top = counted.slice(0, opts.top ?? 10);
      printReport(
        opts,
        { ...span, pid: target.pid },
        { events: what, total, stacks: opts.json ? counted : top, ...(opts.json && opts.folded && { folded: folded.split('\n') }) },
        () => `${top.map(stacks.formatStack).join('\n\n')}\n\n${total} ${profile ? 'samples' : 'events'} in ${counted.length} stacks${counted.length > top.length ? `, the ${top.length} most frequent above` : ''}`,
      );
    }
  } finally {
    target.stop();
    // the kernel takes a grace period to close each tracepoint or uprobe perf event
    if (attached?.perfEvents > 10) console.error(`Detaching ${attached.perfEvents} probes (the kernel takes ~0.1 s for each)...`);
    obj?.close();
  }
}

/**
 * The stacks counted until now, named: the interval ends here for the perf
 * maps too (code compiled after it does not name its JIT frames).
 */
function named(obj, symbolizer) {
  const entries = stacks.readStacks(obj);
  symbolizer.endWindow(new Set(entries.map((e) => e.pid)));
  return stacks.symbolize(entries, symbolizer);
}

/** Most node processes whose JS frames a system-wide stackcount walks (bpf/v8.bpf.h's v8_layouts holds 1024). */
const MAX_NODES = 64;

/**
 * Walks the JS frames of the node processes running now (system-wide:
 * those started later are named from their perf map, if any). Returns
 * null (an error per process is not one of the tool's).
 */
function watchNodes(obj, symbolizer) {
  let watched = 0;
  for (const name of fs.readdirSync('/proc')) {
    if (watched >= MAX_NODES) break;
    if (!/^\d+$/.test(name) || Number(name) === process.pid || !isNode(Number(name))) continue;
    try {
      if (!symbolizer.v8.watch(obj, Number(name), kernelPid(Number(name)))) watched++;
    } catch {
      // gone
    }
  }
  return null;
}

/** Whether process `pid` runs node (its executable's name; Node 24 and 26 name the main thread MainThread). */
function isNode(pid) {
  try {
    return /node/.test(path.basename(fs.readlinkSync(`/proc/${pid}/exe`))) || /node/.test(fs.readFileSync(`/proc/${pid}/comm`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * Says how node process `pid` can name its JavaScript frames, where it does
 * not: no perf map and no jitdump (every JS frame [unknown]), or a perf map
 * alone while V8's Maglev inlines hot functions into their callers (Node 24
 * and 26 do: the hot function's samples land in its caller).
 */
function warnJit(pid, symbolizer) {
  const jit = symbolizer.jitOf(pid);
  const map = stacks.hasPerfMap(pid);
  const flags = 'node --perf-basic-prof --no-maglev-inlining (and --perf-prof, whose jitdump names the functions TurboFan inlines)';
  const say = (what) => console.error(`stackcount: ${what} (run ${flags})`);
  if (!map && !jit.dump) say(`no perf map ${perfMapPath(pid)} and no jitdump: JavaScript frames will be [unknown]`);
  else if (!map) say(`no perf map ${perfMapPath(pid)}: JavaScript frames are named from the jitdump alone, which V8 writes through a buffer: the last functions compiled may be [unknown]`);
  if ((map || jit.dump) && jit.maglevInlining) say(`pid ${pid} runs without --no-maglev-inlining: code that Maglev inlined is marked in its caller's frame, not named`);
}

run(main);
