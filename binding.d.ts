/** How the codec reads a BTF type (see `BpfObject.typeLayout`). */
export type TypeLayout =
  | { kind: 'int'; size: number; signed: boolean }
  | { kind: 'bool' | 'float' | 'ptr' | 'string' | 'bytes'; size: number }
  | { kind: 'enum'; name: string; size: number; signed: boolean; values: Array<[string, number]> }
  | { kind: 'array'; size: number; len: number; elem: TypeLayout }
  | { kind: 'stack'; size: number; len: number }
  | { kind: 'flex'; size: 0; elem: TypeLayout }
  | {
      kind: 'struct' | 'union'
      name: string
      size: number
      fields: Array<{ name: string; offset: number; bitOffset?: number; bitSize?: number; type: TypeLayout }>
    }

/**
 * Which binding artifact the generated loader actually loaded: `'native'` for
 * a native addon, otherwise the `platformArchABI` of the WASI flavor. Every
 * flavor napi-rs can build is listed, because `NAPI_RS_NATIVE_LIBRARY_PATH`
 * can point the loader at a WASI artifact this package does not build itself.
 */
export declare const __napiBindingTarget: 'native' | 'wasm32-wasi' | 'wasm32-wasip1'

/** An attachment of a program; `detach()` removes it from the kernel. */
export declare class BpfLink {
  /** Detaches (idempotent; `obj.close()` and `obj.detachAll()` detach too). */
  detach(): void
  /** Whether the link is still in the kernel. */
  get attached(): boolean
  /** What the program is attached to, e.g. `tracepoint syscalls:sys_enter_openat`. */
  get target(): string
}

/**
 * A program of an object, as `obj.programs.<name>`; attach calls take it
 * (or its name).
 */
export declare class BpfProgram {
  /**
   * Before load: the kernel function (or, for `tp_btf`, the tracepoint)
   * an fentry, fexit, fmod_ret, tp_btf or lsm program attaches to, in place
   * of the one its `SEC()` names (libbpf's `bpf_program__set_attach_target`).
   * One program then serves whichever of several functions this kernel has,
   * as libbpf-tools' cachestat does with `fentryCanAttach`. Throws
   * ERR_BPF_UNKNOWN_NAME when the kernel's BTF has no such function,
   * ERR_INVALID_ARG_TYPE for other kinds of program (they take their
   * target when they attach: `attachKprobe(func, prog)`), ERR_BPF_READ_ONLY
   * once the object is loaded.
   */
  setAttachTarget(funcName: string): void
  /** The C function name. */
  get name(): string
  /** The ELF section (`SEC("...")`), e.g. `tp/syscalls/sys_enter_openat`. */
  get section(): string
  /**
   * What the kernel counts for this program (loads the object if it is
   * not loaded yet).
   */
  get stats(): ProgramStats
  /**
   * Whether the program goes into the kernel when the object loads
   * (default true; false for `SEC("?...")` programs). A program that is
   * not loaded cannot be attached: how an object carries fallbacks for
   * other kernels, loading only the ones the running kernel can take.
   */
  get autoload(): boolean
  /** Sets `autoload`, before the object loads (ERR_BPF_READ_ONLY after). */
  set autoload(autoload: boolean)
}

/** The native side of an open ring or perf buffer (lib/core/buffer.js wraps it). */
export declare class NativeBuffer {
  /** Stops delivery and frees the buffer (idempotent; returns at once). */
  close(): void
  /** Whether an open buffer keeps the process alive. */
  setRef(keepAlive: boolean): void
  /**
   * The dispatcher yields to the event loop with records left: no more
   * doorbell calls until `resume()` (records wait in the ring, then in the
   * poller's queue, then are dropped and counted).
   */
  pause(): void
  /** The dispatcher has caught up: hand it what is queued. */
  resume(): void
  /**
   * Copies the records waiting for JavaScript into the dispatcher's own
   * buffers, which it reuses from call to call: their bytes into `data`,
   * the end offset of each into `ends`, their CPUs into `cpus` (perf
   * buffers). Returns how many records it copied (0: none wait), or,
   * negative, minus the bytes `data` needs to hold the next record.
   */
  fill(data: Uint8Array, ends: Uint32Array, cpus?: Uint32Array | undefined | null): number
  /**
   * Records lost so far: dropped because JavaScript fell behind, or (perf
   * buffers) by the kernel because the buffer was full.
   */
  get lost(): number
  /**
   * The part of `lost` that the library dropped because JavaScript fell
   * behind (its queue full); the rest the kernel could not write.
   */
  get dropped(): number
}

