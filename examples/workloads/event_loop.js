'use strict';
// Workload of trace_event_loop.js: every 200 ms a timer callback burns 50 ms
// of CPU and queues a setImmediate that burns 5 ms: the loop shows a 50 ms
// timers phase, a 5 ms check phase in the next iteration, and polls that
// wait for the rest of the 200 ms (~145 ms); until it is killed or its
// parent goes away.
const { performance } = require('perf_hooks');

const INTERVAL_MS = 200;
const TIMER_BURN_MS = 50;
const IMMEDIATE_BURN_MS = 5;

function burn(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

setInterval(() => {
  burn(TIMER_BURN_MS);
  setImmediate(() => burn(IMMEDIATE_BURN_MS));
}, INTERVAL_MS);

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
process.on('disconnect', () => process.exit(0));
// tell the tracer what to look for
process.send?.({ intervalMs: INTERVAL_MS, timerBurnMs: TIMER_BURN_MS, immediateBurnMs: IMMEDIATE_BURN_MS });
