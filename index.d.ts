/// <reference types="node" />
// The types of node-libbpf's entry (index.js). What the addon itself
// exports is typed in binding.d.ts, generated from the Rust doc comments by
// `napi build`; the classes written in JavaScript (lib/) are typed here.

import type {
  AttachOptions,
  BpfLink,
  BpfProgram,
  FlameGraphOptions,
  GlobalInfo,
  IteratorOptions,
  LoadOptions,
  MapInfo,
  PerfEventOptions,
  TypeLayout,
  UprobeMultiOptions,
  UprobeOptions,
} from './binding'

export {
  AttachOptions,
  BpfLink,
  BpfProgram,
  ElfSymbol,
  Features,
  FlameGraphOptions,
  Frame,
  GlobalInfo,
  IteratorOptions,
  LibraryThread,
  LoadOptions,
  MapInfo,
  PerfEventOptions,
  ProgramStats,
  Symbolizer,
  TypeLayout,
  UprobeMultiOptions,
  UprobeOptions,
  dwarfMemberOffset,
  elfSymbols,
  errnoName,
  features,
  fentryCanAttach,
  flameGraph,
  kprobeExists,
  libraryThreads,
  syscallNames,
} from './binding'

/** How typed values are decoded. */
export interface DecodeOptions {
  /**
   * 64-bit integers and pointers as `'bigint'` (default, exact) or
   * `'number'` (loses precision above 2^53).
   */
  int64?: 'bigint' | 'number'
  /**
   * Enums as the enumerator's `'name'` (default; a value without a name
   * stays a number) or as the `'number'`.
   */
  enums?: 'name' | 'number'
}

/** What both kinds of buffer take (a number out of its range is an ERR_BPF_INVALID_VALUE error). */
interface BufferOptionsBase extends DecodeOptions {
  /**
   * Decode each record as this struct of the object's BTF (`'event'` or
   * `'struct event'`): the callback gets a plain object instead of a Buffer.
   */
  type?: string
  /**
   * Called with an Error (code ERR_BPF_SHORT_RECORD) for a record shorter
   * than `type`; it is skipped (default: one process warning).
   */
  error?: (error: Error) => void
  /**
   * Milliseconds between passes when the program submits without wakeups
   * (BPF_RB_NO_WAKEUP) or while events stream in: an integer from 1 to
   * 60000 (default 10).
   */
  pollInterval?: number
  /**
   * How many batches may wait for JavaScript before records are dropped
   * and counted as lost: an integer from 1 to 65536 (default 64; and never
   * more than 16 MiB of records).
   */
  queueSize?: number
  /**
   * Raw records a batch at a time: the callback gets `(data, ends)` (perf:
   * `(data, ends, cpus)`), one Buffer holding every record of the batch and
   * the end offset of each (record i is `data.subarray(ends[i - 1] ?? 0,
   * ends[i])`), instead of one call per record. Not with `type`. The three
   * are views of buffers the library reuses for the next batch: valid until
   * the callback returns (copy what you keep).
   */
  batch?: boolean
}

/** Options of `openRingBuffer`. */
export interface RingBufferOptions extends BufferOptionsBase {
  /** Called with the number of records dropped because JavaScript fell behind. */
  lost?: (count: number) => void
}

/** Options of `openPerfBuffer`. Perf records carry up to 7 bytes of padding after the struct. */
export interface PerfBufferOptions extends BufferOptionsBase {
  /** Pages of the buffer of each CPU, a power of two from 1 to 8192 (default 256: 1 MiB). */
  pageCount?: number
  /**
   * The reader is woken when a CPU's buffer holds this many bytes, from 1
   * to the whole buffer (default: a quarter of it); smaller batches are
   * read every `pollInterval`.
   */
  wakeupBytes?: number
  /**
   * Called with the CPU and the number of records lost there (by the
   * kernel when the buffer was full, or here when JavaScript fell behind).
   */
  lost?: (cpu: number, count: number) => void
}

/**
 * An open ring or perf buffer. Like a listening socket, it keeps the
 * process alive (and its object) until `close()` or `unref()`.
 */
