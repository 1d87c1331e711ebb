'use strict';
// The soak's load generator: getppid() calls (process.ppid makes one each
// time) at a steady rate, which __test__/bpf/stream.bpf.c turns into
// records. Starts on a line on stdin, stops on SIGTERM, prints how many
// calls it made.
//   node bench/soak/flood.js <calls per second>
const rate = Number(process.argv[2] || 100_000);
const TICK_MS = 10;
let calls = 0;
let timer;

function tick() {
  // catch up on the calls due since the start, a tick at most
  const due = Math.min(Math.round(((Date.now() - start) / 1000) * rate) - calls, Math.ceil((rate * TICK_MS) / 1000) * 2);
  let sum = 0;
  for (let i = 0; i < due; i++) sum += process.ppid;
  calls += Math.max(0, due);
  timer = setTimeout(tick, TICK_MS);
  return sum;
}

let start = 0;
process.stdin.once('data', () => {
  start = Date.now();
  tick();
});
process.on('SIGTERM', () => {
  clearTimeout(timer);
  process.stdout.write(`${calls}\n`, () => process.exit(0));
});
