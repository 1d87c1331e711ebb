'use strict';
// Workload of cachestat.js --demo: writes an 8 MiB file, then every 200 ms
// reads it whole (page-cache hits) and every second rewrites a quarter of
// it (dirtied pages), until it is killed or its parent goes away.
const fs = require('fs');
const os = require('os');
const path = require('path');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-cache-'));
const file = path.join(dir, 'data.bin');
const SIZE = 8 << 20;
fs.writeFileSync(file, Buffer.alloc(SIZE, 1));

let ticks = 0;
setInterval(() => {
  fs.readFileSync(file);
  if (++ticks % 5 === 0) {
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.alloc(SIZE / 4, ticks & 0xff), 0, SIZE / 4, 0);
    fs.closeSync(fd);
  }
}, 200);

const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
process.on('exit', cleanup);
process.on('SIGTERM', () => process.exit(0));
process.on('disconnect', () => process.exit(0));
process.send?.({ file, bytes: SIZE });