/**
 * The native side of a map of a loaded object (lib/core/map.js wraps it in
 * `BpfMap`). Per-CPU values cross as one Buffer of one value per possible
 * CPU, back to back.
 */
export declare class NativeMap {
  /** The map's name, type, sizes and layouts. */
  get info(): MapInfo
  /** Whether values are per CPU (one per possible CPU). */
  get perCpu(): boolean
  /** Whether entries cannot be deleted (array maps). */
  get isArray(): boolean
  /** The bytes stored at `key`, or null. */
  lookup(key: Buffer): Buffer | null
  /**
   * Stores `value` (for per-CPU maps: one value per possible CPU, back to
   * back) at `key`.
   */
  update(key: Buffer, value: Buffer): void
  /** Deletes `key`; returns whether it was there. */
  delete(key: Buffer): boolean
  /** Every key, back to back in one Buffer. */
  keys(): Buffer
  /** Every entry: `[keys, values]`, each back to back in one Buffer. */
  entries(): [Buffer, Buffer]
  /** How many keys the map holds. */
  count(): number
  /** Removes every entry (array maps: sets every value to zero). */
  clear(): void
  /**
   * Every entry of a hash map read with the batch syscall: `[keys,
   * values]`; with `remove`, emptied as it is read.
   */
  batch(remove: boolean): [Buffer, Buffer]
  /**
   * Streams the records of a BPF_MAP_TYPE_RINGBUF map to `dispatch`
   * (lib/core/dispatch.js), a batch per call.
   */
  openRingBuffer(dispatch: (data: Buffer, ends: Uint32Array, cpus: Uint32Array | null, losses: number[] | null) => void, options?: BufferOptions): NativeBuffer
  /**
   * Streams the records of a BPF_MAP_TYPE_PERF_EVENT_ARRAY map to
   * `dispatch`, a batch per call, with the CPU of each record.
   */
  openPerfBuffer(dispatch: (data: Buffer, ends: Uint32Array, cpus: Uint32Array | null, losses: number[] | null) => void, options?: BufferOptions): NativeBuffer
  /**
   * Copies the bytes of a BPF_F_MMAPABLE array map from `offset` into
   * `target` (all of it), through a mapping of the map into this process:
   * no syscall once mapped (the first call maps it). Values are
   * `valueSize` rounded up to 8 bytes apart. Counters the kernel is
   * bumping meanwhile are read as they are at that instant, each 8-byte
   * word whole. `offset`: an integer from 0 (checked, not wrapped).
   */
  readMapped(target: Buffer, offset: number): void
}

/**
 * The native side of a BPF object (lib/core/object.js wraps it in `BpfObject`).
 * Every method is one crossing; values cross as bytes (Buffers) and
 * layouts as data, and the JavaScript side encodes and decodes them.
 */
