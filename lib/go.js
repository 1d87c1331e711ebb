'use strict';
/**
 * Go programs, for tracers of the Go runtime (examples/goroutines.js): the
 * names of goroutine states, and building a Go source file with the `go`
 * tool (Debian: golang-go).
 *
 *   const { buildGo, goStateName } = require('node-libbpf/lib/go');
 *   const binary = buildGo('main.go', '/tmp/build/main');
 *   goStateName(0x1004); // 'SCAN|WAITING'
 */
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

/** The goroutine states, `_G*` in Go's runtime/runtime2.go (the values of g.atomicstatus). */
const GO_STATES = {
  0: 'IDLE', // just allocated, not yet initialized
  1: 'RUNNABLE', // on a run queue
  2: 'RUNNING', // running user code, on an M and a P
  3: 'SYSCALL', // in a system call
  4: 'WAITING', // blocked in the runtime (channel, lock, sleep, I/O)
  5: 'MORIBUND_UNUSED',
  6: 'DEAD', // exited (or an unused g, on a free list)
  7: 'ENQUEUE_UNUSED',
  8: 'COPYSTACK', // its stack is being moved
  9: 'PREEMPTED', // stopped itself for a suspendG preemption
};
const G_SCAN = 0x1000; // _Gscan: the GC is scanning the stack

/** The name of a goroutine state: `RUNNABLE`, `SCAN|WAITING`, or the number for an unknown one. */
function goStateName(status) {
  const name = GO_STATES[status & ~G_SCAN] ?? `${status & ~G_SCAN}`;
  return status & G_SCAN ? `SCAN|${name}` : name;
}

/**
 * Builds `source` (a main package in one .go file that imports the
 * standard library only: no go.mod needed) into `output` with `go build`,
 * unless `output` is newer than `source`; returns `output`. The build cache
 * is `$GOCACHE`, or a directory in the temp dir.
 * Throws when Go is not installed (`apt-get install golang-go`).
 */
function buildGo(source, output, { ldflags } = {}) {
  if (fs.existsSync(output) && fs.statSync(output).mtimeMs >= fs.statSync(source).mtimeMs) return output;
  fs.mkdirSync(path.dirname(output), { recursive: true });
  const env = {
    ...process.env,
    GOCACHE: process.env.GOCACHE ?? path.join(os.tmpdir(), 'node-libbpf-gocache'),
    GOPATH: process.env.GOPATH ?? path.join(os.tmpdir(), 'node-libbpf-gopath'),
    GOTOOLCHAIN: 'local',
  };
  const partial = `${output}.partial-${process.pid}`;
  try {
    execFileSync('go', ['build', '-o', partial, ...(ldflags ? [`-ldflags=${ldflags}`] : []), source], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    if (err.code === 'ENOENT') throw new Error('the go tool is not installed (Debian: apt-get install golang-go, or npm run setup)');
    throw new Error(`go build ${source}: ${err.stderr?.toString().trim() || err.message}`);
  }
  fs.renameSync(partial, output);
  return output;
}

module.exports = { GO_STATES, goStateName, buildGo };
