'use strict';
// Workload of node_syscalls.js and syscall_hist.js: a small web service. An
// HTTP server on 127.0.0.1 whose handler reads a page from a file and
// appends a line to a log file, and a client that GETs from it every 50 ms
// on a new connection (socket, connect), until it is killed or its parent
// goes away.
//
// With `--requests N`: waits for a `'go'` message, makes exactly N requests
// one after the other, sends `{ done: N }` and idles (what the tests count).
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { once } = require('events');
const { parseArgs } = require('util');

const { values } = parseArgs({ options: { requests: { type: 'string' } } });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-http-'));
const page = path.join(dir, 'index.html');
const log = path.join(dir, 'access.log');
fs.writeFileSync(page, `<html><body>${'hello '.repeat(100)}</body></html>\n`);

const server = http.createServer((req, res) => {
  // openat, fstat, read, close of the page; openat(O_APPEND), write, close of the log
  fs.readFile(page, (err, body) => {
    if (err) {
      res.statusCode = 500;
      res.end();
      return;
    }
    fs.appendFile(log, `${new Date().toISOString()} ${req.method} ${req.url} ${body.length}\n`, () => res.end(body));
  });
});

/** One GET on a new connection (agent: false): socket, connect, write, read, close. */
function get(port) {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => res.resume().on('end', resolve))
      .on('error', (err) => {
        console.error(`GET http://127.0.0.1:${port}/: ${err.message}`);
        resolve();
      });
  });
}

async function main() {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = /** @type {import('net').AddressInfo} */ (server.address());
  if (values.requests === undefined) {
    setInterval(() => get(port), 50);
  } else {
    const n = Number(values.requests);
    process.once('message', async () => {
      for (let i = 0; i < n; i++) await get(port);
      process.send({ done: n });
    });
  }
  // tell the tracer what to look for
  process.send?.({ file: page, log, endpoint: `127.0.0.1:${port}` });
}

process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
process.on('disconnect', () => process.exit(0));
main();
