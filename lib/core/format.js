'use strict';
/**
 * What the example tools print of a record: the wall-clock time of a
 * kernel timestamp, `HH:MM:SS` as bcc's tools print it, errno names,
 * syscall return values, flag names, and traced text made safe for a
 * terminal.
 *
 *   const { wallClock, formatTime, errnoName, formatRet, flagNames, escapeText } = require('node-libbpf/lib/format');
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

// the C escapes of the controls that have one (as systemd's cescape); the rest are \xNN
const C_ESCAPES = { 0x07: '\\a', 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0b: '\\v', 0x0c: '\\f', 0x0d: '\\r', 0x1b: '\\e', 0x5c: '\\\\' };
// C0 controls, backslash, DEL, C1 controls (U+0080-U+009F), the bidi controls (marks, embeddings, overrides,
// isolates: they reorder what a terminal shows), and UTF-16 surrogates without their pair
const UNSAFE = /[\x00-\x1f\\\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const hex2 = (b) => `\\x${b.toString(16).padStart(2, '0')}`;

function escapeChar(c) {
  const code = c.charCodeAt(0);
  if (C_ESCAPES[code]) return C_ESCAPES[code];
  if (code < 0x80) return hex2(code);
  // a C1 control as its UTF-8 bytes (\xc2\x9b): an invalid byte 0x9b is \x9b alone
  if (code <= 0x9f) return `${hex2(0xc2)}${hex2(code)}`;
  if (code < 0xd800 || code > 0xdfff) return `\\u{${code.toString(16)}}`; // a bidi control
  return `\\u${code.toString(16)}`; // a lone surrogate (no UTF-8 form)
}

/** The length of the valid UTF-8 sequence at `i` of `bytes` (no overlong forms, surrogates or code points past U+10FFFF), or 0. */
function utf8Length(bytes, i) {
  const b = bytes[i];
  const cont = (k) => i + k < bytes.length && (bytes[i + k] & 0xc0) === 0x80;
  if (b < 0x80) return 1;
  if (b >= 0xc2 && b <= 0xdf) return cont(1) ? 2 : 0;
  if (b >= 0xe0 && b <= 0xef) {
    const b1 = bytes[i + 1];
    if ((b === 0xe0 && b1 < 0xa0) || (b === 0xed && b1 >= 0xa0)) return 0;
    return cont(1) && cont(2) ? 3 : 0;
  }
  if (b >= 0xf0 && b <= 0xf4) {
    const b1 = bytes[i + 1];
    if ((b === 0xf0 && b1 < 0x90) || (b === 0xf4 && b1 >= 0x90)) return 0;
    return cont(1) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/**
 * Traced text (a file name, a `comm`, a command line, a symbol) as a
 * terminal may show it, as `ls -b` and systemd do: C0 controls, DEL and C1
 * controls (U+0080-U+009F) escaped (`\e`, `\n`, `\t`, `\x7f`, `\xc2\x9b`),
 * the bidi controls too (U+061C, U+200E, U+200F, U+202A-U+202E,
 * U+2066-U+2069: `\u{202e}`), a backslash doubled, so that the text shown
 * is unambiguous and in its own order. `text`: a
 * string, or bytes (a Buffer or Uint8Array), whose invalid UTF-8 bytes are
 * `\xNN`. Anything else is turned into a string first. For text output
 * only: JSON output keeps the data exact.
 */
function escapeText(text) {
  if (text instanceof Uint8Array) {
    const valid = (start, end) => Buffer.from(text.buffer, text.byteOffset + start, end - start).toString('utf8').replace(UNSAFE, escapeChar);
    let out = '';
    let start = 0;
    for (let i = 0; i < text.length; ) {
      const n = utf8Length(text, i);
      if (n > 0) {
        i += n;
        continue;
      }
      out += valid(start, i) + hex2(text[i]);
      start = ++i;
    }
    return out + valid(start, text.length);
  }
  return String(text).replace(UNSAFE, escapeChar);
}

module.exports = { wallClock, formatTime, errnoName, formatRet, flagNames, escapeText };
