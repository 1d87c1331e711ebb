'use strict';
// The C libbpf rows: bench/consumer.c (Debian's libbpf-dev) on
// bench/.build/stream.bpf.o. c-ring-nowakeup is the reference row.
const { built } = require('./build');
const { runConsumerProcess } = require('./consumer_process');

/** @type {[id: string, mode: string, label: string, extra?: object][]} */
const MODES = [
  ['c-ring-nowakeup', 'ring-nowakeup', 'C libbpf ring, BPF_RB_NO_WAKEUP + consume every 10 ms', { ref: true }],
  ['c-ring-wakeup', 'ring-wakeup', 'C libbpf ring, default wakeups'],
  ['c-perf', 'perf', 'C libbpf perf buffer (wakeup per event)'],
];

/** The C rows for `opts.n` records per run. */
function cRows(opts) {
  return MODES.map(([id, mode, label, extra]) => ({
    id,
    label,
    kind: 'c',
    ...extra,
    unavailable: () => '',
    run: (lg, { pin }) => runConsumerProcess({ cmd: built('consumer'), argv: [mode, built('stream.bpf.o'), String(lg.pid), String(opts.n)] }, lg, pin),
  }));
}

module.exports = { cRows };
