'use strict';
// The HTTP rows' server: a minimal Node.js HTTP server on 127.0.0.1 (an
// ephemeral port) that prints {"port"} once it listens, then every 50 ms
// the requests served so far with the time, {"t": CLOCK_MONOTONIC ns, "n"},
// so that the benchmark can measure req/s over any window of one long load
// run, and the CPU time spent so far: "c", the main thread's in ns (its
// /proc schedstat: the kernel's own runtime, steal time not counted; the
// time of a BPF program run in an interrupt is charged to the thread it
// interrupted), and "p", the whole process's in µs (getrusage). At
// saturation the main thread is the server's limit, so its CPU time per
// request is what req/s measures, without the host's steal of the VM.
// bench/http_server.js runs it alone; bench/monitor_server.js beside its
// own monitor.
const fs = require('node:fs');
const http = require('node:http');

/** The main thread's CPU time in ns (sum_exec_runtime), or -1 where /proc has no schedstat. */
function mainThreadNs() {
  try {
    return Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'latin1').split(' ')[0]);
  } catch {
    return -1;
  }
}

/** Starts the server; `onListening()` runs once it listens. Returns `{ server, served() }`. */
function helloServer(onListening = () => {}) {
  const body = JSON.stringify({ hello: 'world', items: [1, 2, 3, 4, 5] });
  let served = 0;
  const server = http.createServer((req, res) => {
    served++;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: /** @type {import('node:net').AddressInfo} */ (server.address()).port })}\n`);
    setInterval(() => {
      const u = process.cpuUsage();
      process.stdout.write(`{"t":${process.hrtime.bigint()},"n":${served},"c":${mainThreadNs()},"p":${u.user + u.system}}\n`);
    }, 50);
    onListening();
  });
  process.on('SIGTERM', () => process.exit(0));
  return { server, served: () => served };
}

module.exports = { helloServer };
