'use strict';
/**
 * The libuv event loop's phases and where to probe them: the phase
 * functions of a Node.js process (its node binary, or its libuv.so), in the
 * order of `enum uv_phase` (bpf/event_loop.h), whose index is the attach
 * cookie of each probe. Shared by examples/trace_event_loop.js and the
 * monitor (lib/service/monitor.js).
 */

const native = require('../core/native');

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
 * Chooses, before load, the phase programs this kernel takes (objects built
 * with bpf/event_loop.h's programs: bpf/event_loop.bpf.c, bpf/monitor.bpf.c):
 * with uprobe.multi (6.6+), one link per binary and direction (detaching it
 * is one operation, where ten uprobes take the kernel ~2 s); else with
 * attach cookies (5.15+), a uprobe (and a uretprobe) per phase, the phase as
 * the cookie; else (5.10) a program per phase and direction, the phase built
 * in (`handle_<phase>_entry`, `handle_<phase>_return`). `returns: false`: the
 * object has entry programs only. `use: false` loads none of them. Returns
 * how `attachPhases()` will attach.
 */
function choosePhasePrograms(obj, { returns = true, use = true } = {}) {
  const { uprobeMulti, attachCookie } = native.features();
  const how = uprobeMulti ? 'uprobe.multi' : attachCookie ? 'uprobe' : 'uprobe per phase';
  const p = obj.programs;
  const directions = returns ? ['entry', 'return'] : ['entry'];
  for (const d of directions) {
    p[`handle_phase_${d}_multi`].autoload = use && how === 'uprobe.multi';
    p[`handle_phase_${d}`].autoload = use && how === 'uprobe';
    for (const [phase] of PHASES) p[`handle_${phase}_${d}`].autoload = use && how === 'uprobe per phase';
  }
  return how;
}

/**
 * Attaches the entry (and with `returns`, return) programs to every phase
 * function found (`functions`: lib/host/procfs.js findFunctions), as
 * `choosePhasePrograms()` decided (`how`). Returns first: every entry seen
 * then has its return seen too. Returns the links.
 */
function attachPhases(obj, pid, functions, how, { returns = true } = {}) {
  const byBinary = new Map();
  PHASES.forEach(([phase, fn], cookie) => {
    const where = functions.get(fn);
    if (!where) return;
    if (!byBinary.has(where.binary)) byBinary.set(where.binary, []);
    byBinary.get(where.binary).push({ phase, fn, offset: where.fileOffset, cookie: BigInt(cookie) });
  });
  const p = obj.programs;
  const links = [];
  try {
    for (const [binary, list] of byBinary) {
      if (how === 'uprobe.multi') {
        const [names, cookies] = [list.map((f) => f.fn), list.map((f) => f.cookie)];
        if (returns) links.push(obj.attachUprobeMulti(binary, names, p.handle_phase_return_multi, { pid, retprobe: true, cookies }));
        links.push(obj.attachUprobeMulti(binary, names, p.handle_phase_entry_multi, { pid, cookies }));
        continue;
      }
      for (const { phase, offset, cookie } of list) {
        if (how === 'uprobe') {
          if (returns) links.push(obj.attachUretprobe(binary, offset, p.handle_phase_return, { pid, cookie }));
          links.push(obj.attachUprobe(binary, offset, p.handle_phase_entry, { pid, cookie }));
        } else {
          if (returns) links.push(obj.attachUretprobe(binary, offset, p[`handle_${phase}_return`], { pid }));
          links.push(obj.attachUprobe(binary, offset, p[`handle_${phase}_entry`], { pid }));
        }
      }
    }
  } catch (err) {
    for (const link of links) link.detach();
    throw err;
  }
  return links;
}

module.exports = { PHASES, choosePhasePrograms, attachPhases };
