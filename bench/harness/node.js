'use strict';
// The node-libbpf rows: bench/node_consumer.js on bench/.build/stream.bpf.o,
// and with --patched DIR the same consumers on another checkout (built).
const path = require('node:path');
const { built } = require('./build');
const { runConsumerProcess } = require('./consumer_process');

const CONSUMER = path.join(__dirname, '..', 'node_consumer.js');
// typed decoding where code generation from strings is refused (CSP-like
// embedders, hardened deployments)
const NO_CODEGEN = ['--disallow-code-generation-from-strings'];

/** @type {[id: string, mode: string, label: string, flags?: string[]][]} */
const ROWS = [
  ['node-ring-typed', 'ring-typed', 'node-libbpf ring → objects ({ type }), BPF_RB_NO_WAKEUP'],
  ['node-ring-typed-nocodegen', 'ring-typed', 'node-libbpf ring → objects ({ type }), BPF_RB_NO_WAKEUP, node --disallow-code-generation-from-strings', NO_CODEGEN],
  ['node-ring-typed-number', 'ring-typed-number', 'node-libbpf ring → objects ({ type, int64: \'number\' }), BPF_RB_NO_WAKEUP'],
  ['node-ring-typed-wakeup', 'ring-typed-wakeup', 'node-libbpf ring → objects ({ type }), default wakeups'],
  ['node-ring-raw', 'ring-raw', 'node-libbpf ring → Buffers (raw), BPF_RB_NO_WAKEUP'],
  ['node-ring-batch', 'ring-batch', 'node-libbpf ring → batches (data, ends), BPF_RB_NO_WAKEUP'],
  ['node-ring-batch-count', 'ring-batch-count', 'node-libbpf ring → batches, a callback that only counts them (the library\'s own cost)'],
  ['node-perf', 'perf-typed', 'node-libbpf perf → objects, defaults (1 MiB per CPU, wakeup at 1/4)'],
  ['node-perf-64', 'perf-typed-64', 'node-libbpf perf → objects, pageCount 64 (the old default), other defaults'],
  ['node-perf-wake1', 'perf-typed-wake1', 'node-libbpf perf → objects, wakeupBytes 1 (as C perf)'],
  ['node-backpressure', 'backpressure', 'node-libbpf ring → objects, 20 µs callback (backpressure)'],
];

/** @type {[id: string, mode: string, what: string, flags?: string[]][]} */
const PATCHED = [
  ['ring-typed', 'ring-typed', 'ring → objects ({ type }), BPF_RB_NO_WAKEUP'],
  ['ring-typed-nocodegen', 'ring-typed', 'ring → objects ({ type }), BPF_RB_NO_WAKEUP, node --disallow-code-generation-from-strings', NO_CODEGEN],
  ['ring-typed-wakeup', 'ring-typed-wakeup', 'ring → objects ({ type }), default wakeups'],
  ['ring-raw', 'ring-raw', 'ring → Buffers (raw), BPF_RB_NO_WAKEUP'],
  ['ring-batch', 'ring-batch', 'ring → batches (data, ends), BPF_RB_NO_WAKEUP'],
  ['perf-typed', 'perf-typed', 'perf → objects, that build\'s defaults'],
  ['backpressure', 'backpressure', 'ring → objects, 20 µs callback (backpressure)'],
];

function row(opts, id, mode, label, flags = [], lib) {
  return {
    id,
    label,
    kind: 'node',
    node: true,
    unavailable: () => '',
    run: (lg, { pin }) => runConsumerProcess({
      cmd: process.execPath,
      argv: [...flags, CONSUMER, mode, built('stream.bpf.o'), String(lg.pid), String(opts.n)],
      env: lib ? { BENCH_LIB: lib } : {},
    }, lg, pin),
  };
}

/** The node-libbpf rows for `opts.n` records per run (and `opts.patched`'s). */
function nodeRows(opts) {
  return [
    ...ROWS.map(([id, mode, label, flags]) => row(opts, id, mode, label, flags)),
    ...(opts.patched
      ? PATCHED.map(([id, mode, what, flags]) => row(opts, `patched-${id}`, mode, `node-libbpf at ${opts.patchedLabel}: ${what}`, flags, opts.patched))
      : []),
  ];
}

module.exports = { nodeRows };
