'use strict';
// Workload of trace_network_latency.js: an HTTP server on 127.0.0.1 and one
// on ::1, and a client that GETs from both every 100 ms on new connections,
// until it is killed or its parent goes away.
const http = require('http');
const { once } = require('events');

async function listen(host) {
  const server = http.createServer((req, res) => res.end('ok\n'));
  server.listen(0, host);
  await once(server, 'listening');
  return /** @type {import('net').AddressInfo} */ (server.address()).port;
}

function get(host, port) {
  // agent: false: a new socket (socket + connect) for every request
  http.get({ host, port, path: '/', agent: false }, (res) => res.resume())
    .on('error', (err) => console.error(`GET http://${host}:${port}/: ${err.message}`));
}

async function main() {
  const ipv4 = await listen('127.0.0.1');
  const ipv6 = await listen('::1');
  setInterval(() => {
    get('127.0.0.1', ipv4);
    get('::1', ipv6);
  }, 100);
  // tell the tracer what to look for
  process.send?.({ ipv4: `127.0.0.1:${ipv4}`, ipv6: `[::1]:${ipv6}` });
}

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
process.on('disconnect', () => process.exit(0));
main();
