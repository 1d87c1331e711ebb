'use strict';
// One run of a consumer process of the C, node-libbpf and BCC kinds, which
// all speak the same protocol: attach, print "ready"; the load runs; SIGUSR1;
// drain, print one JSON line ({ received, lost, missing, first_ts, last_ns,
// cpu_s, ... }) and exit.
const { start, stop, waitLine, json } = require('./procs');
const { finishLoad, RUN_TIMEOUT_MS } = require('./loadgen');

/**
 * Runs `cmd argv` (env added to the bench's) as the consumer of the waiting
 * load generator `lg`: { load, ...the consumer's JSON }. With `pin`, the
 * consumer runs on CPU 1 (taskset execs: the same pid).
 */
async function runConsumerProcess({ cmd, argv, env = {}, readyMs = 30_000 }, lg, pin = false) {
  const opts = { env: { ...process.env, ...env } };
  const consumer = pin ? start('taskset', ['-c', '1', cmd, ...argv], opts) : start(cmd, argv, opts);
  try {
    await waitLine(consumer, /^ready$/, readyMs);
    const load = await finishLoad(lg);
    try { process.kill(consumer.pid, 'SIGUSR1'); } catch { /* exited: waitLine says why */ }
    const result = json(await waitLine(consumer, /^\{/, RUN_TIMEOUT_MS));
    await consumer.exited;
    return { load, ...result };
  } finally {
    await stop(consumer, 'SIGKILL');
  }
}

module.exports = { runConsumerProcess };
