'use strict';
// Traces the libuv event loop of a Node.js process: how long each phase of
// each loop iteration took (timers, pending, idle, prepare, poll, check), one
// line per iteration, and a latency histogram per phase at the end (counted
// in the kernel). Uprobes and uretprobes on the phase functions of the
// process's own node binary (or its libuv.so). Needs root.
//   node examples/trace_event_loop.js [--pid N] [--duration S] [--json]
const path = require('path');
const bpf = require('..');
const { parseArgs } = require('../lib/tools/args');
const { traceTarget, untilStopped, drain } = require('../lib/host/target');
const { findFunctions, threadsNamed } = require('../lib/host/procfs');
const { kernelIds } = require('../lib/host/pidns');
const { wallClock, formatTime, escapeText } = require('../lib/core/format');
const { log2Buckets, formatHistogram, histogramJSON } = require('../lib/tools/hist');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');
const { PHASES, choosePhasePrograms, attachPhases } = require('../lib/host/event_loop');

const phaseName = (e) => e.replace(/^UV_PHASE_/, '').toLowerCase(); // UV_PHASE_TIMERS -> timers

// the phases that begin an iteration: uv_run() loops over pending, idle,
// prepare, poll, [pending], check, closing handles, timers (libuv before
// 1.45, Node.js 18: timers first, so they count with the iteration before)
const OPENING = new Set(['pending', 'idle', 'prepare', 'poll']);

class Iterations {
  constructor(traced, onIteration) {
    this.closing = traced.includes('check') ? 'check' : 'poll';
    this.onIteration = onIteration;
    this.current = new Map(); // `${tid}:${loop}` -> the iteration in progress
    this.loops = new Map(); // loop -> its number, in order of appearance
  }

  add(record) {
    const phase = phaseName(record.phase);
    const key = `${record.tid}:${record.loop}`;
    let it = this.current.get(key);
    // (or a phase it has had already: the first iteration seen, joined midway)
    const again = it?.phases.has(phase) && phase !== 'pending';
    if (it && ((OPENING.has(phase) && it.phases.has(this.closing)) || again)) {
      this.onIteration(it);
      it = undefined;
    }
    if (!it) {
      if (!this.loops.has(record.loop)) this.loops.set(record.loop, this.loops.size + 1);
      const previous = this.current.get(key);
      it = {
        pid: record.pid,
        tid: record.tid,
        loop: record.loop,
        loopNumber: this.loops.get(record.loop),
        iteration: previous ? previous.iteration + 1 : 1,
        start_ns: record.start_ns,
        phases: new Map(),
      };
      this.current.set(key, it);
    }
    // pending may run again after poll: the phase's time is the sum
    it.phases.set(phase, (it.phases.get(phase) ?? 0) + record.duration_ns);
  }

  /** The iterations in progress, at the end. */
  flush() {
    for (const it of this.current.values()) this.onIteration(it);
    this.current.clear();
  }
}

function printHeader(opts, traced) {
  if (opts.json) return;
  const cols = traced.map((p) => p.padStart(10)).join('');
  console.log(`${'TIME'.padEnd(13)}${'TID'.padStart(8)}${'LOOP'.padStart(5)}${'ITER'.padStart(7)}${cols}  (ms)`);
}

function printIteration(opts, traced, it) {
  const ms = (ns) => Math.round(ns / 1e3) / 1e3;
  if (opts.json) {
    const phases = Object.fromEntries(traced.filter((p) => it.phases.has(p)).map((p) => [p, ms(it.phases.get(p))]));
    console.log(JSON.stringify({ pid: it.pid, tid: it.tid, loop: `0x${it.loop.toString(16)}`, iteration: it.iteration, start_ns: it.start_ns, phases_ms: phases }));
    return;
  }
  const time = formatTime(wallClock(it.start_ns), { ms: true });
  const cols = traced.map((p) => (it.phases.has(p) ? ms(it.phases.get(p)).toFixed(3) : '-').padStart(10)).join('');
  console.log(`${time.padEnd(13)}${String(it.tid).padStart(8)}${String(it.loopNumber).padStart(5)}${String(it.iteration).padStart(7)}${cols}`);
}

/** The per-phase histograms the kernel counted (map `hist`: { phase, slot } -> count). */
function printHistograms(opts, obj, traced) {
  const slots = new Map(traced.map((p) => [p, []]));
  for (const [key, count] of obj.getMap('hist').entries()) slots.get(phaseName(key.phase))[key.slot] = count;
  const hists = traced.map((p) => [p, log2Buckets(slots.get(p))]).filter(([, buckets]) => buckets.length > 0);
  if (opts.json) {
    console.log(JSON.stringify({ histograms: Object.fromEntries(hists.map(([p, buckets]) => [p, { unit: 'us', ...histogramJSON(buckets) }])) }));
    return;
  }
  for (const [p, buckets] of hists) console.log(`\n${formatHistogram(buckets, { title: `@usecs[${p}]` })}`);
}

async function main() {
  const opts = parseArgs('Prints the time each phase of each libuv loop iteration of a Node.js process took, and per-phase histograms.');
  const target = await traceTarget(opts, path.join(__dirname, 'workloads', 'event_loop.js'));
  let obj, events;
  try {
    const functions = findFunctions(target.pid, PHASES.map(([, fn]) => fn));
    const traced = PHASES.filter(([, fn]) => functions.has(fn)).map(([phase]) => phase);
    if (traced.length === 0) throw new Error(`no libuv phase function in pid ${target.pid}'s binary or libraries: is it a Node.js process?`);
    const module = functions.get('uv__io_poll')?.module ?? functions.values().next().value.module;
    for (const [phase, fn] of PHASES) {
      if (!functions.has(fn)) console.error(`trace_event_loop: ${fn} is not in ${escapeText(module)} (inlined or stripped in this build): the ${phase} phase is not traced`);
    }

    obj = bpf.loadBpfProgram(objectPath('event_loop'));
    obj.setGlobalVariable('target_pid', target.kernelPid);
    // Node's platform runs a libuv loop of its own on its delayed-task
    // scheduler thread (Node 26 iterates it): not the application's loop
    // (the kernel's tids: the target may be in a container)
    const { tids } = kernelIds(target.pid);
    const skipped = threadsNamed(target.pid, /^DelayedTaskSche/).map((tid) => tids.get(tid) ?? 0);
    obj.setGlobalVariable('skip_tids', [...skipped, 0, 0, 0, 0].slice(0, 4));
    attachPhases(obj, target.pid, functions, choosePhasePrograms(obj));
    const iterations = new Iterations(traced, (it) => printIteration(opts, traced, it));
    events = obj.getMap('events').openRingBuffer((record) => iterations.add(record), {
      type: 'phase_event',
      int64: 'number', // loop addresses (user space: below 2^53), timestamps and durations
      lost: (count) => console.error(`lost ${count} records`),
    });
    printHeader(opts, traced);
    await untilStopped(opts, target);
    // stop in the kernel at once: the histograms then count exactly the
    // records printed
    obj.setGlobalVariable('stopped', true);
    await drain([events]);
    iterations.flush();
    printHistograms(opts, obj, traced);
  } finally {
    events?.close();
    obj?.close();
    target.stop();
  }
}

run(main);
