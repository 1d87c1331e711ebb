'use strict';
// Workload of trace_mem_latency.js (run it with --expose-gc): every 100 ms
// allocates a large Buffer (malloc'd, so mmap'd by glibc: it is above its
// 32 MiB mmap threshold) and a large array (V8's large object space), drops
// the older ones and collects garbage (munmap, madvise), until it is killed
// or its parent goes away.
const BUFFER_SIZE = 48 * 1024 * 1024;
const ARRAY_LENGTH = 1024 * 1024;

let kept = [];
setInterval(() => {
  kept.push(Buffer.alloc(BUFFER_SIZE), new Array(ARRAY_LENGTH).fill(0));
  if (kept.length > 4) kept = kept.slice(2);
  globalThis.gc?.();
}, 100);

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
process.on('disconnect', () => process.exit(0));
// tell the tracer what to look for
process.send?.({ bufferSize: BUFFER_SIZE, arrayLength: ARRAY_LENGTH });
