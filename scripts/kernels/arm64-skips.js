'use strict';
// Preloaded into each test file by the arm64 VM's /init (init-arm64.sh),
// beside vm-skips.js: the tests that cannot run on that VM's userland skip
// there with the reason printed (`# SKIP arm64 VM: <reason>`). The userland
// is npm's arm64 node and Debian 12's arm64 packages, not the host's
// programs, which is where these differ; each entry says why.
const { skipTests } = require('./skip-tests');

const SKIPS = [
  // 25 µs per traced getppid under arm64 TCG (0.3 µs on the host): 5 s after
  // the producer ended, the consumer had taken 172,261 of the 200,000
  // records (the ring was never full); the test waits 5 s
  {
    file: 'buffers.test.js',
    name: /^ring buffer \(4 MiB\): 200k records at full speed/,
    reason: 'under arm64 TCG the callback side drains 200k records slower than the 5 s the test waits after the producer ends (172,261 by then; the ring never full)',
  },
];

skipTests(SKIPS, 'arm64 VM');
