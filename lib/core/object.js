'use strict';
/**
 * `BpfObject` and `loadBpfProgram`: a BPF object opened from an ELF file,
 * configured, loaded on first need, attached, read, and closed with
 * everything it made. The addon's `ObjectHandle` does the kernel's part;
 * this side encodes and decodes values (lib/core/codec.js).
 */
const native = require('./native');
const codec = require('./codec');
const { BpfMap, possibleCpus } = require('./map');
const validate = require('./validate');

// An object nobody can reach any more (no variable, no link, no buffer that
// keeps the process alive) is closed when it is garbage-collected, with a
// warning, as Node closes a forgotten FileHandle.
const forgotten = new FinalizationRegistry(({ handle, source }) => {
  if (handle.closed) return;
  handle.close();
  process.emitWarning(
    `BpfObject ${source} was closed on garbage collection; close objects with obj.close() (or await obj.closeAsync()) when done`,
    'NodeLibbpfWarning',
  );
});

// what a link keeps alive: its object (a link is part of it)
const owner = Symbol('node-libbpf owner');

class BpfObject {
  #handle;
  #buffers = new Set();
  #globals;
  #programs;

  /** Not for users: `loadBpfProgram()` opens objects. */
  constructor(handle) {
    if (!(handle instanceof native.ObjectHandle)) {
      const err = /** @type {NodeJS.ErrnoException} */ (new TypeError('BpfObject cannot be made with new: open one with loadBpfProgram(path)'));
      err.code = 'ERR_INVALID_ARG_TYPE';
      throw err;
    }
    this.#handle = handle;
    forgotten.register(this, { handle, source: handle.source }, this);
  }

  /** Loads every program and map into the kernel (the verifier runs here). Optional: the first attach or `getMap()` loads too. */
  load() {
    this.#handle.load();
  }

  /** Whether the object is in the kernel. */
  get loaded() {
    return this.#handle.loaded;
  }

  /** Whether `close()` was called. */
  get closed() {
    return this.#handle.closed;
  }

  /** The programs of the object, keyed by their C function name, in ELF order (made once: the same object every time). */
  get programs() {
    this.#programs ??= this.#handle.programs;
    return this.#programs;
  }

  /** The names of the object's maps (data-section maps excluded). */
  get mapNames() {
    return this.#handle.mapNames;
  }

  /**
   * Whether map `name` is made when the object loads (default true): a map
   * of a type the kernel lacks is left out, before load, with the code that
   * uses it left out too (`obj.programs.x.autoload = false`, or a branch on
   * a `const volatile` global). ERR_BPF_READ_ONLY after load.
   */
  setMapAutocreate(name, autocreate) {
    this.#handle.setMapAutocreate(name, autocreate);
  }

  /** The object's maps (data-section maps excluded) with their types and layouts; no load needed. */
  get maps() {
    return this.#handle.maps;
  }

  /** The object's global variables: name, ELF section, size, type and layout. */
  get globals() {
    return this.#handle.globals;
  }

  /** The layout of a named struct, union, enum or typedef of the object's BTF (`'event'` or `'struct event'`). */
  typeLayout(name) {
    return this.#handle.typeLayout(name);
  }

  /** The names of the structs, unions, enums and typedefs of the object's BTF. */
  typeNames() {
    return this.#handle.typeNames();
  }