export declare class ObjectHandle {
  /**
   * Attaches a program to the entry of kernel function `funcName`. The
   * article's names (`sys_enter_openat`, `sys_exit_openat`) attach to the
   * syscall's function through libbpf's ksyscall, which finds its name on
   * this kernel (`__x64_sys_openat`, `__arm64_sys_openat`, ...): the link's
   * target is then `ksyscall openat`. On a kernel without kprobes this
   * throws ENOTSUP naming the tracepoint to use instead.
   */
  attachKprobe(funcName: string, prog: BpfProgram | string, options?: AttachOptions | undefined | null): BpfLink
  /**
   * Attaches a program to the return of kernel function `funcName` (see
   * `attachKprobe`).
   */
  attachKretprobe(funcName: string, prog: BpfProgram | string, options?: AttachOptions | undefined | null): BpfLink
  /**
   * Attaches a `SEC("tp/...")` program to the tracepoint `category:name`
   * (e.g. `syscalls`, `sys_enter_openat`). tracefs must be mounted
   * (node-libbpf never mounts it; ERR_BPF_TRACEFS says how). The
   * `cookie` tells attachments of one program apart
   * (`bpf_get_attach_cookie()`).
   */
  attachTracepoint(category: string, name: string, prog: BpfProgram | string, options?: AttachOptions | undefined | null): BpfLink
  /**
   * Attaches a `SEC("raw_tp/...")` program to the raw tracepoint `name`
   * (e.g. `sys_enter`, `sched_switch`); `cookie` needs kernel 6.10+.
   */
  attachRawTracepoint(name: string, prog: BpfProgram | string, options?: AttachOptions | undefined | null): BpfLink
  /**
   * Attaches a program to the entry of a function of a user-space binary
   * or library, by symbol name or by file offset.
   */
  attachUprobe(binaryPath: string, symbolOrOffset: string | number, prog: BpfProgram | string, options?: UprobeOptions | undefined | null): BpfLink
  /**
   * Attaches a program to the return of a user-space function (see
   * `attachUprobe`).
   */
  attachUretprobe(binaryPath: string, symbolOrOffset: string | number, prog: BpfProgram | string, options?: UprobeOptions | undefined | null): BpfLink
  /**
   * Attaches a `SEC("uprobe.multi")` program to many functions of one
   * binary at once (kernel 6.6+): those matching a glob (`pthread_mutex_*`)
   * or a list of symbols, with one cookie per symbol. One link for all of
   * them: attaching and detaching cost one operation, not one per probe.
   */
  attachUprobeMulti(binaryPath: string, symbols: string | string[], prog: BpfProgram | string, options?: UprobeMultiOptions | undefined | null): BpfLink
  /**
   * Attaches a `SEC("usdt")` program to the USDT probe `provider:name` of a
   * binary.
   */
  attachUsdt(binaryPath: string, provider: string, name: string, prog: BpfProgram | string, options?: UprobeOptions | undefined | null): BpfLink
  /**
   * Attaches a `SEC("perf_event")` program to a sampling perf event: one
   * event per online CPU unless `cpu` or `pid` narrows it.
   */
  attachPerfEvent(prog: BpfProgram | string, options?: PerfEventOptions | undefined | null): BpfLink
  /**
   * Attaches a program by its `SEC()` name, as libbpf's auto-attach does
   * (`tp/syscalls/sys_enter_openat`, `uprobe/path:func`, `raw_tp/...`).
   */
  attach(prog: BpfProgram | string): BpfLink
  /**
   * Writes the bytes of a global variable (lib/core/object.js encodes them from
   * its layout). `const volatile` globals (`.rodata`) only before load;
   * `.data`/`.bss` globals any time.
   */
  writeGlobal(name: string, bytes: Buffer): void
  /** The bytes of a global variable (after load: the kernel's current value). */
  readGlobal(name: string): Buffer
  /**
   * The object's global variables: name, ELF section, size, type and
   * layout.
   */
  get globals(): Array<GlobalInfo>
  /**
   * Runs a `SEC("iter/<target>")` program (task, task_file, tcp, udp,
   * bpf_map, ...: the targets that need no map or cgroup) once over what it
   * iterates and returns what it wrote. The program runs in this thread's
   * context (`bpf_get_current_task()` is the caller). Linux 5.8+.
   */
  readIterator(prog: BpfProgram | string, options?: IteratorOptions | undefined | null): Buffer
  /** A map by name (loads the object if it is not loaded yet). */
  map(name: string): NativeMap
  /**
   * Whether the map is made when the object loads (default true). A map
   * of a type the kernel lacks (task storage before 5.11) is left out this
   * way, with the programs that use it left out or branching around it.
   * Only before load (ERR_BPF_READ_ONLY after).
   */
  setMapAutocreate(name: string, autocreate: boolean): void
  /**
   * The object's maps (data-section maps excluded) with their types and
   * layouts; no load needed.
   */
  get maps(): Array<MapInfo>
  /** Loads every program and map into the kernel (the verifier runs here). */
  load(): void
  /** Whether the object is in the kernel. */
  get loaded(): boolean
  /** Whether `close()` was called. */
  get closed(): boolean
  /** The file name, or `<buffer>`. */
  get source(): string
  /** The programs, keyed by their C function name, in ELF order. */
  get programs(): Record<string, BpfProgram>
  /** The names of the object's maps (data-section maps excluded). */
  get mapNames(): Array<string>
  /**
   * The layout of a named struct, union, enum or typedef of the object's
   * BTF (`'event'` or `'struct event'`).
   */
  typeLayout(name: string): TypeLayout
  /**
   * The names of the structs, unions, enums and typedefs of the object's
   * BTF (its own types and the kernel types it uses).
   */
  typeNames(): Array<string>
  /** Detaches every link this object made; programs and maps stay loaded. */
  detachAll(): void
  /**
   * Stops the object's buffers at once and releases what it holds in the
   * kernel (links, programs, maps) on another thread: returns at once,
   * however many links there are. Idempotent.
   */
  close(): void
  /**
   * `close()`, and a promise that resolves once the kernel has released
   * everything the object held (after an earlier `close()` too).
   */
  closeAsync(): Promise<void>
}

