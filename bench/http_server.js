'use strict';
// The HTTP row's server: a minimal Node.js HTTP server on 127.0.0.1 (an
// ephemeral port), printed as {"port"} once it listens. Runs until SIGTERM.
const http = require('node:http');

const body = JSON.stringify({ hello: 'world', items: [1, 2, 3, 4, 5] });
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
