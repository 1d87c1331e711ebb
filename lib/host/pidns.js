'use strict';
/**
 * PID namespaces: the ids BPF programs compare (bpf_get_current_pid_tgid(),
 * task->pid: the kernel's, those of the initial pid namespace) for a
 * process named as this process sees it (`process.pid`, a tool's `-p PID`).
 * Inside a container they differ (the service is pid 1 there, 31337 on the
 * host); on the host they are the same and nothing is asked of the kernel.
 *
 *   const { kernelIds, kernelPid } = require('node-libbpf/lib/pidns');
 *   kernelPid(process.pid);   // the pid to give a program's target_pid
 *   kernelIds(pid).tids;      // Map(tid here -> the kernel's tid)
 *
 * In a pid namespace, an iterator over every task (bpf/pidns.bpf.c,
 * iter/task: Linux 5.8+) reads each task's ids at the reader's level of
 * nesting: translated once, in user space, with the kernel's help; the
 * programs keep comparing the kernel's ids at no cost per event. Nested
 * namespaces work the same. Needs what loading a tracing program needs
 * (root, or CAP_BPF + CAP_PERFMON).
 */
const fs = require('node:fs');
const { loadBpfProgram } = require('../core/object');
const { objectPath } = require('../core/objects');
const { codedError } = require('../core/validate');

/** The inode of the initial pid namespace (PROC_PID_INIT_INO, include/linux/proc_ns.h). */
const INIT_PID_NS = 0xeffffffc;

let initial; // whether this process is in the initial pid namespace (it cannot move)
/** Whether this process's pid namespace is the initial one (the host's): its pids are the kernel's. */
function inInitialNamespace() {
  initial ??= fs.statSync('/proc/self/ns/pid').ino === INIT_PID_NS;
  return initial;
}

/**
 * Throws ERR_BPF_PROC_MOUNT where the /proc this process sees is not its
 * pid namespace's (`unshare --pid --fork` without `--mount-proc`, a host
 * /proc bind-mounted into a container): there /proc/<process.pid> is
 * another process, and what a service reads of itself (its maps, threads,
 * binary, memory) would be that process's.
 */
function checkOwnProc() {
  let self;
  try {
    self = fs.readlinkSync('/proc/self');
  } catch (err) {
    throw codedError('ERR_BPF_PROC_MOUNT', `/proc/self cannot be read (${/** @type {Error} */ (err).message}): node-libbpf reads this process's /proc files; mount procfs at /proc`);
  }
  if (self !== String(process.pid)) {
    throw codedError(
      'ERR_BPF_PROC_MOUNT',
      `/proc is another pid namespace's: this process is pid ${process.pid} in its namespace and ${self} in /proc, so /proc/${process.pid} is another process; mount this namespace's /proc (unshare --pid --fork --mount-proc; container runtimes do so)`,
    );
  }
}

function checkPid(pid, what) {
  if (!Number.isInteger(pid) || pid < 1 || pid > 0x3fffffff) {
    throw codedError('ERR_BPF_INVALID_VALUE', `${what}: a pid is a positive integer, got ${pid}`);
  }
}

/**
 * The tasks visible in this process's pid namespace, as
 * `[{ hostTgid, hostTid, tgid, tid }]` (`tgid`, `tid`: as this namespace
 * sees them); only process `pid` if given.
 */
function visibleTasks(pid) {
  const obj = loadBpfProgram(objectPath('pidns'));
  try {
    obj.setGlobalVariable('ns_tgid', pid ?? 0);
    const buf = obj.readIterator('dump_task');
    const tasks = [];
    for (let at = 0; at + 16 <= buf.length; at += 16) {
      tasks.push({ hostTgid: buf.readUInt32LE(at), hostTid: buf.readUInt32LE(at + 4), tgid: buf.readUInt32LE(at + 8), tid: buf.readUInt32LE(at + 12) });
    }
    return tasks;
  } catch (err) {
    err.message = `translating pid ${pid ?? '(every task)'} of this pid namespace to the kernel's: ${err.message}`;
    throw err;
  } finally {
    obj.close();
  }
}

/** The threads of `pid` in /proc (on the host: ids are the kernel's). */
function procTids(pid) {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).map(Number);
  } catch (err) {
    if (err.code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * The kernel's ids of process `pid` (a pid of this process's namespace):
 * `{ tgid, tids }`, `tgid` the pid BPF programs see, `tids` a Map of its
 * threads' ids here to the kernel's. ENOENT if no such process is visible
 * here.
 */
function kernelIds(pid) {
  checkPid(pid, 'kernelIds()');
  let tgid;
  const tids = new Map();
  if (inInitialNamespace()) {
    tgid = pid;
    for (const tid of procTids(pid)) tids.set(tid, tid);
  } else {
    for (const t of visibleTasks(pid)) {
      tgid = t.hostTgid;
      tids.set(t.tid, t.hostTid);
    }
  }
  if (tids.size === 0) throw codedError('ENOENT', `pid ${pid}: no such process in this pid namespace (is it running? a pid of another container means nothing here)`);
  return { tgid, tids };
}

/** The pid BPF programs see (`bpf_get_current_pid_tgid() >> 32`) for process `pid` of this pid namespace. */
function kernelPid(pid) {
  return kernelIds(pid).tgid;
}

/**
 * A function from the kernel's pids (those records report) to this
 * namespace's, `undefined` for a process not visible here; the identity on
 * the host. A snapshot: processes started later are not in it.
 */
function namespacePids() {
  if (inInitialNamespace()) return (pid) => pid;
  const byHost = new Map(visibleTasks().map((t) => [t.hostTid, t.tid])); // a leader's tid is its tgid
  return (pid) => byHost.get(pid);
}

module.exports = { kernelIds, kernelPid, namespacePids, inInitialNamespace, checkOwnProc, INIT_PID_NS };