/**
 * Turns addresses into function names, caching what it has parsed
 * (symbol tables, DWARF, perf maps) across calls.
 */
export declare class Symbolizer {
  constructor()
  /**
   * Names of kernel addresses (from /proc/kallsyms, read at the first
   * call unless `preloadKernel()` has read it).
   */
  kernel(addresses: Array<bigint>): Array<Frame>
  /**
   * Reads /proc/kallsyms on the libuv thread pool, for the `kernel()`
   * calls to come (a profile's first pull reads it there after its window,
   * not on the JS thread): resolves once it is read (at once if it is).
   */
  preloadKernel(): Promise<void>
  /**
   * Names of user-space addresses of process `pid`: ELF symbols of its
   * binaries and libraries, and JIT frames from /tmp/perf-<pid>.map
   * (node --perf-basic-prof). The process must still be running. A file
   * of the process that is no regular ELF file (or over 1 GiB), or a perf
   * map that is no regular file, leaves its addresses unnamed; malformed
   * perf map lines are skipped, and of a map over 64 MiB the last 64 MiB
   * are read. `perfMapEnd`: the byte length of the perf map to read
   * (`perfMapSize(pid)` taken when a profile window ended: code compiled
   * after it, which can reuse a sampled address, does not name it);
   * without it, all of the map.
   */
  process(pid: number, addresses: Array<bigint>, perfMapEnd?: number | undefined | null): Array<Frame>
  /**
   * The size of process `pid`'s perf map now, in bytes (0 without one):
   * the `perfMapEnd` of a window that ends now. Once the process has
   * exited, of /tmp/perf-PID.map here (as `perfMap`).
   */
  perfMapSize(pid: number): number
  /**
   * JIT frames of process `pid` from its perf map alone (a frame without
   * a name where no line covers the address), as `process` reads it, up
   * to `perfMapEnd` bytes; the process need not run: once it has exited,
   * /tmp/perf-PID.map here (node leaves it behind) is read.
   */
  perfMap(pid: number, addresses: Array<bigint>, perfMapEnd?: number | undefined | null): Array<Frame>
}

/**
 * Panics inside `guard`: lets the test suite check that a Rust panic
 * reaches JavaScript as an ERR_BPF_INTERNAL error, not as an abort.
 */
export declare function __panicForTests(): void

/**
 * Options of `attachKprobe`, `attachKretprobe`, `attachTracepoint` and
 * `attachRawTracepoint`.
 */
export interface AttachOptions {
  /**
   * Value for `bpf_get_attach_cookie()`: a bigint from 0n to 2n ** 64n - 1n,
   * or a safe integer number (default 0).
   */
  cookie?: bigint | number
}

/**
 * How the addon consumes a buffer (lib/core/map.js passes these on from the
 * options of `openRingBuffer`/`openPerfBuffer`). Numbers, checked here
 * (src/options.rs has the ranges), never wrapped by a u32 conversion.
 */
export interface BufferOptions {
  /**
   * Milliseconds between passes when the program submits without wakeups
   * (BPF_RB_NO_WAKEUP) or while events stream in (default 10; 1 to 60000).
   */
  pollInterval?: number
  /**
   * How many batches may wait for JavaScript before records are dropped
   * and counted as lost (default 64, at most 65536; and never more than
   * 16 MiB).
   */
  queueSize?: number
  /**
   * Perf buffers: pages of the buffer of each CPU, a power of two
   * (default 256: 1 MiB; at most 8192).
   */
  pageCount?: number
  /**
   * Perf buffers: the reader is woken when a CPU's buffer holds this many
   * bytes (default: a quarter of it; at most all of it).
   */
  wakeupBytes?: number
}