export declare class EventBuffer {
  private constructor()
  /** Stops delivery at once (no callback runs after it returns) and frees the buffer (idempotent). */
  close(): void
  /** Lets the process exit while the buffer is open. */
  unref(): this
  /** Keeps the process alive while the buffer is open (the default). */
  ref(): this
  /** Records delivered to the callback so far. */
  get received(): number
  /**
   * Records lost so far: dropped because JavaScript fell behind, or (perf
   * buffers) by the kernel because the buffer was full.
   */
  get lost(): number
  /**
   * The part of `lost` dropped because JavaScript fell behind (a faster
   * callback, or a larger `queueSize`, would help); the rest of a perf
   * buffer's `lost` the kernel could not write (a larger `pageCount`).
   */
  get dropped(): number
  /** Records skipped because they were shorter than the `type`. */
  get decodeErrors(): number
  /** `ring` or `perf`. */
  get kind(): 'ring' | 'perf'
  /** The map's name. */
  get map(): string
  /** Whether the buffer was closed (by `close()` or its object's). */
  get closed(): boolean
}

/**
 * A map of a loaded object. Keys and values are JavaScript values decoded
 * from the map's BTF types (numbers, bigints, strings, plain objects,
 * arrays); a map declared without BTF types (`__uint(key_size, ...)`) uses
 * Buffers of its sizes. Per-CPU maps give an array with one value per
 * possible CPU; stack-trace maps give arrays of instruction addresses.
 */
export declare class BpfMap {
  private constructor()
  /** The map's name. */
  get name(): string
  /** libbpf's name of the map type: `hash`, `array`, `percpu_array`, `ringbuf`, ... */
  get type(): string
  get keySize(): number
  get valueSize(): number
  get maxEntries(): number
  /** How keys decode (null: raw Buffers). */
  get keyLayout(): TypeLayout | null
  /** How values decode (null: raw Buffers). */
  get valueLayout(): TypeLayout | null
  /** The value at `key`, or undefined; for per-CPU maps an array with one value per possible CPU. */
  get(key: any): any
  /** The value at `key` as the kernel holds it (a Buffer of `valueSize` bytes, one per possible CPU after another for per-CPU maps), undecoded; or undefined. */
  getBytes(key: any): Buffer | undefined
  /** Every key and value as the kernel holds them, undecoded: `[keys, values]`, two Buffers, each its items back to back (`keySize`, `valueSize` bytes each; per CPU for per-CPU maps), read in batches. */
  getBatchBytes(): [Buffer, Buffer]
  /** Whether `key` is in the map. */
  has(key: any): boolean
  /**
   * Sets `key` to `value`, encoded from the map's value type (plain objects
   * for structs: missing fields are zero, unknown fields an error). For
   * per-CPU maps: one value for every CPU, or an array of one per CPU.
   */
  set(key: any, value: any): void
  /** Deletes `key`; returns whether it was there. (Array maps cannot delete: set the value to zero, or `clear()`.) */
  delete(key: any): boolean
  /** Every key. */
  keys(): any[]
  /** Every value. */
  values(): any[]
  /** Every `[key, value]` pair. */
  entries(): Array<[any, any]>
  /** Iterates over `[key, value]` pairs (a snapshot of the map). */
  [Symbol.iterator](): Iterator<[any, any]>
  /** How many keys the map holds (array maps: always `maxEntries`). */
  count(): number
  /** `count()`, as a property. */
  get size(): number
  /** Removes every entry (array maps: sets every value to zero). */
  clear(): void
  /** Every `[key, value]` pair of a hash map, read with the batch syscall. */
  getBatch(): Array<[any, any]>
  /** Every `[key, value]` pair of a hash map, removed as it is read. */
  lookupAndDeleteBatch(): Array<[any, any]>
  /**
   * Copies the bytes of a `BPF_F_MMAPABLE` array map, from byte `offset`,
   * into `target` (its whole length), with no syscall (the map is mapped on
   * the first call). Value `i` is at `i * roundUp(valueSize, 8)`. Returns
   * `target`. `offset`: an integer from 0 (default 0).
   */
  readMapped<B extends Uint8Array>(target: B, offset?: number): B
  /**
   * Streams the records of a BPF_MAP_TYPE_RINGBUF map: `callback(record)`
   * once per record, on the main thread, in order. With `type`, records are
   * decoded into objects; without, they are Buffers (views of a buffer
   * reused for the next batch: valid until the callback returns, copy one
   * to keep it; their fixed-size `read*` methods return and throw what
   * Buffer's do, faster); with `batch`, `callback(data, ends)` once per
   * batch. A map has one open buffer at a time (a second is `ERR_BPF_BUFFER`).
   */
  openRingBuffer(callback: (record: any, ends?: Uint32Array) => void, options?: RingBufferOptions): EventBuffer
  /** Streams the records of a BPF_MAP_TYPE_PERF_EVENT_ARRAY map: `callback(cpu, record)` once per record, on the main thread. */
  openPerfBuffer(callback: (cpu: any, record: any, cpus?: Uint32Array) => void, options?: PerfBufferOptions): EventBuffer
}