  #global(name) {
    this.#globals ??= new Map(this.#handle.globals.map((g) => [g.name, g]));
    return this.#globals.get(name);
  }

  /**
   * Sets a global variable by name. `const volatile` globals (`.rodata`)
   * only before load; `.data`/`.bss` globals any time. The value is encoded
   * from its BTF type.
   */
  setGlobalVariable(name, value) {
    const g = this.#global(name);
    // an unknown name: the addon's error lists the globals
    const bytes = g ? codec.encode(g.layout, value, `global '${name}' (${g.type})`) : Buffer.alloc(0);
    this.#handle.writeGlobal(name, bytes);
  }

  /** Reads a global variable by name (after load: the kernel's current value), decoded from its BTF type. */
  getGlobalVariable(name, options) {
    const opts = codec.checkOptions(options);
    const bytes = this.#handle.readGlobal(name);
    return codec.decode(this.#global(name).layout, bytes, opts);
  }

  /** A map by name (loads the object if it is not loaded yet); `options` say how its values decode. */
  getMap(name, options) {
    codec.checkOptions(options);
    const track = {
      typeLayout: (type) => this.#handle.typeLayout(type),
      opened: (buffer) => this.#buffers.add(buffer),
      closed: (buffer) => this.#buffers.delete(buffer),
      /** The open buffer of map `mapName`, if any. */
      bufferOf: (mapName) => [...this.#buffers].find((buffer) => buffer.map === mapName),
    };
    return new BpfMap(this.#handle.map(name), options, track);
  }

  #link(link) {
    Object.defineProperty(link, owner, { value: this });
    return link;
  }

  attachKprobe(funcName, prog, options) {
    return this.#link(this.#handle.attachKprobe(funcName, prog, cookieOptions('attachKprobe', options)));
  }

  attachKretprobe(funcName, prog, options) {
    return this.#link(this.#handle.attachKretprobe(funcName, prog, cookieOptions('attachKretprobe', options)));
  }

  attachTracepoint(category, name, prog, options) {
    return this.#link(this.#handle.attachTracepoint(category, name, prog, cookieOptions('attachTracepoint', options)));
  }

  attachRawTracepoint(name, prog, options) {
    return this.#link(this.#handle.attachRawTracepoint(name, prog, cookieOptions('attachRawTracepoint', options)));
  }

  attachUprobe(binaryPath, symbolOrOffset, prog, options) {
    const where = 'attachUprobe';
    return this.#link(this.#handle.attachUprobe(binaryPath, uprobeTarget(where, symbolOrOffset), prog, uprobeOptions(where, options)));
  }

  attachUretprobe(binaryPath, symbolOrOffset, prog, options) {
    const where = 'attachUretprobe';
    return this.#link(this.#handle.attachUretprobe(binaryPath, uprobeTarget(where, symbolOrOffset), prog, uprobeOptions(where, options)));
  }

  attachUprobeMulti(binaryPath, symbols, prog, options) {
    const where = 'attachUprobeMulti';
    const o = validate.object(where, options);
    let cookies = o.cookies;
    if (cookies !== undefined && cookies !== null) {
      if (!Array.isArray(cookies)) throw validate.codedError('ERR_INVALID_ARG_TYPE', `${where}: cookies must be an array of bigints, one per symbol`);
      cookies = cookies.map((c, i) => {
        if (c === undefined || c === null) throw validate.codedError('ERR_INVALID_ARG_TYPE', `${where}: cookies[${i}] must be a bigint from 0 to 2**64-1; got ${c}`);
        return validate.u64(where, `cookies[${i}]`, c);
      });
    }
    const pid = validate.integer(where, 'pid', o.pid, validate.LIMITS.pid);
    return this.#link(this.#handle.attachUprobeMulti(binaryPath, symbols, prog, { ...o, pid, cookies }));
  }

  attachUsdt(binaryPath, provider, name, prog, options) {
    return this.#link(this.#handle.attachUsdt(binaryPath, provider, name, prog, uprobeOptions('attachUsdt', options)));
  }

  attachPerfEvent(prog, options) {
    const where = 'attachPerfEvent';
    const o = validate.object(where, options);
    const { LIMITS } = validate;
    const checked = {
      ...o,
      frequency: o.frequency == null ? undefined : validate.integer(where, 'frequency', o.frequency, [1, validate.maxSampleRate()]),
      period: validate.integer(where, 'period', o.period, LIMITS.period),
      pid: validate.integer(where, 'pid', o.pid, LIMITS.pid),
      cpu: validate.integer(where, 'cpu', o.cpu, [0, possibleCpus() - 1]),
    };
    return this.#link(this.#handle.attachPerfEvent(prog, checked));
  }

  attach(prog) {
    return this.#link(this.#handle.attach(prog));
  }

  /**
   * Runs a `SEC("iter/<target>")` program once and returns what it wrote
   * (a Buffer); it runs in this thread's context. Linux 5.8+.
   */
  readIterator(prog, options) {
    return this.#handle.readIterator(prog, options);
  }

  /** Detaches every link this object made; programs and maps stay loaded. */
  detachAll() {
    this.#handle.detachAll();
  }

  /**
   * Stops the object's buffers (no callback runs after this returns),
   * detaches every link and frees every program and map. Returns at once:
   * the kernel's part runs on another thread (`closeAsync()` says when it is
   * done). Every later call on the object throws ERR_BPF_CLOSED.
   */
  close() {
    this.#stopBuffers();
    this.#handle.close();
    forgotten.unregister(this);
  }

  /** `close()`, and a promise that resolves once the kernel has released everything the object held. */
  closeAsync() {
    this.#stopBuffers();
    forgotten.unregister(this);
    return this.#handle.closeAsync();
  }

  #stopBuffers() {
    for (const buffer of [...this.#buffers]) buffer.close();
  }
}

/** The options of an attach that takes a cookie only, range-checked. */
function cookieOptions(where, options) {
  const o = validate.object(where, options);
  return { ...o, cookie: validate.u64(where, 'cookie', o.cookie) };
}

/** The options of a uprobe or USDT attach (pid, cookie), range-checked. */
function uprobeOptions(where, options) {
  const o = validate.object(where, options);
  return { ...o, pid: validate.integer(where, 'pid', o.pid, validate.LIMITS.pid), cookie: validate.u64(where, 'cookie', o.cookie) };
}

/** A uprobe's function: a symbol name, or a file offset (an integer from 0). */
function uprobeTarget(where, target) {
  if (typeof target === 'string') return target;
  if (typeof target !== 'number') {
    throw validate.codedError('ERR_INVALID_ARG_TYPE', `${where}: the function must be a symbol name (a string) or a file offset (a number); got ${typeof target}`);
  }
  return validate.integer(where, 'offset', target, validate.LIMITS.offset);
}

/**
 * Opens a compiled BPF ELF object (a path or a Buffer holding the file).
 * Nothing enters the kernel until `load()`, an attach or `getMap()`.
 */
function loadBpfProgram(source, options) {
  return new BpfObject(native.openObject(source, options));
}

module.exports = { BpfObject, loadBpfProgram };