/**
 * The byte offset of member `member` in struct `structName`, from the DWARF
 * of an ELF file (e.g. `runtime.g` and `goid` in a Go binary). A C++ struct
 * or class is found by its qualified name (`ns::Foo`) or its bare name
 * (`Foo`).
 */
export declare function dwarfMemberOffset(path: string, structName: string, member: string): number

/** A function symbol of an ELF file. */
export interface ElfSymbol {
  name: string
  /** The virtual address in the file. */
  address: bigint
  /** Where the function is in the file (what uprobes attach at). */
  fileOffset?: bigint
  size?: number
}

/**
 * The function symbols of an ELF binary or library (symtab and dynsym,
 * defined ones, each name once), e.g. to attach a uprobe to every
 * `pthread_mutex_*` of libc.
 */
export declare function elfSymbols(path: string): Array<ElfSymbol>

/**
 * The name of an errno, kernel-internal ones included (`ERESTARTSYS`,
 * which a syscall's exit tracepoint can see): `errnoName(115)` and
 * `errnoName(-115)` are `EINPROGRESS`; null when it has none.
 */
export declare function errnoName(errno: number): string | null

/** Probes the running kernel for what node-libbpf can use on it. */
export declare function features(): Features

/**
 * What the running kernel supports, found by asking it (loading tiny
 * programs, creating maps, looking at sysfs and tracefs), not from its
 * version number.
 */
export interface Features {
  /** The kernel's own BTF (/sys/kernel/btf/vmlinux): CO-RE works. */
  btf: boolean
  /**
   * The kernel has tracepoints (tracefs is mounted, or the kernel has it:
   * /proc/filesystems); `notPermitted` says when this process may not
   * attach them, `notes` when tracefs is not mounted.
   */
  tracepoints: boolean
  /**
   * Where tracefs is mounted (`/sys/kernel/tracing`), when it is;
   * undefined when it is not (features() never mounts it).
   */
  tracefs?: string
  /** kprobes and kretprobes (CONFIG_KPROBES). */
  kprobes: boolean
  /** uprobes and uretprobes. */
  uprobes: boolean
  /** fentry/fexit programs load (some kernels refuse them with EPERM). */
  fentry: boolean
  /** uprobe.multi links (`attachUprobeMulti`). */
  uprobeMulti: boolean
  /** BPF_MAP_TYPE_RINGBUF maps. */
  ringBuffer: boolean
  /** BPF_MAP_TYPE_PERF_EVENT_ARRAY maps. */
  perfBuffer: boolean
  /**
   * Features the kernel has that this process may not use, with the
   * reason (`tracepoints: tracefs is not readable ...`): without CAP_BPF
   * (maps, programs), CAP_PERFMON (tracing), or where tracefs is root's.
   */
  notPermitted: Array<string>
  /**
   * What else to know, with what to do: `tracepoints: tracefs is not
   * mounted ...` (SEC("tp/...") programs need it; node-libbpf never mounts it).
   */
  notes: Array<string>
  /**
   * The capabilities that matter to BPF held by this process:
   * `CAP_BPF`, `CAP_PERFMON`, `CAP_SYS_ADMIN` (root holds all three).
   */
  capabilities: Array<string>
  /**
   * Task storage from tracing programs (BPF_MAP_TYPE_TASK_STORAGE and
   * `bpf_task_storage_get`, Linux 5.11): without it, the syscall tools keep
   * a thread's call in a hash keyed by thread.
   */
  taskStorage: boolean
  /**
   * `bpf_get_attach_cookie` in kprobe, uprobe and tracepoint programs
   * (Linux 5.15): without it, attach calls take no `cookie`, and funccount
   * and trace_event_loop tell their probes apart otherwise.
   */
  attachCookie: boolean
  /** `bpf_loop` (Linux 5.17). */
  bpfLoop: boolean
  /**
   * BPF atomic instructions that return the old value (`x =
   * __sync_fetch_and_add(...)`, Linux 5.12).
   */
  atomicFetch: boolean
  /** The kernel release (uname -r), for messages. */
  release: string
  /** How many values a per-CPU map holds (possible CPUs). */
  possibleCpus: number
}