/**
 * A BPF object opened from an ELF file: its programs, maps and globals.
 * The kernel load happens on `load()` or on the first attach or `getMap`.
 * `close()` detaches and frees everything the object made.
 */
export declare class BpfObject<P extends string = string> {
  private constructor()
  /** Loads every program and map into the kernel (the verifier runs here). Optional: the first attach or `getMap()` loads too. */
  load(): void
  /** Whether the object is in the kernel. */
  get loaded(): boolean
  /** Whether `close()` was called. */
  get closed(): boolean
  /** The programs of the object, keyed by their C function name, in ELF order. */
  get programs(): Record<P, BpfProgram>
  /** The names of the object's maps (data-section maps excluded). */
  get mapNames(): Array<string>
  /** The object's maps (data-section maps excluded) with their types and layouts; no load needed. */
  get maps(): Array<MapInfo>
  /**
   * Whether map `name` is made when the object loads (default true): a map
   * of a type the kernel lacks is left out, before load, with the code that
   * uses it (`obj.programs.x.autoload = false`, or a branch on a `const
   * volatile` global). ERR_BPF_READ_ONLY after load.
   */
  setMapAutocreate(name: string, autocreate: boolean): void
  /** The object's global variables: name, ELF section, size, type and layout. */
  get globals(): Array<GlobalInfo>
  /** The layout of a named struct, union, enum or typedef of the object's BTF (`'event'` or `'struct event'`). */
  typeLayout(name: string): TypeLayout
  /** The names of the structs, unions, enums and typedefs of the object's BTF. */
  typeNames(): Array<string>
  /**
   * Sets a global variable by name. `const volatile` globals (`.rodata`)
   * only before load; `.data`/`.bss` globals any time. The value is
   * encoded from its BTF type: numbers or bigints that fit the integer,
   * booleans, strings for `char` arrays, arrays, plain objects for structs
   * (missing fields zero), or a Buffer of the variable's exact size.
   */
  setGlobalVariable(name: string, value: unknown): void
  /** Reads a global variable by name (after load: the kernel's current value), decoded from its BTF type. */
  getGlobalVariable(name: string, options?: DecodeOptions | null): any
  /** A map by name (loads the object if it is not loaded yet); `options` say how its values decode. */
  getMap(name: string, options?: DecodeOptions | null): BpfMap
  /**
   * Attaches a program to the entry of kernel function `funcName`. The
   * article's names (`sys_enter_openat`) map to the syscall's function
   * (`__x64_sys_openat`). On a kernel without kprobes this throws ENOTSUP
   * naming the tracepoint to use instead.
   */
  attachKprobe(funcName: string, prog: BpfProgram | P, options?: AttachOptions | null): BpfLink
  /** Attaches a program to the return of kernel function `funcName` (see `attachKprobe`). */
  attachKretprobe(funcName: string, prog: BpfProgram | P, options?: AttachOptions | null): BpfLink
  /**
   * Attaches a `SEC("tp/...")` program to the tracepoint `category:name`
   * (e.g. `syscalls`, `sys_enter_openat`). tracefs must be mounted
   * (node-libbpf never mounts it; ERR_BPF_TRACEFS says how). The
   * `cookie` tells attachments of one program apart (`bpf_get_attach_cookie()`).
   */
  attachTracepoint(category: string, name: string, prog: BpfProgram | P, options?: AttachOptions | null): BpfLink
  /** Attaches a `SEC("raw_tp/...")` program to the raw tracepoint `name` (e.g. `sys_enter`, `sched_switch`); `cookie` needs kernel 6.10+. */
  attachRawTracepoint(name: string, prog: BpfProgram | P, options?: AttachOptions | null): BpfLink
  /** Attaches a program to the entry of a function of a user-space binary or library, by symbol name or by file offset. */
  attachUprobe(binaryPath: string, symbolOrOffset: string | number, prog: BpfProgram | P, options?: UprobeOptions | null): BpfLink
  /** Attaches a program to the return of a user-space function (see `attachUprobe`). */
  attachUretprobe(binaryPath: string, symbolOrOffset: string | number, prog: BpfProgram | P, options?: UprobeOptions | null): BpfLink
  /**
   * Attaches a `SEC("uprobe.multi")` program to many functions of one
   * binary at once (kernel 6.6+): those matching a glob (`pthread_mutex_*`)
   * or a list of symbols, with one cookie per symbol.
   */
  attachUprobeMulti(binaryPath: string, symbols: string | string[], prog: BpfProgram | P, options?: UprobeMultiOptions | null): BpfLink
  /** Attaches a `SEC("usdt")` program to the USDT probe `provider:name` of a binary. */
  attachUsdt(binaryPath: string, provider: string, name: string, prog: BpfProgram | P, options?: UprobeOptions | null): BpfLink
  /** Attaches a `SEC("perf_event")` program to a sampling perf event: one event per online CPU unless `cpu` or `pid` (one thread) narrows it. */
  attachPerfEvent(prog: BpfProgram | P, options?: PerfEventOptions | null): BpfLink
  /** Attaches a program by its `SEC()` name, as libbpf's auto-attach does. */
  attach(prog: BpfProgram | P): BpfLink
  /**
   * Runs a `SEC("iter/<target>")` program (task, task_file, tcp, udp, ...)
   * once and returns what it wrote (`bpf_seq_write`, `BPF_SEQ_PRINTF`); it
   * runs in this thread's context. Linux 5.8+.
   */
  readIterator(prog: BpfProgram | P, options?: IteratorOptions | null): Buffer
  /** Detaches every link this object made; programs and maps stay loaded. */
  detachAll(): void
  /**
   * Stops the object's buffers (no callback runs after this returns),
   * detaches every link and frees every program and map. Returns at once:
   * the kernel's part runs on another thread (`closeAsync()` says when it
   * is done). Every later call on the object throws ERR_BPF_CLOSED.
   */
  close(): void
  /** `close()`, and a promise that resolves once the kernel has released everything the object held. */
  closeAsync(): Promise<void>
}

