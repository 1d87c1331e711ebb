'use strict';
/**
 * `EventBuffer`: an open ring or perf buffer. The addon's poller hands
 * batches of records to a dispatcher (lib/core/dispatch.js) on the main thread;
 * this object owns the user's side of it: closing, keeping the process
 * alive, counting.
 */
const { dispatcher } = require('./dispatch');

// Buffers that keep the process alive (open and not unref()'d), and so
// their object, as a listening socket keeps its server: held here even when
// no variable of the program holds them.
const keptAlive = new Set();

class EventBuffer {
  #native;
  #state = { closed: false, received: 0, decodeErrors: 0 };
  #onClose;
  #kind;
  #map;
  #dispatch;

  /**
   * Not for users: `map.openRingBuffer()` and `map.openPerfBuffer()` make
   * buffers. `open(dispatch)` opens the native side with a dispatcher;
   * `onClose(buffer)` tells the object that the buffer is closed.
   */
  constructor({ kind, map, callback, perCpu, decode, typeName, lost, onError, batch, open, onClose }) {
    this.#kind = kind;
    this.#map = map;
    this.#onClose = onClose;
    const flow = {
      fill: (data, ends, cpus) => this.#native.fill(data, ends, cpus),
      pause: () => this.#native.pause(),
      resume: () => this.#native.resume(),
    };
    this.#dispatch = dispatcher({ callback, lost, onError, perCpu, decode, typeName, batch, state: this.#state, flow });
    this.#native = open(EventBuffer.#forwarder(new WeakRef(this)));
    keptAlive.add(this);
  }

  /**
   * The function the native side holds for as long as the buffer is open:
   * it reaches the buffer through a WeakRef, so that a forgotten, unref()'d
   * buffer (and its object) can still be garbage-collected. Made here, not
   * in the constructor: a closure there would share the constructor's
   * scope, and with it `this`.
   */
  static #forwarder(ref) {
    return (losses) => {
      const buffer = ref.deref();
      if (buffer) buffer.#dispatch(losses);
    };
  }

  /** Stops delivery at once (no callback runs after it returns) and frees the buffer. Idempotent. */
  close() {
    if (this.#state.closed) return;
    this.#state.closed = true;
    keptAlive.delete(this);
    this.#native.close();
    this.#onClose(this);
  }

  /** Lets the process exit while the buffer is open. */
  unref() {
    if (this.#state.closed) return this;
    this.#native.setRef(false);
    keptAlive.delete(this);
    return this;
  }

  /** Keeps the process alive while the buffer is open (the default). */
  ref() {
    if (this.#state.closed) return this;
    this.#native.setRef(true);
    keptAlive.add(this);
    return this;
  }

  /** Records delivered to the callback so far. */
  get received() {
    return this.#state.received;
  }

  /** Records lost so far: dropped because JavaScript fell behind, or (perf buffers) by the kernel because the buffer was full. */
  get lost() {
    return this.#native.lost;
  }

  /** The part of `lost` dropped because JavaScript fell behind (the rest, perf buffers: the kernel's). */
  get dropped() {
    return this.#native.dropped;
  }

  /** Records skipped because they were shorter than the `type`. */
  get decodeErrors() {
    return this.#state.decodeErrors;
  }

  /** `'ring'` or `'perf'`. */
  get kind() {
    return this.#kind;
  }

  /** The map's name. */
  get map() {
    return this.#map;
  }

  /** Whether the buffer was closed (by `close()` or its object's). */
  get closed() {
    return this.#state.closed;
  }
}

module.exports = { EventBuffer };