/**
 * Whether an fentry (or fexit) program can attach to the kernel function
 * `funcName` (of vmlinux), as libbpf-tools' `fentry_can_attach()` asks:
 * the kernel's BTF has it and the kernel loads a tiny fentry program on it.
 * False on kernels that refuse fentry (`features().fentry`). For choosing,
 * before load, between an fentry program (`prog.setAttachTarget(funcName)`)
 * and a kprobe (`kprobeExists`).
 */
export declare function fentryCanAttach(funcName: string): boolean

/**
 * A flame graph (SVG) of folded stacks: one `frame;frame;frame count` per
 * line, root first, as `stackcount --folded` prints them (inferno).
 */
export declare function flameGraph(folded: string, options?: FlameGraphOptions | undefined | null): string

/** Options of `flameGraph`. */
export interface FlameGraphOptions {
  title?: string
  /** What the counts are (default `samples`). */
  countName?: string
}

/** A symbolized address. */
export interface Frame {
  /** The function (demangled); absent when the address has no symbol. */
  name?: string
  /**
   * The file the address is in (a binary, a library, `[kernel]`, the perf
   * map).
   */
  module?: string
  /** The offset of the address in the function. */
  offset: number
  /** The source file and line, when DWARF has them. */
  file?: string
  line?: number
}

/** A global variable of the object. */
export interface GlobalInfo {
  name: string
  /** `.rodata`, `.data`, `.bss`, ... */
  section: string
  size: number
  /** A C spelling of the type: `u32`, `s64`, `bool`, `char[16]`, ... */
  type: string
  /** How the codec reads it. */
  layout: TypeLayout
}

/** Options of `readIterator`. */
export interface IteratorOptions {
  /**
   * At most this many bytes (default 64 MiB): an iterator that writes
   * more is an ERR_BPF_INVALID_VALUE error, not an endless read.
   */
  maxBytes?: number
}

/**
 * The byte offset of member `field` (`self.parent`: names joined by `.`)
 * of the struct or union `typeName` in the running kernel, from its BTF
 * (/sys/kernel/btf/vmlinux, parsed once per process): what a BPF program
 * that reads the kernel's memory without a CO-RE relocation is given
 * before load (bpf/filter.bpf.h's cgroup walk).
 */
export declare function kernelFieldOffset(typeName: string, field: string): number

/**
 * Whether a kprobe can attach to the kernel function `funcName`, as
 * libbpf-tools' `kprobe_exists()` asks: the kernel has kprobes
 * (`features().kprobes`) and lists the function in tracefs's
 * `available_filter_functions` (where tracefs is mounted and readable;
 * else /proc/kallsyms). The list is read once per process.
 */
export declare function kprobeExists(funcName: string): boolean

/**
 * The places in the calling thread's isolate (its first `scan` bytes) of
 * a word that reaches a Map whose table holds the Smi `store` as a value:
 * run inside `als.run(store, ...)`, it finds the CPED slot.
 */
export declare function labelsCalibrate(store: number, scan: number): Array<LabelsCandidate>

/** A place the calibration found the store at. */
export interface LabelsCandidate {
  /** The slot's offset in the isolate. */
  slotOffset: number
  /** The table's offset in the object the slot points to. */
  tableOffset: number
}

/** The calling thread's isolate and thread id. */
export declare function labelsThread(): LabelsThread

/** The calling thread, for the programs: its isolate's address and its thread id. */
export interface LabelsThread {
  /** `v8::Isolate::GetCurrent()` (0: none, or node exports no such symbol). */
  isolate: bigint
  /** `gettid()`, in this process's pid namespace. */
  tid: number
}

/** The address of `word`'s first element (its backing store: V8 does not move it), for the programs to read. */
export declare function labelsWordAddress(word: Int32Array): bigint

/** A thread node-libbpf runs in this process. */
export interface LibraryThread {
  /** `node-libbpf-poller`, `node-libbpf-release` (the thread's comm). */
  name: string
  /**
   * The thread id (`gettid()`) in this process's pid namespace: on the
   * host what BPF's `bpf_get_current_pid_tgid()` has in its low 32 bits;
   * in a container `bpf.kernelIds(process.pid).tids.get(tid)` is that.
   */
  tid: number
}

