'use strict';
/**
 * What the example tools print of a record: the wall-clock time of a
 * kernel timestamp, `HH:MM:SS` as bcc's tools print it, errno names,
 * syscall return values and flag names.
 *
 *   const { wallClock, formatTime, errnoName, formatRet, flagNames } = require('node-libbpf/lib/format');
 */
const { errnoName } = require('./names');

// bpf_ktime_get_ns() and process.hrtime() both read CLOCK_MONOTONIC
const MONOTONIC_TO_EPOCH_NS = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();

/** The wall-clock time (a Date) of a `bpf_ktime_get_ns()` timestamp (bigint or number, ns). */
function wallClock(ktimeNs) {
  const ns = typeof ktimeNs === 'number' ? BigInt(Math.round(ktimeNs)) : ktimeNs;
  return new Date(Number((ns + MONOTONIC_TO_EPOCH_NS) / 1_000_000n));
}

/** `HH:MM:SS` (local time) of a Date, as bcc's tools print it; `ms`: with milliseconds. */
function formatTime(date, { ms = false } = {}) {
  const two = (n) => String(n).padStart(2, '0');
  const hms = `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
  return ms ? `${hms}.${String(date.getMilliseconds()).padStart(3, '0')}` : hms;
}

/** A syscall's return value: `3`, or `-115 EINPROGRESS` for an error. */
function formatRet(ret) {
  return ret < 0 && ret >= -4095 ? `${ret} ${errnoName(-ret)}` : String(ret);
}

/**
 * The names of the bits set in `value`, from `{ NAME: bits }` (tried in
 * order; a multi-bit entry matches only whole): `PROT_READ|PROT_WRITE`.
 * Unknown bits are shown in hex; 0 is `zero`.
 */
function flagNames(value, names, zero = '0') {
  const set = [];
  let rest = value;
  for (const [name, bits] of Object.entries(names)) {
    if (bits !== 0 && (rest & bits) === bits) {
      set.push(name);
      rest &= ~bits;
    }
  }
  if (rest) set.push(`0x${(rest >>> 0).toString(16)}`);
  return set.length ? set.join('|') : zero;
}

module.exports = { wallClock, formatTime, errnoName, formatRet, flagNames };
