'use strict';
/**
 * Histograms counted in the kernel (slots from bpf/hist.bpf.h), printed as
 * bpftrace prints `hist()` and `lhist()`, or as JSON.
 *
 *   const { log2Buckets, linearBuckets, formatHistogram } = require('node-libbpf/lib/hist');
 *   console.log(formatHistogram(log2Buckets(counts), { title: '@usecs' }));
 */

const toNumber = (c) => (typeof c === 'bigint' ? Number(c) : c || 0);

/** Slot `k` of a log2 histogram: 0 is [0, 1), k is [2^(k-1), 2^k). */
function log2Range(k) {
  if (k === 0) return [0, 1];
  return [2 ** (k - 1), 2 ** k];
}

/**
 * Buckets of a log2 histogram from per-slot counts (an array, or a map of
 * slot -> count), trimmed to the slots in use: `[{ low, high, count }]`,
 * `high` exclusive.
 */
function log2Buckets(counts) {
  const slots = slotCounts(counts);
  const used = slots.map((c, k) => (c > 0 ? k : -1)).filter((k) => k >= 0);
  if (used.length === 0) return [];
  const out = [];
  for (let k = used[0]; k <= used[used.length - 1]; k++) {
    const [low, high] = log2Range(k);
    out.push({ low, high, count: slots[k] || 0 });
  }
  return out;
}

/**
 * Buckets of a linear histogram (`lhist(v, min, max, step)`): slot 0 is
 * below `min`, slot k is [min + (k-1)*step, min + k*step), the last is
 * `max` and above. Empty leading and trailing slots are trimmed.
 */
function linearBuckets(counts, { min, max, step }) {
  const slots = slotCounts(counts);
  const n = Math.floor((max - min) / step) + 2;
  const all = [];
  for (let k = 0; k < n; k++) {
    const low = k === 0 ? -Infinity : min + (k - 1) * step;
    const high = k === n - 1 ? Infinity : k === 0 ? min : min + k * step;
    all.push({ low, high, count: slots[k] || 0 });
  }
  const first = all.findIndex((b) => b.count > 0);
  if (first < 0) return [];
  let last = all.length - 1;
  while (all[last].count === 0) last--;
  return all.slice(first, last + 1);
}

function slotCounts(counts) {
  if (Array.isArray(counts)) return counts.map(toNumber);
  const out = [];
  for (const [k, c] of counts instanceof Map ? counts : Object.entries(counts)) out[Number(k)] = toNumber(c);
  return Array.from(out, (c) => c || 0);
}

/** 1024 -> '1K', as bpftrace labels its buckets. */
function short(v) {
  if (v === Infinity || v === -Infinity) return '...';
  for (const [unit, size] of /** @type {[string, number][]} */ ([['P', 2 ** 50], ['T', 2 ** 40], ['G', 2 ** 30], ['M', 2 ** 20], ['K', 2 ** 10]])) {
    if (v >= size && v % size === 0) return `${v / size}${unit}`;
  }
  return String(v);
}

function label(b) {
  if (b.low === -Infinity) return `(..., ${short(b.high)})`;
  if (b.high === Infinity) return `[${short(b.low)}, ...)`;
  if (b.high - b.low === 1) return `[${short(b.low)}]`;
  return `[${short(b.low)}, ${short(b.high)})`;
}

/**
 * The histogram as bpftrace prints it: label, count, and a bar of `@`.
 * @param {{ low: number, high: number, count: number }[]} buckets from log2Buckets or linearBuckets
 * @param {{ title?: string, width?: number }} [options] `title` heads it (`@usecs:`); `width`: of the longest bar, 52 by default
 * @returns {string}
 */
function formatHistogram(buckets, { title, width = 52 } = {}) {
  const lines = [];
  if (title) lines.push(`${title}:`);
  const max = Math.max(0, ...buckets.map((b) => b.count));
  for (const b of buckets) {
    const bar = max > 0 ? '@'.repeat(Math.round((b.count / max) * width)) : '';
    lines.push(`${label(b).padEnd(20)}${String(b.count).padStart(8)} |${bar.padEnd(width)}|`);
  }
  return lines.join('\n');
}

/** The JSON form: `{ buckets: [{ low, high, count }] }` with null for open ends. */
function histogramJSON(buckets) {
  const finite = (v) => (Number.isFinite(v) ? v : null);
  return { buckets: buckets.map((b) => ({ low: finite(b.low), high: finite(b.high), count: b.count })) };
}

module.exports = { log2Range, log2Buckets, linearBuckets, formatHistogram, histogramJSON };
