'use strict';
// Every row of the table, in the order they run and print. A row:
// { id, label, kind, ref?, node?, unavailable(tools) -> '' or why not,
//   run(lg, { pin, tools }) -> { load, received, lost, missing, first_ts, last_ns, cpu_s, ... } }
const { cRows } = require('./c');
const { nodeRows } = require('./node');
const { bccRows } = require('./bcc');
const { bpftraceRows } = require('./bpftrace');

/** The rows for `opts` (all of them, or `opts.only` and the reference row). */
function consumers(opts) {
  const all = [...cRows(opts), ...nodeRows(opts), ...bccRows(opts), ...bpftraceRows(opts)];
  const unknown = opts.only ? [...opts.only].filter((id) => !all.some((c) => c.id === id)) : [];
  if (unknown.length) throw Object.assign(new Error(`--only ${unknown.join(',')}: no such row; the rows: ${all.map((c) => c.id).join(', ')}`), { code: 'ERR_BENCH_USAGE' });
  return all.filter((c) => !opts.only || opts.only.has(c.id) || c.ref);
}

module.exports = { consumers };