/**
 * The types of one BPF object, as `npx node-libbpf types prog.bpf.o` writes
 * them: its maps' keys and values, its globals, and its structs by name.
 */
export interface ObjectTypes {
  maps: Record<string, { key: unknown; value: unknown }>
  globals: Record<string, unknown>
  structs: Record<string, unknown>
  /** The programs, by C function name (older generated files have none: any name then type-checks). */
  programs?: Record<string, unknown>
}

/** The program names of an object's types: what attach calls and `programs` take. */
export type ProgramName<T extends ObjectTypes> = T extends { programs: infer P } ? keyof P & string : string

/** A value as `set` takes it: any field may be left out (zero). */
export type Settable<T> = T extends bigint
  ? bigint | number
  : T extends Buffer | string | number | boolean
    ? T
    : T extends Array<infer E>
      ? Array<Settable<E>>
      : T extends object
        ? { [K in keyof T]?: Settable<T[K]> }
        : T

/** A map whose key and value types are known. */
export interface TypedMap<K, V, S extends Record<string, unknown> = Record<string, unknown>> extends BpfMap {
  get(key: Settable<K>): V | undefined
  getBytes(key: Settable<K>): Buffer | undefined
  has(key: Settable<K>): boolean
  set(key: Settable<K>, value: Settable<V> | Array<Settable<V>>): void
  delete(key: Settable<K>): boolean
  keys(): K[]
  values(): V[]
  entries(): Array<[K, V]>
  getBatch(): Array<[K, V]>
  lookupAndDeleteBatch(): Array<[K, V]>
  [Symbol.iterator](): Iterator<[K, V]>
  openRingBuffer<N extends keyof S & string>(callback: (record: S[N]) => void, options: RingBufferOptions & { type: N }): EventBuffer
  /** Raw records: no `type` (a name that is not one of the object's structs is a type error, not a Buffer). */
  openRingBuffer(callback: (record: Buffer) => void, options?: RingBufferOptions & { type?: undefined }): EventBuffer
  openPerfBuffer<N extends keyof S & string>(
    callback: (cpu: number, record: S[N]) => void,
    options: PerfBufferOptions & { type: N },
  ): EventBuffer
  /** Raw records: no `type` (a name that is not one of the object's structs is a type error, not a Buffer). */
  openPerfBuffer(callback: (cpu: number, record: Buffer) => void, options?: PerfBufferOptions & { type?: undefined }): EventBuffer
}

