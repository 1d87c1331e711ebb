'use strict';
// Medians and the table's number formats.

/** The median of the finite numbers of `xs` (the lower of the middle two), NaN if none. */
const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[(s.length - 1) >> 1] : NaN;
};
/** Events/s in millions: "1.23 M". */
const fmtRate = (r) => (Number.isFinite(r) ? `${(r / 1e6).toFixed(2)} M` : '—');
/** An integer with thousands separators. */
const fmtInt = (n) => (Number.isFinite(n) ? n.toLocaleString('en-US') : '—');
/** Consumer CPU ns per record received. */
const nsPerRecord = (r) => (r.received > 0 ? (r.cpu_s * 1e9) / r.received : NaN);
const fmtNs = (ns) => (Number.isFinite(ns) ? ns.toFixed(0) : '—');

module.exports = { median, fmtRate, fmtInt, nsPerRecord, fmtNs };
