'use strict';
/**
 * The process a tool traces (`-p PID`, every process, or with `--demo` a
 * workload it starts) and when tracing ends: at `-d`, a signal or the
 * process's exit, then once the buffers have delivered what the kernel
 * queued.
 *
 *   const { traceTarget, untilStopped, drain } = require('node-libbpf/lib/target');
 */
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { kernelPid } = require('./pidns');

/**
 * The process to trace: `opts.pid`; with `opts.demo` the workload script
 * started as a child `node [nodeArgs] script`, once it has sent its first
 * IPC message
 * (what it does: a file name, ports). A workload that starts the process to
 * trace itself (a bash on a pseudo-terminal, a Go program) names it in that
 * message as `pid`; it must end that process when it is killed or its
 * parent goes away. `stop()` ends the workload. Without either, the target is
 * system-wide: `{ pid: undefined, what: opts.systemWide }`.
 *
 * `pid` is the process as this process's pid namespace sees it (what `-p`
 * means where the tool runs: inside a container, the container's pid);
 * `kernelPid` the same process as BPF programs see it
 * (`bpf_get_current_pid_tgid() >> 32`, the host's): what a program's
 * `target_pid` compares. Uprobe and perf event `pid` options take `pid`.
 */
/**
 * Whether process `pid` exists: signal 0 (EPERM: it exists, another user's,
 * and this tracer may not signal it: it has CAP_BPF and CAP_PERFMON, not
 * CAP_KILL).
 */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return /** @type {NodeJS.ErrnoException} */ (err).code === 'EPERM';
  }
}

async function traceTarget(opts, workloadScript, nodeArgs = []) {
  if (opts.pid !== undefined) {
    if (!alive(opts.pid)) throw new Error(`--pid ${opts.pid}: no such process`);
    return { pid: opts.pid, kernelPid: kernelPid(opts.pid), info: undefined, child: undefined, stop() {} };
  }
  if (!opts.demo) return { pid: undefined, kernelPid: undefined, what: opts.systemWide ?? 'every process', info: undefined, child: undefined, stop() {} };

  // the workload's stdout goes to our stderr: our stdout is the trace
  const child = spawn(process.execPath, [...nodeArgs, workloadScript], { stdio: ['ignore', 2, 2, 'ipc'] });
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
    if (child.connected) child.disconnect();
  };
  process.once('exit', () => {
    stop();
    // the perf map its --perf-basic-prof wrote (node never removes one): named by now
    if (nodeArgs.some((a) => a.startsWith('--perf-basic-prof'))) fs.rmSync(`/tmp/perf-${child.pid}.map`, { force: true });
  });
  const info = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`workload ${workloadScript} exited (${signal ?? code}) before it was ready`)));
  }).catch((err) => {
    stop();
    throw err;
  });
  console.error(`workload: pid ${child.pid} ${path.relative(process.cwd(), workloadScript)} ${JSON.stringify(info)}`);
  const pid = Number.isInteger(info?.pid) ? info.pid : child.pid;
  try {
    return { pid, kernelPid: kernelPid(pid), info, child, stop };
  } catch (err) {
    stop();
    throw err;
  }
}

/**
 * Resolves when tracing should stop: after `opts.duration` seconds, on
 * SIGINT or SIGTERM, or when the traced process exits. A target without a
 * `pid` is system-wide (`what` says what is traced: `every bash`). Until
 * then `onInterval()` runs every `opts.interval` seconds, if both are given.
 * The "Tracing ..." line (or `banner`, if given) goes to stderr once the
 * signal handlers are in place: a signal sent on seeing it stops the tracing.
 *
 * @param {string} [banner] the line to say instead of "Tracing <what> ..."
 */
function untilStopped(opts, target, onInterval, banner) {
  const what = target.pid === undefined ? target.what ?? 'every process' : `pid ${target.pid}`;
  return new Promise((resolve) => {
    const timers = [];
    let signals = 0;
    const done = (reason) => {
      timers.forEach(clearInterval);
      process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
      target.child?.off('exit', onExit);
      // stopping (draining, printing the summary): a signal now does not cut
      // that short; a second one, counting the one that stopped it, exits
      const late = (signal) => ++signals >= 2 && process.exit(128 + os.constants.signals[signal]);
      process.on('SIGINT', late).on('SIGTERM', late);
      resolve(reason);
    };
    const onSignal = (signal) => {
      signals++;
      done(signal);
    };
    const onExit = () => done(`pid ${target.pid} exited`);
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
    if (opts.duration) timers.push(setTimeout(() => done('duration'), opts.duration * 1000));
    if (opts.interval && onInterval) timers.push(setInterval(onInterval, opts.interval * 1000));
    // signal handlers do not keep Node.js running: system-wide with no -d or -i, it ended at once
    timers.push(setInterval(() => {}, 2 ** 30));
    if (target.child) {
      target.child.on('exit', onExit);
    } else if (target.pid !== undefined) {
      // a process that is not our child: look every half second
      timers.push(setInterval(() => {
        if (!alive(target.pid)) onExit();
      }, 500));
    }
    // said once the handlers are in place: a signal sent on seeing it stops the tracing
    console.error(banner ?? `Tracing ${what} ${opts.duration ? `for ${opts.duration} s` : 'until Ctrl+C'}...`);
  });
}

/**
 * Closes `buffers` once they have delivered what the kernel had queued (no
 * record for `quietMs`, at most `maxMs`). Stop the kernel side first (a
 * global the programs check, or `obj.detachAll()`): counts the kernel keeps
 * in maps then match the records delivered.
 */
async function drain(buffers, { quietMs = 50, maxMs = 2000 } = {}) {
  const received = () => buffers.reduce((sum, b) => sum + b.received + b.lost, 0);
  const end = Date.now() + maxMs;
  let last = -1;
  while (received() !== last && Date.now() < end) {
    last = received();
    await new Promise((resolve) => setTimeout(resolve, quietMs));
  }
  for (const b of buffers) b.close();
}

module.exports = { traceTarget, untilStopped, drain };