/** A BPF object whose types are known (`loadBpfProgram<Types>(...)`). */
export interface TypedBpfObject<T extends ObjectTypes> extends BpfObject<ProgramName<T>> {
  getMap<N extends keyof T['maps'] & string>(
    name: N,
    options?: DecodeOptions,
  ): TypedMap<T['maps'][N]['key'], T['maps'][N]['value'], T['structs']>
  getGlobalVariable<N extends keyof T['globals'] & string>(name: N, options?: DecodeOptions): T['globals'][N]
  setGlobalVariable<N extends keyof T['globals'] & string>(name: N, value: Settable<T['globals'][N]>): void
}

/**
 * Opens a compiled BPF ELF object (a path or a Buffer holding the file).
 * Nothing enters the kernel until `load()`, an attach or `getMap()`. With
 * the types that `npx node-libbpf types prog.bpf.o` writes,
 * `loadBpfProgram<Types>(...)` types its maps, globals and records.
 */
export declare function loadBpfProgram<T extends ObjectTypes = never>(
  source: string | Buffer,
  options?: LoadOptions | null,
): [T] extends [never] ? BpfObject : TypedBpfObject<T>

/** The parts of a monitor (`bpf.monitor(options)`): each on (`true`) or off. */
export interface MonitorOptions {
  /** Per-syscall counts, errors and latency histograms (every syscall of the machine takes the tracepoint's slow path: opt-in). */
  syscalls?: boolean
  /** The main thread's libuv phases as histograms (uprobes on their entries: ~6 µs per loop iteration here; opt-in). */
  eventLoop?: boolean
  /** The main thread's time off the CPU by syscall or preemption, and its blocked intervals (default on). */
  offCpu?: boolean
  /** Files opened, top N, with errors (the syscall tracepoints: opt-in). */
  files?: boolean
  /** Endpoints connected to, top N, with errors (the syscall tracepoints: opt-in). */
  connects?: boolean
  /** TCP segments retransmitted on this process's sockets, by remote endpoint (default on). */
  tcpRetransmits?: boolean
  /** How many files, endpoints and retransmit endpoints a read gives (the most counted): 1 to 4096 (default 20). */
  top?: number
}

/** A histogram as the monitor reads it: cumulative counts at each of `Monitor.BUCKET_BOUNDS`. */
export interface MonitorHistogram {
  count: number
  /** Seconds, summed. */
  sum: number
  /** `buckets[k]`: how many were at most `Monitor.BUCKET_BOUNDS[k]` seconds (every bound, always). */
  buckets: number[]
}

/** What `monitor.read()` returns: counts since the monitor started, for the parts it has. */
export interface MonitorSnapshot {
  syscalls?: Array<{ syscall: string; count: number; errors: number; duration: MonitorHistogram }>
  eventLoop?: Array<{ phase: 'pending' | 'idle' | 'prepare' | 'poll' | 'check' | 'timers'; duration: MonitorHistogram }>
  offCpu?: {
    /** By the syscall the main thread slept in, `preempted` or `other` (asleep outside a syscall). */
    reasons: Array<{ reason: string; count: number; seconds: number }>
    /** Off-CPU intervals but the poll phase's epoll waits: the loop could not run. */
    blocked: MonitorHistogram
    /** The poll phase's epoll waits: nothing to do. */
    idle: MonitorHistogram
  }
  files?: Array<{ path: string; count: number; errors: number }>
  connects?: Array<{ endpoint: string; count: number; errors: number }>
  tcpRetransmits?: Array<{ endpoint: string; segments: number }>
  /**
   * For the parts on, the inserts a table in the kernel refused because it
   * was full (`monitor.tableSizes`): those calls or segments went uncounted.
   */
  tableOverflows?: { files?: number; connects?: number; tcpRetransmits?: number; listeningPorts?: number }
}

/** An OpenTelemetry MetricProducer (`@opentelemetry/sdk-metrics`), structurally. */
export interface MonitorMetricProducer {
  collect(options?: { timeoutMillis?: number }): Promise<{ resourceMetrics: any; errors: unknown[] }>
}

/** A prom-client Registry, structurally. */
export interface PromRegistry {
  registerMetric(metric: any): void
}

