'use strict';

/**
 * The dispatcher: the function the addon's poller calls (its doorbell) on the
 * main thread when records wait, with the losses to report as `[cpu, count,
 * ...]` pairs. It pulls the records into buffers of its own (`flow.fill`:
 * the records' bytes, the end offset of each, the CPU of each for perf
 * buffers), which it reuses from batch to batch, and calls the user's
 * callback once per record (decoded when the buffer has a type), or once
 * per batch (`batch: true`).
 *
 * Reused buffers: the memory of the last batch is written again by the
 * next, so no page of it is new (a new Buffer per batch cost a page fault
 * per 4 KiB on each side of the hand-over). Raw records and a batch's
 * `data` and `ends` are views of it, valid until the callback returns:
 * `Buffer.from(record)` keeps a copy. Decoded records are copies.
 *
 * `state` is the buffer's: `closed` is checked before every record, so a
 * callback that closes its buffer (or the object) gets no further record,
 * even from the rest of the batch it is in; `received` and `decodeErrors`
 * count here.
 */

/** Milliseconds of each turn of the event loop that delivery may take. */
const BUDGET_MS = 10;

/** The first size of a dispatcher's data buffer (it grows for a larger record). */
const DATA_BYTES = 1 << 20;

/** At most this many records per fill (the length of `ends` and `cpus`). */
const MAX_RECORDS = 1 << 15;

/** A doorbell call this soon after a delivery stopped continues its budget (turnBudget). */
const TURN_GAP_MS = 1;

/** Records delivered between two looks at the clock. */
const CHUNK = 128;

/** A monotonic clock, in ms (not node:perf_hooks: ~2 ms at require). */
const now = () => Number(process.hrtime.bigint()) / 1e6;

const rethrow = (e) =>
  process.nextTick(() => {
    throw e;
  });

/**
 * The handler of records shorter than the decoded type (`(len)`): counted in
 * `state.decodeErrors`, each given to `onError` as an ERR_BPF_SHORT_RECORD
 * Error, or without `onError`, one process warning for the first.
 */
function shortRecords({ state, decode, typeName, onError }) {
  let warned = false;
  return (len) => {
    state.decodeErrors++;
    const err = /** @type {NodeJS.ErrnoException} */ (new Error(`a record of ${len} bytes is shorter than ${typeName} (${decode.size} bytes): skipped`));
    err.code = 'ERR_BPF_SHORT_RECORD';
    if (onError) {
      try {
        onError(err);
      } catch (e) {
        rethrow(e);
      }
    } else if (!warned) {
      warned = true;
      process.emitWarning(`${err.message} (further ones are counted in buffer.decodeErrors)`, 'NodeLibbpfWarning');
    }
  };
}

/** The reporter of the doorbell's `[cpu, count, ...]` losses to the `lost` callback. */
function lossReporter({ state, perCpu, lost }) {
  return (losses) => {
    if (!losses || !lost) return;
    for (let i = 0; i < losses.length && !state.closed; i += 2) {
      try {
        if (perCpu) lost(losses[i], losses[i + 1]);
        else lost(losses[i + 1]);
      } catch (e) {
        rethrow(e);
      }
    }
  };
}

/** One call of a batch callback with the `n` records of a fill: `(data, ends[, cpus])`. */
function deliverWhole(callback, perCpu, data, ends, cpus, n) {
  try {
    const bytes = data.subarray(0, ends[n - 1]);
    if (perCpu) callback(bytes, ends.subarray(0, n), cpus.subarray(0, n));
    else callback(bytes, ends.subarray(0, n));
  } catch (e) {
    rethrow(e);
  }
}

/**
 * The event loop must keep turning while records stream in: a delivery
 * gets BUDGET_MS. Past that, the rest waits for a setImmediate() (timers
 * and I/O run first) and the addon is paused meanwhile, so its queue fills
 * and then drops and counts, as it does for any callback that cannot keep
 * up. A doorbell call that comes less than TURN_GAP_MS after the last
 * delivery stopped continues its budget: back-to-back calls (Node can make
 * several in one turn of the loop, as the poller rings during a delivery)
 * share one BUDGET_MS, so a flood cannot hold the loop for longer. One that
 * comes later starts a budget of its own: it is in another turn, which
 * took no setImmediate() per delivery to tell (an Immediate per doorbell
 * call, and the extra turn of the loop it made, cost ~115 µs of main-thread
 * CPU per call on the 2026-11-28 VM: ~8 ns per record at 1.4 M records/s).
 * `start(fresh)` starts or continues the budget (`fresh`: a new one, on
 * resume after a pause), `stop()` marks the end of a delivery, `spent()`
 * says whether the budget is spent (also before `start()`).
 */
function turnBudget() {
  let end = 0; // when the budget of this delivery is spent
  let stopped = -Infinity; // when the last delivery stopped
  return {
    start(fresh = false) {
      const t = now();
      if (fresh || t - stopped > TURN_GAP_MS) end = t + BUDGET_MS;
    },
    stop() {
      stopped = now();
    },
    spent: () => now() > end,
  };
}

/**
 * @param {object} o
 * @param {Function} o.callback `(record)`, `(cpu, record)` for perf buffers
 * @param {boolean} o.perCpu whether records carry a CPU (perf buffers)
 * @param {((data: Buffer, from: number, end: number, dv: DataView, u64?: BigUint64Array, i64?: BigInt64Array) => any) & { size: number } | null} o.decode
 *   a codec decoder (`size`: of the type; `u64`, `i64`: codec.wordViews),
 *   or null for raw Buffers
 * @param {string} [o.typeName] the decoded type, for messages
 * @param {Function} [o.lost] `(count)`, `(cpu, count)` for perf buffers
 * @param {Function} [o.onError] gets an ERR_BPF_SHORT_RECORD Error per short record
 * @param {boolean} [o.batch] one call per batch: `(data, ends[, cpus])`
 * @param {{ closed: boolean, received: number, decodeErrors: number }} o.state
 * @param {{ fill(data: Buffer, ends: Uint32Array, cpus?: Uint32Array): number, pause(): void, resume(): void }} o.flow
 *   the addon's side: `fill` copies waiting records into the buffers (how
 *   many; negative: minus the bytes the next record needs), `pause` stops
 *   the doorbell until `resume`
 */
