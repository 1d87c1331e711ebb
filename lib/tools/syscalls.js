'use strict';
/**
 * Syscall names and numbers of this architecture (from ./names), and the
 * per-syscall latency histograms that bpf/syscall_hist.bpf.h counts in the
 * kernel (examples/syscall_hist.js, examples/node_syscalls.js), read per
 * interval and in total, printed as bpftrace prints its histograms, or as
 * JSON.
 *
 *   const { syscallName, syscallNumber, SyscallLatency } = require('node-libbpf/lib/syscalls');
 */
const { log2Buckets, linearBuckets, formatHistogram, histogramJSON } = require('./hist');
const { Tally, formatTable } = require('./report');
const { syscallNames, syscallName, syscallNumber } = require('../core/names');
const { chooseThreadStorage } = require('../core/compat');
const { CgroupNames, containerLabel, CONTAINER_COLUMN } = require('../host/cgroup');

// syscalls whose tracepoints (the kernel's SYSCALL_DEFINE names) are named otherwise
const EVENT_NAMES = { newstat: 'stat', newlstat: 'lstat', newfstat: 'fstat', newuname: 'uname', sendfile64: 'sendfile', umount: 'umount2' };

/**
 * The number of the syscall of the tracepoints `syscalls:sys_enter_<event>`
 * and `sys_exit_<event>` (`newfstat` is `fstat`), or undefined.
 */
function syscallNumberOfEvent(event, arch) {
  return syscallNumber(EVENT_NAMES[event] ?? event, arch);
}

const UNITS = { ns: 1, us: 1000, ms: 1_000_000 };
// SYSCALL_HIST_SLOTS of bpf/syscall_hist.h: the 65 log2 slots, or linear steps and the two open ends
const HIST_SLOTS = 66;
const MAX_LINEAR_STEPS = HIST_SLOTS - 2;
const TITLES = { ns: '@nsecs', us: '@usecs', ms: '@msecs' };

/**
 * The latencies counted by a loaded object that includes
 * bpf/syscall_hist.bpf.h (map `syscalls`: one `struct syscall_counts` per
 * syscall number, counting up from load). `configure(obj)` before load sets
 * its globals; `collect()` moves what the kernel counted since the last
 * `collect()` into the current interval and the totals (the difference of
 * two reads: nothing is counted twice or missed); `interval()` and
 * `totals()` give one row per syscall: `{ syscall, nr, count, total_ns,
 * errors, slots }`. A call that ends while the map is read may be in the
 * count of one interval and in the histogram of the next. Detach the
 * programs before the last `collect()` for exact totals. With
 * `perContainer` (an object built with SYSCALL_HIST_PER_CGROUP:
 * syscall_hist.bpf.c), a row per cgroup and syscall, read from its map
 * `cgroup_syscalls`, with the cgroup's names (lib/host/cgroup.js `CgroupNames`:
 * `cgroupId`, `cgroup`, `containerId`, `podUid`).
 */
class SyscallLatency {
  /**
   * `unit`: `ns`, `us` (default) or `ms`; `linear`: `{ min, max, step }` in
   * that unit, for lhist-like slots instead of log2; `syscalls`: only these
   * names (default: every syscall); `perContainer`: a row per cgroup and
   * syscall.
   * @param {{ unit?: 'ns' | 'us' | 'ms', linear?: { min: number, max: number, step: number }, syscalls?: string[], perContainer?: boolean }} [options]
   */
  constructor({ unit = 'us', linear, syscalls, perContainer = false } = {}) {
    if (!UNITS[unit]) throw new Error(`unknown unit ${unit}: ns, us or ms`);
    const steps = linear && Math.floor((linear.max - linear.min) / linear.step);
    if (steps > MAX_LINEAR_STEPS) {
      throw new Error(`linear slots ${linear.min},${linear.max},${linear.step} make ${steps} steps; at most ${MAX_LINEAR_STEPS} (a larger STEP or a narrower MIN..MAX)`);
    }
    this.unit = unit;
    this.linear = linear;
    this.syscalls = syscalls?.map((name) => {
      const nr = syscallNumber(name);
      if (nr === undefined) throw new Error(`unknown syscall ${name} on ${process.arch}`);
      return nr;
    });
    this.tally = new Tally();
    this.seen = new Map(); // syscall number (or cgroup/number) -> its counts at the last collect()
    this.cgroups = perContainer ? new CgroupNames() : undefined;
  }