/** The in-process monitor: this process's own kernel-level behaviour, counted in the kernel. */
export declare class Monitor {
  /** Every bucket bound of every histogram, in seconds: 2^k µs, k = 0..26. */
  static readonly BUCKET_BOUNDS: readonly number[]
  static readonly PARTS: readonly string[]
  /** The parts on unless turned off. */
  static readonly DEFAULT_PARTS: readonly string[]
  private constructor()
  /** The parts this monitor counts. */
  get parts(): string[]
  /** The libuv phases found and traced. */
  get phases(): string[]
  get closed(): boolean
  /** Whether its programs are attached (not paused). */
  get attached(): boolean
  /** How many keys each table of the parts on holds in the kernel (`files`, `connects`: 4,096). */
  get tableSizes(): { files?: number; connects?: number; tcpRetransmits?: number; listeningPorts?: number }
  /** Everything counted since it started (cumulative). */
  read(): MonitorSnapshot
  /** Detaches its programs; counts stay. */
  pause(): void
  /** Attaches them again. */
  resume(): void
  /** Registers `node_libbpf_*` metrics in a prom-client registry; returns their names. */
  registerPrometheus(registry: PromRegistry): string[]
  /** An OpenTelemetry MetricProducer of `node_libbpf.*` metrics, for a MetricReader's `metricProducers`. */
  metricProducer(): MonitorMetricProducer
  /** Detaches and frees everything. */
  close(): void
  closeAsync(): Promise<void>
}

/** Starts monitoring this process (needs root, or CAP_BPF + CAP_PERFMON). */
export declare function monitor(options?: MonitorOptions): Monitor

/** Options of `bpf.profile()`. */
export interface ProfileOptions {
  /** CPU samples per second per CPU, an integer from 1 to 1000 (default 99; the kernel's tick, the default clock on x86_64 and arm64, gives the nearest CONFIG_HZ / N; given, it takes cpu-clock at exactly this rate). */
  frequency?: number
  /** Whether windows also record the main thread's off-CPU stacks (default true). */
  offCpu?: boolean
  /** The shortest off-CPU interval recorded, in seconds (default 0.001). */
  minOffCpu?: number
  /** Whether the event loop's idle epoll waits count as off-CPU time (default false). */
  idle?: boolean
  /** The threads CPU samples are taken of: 'all' (default: a cpu-clock event on every CPU, filtered to this process) or 'main' (one event that follows the main thread: no timer on the CPUs it is not on). */
  threads?: 'all' | 'main'
  /** What takes the CPU samples: 'auto' (default: 'tick' on x86_64 and arm64 where it can, unless `frequency` is given; else 'cpu-clock'; the window's notes say which), 'cpu-clock' (a perf event's timer, at `frequency` exactly) or 'tick' (the kernel's own tick, every Nth: CONFIG_HZ / N nearest `frequency`, 83.3 Hz for 99 at HZ=250; no timer interrupt of the profiler's own, whose cost on a VM is most of a sample's; needs /proc/kallsyms's addresses and no nohz_full CPUs, else ERR_BPF_NOT_SUPPORTED). */
  clock?: 'auto' | 'cpu-clock' | 'tick'
  /** Whether the main thread's preempted intervals (runnable, waiting for a CPU) are recorded by stack (default false: a stack walk at every preemption; only their count and time, in the window's `preempted` and its notes). */
  preempted?: boolean
  /** What runs the off-CPU program: 'sched_switch' (default), the tracepoint (every switch of the machine), or 'context-switches', a perf event of the main thread alone (its own switches only, each paying perf's per-task context switch: the cheaper where the machine switches ~10x as often as the main thread; needs CONFIG_SCHED_INFO and the profiler on the main thread). */
  offCpuEvent?: 'context-switches' | 'sched_switch'
  /** The longest window, in seconds (default 300). */
  maxSeconds?: number
  /** Whether JavaScript frames are walked in the kernel and named from V8's own data, no node flags needed (default true); false: from the perf map alone. */
  v8?: boolean
  /** Whether JavaScript frames are put at their original places through their scripts' source maps (`//# sourceMappingURL=`: a file or an inline base64 data: URL), in pprof, folded stacks and `.cpuprofile` (default true). */
  sourceMaps?: boolean
  /** OpenTelemetry's trace context on the samples (default false): while a span of @opentelemetry/api is active, labels `trace_id`, `span_id` (hex) and the local root span's `http.route` (true), or the attributes named (`'tenant'`, `['http.route', 'tenant']`), read when the window is; needs `npm install @opentelemetry/api`, else ERR_BPF_NOT_SUPPORTED. */
  traceContext?: boolean | string | string[]
}

