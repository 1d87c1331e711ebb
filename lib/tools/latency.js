'use strict';
/**
 * The latency summary the syscall tracers print at the end: per syscall,
 * the count and the p50, p99 and max latencies in µs, as a table or JSON.
 *
 *   const { LatencySummary } = require('node-libbpf/lib/latency');
 */

/** Per-syscall latencies, printed as a table (count, p50, p99, max in µs) or JSON. */
class LatencySummary {
  /** `syscalls`: the names that get a row even when they were not seen. */
  constructor(syscalls = []) {
    this.durations = new Map(syscalls.map((name) => [name, []]));
  }

  add(syscall, durationNs) {
    if (!this.durations.has(syscall)) this.durations.set(syscall, []);
    this.durations.get(syscall).push(durationNs);
  }

  /** One row per syscall: `{ syscall, count, p50_us, p99_us, max_us }` (null when not seen). */
  rows() {
    return [...this.durations].map(([syscall, durations]) => {
      const sorted = Float64Array.from(durations).sort();
      // nearest rank: the smallest value with p% of the values at or below it
      const us = (p) => (sorted.length ? round(sorted[Math.ceil((p / 100) * sorted.length) - 1] / 1000) : null);
      return { syscall, count: sorted.length, p50_us: us(50), p99_us: us(99), max_us: us(100) };
    });
  }

  print(opts) {
    const rows = this.rows();
    if (opts.json) {
      console.log(JSON.stringify({ summary: rows }));
      return;
    }
    const cell = (v) => (v === null ? '-' : v.toFixed(1));
    console.log(`\n${'syscall'.padEnd(10)}${'count'.padStart(8)}${'p50 µs'.padStart(12)}${'p99 µs'.padStart(12)}${'max µs'.padStart(12)}`);
    for (const r of rows) {
      console.log(`${r.syscall.padEnd(10)}${String(r.count).padStart(8)}${cell(r.p50_us).padStart(12)}${cell(r.p99_us).padStart(12)}${cell(r.max_us).padStart(12)}`);
    }
  }
}

function round(us) {
  return Math.round(us * 1000) / 1000;
}

module.exports = { LatencySummary };