  /** Sets the object's globals (before it is loaded); `pid`: the kernel's (a target's `kernelPid`), or undefined for all. */
  configure(obj, pid) {
    chooseThreadStorage(obj);
    obj.setGlobalVariable('target_pid', pid ?? 0);
    obj.setGlobalVariable('unit_ns', UNITS[this.unit]);
    if (this.linear) {
      obj.setGlobalVariable('linear', true);
      obj.setGlobalVariable('linear_min', this.linear.min);
      obj.setGlobalVariable('linear_max', this.linear.max);
      obj.setGlobalVariable('linear_step', this.linear.step);
    }
    if (this.syscalls) obj.setGlobalVariable('filter_syscalls', true);
    if (this.cgroups) obj.setGlobalVariable('per_container', true);
    this.obj = obj;
  }

  /** After load: the syscalls to trace, when only some are. */
  start() {
    if (!this.syscalls) return;
    const traced = this.obj.getMap('traced_syscalls');
    for (const nr of this.syscalls) traced.set(nr, 1);
  }

  /** Moves what the kernel counted since the last call into the current interval and the totals. */
  collect() {
    const entries = this.cgroups
      ? this.obj.getMap('cgroup_syscalls', { int64: 'number' }).getBatch().map(([key, now]) => [key.syscall, now, key.cgroup])
      : this.obj.getMap('syscalls', { int64: 'number' }).entries();
    this.cgroups?.refresh();
    for (const [nr, now, cgroup] of entries) {
      const id = cgroup === undefined ? nr : `${cgroup}/${nr}`;
      const before = this.seen.get(id);
      const count = now.count - (before?.count ?? 0);
      if (count === 0) continue;
      this.seen.set(id, now);
      this.tally.add(id, { ...(cgroup !== undefined && this.cgroups.get(cgroup)), syscall: syscallName(nr), nr }, {
        count,
        total_ns: now.total_ns - (before?.total_ns ?? 0),
        errors: now.errors - (before?.errors ?? 0),
        slots: trimSlots(now.slots.map((c, i) => c - (before?.slots[i] ?? 0))),
      });
    }
  }

  /** The rows counted since the last `interval()`, by count (most first). */
  interval() {
    return sortRows(this.tally.takeInterval());
  }

  /** The rows of the whole run, by count. */
  totals() {
    return sortRows(this.tally.totals());
  }

  /** The buckets of a row's histogram (`[{ low, high, count }]`, in the unit). */
  buckets(row) {
    return this.linear ? linearBuckets(row.slots ?? [], this.linear) : log2Buckets(row.slots ?? []);
  }

  /** The JSON form of rows: `{ syscall, count, total_ns, avg_ns, errors, unit, buckets }` each. */
  toJSON(rows) {
    return rows.map((r) => ({
      ...(r.cgroupId !== undefined && { cgroupId: r.cgroupId, cgroup: r.cgroup, ...(r.containerId && { containerId: r.containerId }), ...(r.podUid && { podUid: r.podUid }) }),
      syscall: r.syscall,
      count: r.count ?? 0,
      total_ns: r.total_ns ?? 0,
      avg_ns: r.count ? Math.round(r.total_ns / r.count) : null,
      errors: r.errors ?? 0,
      unit: this.unit,
      ...histogramJSON(this.buckets(r)),
    }));
  }

  /** A table of rows: count, total and average time, errors. */
  formatTable(rows) {
    return formatTable(
      [
        ...(this.cgroups ? [CONTAINER_COLUMN] : []),
        { title: 'SYSCALL', value: (r) => r.syscall, left: true },
        { title: 'COUNT', value: (r) => r.count ?? 0 },
        { title: 'ERRORS', value: (r) => r.errors ?? 0 },
        { title: 'TOTAL ms', value: (r) => ((r.total_ns ?? 0) / 1e6).toFixed(3) },
        { title: 'AVG µs', value: (r) => (r.count ? (r.total_ns / r.count / 1e3).toFixed(1) : '-') },
      ],
      rows,
    );
  }

  /** A row's histogram as bpftrace prints `@usecs[openat]: hist(...)`. */
  formatHistogram(row) {
    const key = row.cgroupId === undefined ? row.syscall : `${containerLabel(row)}, ${row.syscall}`;
    return formatHistogram(this.buckets(row), { title: `${TITLES[this.unit]}[${key}]` });
  }
}

/** Slots without their trailing zeros. */
function trimSlots(slots) {
  let n = slots.length;
  while (n > 0 && slots[n - 1] === 0) n--;
  return slots.slice(0, n);
}

function sortRows(rows) {
  return rows.sort((a, b) => (b.count ?? 0) - (a.count ?? 0) || (b.total_ns ?? 0) - (a.total_ns ?? 0) || a.nr - b.nr);
}

module.exports = { syscallNames, syscallName, syscallNumber, syscallNumberOfEvent, SyscallLatency, UNITS };