/** A frame of a profile's stack. */
export interface ProfileFrame {
  name: string
  /** `kernel`, `native`, `js` (named from V8's data or the perf map), `jit` (JIT code without a JS name), `lost` */
  kind: 'kernel' | 'native' | 'js' | 'jit' | 'lost'
  /** A JavaScript function's file and line (from V8's data, or the perf map); its column (V8's data). */
  file?: string
  line?: number
  column?: number
  /** A JavaScript frame named from V8's data: its tier (`interpreted`, `baseline`, `maglev`, `turbofan`, `builtin`, `stub`, `unnamed`). */
  tier?: string
  /** A JavaScript frame named from V8's data without its line (or its name), or one its source map could not place: why. */
  reason?: string
  /** A JavaScript frame placed by its source map: where it was in the generated script. */
  generated?: { file: string; line: number; column?: number }
  /** The functions inlined at this frame's address, innermost first. */
  inlined?: ProfileFrame[]
  module?: string
  address?: number
}

/** One stack of a window: its thread and its weight. */
export interface ProfileStack {
  /** The thread's id (as this process sees it), name and kind (`main`, `libuv pool`, `V8 worker`, `node-libbpf`, ...). */
  tid: number
  thread: string
  threadKind: string
  /** CPU: samples; off CPU: intervals. */
  count: number
  /** Off CPU: the time off the CPU, in nanoseconds. */
  ns?: number
  /** Off CPU: `blocked` (it slept) or `preempted` (it waited for a CPU). */
  state?: 'blocked' | 'preempted'
  /** Innermost first: kernel frames, then user frames. */
  frames: ProfileFrame[]
  /** The indices in `frames` of native frames that ran without a frame of their own, on the frame of the JavaScript function after them (a builtin it called). */
  frameless?: number[]
  /** The request labels the stack ran under (`withLabels`), taken as it was sampled; `{}` when none. */
  labels: ProfileLabels
}

/** Request labels: name (an identifier) -> a string of at most 256 characters or a finite number. */
export type ProfileLabels = Record<string, string | number>

export type ProfileKind = 'cpu' | 'offCpu'

/** The stacks of one window of `profiler.collect()`. */
export declare class ProfileWindow {
  startNs: bigint
  durationNs: number
  /** The CPU time a sample stands for, in ns: 1e9 / frequency. */
  periodNs: number
  /** The CPU samples' rate, per CPU: the one asked for (cpu-clock), or CONFIG_HZ / N (the kernel's tick: 83.33 at HZ=250). */
  frequency: number
  /** Whether this process has a perf map (JavaScript names). */
  perfMap: boolean
  dropped: { samples: number; offCpu: number }
  /** (preempted: false) The main thread's preempted intervals of minOffCpu or more, counted without their stacks: how many, and their time in ns. */
  preempted?: { count: number; ns: number }
  /** What the profile's comments say (pprof `comment`). */
  notes: string[]
  cpu: ProfileStack[]
  offCpu: ProfileStack[]
  /** The window as gzipped pprof (`go tool pprof`, Pyroscope, Parca). */
  pprof(kind?: ProfileKind): Buffer
  /** The window as OTLP profiles (an encoded ExportProfilesServiceRequest, profiles v1development): one kind, or 'all' (two profiles). */
  otlp(kind?: ProfileKind | 'all', options?: { serviceName?: string; attributes?: Record<string, string | number | boolean> }): Buffer
  /** Folded stacks (`thread;outer;...;inner value`): samples, or µs off CPU; `labels` puts the stack's labels (all, or those named) first (`route=/a;thread;...`). */
  folded(kind?: ProfileKind, options?: { labels?: boolean | string[] }): string
  /** A flame graph (SVG). */
  flameGraph(kind?: ProfileKind, options?: FlameGraphOptions & { labels?: boolean | string[] }): string
  /**
   * The window as a `.cpuprofile` (the JSON `node --cpu-prof` writes: Chrome DevTools, VS Code, speedscope): the main
   * thread's stacks (default), every thread's under a node each (`thread: 'all'`), or one thread's (its tid). The
   * samples are laid out stack by stack a sampling period apart (off CPU: 1 ms each): totals are right, the order in
   * time is not kept. `JSON.stringify` it to a `.cpuprofile` file.
   */
  cpuprofile(kind?: ProfileKind, options?: { thread?: 'main' | 'all' | number }): CpuProfile
}

