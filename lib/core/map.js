'use strict';
/**
 * `BpfMap`: a map of a loaded object. Keys and values are JavaScript values
 * encoded and decoded here (lib/core/codec.js) from the map's BTF layouts; the
 * addon moves bytes, one crossing per call. A map declared without BTF
 * types (`__uint(key_size, ...)`) uses Buffers of its sizes. Per-CPU maps
 * give an array with one value per possible CPU; stack-trace maps give
 * arrays of instruction addresses.
 */
const codec = require('./codec');
const { EventBuffer } = require('./buffer');
const validate = require('./validate');
const { codedError } = validate;
const native = require('./native');

let cpus;

/** How many values a per-CPU map holds: the possible CPUs, as libbpf counts them. */
function possibleCpus() {
  if (cpus === undefined) cpus = native.possibleCpus();
  return cpus;
}

/** Splits `bytes` into pieces of `size` bytes (copies: a kept piece does not pin the rest). */
function pieces(bytes, size) {
  const out = [];
  for (let at = 0; at + size <= bytes.length && size > 0; at += size) out.push(Buffer.from(bytes.subarray(at, at + size)));
  return out;
}

class BpfMap {
  #native;
  #info;
  #options;
  #perCpu;
  #track;

  /** Not for users: `obj.getMap(name, options)` makes maps. */
  constructor(native, options, track) {
    this.#native = native;
    this.#info = native.info;
    this.#options = codec.checkOptions(options);
    this.#perCpu = native.perCpu;
    this.#track = track;
  }

  /** The map's name. */
  get name() {
    return this.#info.name;
  }

  /** libbpf's name of the map type: `hash`, `array`, `percpu_array`, `ringbuf`, ... */
  get type() {
    return this.#info.type;
  }

  get keySize() {
    return this.#info.keySize;
  }

  get valueSize() {
    return this.#info.valueSize;
  }

  get maxEntries() {
    return this.#info.maxEntries;
  }

  /** How keys decode (null: raw Buffers). */
  get keyLayout() {
    return this.#info.keyLayout ?? null;
  }

  /** How values decode (null: raw Buffers). */
  get valueLayout() {
    return this.#info.valueLayout ?? null;
  }

