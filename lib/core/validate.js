'use strict';
/**
 * Range checks of numeric options, at the boundary: before a value reaches
 * the addon, whose napi conversions would wrap it silently (-1 arrives as
 * 4294967295, 1e12 as its low 32 bits, 1.5 as 1, NaN as 0). A value out
 * of range is an ERR_BPF_INVALID_VALUE error, one of the wrong type
 * ERR_INVALID_ARG_TYPE; the message names the call, the option, its range
 * and the value given:
 *
 *   openRingBuffer: queueSize must be an integer from 1 to 65536; got -1
 *
 * The addon checks again what reaches it (src/options.rs, same limits).
 */
const fs = require('fs');

/** The limits, inclusive (src/options.rs has the same). */
const LIMITS = {
  /** Milliseconds between a buffer's passes. */
  pollInterval: [1, 60_000],
  /** Batches queued for JavaScript (the queue's slots are allocated when the buffer opens). */
  queueSize: [1, 65_536],
  /** Pages of each CPU's perf buffer, a power of two (8192: 32 MiB per CPU with 4 KiB pages). */
  pageCount: [1, 8192],
  /** Bytes; at most the buffer of one CPU (checked by the addon, which knows the page size). */
  wakeupBytes: [1, 2 ** 32 - 1],
  /** PID_MAX_LIMIT, the most /proc/sys/kernel/pid_max can be. */
  pid: [1, 4_194_304],
  /** Byte offsets into a file or a map. */
  offset: [0, Number.MAX_SAFE_INTEGER],
  /** Events per sample. */
  period: [1, Number.MAX_SAFE_INTEGER],
  /** Rows of a monitor's top N tables. */
  top: [1, 4096],
};

const U64_MAX = 2n ** 64n - 1n;

function codedError(code, message) {
  const err = /** @type {NodeJS.ErrnoException} */ (new Error(message));
  err.code = code;
  return err;
}

/** A value as the message shows it: `-1`, `NaN`, `1.5`, `-1n`, `"10"`. */
function show(value) {
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return `a ${typeof value}`;
}

/**
 * `value` if it is an integer from `min` to `max`; undefined stays
 * undefined (null too: not given). `where` names the call.
 * @param {string} where
 * @param {string} name
 * @param {any} value
 * @param {readonly number[]} range `[min, max]`, inclusive (a LIMITS entry)
 */
function integer(where, name, value, [min, max]) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number') {
    throw codedError('ERR_INVALID_ARG_TYPE', `${where}: ${name} must be a number, an integer from ${min} to ${max}; got ${show(value)}`);
  }
  if (!Number.isInteger(value) || value < min || value > max) {
    throw codedError('ERR_BPF_INVALID_VALUE', `${where}: ${name} must be an integer from ${min} to ${max}; got ${show(value)}`);
  }
  return value;
}

/** A power of two from `min` to `max` (perf buffer pages). */
function powerOfTwo(where, name, value, limits) {
  if (integer(where, name, value, limits) === undefined) return undefined;
  if ((value & (value - 1)) !== 0) {
    throw codedError('ERR_BPF_INVALID_VALUE', `${where}: ${name} must be a power of two from ${limits[0]} to ${limits[1]} (try 64); got ${show(value)}`);
  }
  return value;
}

/**
 * A 64-bit cookie (`bpf_get_attach_cookie()`): a bigint from 0n to
 * 2n ** 64n - 1n, or a safe integer number from 0; returned as a bigint.
 */
function u64(where, name, value) {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw codedError('ERR_BPF_INVALID_VALUE', `${where}: ${name} must be an integer from 0 to 2**64-1 (a bigint above 2**53); got ${show(value)}`);
    }
    return BigInt(value);
  }
  if (typeof value !== 'bigint') {
    throw codedError('ERR_INVALID_ARG_TYPE', `${where}: ${name} must be a bigint (or a number) from 0 to 2**64-1; got ${show(value)}`);
  }
  if (value < 0n || value > U64_MAX) {
    throw codedError('ERR_BPF_INVALID_VALUE', `${where}: ${name} must be an integer from 0 to 2**64-1; got ${show(value)}`);
  }
  return value;
}

/** An options argument: undefined, null or an object. */
function object(where, options) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw codedError('ERR_INVALID_ARG_TYPE', `${where}: options must be an object; got ${show(options)}`);
  return options;
}

/**
 * The most samples per second the kernel takes now
 * (/proc/sys/kernel/perf_event_max_sample_rate, which the kernel lowers
 * when sampling takes too long; 100000 if unreadable).
 */
function maxSampleRate() {
  try {
    const n = Number(fs.readFileSync('/proc/sys/kernel/perf_event_max_sample_rate', 'utf8').trim());
    if (Number.isSafeInteger(n) && n > 0) return n;
  } catch {
    // not readable: the kernel's default
  }
  return 100_000;
}

module.exports = { LIMITS, integer, powerOfTwo, u64, object, maxSampleRate, codedError };
