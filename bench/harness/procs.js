'use strict';
// The bench's child processes: started, read line by line, stopped by their
// own pid (and whatever is left killed when the bench exits).
const fs = require('node:fs');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');

const children = new Set();

/**
 * A child of start(), with what it adds.
 * @typedef {import('node:child_process').ChildProcessWithoutNullStreams & {
 *   exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>,
 *   closed?: boolean,
 *   stderrText: string,
 *   lines: { line: string, at: bigint }[],
 *   waiters: (() => void)[],
 * }} Child
 */

/**
 * Starts a child; its stdout lines collect in `child.lines` ({ line, at }).
 * @param {string} cmd
 * @param {string[]} argv
 * @param {import('node:child_process').SpawnOptions} [opts]
 * @param {{ readStdout?: boolean }} [options]
 * @returns {Child}
 */
function start(cmd, argv, opts = {}, { readStdout = true } = {}) {
  const child = /** @type {Child} */ (spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'], ...opts }));
  children.add(child);
  // 'exit', not 'close': a child whose stdout went to another child never closes it here
  child.exited = new Promise((resolve) => child.on('exit', (code, signal) => {
    children.delete(child);
    resolve({ code, signal });
  }));
  child.on('error', () => {});
  child.on('close', () => { child.closed = true; });
  child.stderrText = '';
  if (child.stderr) child.stderr.on('data', (d) => { if (child.stderrText.length < 20000) child.stderrText += d; });
  child.lines = [];
  child.waiters = [];
  if (child.stdout && readStdout) {
    let partial = '';
    child.stdout.on('data', (d) => {
      partial += d;
      let nl;
      while ((nl = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        child.lines.push({ line, at: process.hrtime.bigint() });
        for (const w of child.waiters.slice()) w();
      }
    });
  }
  return child;
}

/** Stops a child we started, by its pid: `signal`, then SIGKILL after `ms`. */
async function stop(child, signal = 'SIGTERM', ms = 3000) {
  if (!children.has(child)) return child.exited;
  try { process.kill(child.pid, signal); } catch { /* gone */ }
  const t = setTimeout(() => { try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ } }, ms);
  const r = await child.exited;
  clearTimeout(t);
  return r;
}

/** SIGKILLs every child still running. */
function killAll() {
  for (const child of children) {
    try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ }
  }
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { killAll(); process.exit(130); });

/** Whether a child we started is still running. */
const running = (child) => children.has(child);

/** The first stdout line (from line `from` on) matching `re`, or an Error after `ms`. */
function waitLine(child, re, ms, from = 0) {
  return new Promise((resolve, reject) => {
    let index = from;
    const check = () => {
      for (; index < child.lines.length; index++) {
        if (re.test(child.lines[index].line)) {
          done();
          resolve(child.lines[index]);
          return true;
        }
      }
      return false;
    };
    const fail = (why) => {
      done();
      const err = child.stderrText.trim().split('\n').filter((l) => !/warning|^\s*\^|^\s*$|note:/i.test(l)).slice(-3).join(' | ');
      reject(new Error(`${path.basename(child.spawnfile)}: ${why}${err ? `: ${err}` : ''}`));
    };
    const timer = setTimeout(() => fail(`no ${re} within ${ms} ms`), ms);
    const onExit = () => setImmediate(() => { if (!check()) fail('exited'); });
    const done = () => {
      clearTimeout(timer);
      child.waiters = child.waiters.filter((w) => w !== check);
      child.off('close', onExit);
    };
    if (check()) return;
    child.waiters.push(check);
    child.on('close', onExit);
    // already closed: 'close' will not come again
    if (child.closed) onExit();
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** A line's JSON. */
const json = (l) => JSON.parse(l.line);

/** user + system CPU seconds of a live process (all threads), from /proc/PID/stat. */
function procCpu(pid) {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}

/** Runs a command to its end: { ok, out } (stdout and stderr). */
function sh(cmd, argv, opts = {}) {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', ...opts });
  return { ok: r.status === 0, out: `${r.stdout || ''}${r.stderr || ''}${r.error ? r.error.message : ''}`.trim() };
}

module.exports = { start, stop, killAll, running, waitLine, sleep, json, procCpu, sh };
