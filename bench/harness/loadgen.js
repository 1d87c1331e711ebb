'use strict';
// The load: bench/loadgen.c's N getppid() calls, started once the consumer
// is attached. Its result: { ns_per_call, start_ns, end_ns } (CLOCK_MONOTONIC).
const { start, stop, waitLine, json } = require('./procs');
const { built } = require('./build');

/** How long one run (the load, a consumer's drain) may take. */
const RUN_TIMEOUT_MS = 180_000;

/** Starts the load generator for `n` calls, waiting for "go" (pinned to CPU 0 with `pin`). */
function loadgen(n, pin = false) {
  return pin ? start('taskset', ['-c', '0', built('loadgen'), String(n)]) : start(built('loadgen'), [String(n)]);
}

/** Lets the load generator go; its result once it is done. */
async function finishLoad(lg) {
  lg.stdin.end('go\n');
  const line = await waitLine(lg, /^\{/, RUN_TIMEOUT_MS);
  await lg.exited;
  return json(line);
}

/** One untraced run of the loop: its ns per call. */
async function untraced(n) {
  const lg = loadgen(n);
  try {
    return (await finishLoad(lg)).ns_per_call;
  } finally {
    await stop(lg, 'SIGKILL');
  }
}

module.exports = { loadgen, finishLoad, untraced, RUN_TIMEOUT_MS };
