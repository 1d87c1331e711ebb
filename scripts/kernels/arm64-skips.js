'use strict';
// Preloaded into each test file by the arm64 VM's /init (init-arm64.sh),
// beside vm-skips.js: the tests that cannot run on that VM's userland skip
// there with the reason printed (`# SKIP arm64 VM: <reason>`). The userland
// is Debian 12's arm64 packages, not the host's programs, which is where
// these differ; each entry says why.
const Module = require('node:module');
const path = require('node:path');

const DEBIAN_NODE =
  "Debian's node links libuv as a shared library (libuv.so.1, stripped), so the node binary has no uv__io_poll symbol to probe";
const SKIPS = [
  // 25 µs per traced getppid under arm64 TCG (0.3 µs on the host): 5 s after
  // the producer ended, the consumer had taken 172,261 of the 200,000
  // records (the ring was never full); the test waits 5 s
  {
    file: 'buffers.test.js',
    name: /^ring buffer \(4 MiB\): 200k records at full speed/,
    reason: 'under arm64 TCG the callback side drains 200k records slower than the 5 s the test waits after the producer ends (172,261 by then; the ring never full)',
  },
  { file: 'uprobe.test.js', name: /^self-tracing: uv__io_poll of this node process/, reason: DEBIAN_NODE },
  { file: 'uprobe.test.js', name: /^self-tracing through a ring buffer/, reason: DEBIAN_NODE },
];

const file = path.basename(process.argv[1] || '');
const mine = SKIPS.filter((s) => s.file === file);

if (mine.length) {
  const load = Module._load;
  let wrapped;
  Module._load = function (request, ...rest) {
    const real = load.call(this, request, ...rest);
    if (request !== 'node:test' && request !== 'test') return real;
    if (!wrapped) {
      const wrap = (fn) =>
        function (name, options, body) {
          const skip = typeof name === 'string' && mine.find((s) => s.name.test(name));
          if (!skip) return fn.apply(this, arguments);
          if (typeof options === 'function') [options, body] = [{}, options];
          return fn.call(this, name, { ...(options || {}), skip: `arm64 VM: ${skip.reason}` }, body);
        };
      wrapped = Object.assign(wrap(real), real);
      wrapped.test = wrapped;
      wrapped.it = wrap(real.it);
    }
    return wrapped;
  };
}
