'use strict';
// Workload of goroutines.js: builds examples/workloads/goroutines.go (once,
// into node-libbpf's cache, lib/host/go.js) and runs it: every 200 ms it starts 5 goroutines that
// sleep, compute and exit. The tracer traces the Go program (`pid` in the
// message); it ends with this process.
const { spawn } = require('child_process');
const path = require('path');
const { buildGo } = require('../../lib/host/go');

const binary = buildGo(path.join(__dirname, 'goroutines.go'));
// its stdin is a pipe from us: it exits when we do, however we end
const go = spawn(binary, [], { stdio: ['pipe', 'pipe', 'inherit'] });
go.on('exit', (code, signal) => process.exit(code ?? 1));
const exit = () => {
  go.kill();
  process.exit(0);
};
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, exit);
process.on('disconnect', exit);
go.stdout.once('data', () => {
  // tell the tracer what to trace and what it will see
  process.send?.({ pid: go.pid, binary, goroutinesPerRound: 5, intervalMs: 200 });
});