/**
 * The threads node-libbpf runs in this process, each with its kernel
 * thread id. Starts them first if they are not running yet (they sleep
 * until needed), so that the list is complete and does not change later:
 * a program that leaves these tids out never counts the library's own
 * work (`bpf/node_libbpf.bpf.h` does it on the BPF side).
 */
export declare function libraryThreads(): Array<LibraryThread>

/** Options of `loadBpfProgram`. */
export interface LoadOptions {
  /**
   * The object's name in the kernel (prefix of its maps' names); default:
   * the file name.
   */
  name?: string
  /** A BTF file to use instead of /sys/kernel/btf/vmlinux for CO-RE. */
  btfPath?: string
}

/**
 * A map of an object, as `obj.maps` lists it and `obj.getMap()` describes
 * it.
 */
export interface MapInfo {
  name: string
  /**
   * libbpf's name of the map type: `hash`, `array`, `percpu_array`,
   * `ringbuf`, `perf_event_array`, `stack_trace`, ...
   */
  type: string
  keySize: number
  valueSize: number
  maxEntries: number
  /** How keys decode (null: raw Buffers). */
  keyLayout?: TypeLayout | null
  /** How values decode (null: raw Buffers). */
  valueLayout?: TypeLayout | null
}

/**
 * Opens a compiled BPF ELF object (a path or a Buffer holding the file).
 * Nothing enters the kernel until `load()`, an attach or `map()`.
 */
export declare function openObject(source: string | Buffer, options?: LoadOptions | undefined | null): ObjectHandle

/** Options of `attachPerfEvent`. */
export interface PerfEventOptions {
  /**
   * `cpu-clock` (default), `task-clock`, `page-faults`, `context-switches`,
   * `cpu-migrations`, or the hardware events `cycles`, `instructions`,
   * `cache-references`, `cache-misses`, `branch-instructions`, `branch-misses`
   * (not available in most VMs).
   */
  event?: string
  /**
   * Samples per second, from 1 to the kernel's
   * `perf_event_max_sample_rate` (default 99 when `period` is not given).
   */
  frequency?: number
  /** One sample every `period` events (1 to 2^53 - 1), instead of `frequency`. */
  period?: number
  /**
   * Only this thread, 1 to 4194304 (default: all): a process's pid is its
   * main thread, and its other threads are not sampled (one event each,
   * by tid, samples them; or sample every CPU and filter in the program).
   */
  pid?: number
  /**
   * Only this CPU, 0 to the possible CPUs - 1 (default: one event per
   * online CPU, or for `pid` one event that follows that thread).
   */
  cpu?: number
}

/**
 * How many CPUs this machine can have (libbpf's count, from
 * /sys/devices/system/cpu/possible): how many values a per-CPU map holds.
 */
export declare function possibleCpus(): number

/** A program's counters in the kernel (`prog.stats`). */
export interface ProgramStats {
  /** The kernel's id of the program (as `bpftool prog show` lists it). */
  id: number
  /**
   * Runs the kernel skipped, each an event that this program did not see:
   * the program was already running on that CPU, or (kprobes, perf-event
   * uprobes and tracepoints) a BPF map operation of a syscall or another
   * BPF program was in progress there. Counted since Linux 5.12, and not
   * every kind everywhere: 6.1 does not count the perf-event ones.
   */
  recursionMisses: number
  /** Runs, counted only while the sysctl `kernel.bpf_stats_enabled` is 1. */
  runCount: number
  /** Time spent running, counted only while `kernel.bpf_stats_enabled` is 1. */
  runTimeNs: number
}

/**
 * Reads a file that a traced process controls, never blocking, following
 * no link it planted and reading no FIFO or device: `ENOENT` when it does
 * not exist, `EPERM` when not allowed, `ERR_BPF_INVALID_OBJECT` when it is
 * a FIFO, a device, a directory, a symbolic link, or too big.
 */
export declare function readTargetFile(path: string, options?: TargetFileOptions | undefined | null): Buffer

/**
 * The size and identity (device, inode, modification time) of a file that
 * a traced process controls, opened and checked as `readTargetFile` opens
 * it, and not read.
 */
