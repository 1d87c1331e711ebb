'use strict';
// The bench's command line:
//
//   node bench/run.js [--reps 3] [--n 2000000] [--only a,b] [--no-http] [--http-rounds 30] [--no-startup]
//                     [--patched DIR]   (DIR: another checkout of node-libbpf, built, e.g. with a proposed
//                                        change: its node-libbpf rows are added, labelled with DIR)
//                     [--out bench/RESULTS.md]
const path = require('node:path');
const { parseArgs } = require('node:util');

/** The options of `argv`: { reps, n, only (Set or null), http, httpRounds, startup, patched, out }. */
function parseOptions(argv = process.argv.slice(2)) {
  const { values } = parseArgs({
    args: argv,
    options: {
      reps: { type: 'string', default: '3' },
      n: { type: 'string', default: '2000000' },
      only: { type: 'string' },
      'no-http': { type: 'boolean', default: false },
      'http-rounds': { type: 'string', default: '30' },
      'no-startup': { type: 'boolean', default: false },
      patched: { type: 'string' },
      out: { type: 'string', default: path.join(__dirname, '..', 'RESULTS.md') },
    },
  });
  const opts = {
    reps: Number(values.reps),
    n: Number(values.n),
    only: values.only ? new Set(values.only.split(',')) : null,
    http: !values['no-http'],
    httpRounds: Number(values['http-rounds']),
    startup: !values['no-startup'],
    patched: values.patched ? path.resolve(values.patched) : null,
    patchedLabel: values.patched,
    out: values.out,
  };
  for (const k of ['reps', 'n', 'httpRounds']) {
    if (!(Number.isInteger(opts[k]) && opts[k] > 0)) throw Object.assign(new Error(`--${k === 'httpRounds' ? 'http-rounds' : k} must be a positive integer`), { code: 'ERR_BENCH_USAGE' });
  }
  // each traced second is compared with the untraced seconds on both sides
  if (opts.httpRounds < 3) throw Object.assign(new Error('--http-rounds must be 3 or more (a traced second needs an untraced one on each side)'), { code: 'ERR_BENCH_USAGE' });
  return opts;
}

module.exports = { parseOptions };
