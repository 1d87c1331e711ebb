'use strict';
/**
 * The dispatcher: the function the addon's poller hands each batch of
 * records to, on the main thread, as `(data, ends, cpus, losses)`: the
 * records' bytes in one Buffer, the end offset of each record, the CPU of
 * each record (perf buffers) and the losses to report as `[cpu, count, ...]`
 * pairs. It calls the user's callback once per record (decoded when the
 * buffer has a type), or once per batch (`batch: true`).
 *
 * `state` is the buffer's: `closed` is checked before every record, so a
 * callback that closes its buffer (or the object) gets no further record,
 * even from the rest of the batch it is in; `received` and `decodeErrors`
 * count here.
 */

/**
 * A raw record: a Buffer (instanceof Buffer, every Buffer method) viewing
 * its bytes in the batch. Made with `new`, it costs a third of
 * `data.subarray()` (12 ns instead of 35 on the bench machine), which goes
 * through Buffer's deprecated-constructor path to make each view.
 */
class RawRecord extends Uint8Array {}
Object.setPrototypeOf(RawRecord.prototype, Buffer.prototype);

/** Milliseconds of each turn of the event loop that delivery may take. */
const BUDGET_MS = 10;

const rethrow = (e) =>
  process.nextTick(() => {
    throw e;
  });

/**
 * @param {object} o
 * @param {Function} o.callback `(record)`, `(cpu, record)` for perf buffers
 * @param {boolean} o.perCpu whether records carry a CPU (perf buffers)
 * @param {Function | null} o.decode a codec decoder, or null for raw Buffers
 * @param {string} [o.typeName] the decoded type, for messages
 * @param {Function} [o.lost] `(count)`, `(cpu, count)` for perf buffers
 * @param {Function} [o.onError] gets an ERR_BPF_SHORT_RECORD Error per short record
 * @param {boolean} [o.batch] one call per batch: `(data, ends[, cpus])`
 * @param {{ closed: boolean, received: number, decodeErrors: number }} o.state
 * @param {{ pause(): void, resume(): void }} o.flow stops and restarts the addon's hand-over
 */
function dispatcher({ callback, perCpu, decode, typeName, lost, onError, batch, state, flow }) {
  let warned = false;
  const short = (len) => {
    state.decodeErrors++;
    const err = new Error(`a record of ${len} bytes is shorter than ${typeName} (${decode.size} bytes): skipped`);
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
  const reportLosses = (losses) => {
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

  if (batch) {
    // one call per batch: no object per record at all
    return function dispatchBatch(data, ends, cpus, losses) {
      if (state.closed) return;
      if (ends.length > 0) {
        state.received += ends.length;
        try {
          if (perCpu) callback(data, ends, cpus);
          else callback(data, ends);
        } catch (e) {
          rethrow(e);
        }
      }
      reportLosses(losses);
    };
  }

  // The event loop must keep turning while records stream in: the records
  // handed over in one turn of the loop get BUDGET_MS of it. Past that, the
  // rest of the batch waits for a setImmediate() (timers and I/O run first)
  // and the addon is paused meanwhile, so its queue fills and then drops and
  // counts, as it does for any callback that cannot keep up.
  let turnEnd = 0; // when this turn's budget is spent (0: not started)
  let pending = null; // [data, ends, cpus, losses, next record, its start]
  const endTurn = () => {
    turnEnd = 0;
  };
  const startTurn = () => {
    if (turnEnd === 0) {
      turnEnd = performance.now() + BUDGET_MS;
      setImmediate(endTurn);
    }
  };

  function run(data, ends, cpus, losses, from, start) {
    const n = ends.length;
    // one view per batch: DataView reads are inlined by V8, Buffer's
    // read*LE methods are not
    const dv = decode === null ? null : new DataView(data.buffer, data.byteOffset, data.length);
    const size = decode === null ? 0 : decode.size;
    const { buffer, byteOffset } = data;
    for (let i = from; i < n; i++) {
      if (state.closed) return;
      if ((i & 127) === 0 && performance.now() > turnEnd) {
        pending = [data, ends, cpus, losses, i, start];
        flow.pause();
        setImmediate(resume);
        return;
      }
      const end = ends[i];
      let record;
      if (decode === null) {
        record = new RawRecord(buffer, byteOffset + start, end - start);
      } else if (end - start < size) {
        short(end - start);
        start = end;
        continue;
      } else {
        record = decode(data, start, end, dv);
      }
      start = end;
      state.received++;
      try {
        if (perCpu) callback(cpus[i], record);
        else callback(record);
      } catch (e) {
        rethrow(e);
      }
    }
    reportLosses(losses);
  }

  function resume() {
    const batch = pending;
    pending = null;
    if (state.closed || batch === null) return;
    startTurn();
    run(...batch);
    if (pending === null) flow.resume();
  }

  return function dispatch(data, ends, cpus, losses) {
    // paused: the addon hands over nothing more until flow.resume()
    if (pending !== null) return reportLosses(losses);
    startTurn();
    run(data, ends, cpus, losses, 0, 0);
  };
}

module.exports = { dispatcher };
