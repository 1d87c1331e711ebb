'use strict';
/**
 * The libuv event loop's phases and where to probe them: the phase
 * functions of a Node.js process (its node binary, or its libuv.so), in the
 * order of `enum uv_phase` (bpf/event_loop.h), whose index is the attach
 * cookie of each probe. Shared by examples/trace_event_loop.js and the
 * monitor (lib/monitor.js).
 */

// enum uv_phase (bpf/event_loop.h), in its order, which is the order libuv
// 1.45+ (Node.js 20+) runs them in
const PHASES = [
  ['pending', 'uv__run_pending'],
  ['idle', 'uv__run_idle'],
  ['prepare', 'uv__run_prepare'],
  ['poll', 'uv__io_poll'],
  ['check', 'uv__run_check'],
  ['timers', 'uv__run_timers'],
];

/**
 * Attaches the entry and return programs to every phase function found
 * (`functions`: lib/procfs.js findFunctions), with the phase as the cookie:
 * one uprobe.multi link per binary and direction (kernels 6.6+; detaching
 * it is one operation, where ten uprobes take the kernel ~2 s), or else a
 * uprobe and a uretprobe per phase. Returns first: every entry seen then
 * has its return seen too. The programs are `handle_phase_entry[_multi]`
 * and `handle_phase_return[_multi]`; with `returns: false` only the entry
 * programs are attached. Returns `{ how, links }`.
 */
function attachPhases(obj, pid, functions, { returns = true } = {}) {
  const byBinary = new Map();
  PHASES.forEach(([, fn], cookie) => {
    const where = functions.get(fn);
    if (!where) return;
    if (!byBinary.has(where.binary)) byBinary.set(where.binary, []);
    byBinary.get(where.binary).push({ fn, offset: where.fileOffset, cookie: BigInt(cookie) });
  });
  const links = [];
  try {
    for (const [binary, list] of byBinary) {
      const [names, cookies] = [list.map((f) => f.fn), list.map((f) => f.cookie)];
      if (returns) links.push(obj.attachUprobeMulti(binary, names, obj.programs.handle_phase_return_multi, { pid, retprobe: true, cookies }));
      links.push(obj.attachUprobeMulti(binary, names, obj.programs.handle_phase_entry_multi, { pid, cookies }));
    }
    return { how: 'uprobe.multi', links };
  } catch {
    for (const link of links.splice(0)) link.detach();
  }
  for (const [binary, list] of byBinary) {
    for (const { offset, cookie } of list) {
      if (returns) links.push(obj.attachUretprobe(binary, offset, obj.programs.handle_phase_return, { pid, cookie }));
      links.push(obj.attachUprobe(binary, offset, obj.programs.handle_phase_entry, { pid, cookie }));
    }
  }
  return { how: 'uprobe', links };
}

module.exports = { PHASES, attachPhases };
