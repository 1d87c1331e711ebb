'use strict';
// The BCC rows: bench/bcc_consumer.py, the same record from a BCC program
// (compiled at start against the kernel headers bench/setup.sh unpacked).
const path = require('node:path');
const { runConsumerProcess } = require('./consumer_process');

const CONSUMER = path.join(__dirname, '..', 'bcc_consumer.py');
const MODES = [
  ['bcc-perf', 'perf', 'BCC Python, perf buffer (64 pages)'],
  ['bcc-ring', 'ring', 'BCC Python, ring buffer (8 MiB)'],
];

/** The BCC rows for `opts.n` records per run. */
function bccRows(opts) {
  return MODES.map(([id, mode, label]) => ({
    id,
    label,
    kind: 'bcc',
    unavailable: (tools) => tools.bcc,
    run: (lg, { pin, tools }) => runConsumerProcess({
      cmd: '/usr/bin/python3',
      argv: [CONSUMER, mode, String(lg.pid), String(opts.n)],
      env: tools.bccSource && tools.bccSource.dir ? { BCC_KERNEL_SOURCE: tools.bccSource.dir } : {},
      readyMs: 120_000, // BCC compiles its program first
    }, lg, pin),
  }));
}

module.exports = { bccRows };
