'use strict';
// The HTTP rows' server: a minimal Node.js HTTP server on 127.0.0.1 (an
// ephemeral port) that prints {"port"} once it listens, then every 50 ms
// the requests served so far with the time, {"t": CLOCK_MONOTONIC ns, "n"},
// so that the benchmark can measure req/s over any window of one long load
// run. bench/http_server.js runs it alone; bench/monitor_server.js beside
// its own monitor.
const http = require('node:http');

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
    setInterval(() => process.stdout.write(`{"t":${process.hrtime.bigint()},"n":${served}}\n`), 50);
    onListening();
  });
  process.on('SIGTERM', () => process.exit(0));
  return { server, served: () => served };
}

module.exports = { helloServer };
