'use strict';
/**
 * What the counting tools (funccount, syscall_hist, stackcount,
 * node_syscalls) share to report what the kernel counted: counts kept per
 * interval and in total, plain text tables, and reports printed every
 * `-i` seconds and at the end, as text or as one JSON object per line.
 *
 *   const { Tally, formatTable, ReportClock, printReport } = require('node-libbpf/lib/report');
 */
const { formatTime, escapeText } = require('../core/format');

/**
 * Rows of counts, by key, kept twice: since the last `takeInterval()`, and
 * in total. `add(key, fields, counts)` adds `counts` (numbers, or arrays of
 * numbers added element by element, as histogram slots) to the row of `key`;
 * `fields` are its other, fixed fields (a name, a pid), taken the first time.
 */
class Tally {
  constructor() {
    this.total = new Map();
    this.current = new Map();
  }

  add(key, fields, counts) {
    for (const rows of [this.total, this.current]) {
      let row = rows.get(key);
      if (!row) rows.set(key, (row = { ...fields }));
      for (const [name, n] of Object.entries(counts)) row[name] = sum(row[name], n);
    }
  }

  /** The rows added to since the last call, which starts a new interval. */
  takeInterval() {
    const rows = [...this.current.values()];
    this.current = new Map();
    return rows;
  }

  /** The rows of the whole run. */
  totals() {
    return [...this.total.values()].map((row) => ({ ...row }));
  }
}

function sum(a, b) {
  if (Array.isArray(b)) {
    const out = Array.isArray(a) ? a.slice() : [];
    b.forEach((n, i) => (out[i] = (out[i] ?? 0) + (n ?? 0)));
    return Array.from(out, (n) => n ?? 0);
  }
  return (a ?? 0) + Number(b);
}

/**
 * A text table: a header and a line per row. `columns`: `[{ title,
 * value(row), left? }]`, right-aligned unless `left`; the last column may
 * be as wide as it needs. Cells are traced text: their control characters
 * are escaped (lib/core/format.js `escapeText`).
 */
function formatTable(columns, rows) {
  const cells = rows.map((row) => columns.map((c) => escapeText(c.value(row))));
  const widths = columns.map((c, i) => Math.max(c.title.length, ...cells.map((r) => r[i].length)));
  const line = (values) =>
    values
      .map((v, i) => (columns[i].left ? (i === columns.length - 1 ? v : v.padEnd(widths[i])) : v.padStart(widths[i])))
      .join('  ');
  return [line(columns.map((c) => c.title)), ...cells.map(line)].join('\n');
}

/**
 * The times of a run's reports: `next()` is the head of an interval report
 * (`{ type: 'interval', time, seconds }`, seconds since the previous one),
 * `end()` the head of the final one (`{ type: 'total', time, seconds }`,
 * since the start).
 */
class ReportClock {
  constructor() {
    this.started();
  }

  /** Counting starts now (call it once the programs are attached: loading them is not counted time). */
  started() {
    // spans from the monotonic clock: a step of the wall clock does not stretch or shrink them
    this.start = this.last = performance.now();
  }

  /** The heading of the interval that ends now: read it before the interval's counts are taken. */
  next() {
    const now = performance.now();
    const head = { type: 'interval', time: new Date().toISOString(), seconds: round((now - this.last) / 1000) };
    this.last = now;
    return head;
  }

  /** The heading of the whole run, ending now: read it once the programs are detached, before the last counts are taken. */
  end() {
    return { type: 'total', time: new Date().toISOString(), seconds: round((performance.now() - this.start) / 1000) };
  }
}

const round = (s) => Math.round(s * 1000) / 1000;

/**
 * Prints a report: with `--json` one line, `{ ...head, ...data }`; else a
 * heading (`14:02:03, last 2.0 s:` or `Total, 5.0 s:`) and `text()`.
 */
function printReport(opts, head, data, text) {
  if (opts.json) {
    console.log(JSON.stringify({ ...head, ...data }));
    return;
  }
  const heading = head.type === 'total' ? `Total, ${head.seconds.toFixed(1)} s:` : `${formatTime(new Date(head.time))}, last ${head.seconds.toFixed(1)} s:`;
  console.log(`\n${heading}\n${text()}`);
}

module.exports = { Tally, formatTable, ReportClock, printReport };