function dispatcher({ callback, perCpu, decode, typeName, lost, onError, batch, state, flow }) {
  const short = shortRecords({ state, decode, typeName, onError });
  const reportLosses = lossReporter({ state, perCpu, lost });

  // The buffers the addon fills, made at the first delivery and reused.
  let data = null;
  let dv = null; // one view: DataView reads are inlined by V8, Buffer's read*LE methods are not
  let ends = null;
  let cpus;
  // the 64-bit words of `data`, for the decoder (codec.wordViews)
  let u64;
  let i64;
  const allocate = (bytes) => {
    data = Buffer.allocUnsafeSlow(bytes);
    dv = new DataView(data.buffer, data.byteOffset, data.length);
    if (decode !== null) ({ u64, i64 } = require('./codec').wordViews(data));
    slots = [];
    if (ends === null) {
      ends = new Uint32Array(MAX_RECORDS);
      cpus = perCpu ? new Uint32Array(MAX_RECORDS) : undefined;
    }
  };
  /** Pulls waiting records into the buffers: how many (0: none). */
  const fill = () => {
    if (data === null) allocate(DATA_BYTES);
    for (;;) {
      const n = flow.fill(data, ends, cpus);
      if (n > 0 && ends[0] !== slotLength && decode === null && !batch) {
        slotLength = ends[0];
        slots = [];
      }
      if (n >= 0) return n;
      allocate(Math.max(-n, data.length * 2));
    }
  };

  // Raw records of one length (one struct per record, as programs mostly
  // write them) need no new object: when the records of a fill have the
  // first one's length L, record i is at byte i * L of `data`, and slots[i]
  // is a view of it made once and reused by every later fill. Records of
  // other lengths get a view each. (A view per record cost ~40 ns of CPU
  // with its garbage collection, and made V8 grow its young generation
  // under a flood.)
  let slotLength = -1;
  let slots = [];
  // loaded with the first raw dispatcher: decoded and batch records need none
  const RawRecord = decode === null && !batch ? require('./raw_record').RawRecord : undefined;
  /** The raw record `i`, of `len` bytes at `start`. */
  const rawRecord = (i, start, len) => {
    if (len === slotLength && start === i * len) {
      const record = slots[i];
      return record !== undefined ? record : (slots[i] = new RawRecord(data.buffer, data.byteOffset + start, len));
    }
    return new RawRecord(data.buffer, data.byteOffset + start, len);
  };

  // The event loop must keep turning while records stream in (turnBudget);
  // past the budget the addon is paused until a setImmediate().
  const turn = turnBudget();
  let paused = false;
  const pause = () => {
    paused = true;
    flow.pause();
    setImmediate(resume);
  };
  function resume() {
    paused = false;
    if (state.closed) return;
    flow.resume();
    turn.start(true);
    deliver();
  }

  // what the buffers hold: `count` records, the next to deliver at index
  // `next`, starting at byte `start`; refilled once all are delivered
  let count = 0;
  let next = 0;
  let start = 0;

  function deliver() {
    try {
      pump();
    } finally {
      turn.stop();
    }
  }

  /** Delivers records until none wait, the buffer closes or the budget is spent. */
  function pump() {
    while (!state.closed) {
      if (next === count) {
        if (turn.spent()) return pause();
        count = fill();
        next = 0;
        start = 0;
        if (count === 0) return;
      }
      if (batch) deliverBatch();
      else if (!deliverRecords()) return pause();
    }
  }

  function deliverBatch() {
    const n = count;
    next = count;
    state.received += n;
    deliverWhole(callback, perCpu, data, ends, cpus, n);
  }

  /** Delivers the records from `next`; false when the turn's budget ran out first. */
  function deliverRecords() {
    const first = next;
    while (next < count) {
      if (state.closed) return true;
      if (next !== first && turn.spent()) return false;
      deliverChunk(Math.min(count, next + CHUNK));
    }
    return true;
  }

  /**
   * Delivers records `next` to `to` (not included), unless the buffer
   * closes first. The loop keeps its place in locals and writes it back at
   * the end: no callback can start another delivery meanwhile (deliveries
   * start from the doorbell or a setImmediate).
   */
  function deliverChunk(to) {
    const size = decode === null ? 0 : decode.size;
    let i = next;
    let from = start;
    for (; i < to && !state.closed; i++) {
      const end = ends[i];
      const len = end - from;
      let record;
      if (decode === null) {
        record = rawRecord(i, from, len);
      } else if (len < size) {
        short(len);
        from = end;
        continue;
      } else {
        // the words only for a record at an 8-byte boundary (as a ring's are)
        record = decode(data, from, end, dv, (from & 7) === 0 ? u64 : undefined, i64);
      }
      from = end;
      state.received++;
      try {
        if (perCpu) callback(cpus[i], record);
        else callback(record);
      } catch (e) {
        rethrow(e);
      }
    }
    next = i;
    start = from;
  }

  return function dispatch(losses) {
    // paused: the rest is delivered on resume()
    if (!paused) {
      turn.start();
      deliver();
    }
    reportLosses(losses);
  };
}

module.exports = { dispatcher };
