'use strict';
// Workload of stackcount.js (run with --perf-basic-prof, so that the
// functions V8 compiles have names in /tmp/perf-PID.map): a hot
// JavaScript function, hotLoop, takes most of the CPU; every 100 ms
// readConfig reads a file (openat, read, close), until it is killed or its
// parent goes away.
const fs = require('fs');
const os = require('os');
const path = require('path');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-hot-loop-'));
const config = path.join(dir, 'config.json');
fs.writeFileSync(config, JSON.stringify({ iterations: 5000 }));

/** Burns the CPU for `ms` milliseconds. */
function hotLoop(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) {
    for (let i = 0; i < 5000; i++) x += Math.sqrt(i) * Math.sin(i);
  }
  return x;
}

function readConfig() {
  return JSON.parse(fs.readFileSync(config, 'utf8'));
}

setInterval(() => {
  readConfig();
  hotLoop(80);
}, 100);

process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
process.on('disconnect', () => process.exit(0));
// tell the tracer what to look for
process.send?.({ hot: 'hotLoop', file: config });