  #encode(layout, value, size, what) {
    if (layout) return codec.encode(layout, value, `map '${this.name}' ${what}`);
    if (!Buffer.isBuffer(value) && !(value instanceof Uint8Array)) {
      throw codedError('ERR_BPF_INVALID_VALUE', `map '${this.name}' has no BTF ${what} type: give the ${what} as a Buffer of ${size} bytes`);
    }
    if (value.length !== size) {
      throw codedError('ERR_BPF_INVALID_VALUE', `map '${this.name}' has ${size}-byte ${what}s; got a ${value.length}-byte Buffer`);
    }
    return value;
  }

  #key(key) {
    if (this.type === 'ringbuf' || this.type === 'perf_event_array') return Buffer.alloc(this.keySize); // the addon says what is wrong
    return this.#encode(this.#info.keyLayout, key, this.keySize, 'key');
  }

  #decode(layout, bytes) {
    return layout ? codec.decode(layout, bytes, this.#options) : Buffer.from(bytes);
  }

  #decodeKey(bytes) {
    return this.#decode(this.#info.keyLayout, bytes);
  }

  /** One value, or an array of one per CPU. */
  #decodeValue(bytes) {
    if (!this.#perCpu) return this.#decode(this.#info.valueLayout, bytes);
    return pieces(bytes, this.valueSize).map((v) => this.#decode(this.#info.valueLayout, v));
  }

  #entries([keys, values]) {
    const valueBytes = this.#perCpu ? this.valueSize * possibleCpus() : this.valueSize;
    const v = pieces(values, valueBytes);
    return pieces(keys, this.keySize).map((k, i) => [this.#decodeKey(k), this.#decodeValue(v[i])]);
  }

  /** The value at `key`, or undefined; for per-CPU maps an array with one value per possible CPU. */
  get(key) {
    const bytes = this.#native.lookup(this.#key(key));
    return bytes === null ? undefined : this.#decodeValue(bytes);
  }

  /** The value at `key` as the kernel holds it (a Buffer of `valueSize` bytes, one per possible CPU after another for per-CPU maps), undecoded; or undefined. */
  getBytes(key) {
    return this.#native.lookup(this.#key(key)) ?? undefined;
  }

  /** Whether `key` is in the map. */
  has(key) {
    return this.#native.lookup(this.#key(key)) !== null;
  }

  /**
   * Sets `key` to `value`, encoded from the map's value type (plain objects
   * for structs: missing fields are zero, unknown fields an error). For
   * per-CPU maps: one value for every CPU, or an array of one per CPU.
   */
  set(key, value) {
    const k = this.#key(key);
    const layout = this.#info.valueLayout;
    if (!this.#perCpu) {
      this.#native.update(k, this.#encode(layout, value, this.valueSize, 'value'));
      return;
    }
    const n = possibleCpus();
    if (Array.isArray(value) && !(layout && layout.kind === 'array')) {
      if (value.length !== n) {
        throw codedError('ERR_BPF_INVALID_VALUE', `map '${this.name}' is per-CPU: give one value, or an array of ${n} (one per possible CPU), not ${value.length}`);
      }
      this.#native.update(k, Buffer.concat(value.map((v) => this.#encode(layout, v, this.valueSize, 'value'))));
      return;
    }
    const one = this.#encode(layout, value, this.valueSize, 'value');
    this.#native.update(k, Buffer.concat(Array.from({ length: n }, () => one)));
  }

  /** Deletes `key`; returns whether it was there. (Array maps cannot delete: set the value to zero, or `clear()`.) */
  delete(key) {
    return this.#native.delete(this.#key(key));
  }

  /** Every key. */
  keys() {
    return pieces(this.#native.keys(), this.keySize).map((k) => this.#decodeKey(k));
  }

  /** Every value. */
  values() {
    return this.entries().map(([, v]) => v);
  }

  /** Every `[key, value]` pair. */
  entries() {
    return this.#entries(this.#native.entries());
  }

  /** Iterates over `[key, value]` pairs (a snapshot of the map). */
  [Symbol.iterator]() {
    return this.entries()[Symbol.iterator]();
  }

  /** How many keys the map holds (array maps: always `maxEntries`). */
  count() {
    return this.#native.count();
  }

  /** `count()`, as a property. */
  get size() {
    return this.count();
  }

  /** Removes every entry (array maps: sets every value to zero). */
  clear() {
    this.#native.clear();
  }

  /** Every `[key, value]` pair of a hash map, read with the batch syscall (fewer syscalls than `entries()` on big maps). */
  getBatch() {
    return this.#entries(this.#native.batch(false));
  }

  /** Every key and value as the kernel holds them, undecoded: `[keys, values]`, two Buffers, each its items back to back (`keySize`, `valueSize` bytes each; per CPU for per-CPU maps), read in batches. */
  getBatchBytes() {
    const [keys, values] = this.#native.batch(false);
    return [keys, values];
  }

  /**
   * Copies the bytes of a `BPF_F_MMAPABLE` array map, from byte `offset`,
   * into `target` (its whole length), with no syscall: the map is mapped
   * into the process on the first call. Value `i` is at `i *
   * roundUp(valueSize, 8)`. For counters read often (a metrics scrape).
   */
  readMapped(target, offset = 0) {
    this.#native.readMapped(target, validate.integer(`map '${this.name}' readMapped`, 'offset', offset ?? 0, validate.LIMITS.offset));
    return target;
  }

  /**
   * Every `[key, value]` pair of a hash map, removed as it is read: for
   * counters that the program keeps adding to, nothing is counted twice or
   * lost between the read and the delete.
   */
  lookupAndDeleteBatch() {
    return this.#entries(this.#native.batch(true));
  }

  /**
   * Streams the records of a BPF_MAP_TYPE_RINGBUF map: `callback(record)`
   * once per record, on the main thread, in order. With `type`, records are
   * decoded into objects; without, they are Buffers (views of the batch:
   * copy one to keep it); with `batch`, `callback(data, ends)` once per batch.
   */
  openRingBuffer(callback, options = {}) {
    return this.#open('ring', callback, options, (dispatch, native) => this.#native.openRingBuffer(dispatch, native));
  }

  /** Streams the records of a BPF_MAP_TYPE_PERF_EVENT_ARRAY map: `callback(cpu, record)` once per record, on the main thread. */
  openPerfBuffer(callback, options = {}) {
    return this.#open('perf', callback, options, (dispatch, native) => this.#native.openPerfBuffer(dispatch, native));
  }

  #open(kind, callback, options, openNative) {
    const method = kind === 'ring' ? 'openRingBuffer' : 'openPerfBuffer';
    options = validate.object(method, options);
    if (typeof callback !== 'function') {
      throw codedError('ERR_INVALID_ARG_TYPE', `${method}(callback, options): the callback must be a function, got ${callback === null ? 'null' : typeof callback}`);
    }
    for (const name of ['lost', 'error']) {
      if (options[name] !== undefined && typeof options[name] !== 'function') {
        throw codedError('ERR_INVALID_ARG_TYPE', `${method}(): option ${name} must be a function`);
      }
    }
    let decode = null;
    let typeName;
    if (options.type !== undefined) {
      if (options.batch) {
        throw codedError('ERR_BPF_INVALID_VALUE', 'options batch and type do not go together: a batch is raw records (decode each with your own code, or drop batch)');
      }
      const layout = this.#track.typeLayout(String(options.type));
      if (layout.kind !== 'struct' && layout.kind !== 'union') {
        throw codedError('ERR_BPF_INVALID_VALUE', `type '${options.type}' is a ${layout.kind}, not a struct: records decode as structs`);
      }
      decode = codec.decoder(layout, options);
      typeName = codec.typeName(layout);
    }
    if (this.#track.bufferOf(this.name)) {
      // two readers of one ring would each get some of its records; a perf
      // buffer's second reader would take the first one's place in the map
      throw codedError('ERR_BPF_BUFFER', `map '${this.name}' has an open buffer already: close it before opening another (one reader per map)`);
    }
    const { pollInterval, queueSize, pageCount, wakeupBytes } = bufferOptions(method, kind, options);
    const buffer = new EventBuffer({
      kind,
      map: this.name,
      callback,
      perCpu: kind === 'perf',
      decode,
      typeName,
      lost: options.lost,
      onError: options.error,
      batch: Boolean(options.batch),
      open: (dispatch) => openNative(dispatch, { pollInterval, queueSize, pageCount, wakeupBytes }),
      onClose: this.#track.closed,
    });
    this.#track.opened(buffer);
    return buffer;
  }
}

/** The numeric options of a buffer, range-checked (lib/core/validate.js). */
function bufferOptions(method, kind, options) {
  const { LIMITS } = validate;
  const out = {
    pollInterval: validate.integer(method, 'pollInterval', options.pollInterval, LIMITS.pollInterval),
    queueSize: validate.integer(method, 'queueSize', options.queueSize, LIMITS.queueSize),
  };
  if (kind === 'ring') {
    if (options.pageCount !== undefined || options.wakeupBytes !== undefined) {
      throw codedError('ERR_BPF_INVALID_VALUE', `${method}: pageCount and wakeupBytes are perf buffer options; a ring buffer's size is its map's max_entries`);
    }
    return out;
  }
  return {
    ...out,
    pageCount: validate.powerOfTwo(method, 'pageCount', options.pageCount, LIMITS.pageCount),
    wakeupBytes: validate.integer(method, 'wakeupBytes', options.wakeupBytes, LIMITS.wakeupBytes),
  };
}

module.exports = { BpfMap, possibleCpus };
