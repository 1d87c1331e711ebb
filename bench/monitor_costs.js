'use strict';
// What each part of the monitor costs per event it hooks, measured in this
// process with the part attached and paused in turn (paired runs, the
// median of ROUNDS): an event-loop iteration (eventLoop: 2 probes per
// phase), a syscall (syscalls, files, connects: the raw_syscalls
// tracepoints), a context switch (offCpu: sched_switch, every switch of
// the machine; measured with a pipe ping-pong to a child). Multiplied by
// how many of each a request takes (bench/monitor_row.js prints them),
// that is what a part costs a request, in CPU time, with less of the noise
// of other processes than req/s.
//   node bench/monitor_costs.js [--rounds N]
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const bpf = require('..');
const { median } = require('./harness/numbers');

const argv = process.argv.slice(2);
const ROUNDS = Number(argv.includes('--rounds') ? argv[argv.indexOf('--rounds') + 1] : 15);
const ALONE = { offCpu: false, tcpRetransmits: false };

/** ns per loop iteration: N setImmediate turns. */
function iterations(n) {
  return new Promise((resolve) => {
    let i = 0;
    const t = process.hrtime.bigint();
    const step = () => (++i < n ? setImmediate(step) : resolve(Number(process.hrtime.bigint() - t) / n));
    setImmediate(step);
  });
}

/** ns per syscall: N getppid-like calls (fs.fstatSync on a kept fd). */
function syscalls(n) {
  const fd = fs.openSync('/dev/null', 'r');
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fs.fstatSync(fd);
  const ns = Number(process.hrtime.bigint() - t) / n;
  fs.closeSync(fd);
  return ns;
}

/** ns per context switch pair: a byte to a child and back over pipes, N times (`cat` echoes). */
async function switches(n) {
  const child = spawn('cat', [], { stdio: ['pipe', 'pipe', 'ignore'] });
  // the pipes' fds, for fs.writeSync/readSync: _handle is internal (not in @types/node)
  const [w, r] = [/** @type {any} */ (child.stdin)._handle.fd, /** @type {any} */ (child.stdout)._handle.fd];
  const one = Buffer.alloc(1);
  child.stdout.pause();
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    fs.writeSync(w, one);
    for (;;) {
      try {
        if (fs.readSync(r, one) === 1) break;
      } catch (e) {
        if (e.code !== 'EAGAIN') throw e;
      }
    }
  }
  const ns = Number(process.hrtime.bigint() - t) / n;
  child.kill();
  return ns;
}

async function paired(name, config, measure) {
  const m = bpf.monitor(config);
  const on = [];
  const off = [];
  for (let i = 0; i < ROUNDS; i++) {
    m.resume();
    on.push(await measure());
    m.pause();
    off.push(await measure());
  }
  m.close();
  const d = on.map((x, i) => x - off[i]);
  console.log(`${name}: ${median(off).toFixed(0)} ns unmonitored, ${median(on).toFixed(0)} monitored: +${median(d).toFixed(0)} ns (median of ${ROUNDS} pairs)`);
  return median(d);
}

(async () => {
  await paired('eventLoop, per loop iteration', { ...ALONE, eventLoop: true }, () => iterations(20_000));
  await paired('syscalls, per syscall', { ...ALONE, syscalls: true }, () => syscalls(100_000));
  await paired('offCpu, per round trip to another process (two switches of each)', { ...ALONE, offCpu: true }, () => switches(5_000));
  console.log(require('node:child_process').execFileSync('uptime', { encoding: 'utf8' }).trim());
})();