export declare function statTargetFile(path: string, options?: TargetFileOptions | undefined | null): TargetFileStat

/**
 * The names of the syscalls of `arch` (`x86_64` or `arm64`; default: the
 * architecture this runs on), indexed by syscall number, '' where no
 * syscall has the number: `syscallNames('x86_64')[257]` is `openat`.
 * x86_64's x32 syscalls (512 and up) are not in it.
 */
export declare function syscallNames(arch?: 'x86_64' | 'arm64'): Array<string>

/** Where and how much of a target's file to read. */
export interface TargetFileOptions {
  /**
   * The path is inside process `pid`'s root (`/tmp/jit-42.dump`), resolved
   * there as the process would resolve it: an absolute link stays inside,
   * no magic links, and no link as last component.
   */
  pid?: number
  /** The first byte read (default 0). Past the end: an empty Buffer. */
  offset?: number
  /**
   * The most bytes read (default: the rest of the file, which must then be
   * at most 64 MiB; at most 256 MiB in any case).
   */
  length?: number
  /**
   * Follow the kernel's magic link `/proc/PID/exe` or
   * `/proc/PID/map_files/START-END`: the very file mapped, even deleted or
   * replaced at its path. Refused for any other path.
   */
  follow?: boolean
}

/** What `statTargetFile` tells of a file. */
export interface TargetFileStat {
  size: number
  dev: number
  ino: number
  /** The modification time, in milliseconds since the epoch. */
  mtimeMs: number
}

/**
 * The tracefs root tracepoints are read from: `/sys/kernel/tracing` (or
 * `/sys/kernel/debug/tracing`). Mounts nothing: throws `ERR_BPF_TRACEFS`
 * (naming the mount command) when tracefs is not mounted, `EPERM` when
 * this process may not read it.
 */
export declare function tracefsRoot(): string

/** Options of `attachUprobeMulti`. */
export interface UprobeMultiOptions {
  /**
   * Only this process, 1 to 4194304 (default: every process running the
   * binary).
   */
  pid?: number
  /** Attach at the functions' returns (a `SEC("uretprobe.multi")` program). */
  retprobe?: boolean
  /**
   * One `bpf_get_attach_cookie()` value per symbol (with a list of
   * symbols), each from 0n to 2n ** 64n - 1n (or a safe integer number).
   */
  cookies?: Array<bigint | number>
}

/** Options of `attachUprobe`/`attachUretprobe`/`attachUsdt`. */
export interface UprobeOptions {
  /**
   * Only this process, 1 to 4194304 (default: every process running the
   * binary).
   */
  pid?: number
  /**
   * Value for `bpf_get_attach_cookie()` (`bpf_usdt_cookie()` for USDT): a
   * bigint from 0n to 2n ** 64n - 1n, or a safe integer number.
   */
  cookie?: bigint | number
}

/**
 * The v8dbg_* values, V8's version, the interpreter's code and
 * Bytecodes::kBytecodeSizes of node binary `path` (a 64-bit little-endian
 * ELF file), read in ranges with every size bounded. `/proc/PID/exe` and
 * `/proc/PID/map_files/…` are the very file the process runs (followed,
 * even deleted); a path under `/proc/PID/root/` is resolved in that root,
 * no link as last component; any other path is yours (links followed).
 * `ERR_BPF_INVALID_OBJECT` when it is no regular file or no such ELF file.
 */
export declare function v8dbgSymbols(path: string): V8dbgSymbols

/** What `v8dbgSymbols` reads of a node binary. */
export interface V8dbgSymbols {
  /** The v8dbg_* values (each an i32), by name. */
  values: Record<string, number>
  /** V8's version: [major, minor, build], or empty where its symbols are missing. */
  version: Array<number>
  /**
   * The interpreter's code (.symtab's Builtins_InterpreterEntryTrampoline*,
   * Builtins_InterpreterEnterAt* and bytecode handlers) as file ranges
   * [start, end), sorted.
   */
  interpreter: Array<Array<number>>
  /** Bytecodes::kBytecodeSizes (u8 [3][count]), where the binary has it. */
  bytecodeSizes?: Buffer
  /** The ELF e_machine (62: x86_64, 183: aarch64). */
  machine: number
  /** The file read: its size and identity. */
  file: TargetFileStat
}
