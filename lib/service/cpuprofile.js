'use strict';
/**
 * A profile window (lib/service/profile.js) as a `.cpuprofile`: the JSON
 * that `node --cpu-prof` writes and Chrome DevTools, VS Code and speedscope
 * open (V8's Profiler.Profile: `{ nodes, startTime, endTime, samples,
 * timeDeltas }`, times in microseconds).
 *
 * Nodes: `(root)`, then each stack outermost first. A JavaScript function
 * is one node per caller (as V8's profiler makes them: its name and file
 * name it), each function inlined into a frame a node of its own under it,
 * outermost first. Its callFrame's lineNumber and columnNumber (0-based)
 * are the first position the window saw it at (V8's give where the
 * function starts, which the window does not have), and `positionTicks`
 * `[{ line, ticks }]` (1-based, as V8's) the lines of its own samples. Two
 * functions of one name in one file (anonymous closures) are one node.
 * Native frames: the symbol, url the module's path; kernel frames: the
 * symbol, url `[kernel]`; both with lineNumber -1. Nothing is made up:
 * no `(program)`, `(idle)` or `(garbage collector)` node.
 *
 * A window holds counts, not a time series: the samples are laid out
 * stack by stack, each `timeDeltas` one sampling period after the last
 * (CPU), so every total (a function's, a thread's) is right but the
 * timeline's order is not the order they ran in. Off-CPU (`kind
 * 'offCpu'`): a sample is 1 ms off the CPU (a stack's time rounded to
 * whole milliseconds, at least one for a stack counted). A last sample of
 * `(root)` closes the last stack (readers weigh a sample by the time to
 * the next one); no hitCount counts it.
 */
const { pathToFileURL } = require('node:url');
const { codedError } = require('../core/validate');

/** What a sample stands for off the CPU, in microseconds. */
const OFF_CPU_SAMPLE_US = 1000;

/** The url a frame's callFrame has: a JS file as node's own profiles name it (file:// for a path), a module's path, [kernel]. */
function urlOf(f) {
  if (f.kind === 'kernel') return '[kernel]';
  if (f.kind === 'js') {
    if (!f.file) return '';
    return f.file.startsWith('/') ? pathToFileURL(f.file).href : f.file;
  }
  return f.module ?? (f.mapping?.file ? f.mapping.path : '') ?? '';
}

function checkThread(thread) {
  if (thread === 'main' || thread === 'all' || (Number.isInteger(thread) && thread > 0)) return;
  throw codedError('ERR_BPF_INVALID_VALUE', `window.cpuprofile(kind, { thread }): thread is 'main' (default: the main thread's stacks), 'all' (each thread's stacks under a node named after it) or a thread id, got ${thread}`);
}

/**
 * The `.cpuprofile` object of `window`'s `kind` ('cpu' or 'offCpu')
 * stacks. `thread`: 'main' (default), 'all' (a node per thread under the
 * root, `name (tid N, kind)`), or a tid (that thread's stacks alone).
 * @param {{ startNs: bigint, durationNs: number, periodNs: number, cpu: any[], offCpu: any[] }} window
 * @param {'cpu' | 'offCpu'} kind
 * @param {{ thread?: 'main' | 'all' | number }} [options]
 */
function toCpuProfile(window, kind, { thread = 'main' } = {}) {
  checkThread(thread);
  const periodUs = kind === 'cpu' ? Math.max(1, Math.round(window.periodNs / 1000)) : OFF_CPU_SAMPLE_US;
  const stacks = window[kind].filter((s) => (thread === 'all' ? true : thread === 'main' ? s.threadKind === 'main' : s.tid === thread));
  const scriptIds = new Map(); // url -> scriptId (JS files only; '0' for the rest, as V8's)
  const scriptId = (f, url) => {
    if (f.kind !== 'js' || !url) return '0';
    if (!scriptIds.has(url)) scriptIds.set(url, String(scriptIds.size + 1));
    return scriptIds.get(url);
  };
  // a function's first position (its smallest line, then column) over the window: every node of it shows the same
  const first = new Map(); // function key -> { line, column }
  const functionKey = (f) => `${f.kind}\0${f.name}\0${urlOf(f)}`;
  const seen = (f) => {
    if (f.kind !== 'js' || !f.line) return;
    const key = functionKey(f);
    const at = first.get(key);
    if (!at || f.line < at.line || (f.line === at.line && (f.column ?? 0) < at.column)) first.set(key, { line: f.line, column: f.column ?? 0 });
  };
  // each frame outermost first: the physical function, then the ones inlined into it, outermost first
  const expand = (frames) => [...frames].reverse().flatMap((f) => [f, ...[...(f.inlined ?? [])].reverse()]);
  const paths = stacks.map((s) => expand(s.frames));
  for (const p of paths) for (const f of p) seen(f);

  const nodes = [];
  const byKey = new Map(); // parent id \0 function key -> node
  const node = (callFrame) => {
    const n = { id: nodes.length + 1, callFrame, hitCount: 0, children: [] };
    nodes.push(n);
    return n;
  };
  const root = node({ functionName: '(root)', scriptId: '0', url: '', lineNumber: -1, columnNumber: -1 });
  const child = (parent, key, callFrame) => {
    const k = `${parent.id}\0${key}`;
    let n = byKey.get(k);
    if (!n) {
      n = node(callFrame);
      byKey.set(k, n);
      parent.children.push(n.id);
    }
    return n;
  };
  const frameNode = (parent, f) => {
    const url = urlOf(f);
    const at = f.kind === 'js' ? first.get(functionKey(f)) : undefined;
    return child(parent, functionKey(f), {
      functionName: f.name,
      scriptId: scriptId(f, url),
      url,
      lineNumber: at ? at.line - 1 : -1,
      columnNumber: at ? Math.max(0, at.column - 1) : -1,
    });
  };
  const threadNode = (s) => child(root, `thread\0${s.tid}`, { functionName: `${s.thread} (tid ${s.tid}, ${s.threadKind})`, scriptId: '0', url: '', lineNumber: -1, columnNumber: -1 });

  const samples = [];
  const timeDeltas = [];
  const ticks = new Map(); // node -> Map(line -> ticks)
  for (const [i, s] of stacks.entries()) {
    let n = thread === 'all' ? threadNode(s) : root;
    for (const f of paths[i]) n = frameNode(n, f);
    const hits = kind === 'cpu' ? s.count : Math.max(1, Math.round(s.ns / 1e6));
    n.hitCount += hits;
    const leaf = paths[i][paths[i].length - 1];
    if (leaf?.kind === 'js' && leaf.line) {
      if (!ticks.has(n)) ticks.set(n, new Map());
      const lines = ticks.get(n);
      lines.set(leaf.line, (lines.get(leaf.line) ?? 0) + hits);
    }
    for (let k = 0; k < hits; k++) {
      samples.push(n.id);
      timeDeltas.push(samples.length === 1 ? 0 : periodUs);
    }
  }
  for (const [n, lines] of ticks) n.positionTicks = [...lines].sort((a, b) => a[0] - b[0]).map(([line, t]) => ({ line, ticks: t }));
  if (samples.length) {
    samples.push(root.id);
    timeDeltas.push(periodUs);
  }
  const startTime = Number(window.startNs / 1000n);
  return { nodes, startTime, endTime: startTime + timeDeltas.reduce((a, b) => a + b, 0), samples, timeDeltas };
}

module.exports = { toCpuProfile, OFF_CPU_SAMPLE_US };