/** A `.cpuprofile`: V8's Profiler.Profile (times in µs; lineNumber and columnNumber 0-based, -1 where none). */
export interface CpuProfile {
  nodes: {
    id: number
    callFrame: { functionName: string; scriptId: string; url: string; lineNumber: number; columnNumber: number }
    hitCount: number
    children: number[]
    /** The lines (1-based) of the node's own samples. */
    positionTicks?: { line: number; ticks: number }[]
  }[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

/** A running push (`profiler.push()`). */
export interface ProfilePush {
  readonly pushed: number
  readonly errors: number
  /** Ends the window, pushes it, resolves when done. */
  stop(): Promise<void>
}

/** Profiles of this process (`bpf.profile()`); see docs/service.md, Profiles. */
export declare class Profiler {
  readonly options: Required<ProfileOptions>
  readonly closed: boolean
  /** Whether a window is being collected. */
  readonly busy: boolean
  /** Samples for `seconds` (0 < seconds <= maxSeconds); ERR_BPF_BUSY while another window runs. */
  collect(options: { seconds: number; signal?: AbortSignal }): Promise<ProfileWindow>
  /** A handler of `GET {prefix}/profile?seconds=N` and `{prefix}/offcpu?seconds=N` (prefix `/debug/pprof`; `&format=cpuprofile` for a `.cpuprofile`, `&thread=all` or a tid): true if it answered. */
  handler(options?: { prefix?: string; defaultSeconds?: number }): (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => boolean
  /** Pushes a window every `every` seconds (default 15) to Pyroscope's `POST {url}/ingest`, and/or as OTLP to `POST {otlp}/v1development/profiles` (`otlp` with a path: as given). */
  push(options: { url?: string; otlp?: string; name: string; labels?: Record<string, string>; every?: number; kinds?: ProfileKind[]; headers?: Record<string, string>; onError?: (err: Error) => void }): ProfilePush
  /** Ends any window or push, detaches and frees everything. */
  close(): void
  /** `bpf.withLabels`: runs `fn(...args)` with `labels` over the current ones (they follow awaits, timers, callbacks). */
  withLabels: typeof withLabels
  /** `bpf.setLabels`: `labels` over the current ones for the rest of this async context (AsyncLocalStorage's enterWith). */
  setLabels: typeof setLabels
  /** `bpf.getLabels`: the current labels (frozen; `{}`: none). */
  getLabels: typeof getLabels
}

/** Runs `fn(...args)` with `labels` over the current ones and returns its result; profile samples of it (and of what it awaits, its timers and callbacks) carry them. */
export declare function withLabels<R, A extends unknown[]>(labels: ProfileLabels, fn: (...args: A) => R, ...args: A): R
/** Sets `labels` over the current ones for the rest of the current async context (AsyncLocalStorage's enterWith). */
export declare function setLabels(labels: ProfileLabels): void
/** The current labels, a frozen object (`{}`: none). */
export declare function getLabels(): Readonly<ProfileLabels>

/** Starts a profiler of this process (needs root, or CAP_BPF + CAP_PERFMON); nothing samples until a window. */
export declare function profile(options?: ProfileOptions): Profiler

/**
 * Sets the `node_libbpf_tids` global (bpf/node_libbpf.bpf.h) of an object
 * not loaded yet to node-libbpf's own threads; returns their tids as the
 * kernel knows them (in a pid namespace, not those of `libraryThreads()`).
 */
export declare function excludeLibraryThreads(obj: BpfObject): number[]

/**
 * The pid BPF programs see (`bpf_get_current_pid_tgid() >> 32`, the initial
 * pid namespace's) of process `pid` as this process sees it: the same on the
 * host; in a container, `kernelPid(process.pid)` is what a program's
 * `target_pid` compares. ENOENT if no such process is visible here.
 */
export declare function kernelPid(pid: number): number

/**
 * The kernel's ids of process `pid` (see `kernelPid`): `tgid`, and `tids`
 * mapping each of its threads' ids here to the kernel's.
 */
export declare function kernelIds(pid: number): { tgid: number; tids: Map<number, number> }

/**
 * The path of a BPF object the package ships, compiled for `arch` (`x86`
 * or `arm64`, or Node's `x64`; default: this process's):
 * `objectPath('syscall_hist')` -> `.../node-libbpf/bpf/x86/syscall_hist.bpf.o`.
 * A name the package does not ship is an `ENOENT` error that lists them.
 */
export declare function objectPath(name: string, options?: { arch?: 'x86' | 'arm64' | 'x64' }): string

/** The names of the BPF objects the package ships for `arch` (default: this process's). */
export declare function objectNames(options?: { arch?: 'x86' | 'arm64' | 'x64' }): string[]
