'use strict';
// Workload of trace_file_io.js: writes and reads back a temp file of its own
// every 100 ms, until it is killed or its parent goes away.
const fs = require('fs');
const os = require('os');
const path = require('path');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-file-io-'));
const file = path.join(dir, 'data.txt');
const payload = Buffer.alloc(4096, 'x');

setInterval(() => {
  fs.writeFileSync(file, payload); // openat(O_WRONLY|O_CREAT|O_TRUNC), write, close
  fs.readFileSync(file); // openat(O_RDONLY), fstat, read, close
}, 100);

process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
process.on('disconnect', () => process.exit(0));
// tell the tracer what to look for
process.send?.({ file, bytes: payload.length });
