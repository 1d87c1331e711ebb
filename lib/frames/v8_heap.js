'use strict';
/**
 * A node process's V8 heap, read from outside (issue 27): bounded reads of
 * its memory through /proc/PID/mem, and the decoding of the few V8 objects
 * that name a JavaScript frame (strings, SharedFunctionInfo, ScopeInfo,
 * Script, BytecodeArray, Code and its deoptimization data).
 *
 * The traced process's memory is hostile input: every read is capped, every
 * walk bounded, and anything that does not look like what it should (a
 * failed read, a wrong instance type, a length out of range) gives null,
 * never a throw. The only error is the coded one of `new Memory(pid)`: the
 * process's memory cannot be opened.
 *
 * Offsets come from the node binary's v8dbg_* symbols; what V8 does not
 * export comes from a table keyed by V8's major.minor (KNOWN below). A V8
 * not in the table names no frame: `layout.unknown` says so.
 */
const fs = require('node:fs');
const { codedError } = require('../core/validate');

const PAGE = 4096;
const MAX_READ = 1 << 20; // one read: 1 MiB at most
const MAX_PAGES = 4096; // the page cache: 16 MiB at most
const MAX_STRING = 1024; // characters of a name kept
const MAX_STRING_DEPTH = 8; // cons/thin/sliced hops
const MAX_SOURCE = 64 << 20; // bytes of a script's source read to compute its line ends
const SOURCE_CHUNK = 1 << 20; // one read of a source: 1 MiB
const MAX_PIECES = 4096; // flat pieces (and hops) of one source string
const MAX_LINES = 1 << 22; // line ends of a script
const MAX_TABLE = 1 << 20; // bytes of a source position table
const MAX_INLINED = 256; // inlined functions of one Code
const MAX_INLINING_DEPTH = 64; // inlined frames listed for one pc
const MAX_CODE_SCAN = 256 << 10; // bytes scanned below a pc for its code's start

/** The bytes of a process's memory, read through /proc/PID/mem, a page cache in front. */
class Memory {
  /** @param {number|'self'} pid */
  constructor(pid) {
    this.pid = pid;
    try {
      this.fd = fs.openSync(`/proc/${pid}/mem`, 'r');
    } catch (err) {
      throw codedError(
        'ERR_V8_MEMORY',
        `cannot read the memory of process ${pid} (/proc/${pid}/mem: ${/** @type {Error} */ (err).message}): naming its JavaScript frames needs CAP_SYS_PTRACE, or the same user as the process (and kernel.yama.ptrace_scope 0 or 1); run as root or as its user`,
      );
    }
    /** page address -> Buffer (or null: unreadable) */
    this.pages = new Map();
    this.reads = 0;
  }

  /** Forgets the cached pages: the process runs on, its memory changes. */
  epoch() {
    this.pages.clear();
  }

  close() {
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
    this.pages.clear();
  }

  /** One page (cached), or null. */
  page(at) {
    let p = this.pages.get(at);
    if (p === undefined) {
      if (this.pages.size >= MAX_PAGES) this.pages.clear();
      p = this.raw(at, PAGE);
      this.pages.set(at, p);
    }
    return p;
  }

  /** `length` bytes at `address`, uncached, or null. */
  raw(address, length) {
    if (this.fd === undefined) return null;
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    try {
      while (got < length) {
        this.reads++;
        const n = fs.readSync(this.fd, buf, got, length - got, address + got);
        if (n <= 0) return null;
        got += n;
      }
    } catch {
      return null; // unmapped, or the process is gone
    }
    return buf;
  }

  /** `length` bytes at `address` (a number or bigint), or null: unreadable, or out of bounds. */
  read(address, length) {
    const a = typeof address === 'bigint' ? (address < 2n ** 53n ? Number(address) : -1) : address;
    if (!Number.isSafeInteger(a) || a < PAGE || !Number.isInteger(length) || length < 0 || length > MAX_READ || a + length > 2 ** 53) return null;
    if (length > 4 * PAGE) return this.raw(a, length);
    const first = a - (a % PAGE);
    const last = a + length - 1 - ((a + length - 1) % PAGE);
    if (first === last) {
      const p = this.page(first);
      return p && p.subarray(a - first, a - first + length);
    }
    const parts = [];
    for (let at = first; at <= last; at += PAGE) {
      const p = this.page(at);
      if (!p) return null;
      parts.push(p);
    }
    return Buffer.concat(parts).subarray(a - first, a - first + length);
  }

  /** The u64 at `address` as a number (addresses fit in 53 bits; a larger value: 0), or null: unreadable. */
  word(address) {
    const b = this.read(address, 8);
    if (!b) return null;
    const v = b.readBigUInt64LE(0);
    return v < 2n ** 53n ? Number(v) : 0;
  }

  /** The raw u64 at `address` as a bigint, or null. */
  u64(address) {
    const b = this.read(address, 8);
    return b ? b.readBigUInt64LE(0) : null;
  }

  u32(address) {
    const b = this.read(address, 4);
    return b ? b.readUInt32LE(0) : null;
  }

  i32(address) {
    const b = this.read(address, 4);
    return b ? b.readInt32LE(0) : null;
  }

  u16(address) {
    const b = this.read(address, 2);
    return b ? b.readUInt16LE(0) : null;
  }
}

/**
 * What the v8dbg_* symbols do not give, by V8 major.minor (the official
 * nodes: 20 = 11.3, 22 = 12.4, 24 = 13.6, 26 = 14.6), checked against
 * their heaps. Offsets are from the object's start (tagged pointer - 1).
 * - sfiFunctionData: SharedFunctionInfo's (trusted) function data: the BytecodeArray,
 *   an InterpreterData, the baseline Code, or UncompiledData;
 * - bytecodePositions: BytecodeArray::source_position_table;
 * - interpreterDataBytecode: InterpreterData::bytecode_array;
 * - codePositions, codeDeopt: Code::source_position_table, deoptimization_data
 *   (for baseline code: its BytecodeArray's bytecode_offset_table, the BytecodeArray);
 * - scopeInfoPositions: ScopeInfo keeps the function's start and end at fixed slots 3, 4 (V8 >= 12.8.44);
 * - deoptSfiWrapped: the deopt literal array holds SharedFunctionInfoWrappers (V8 >= 13);
 * - codeInstructionStart, codeFlags, codeInstructionSize: where V8 11 exports none;
 * - positionCodeShift: the flag bits below a source position table's code delta (positionAt);
 * - inliningPositionSize: sizeof(InliningPosition) (SourcePosition u64, inlined_function_id i32, padding).
 */
const KNOWN = {
  '11.3': { positionCodeShift: 1, sfiFunctionData: 8, bytecodePositions: 32, interpreterDataBytecode: 8, codePositions: 24, codeDeopt: 16, codeInstructionStart: 40, codeFlags: 48, codeInstructionSize: 56, scopeInfoPositions: false, deoptSfiWrapped: false, inliningPositionSize: 16 },
  '12.4': { positionCodeShift: 1, sfiFunctionData: 8, bytecodePositions: 24, interpreterDataBytecode: 8, codePositions: 16, codeDeopt: 8, scopeInfoPositions: false, deoptSfiWrapped: false, inliningPositionSize: 16 },
  '13.6': { positionCodeShift: 1, sfiFunctionData: 8, bytecodePositions: 24, interpreterDataBytecode: 8, codePositions: 16, codeDeopt: 8, scopeInfoPositions: true, deoptSfiWrapped: true, inliningPositionSize: 16 },
  '14.6': { positionCodeShift: 2, sfiFunctionData: 8, bytecodePositions: 24, interpreterDataBytecode: 8, codePositions: 16, codeDeopt: 8, scopeInfoPositions: true, deoptSfiWrapped: true, inliningPositionSize: 16 },
};

/**
 * The heap layout of a V8 from its v8dbg_* `values` and `version`
 * ([major, minor, build]): offsets and instance types the naming reads.
 * `unknown` (a string) where the version is not in KNOWN: nothing is named.
 */
function heapLayout(values, version) {
  const [major, minor] = version;
  const key = `${major}.${minor}`;
  const known = KNOWN[key];
  // each value read is checked first (a forged binary's: ERR_V8_LAYOUT naming it): object offsets and
  // array indexes within 4 KiB, instance types, tags and masks of 16 bits, shifts below 64
  const sane = (name, v) => {
    if (v === undefined) return v;
    const [lo, hi] = /^v8dbg_class_|Index$|^v8dbg_scopeinfo_idx_/.test(name) ? [0, 4095] : /Shift(Size)?$/.test(name) ? [0, 63] : name === 'v8dbg_IsNotStringMask' ? [-0x10000, 0xffff] : [0, 0xffff];
    if (Number.isInteger(v) && v >= lo && v <= hi) return v;
    throw codedError('ERR_V8_LAYOUT', `${name} is ${v}, outside ${lo}..${hi}: not a layout V8 builds (a forged or damaged binary); JavaScript frames are not named`);
  };
  const get = (name) => sane(name, values.get(name));
  const prefixed = (prefix) => {
    for (const [k, v] of values) if (k.startsWith(prefix)) return sane(k, v);
    return undefined;
  };
  const t = (name) => prefixed(`v8dbg_type_${name}__`);
  const c = (cls, field) => prefixed(`v8dbg_class_${cls}__${field}__`);
  const layout = {
    version: version.join('.'),
    unknown: known ? null : `V8 ${key}: layout not known`,
    ...(known ?? KNOWN['13.6']),
    map: get('v8dbg_class_HeapObject__map__Map') ?? 0,
    instanceType: c('Map', 'instance_type') ?? 12,
    smiShift: (get('v8dbg_SmiShiftSize') ?? 31) + 1,
    // strings
    stringLength: c('String', 'length') ?? 12,
    seqChars: c('SeqOneByteString', 'chars') ?? 16,
    consFirst: c('ConsString', 'first') ?? 16,
    consSecond: c('ConsString', 'second') ?? 24,
    slicedParent: c('SlicedString', 'parent') ?? 16,
    slicedOffset: c('SlicedString', 'offset') ?? 24,
    thinActual: c('ThinString', 'actual') ?? 16,
    externalResource: c('ExternalString', 'resource') ?? 16,
    notStringMask: (get('v8dbg_IsNotStringMask') ?? -128) & 0xffff,
    representationMask: get('v8dbg_StringRepresentationMask') ?? 7,
    encodingMask: get('v8dbg_StringEncodingMask') ?? 8,
    oneByteTag: get('v8dbg_OneByteStringTag') ?? 8,
    consTag: get('v8dbg_ConsStringTag') ?? 1,
    externalTag: get('v8dbg_ExternalStringTag') ?? 2,
    slicedTag: get('v8dbg_SlicedStringTag') ?? 3,
    thinTag: get('v8dbg_ThinStringTag') ?? 5,
    // SharedFunctionInfo, Script, ScopeInfo
    sfiName: c('SharedFunctionInfo', 'name_or_scope_info'),
    sfiScript: c('SharedFunctionInfo', 'script_or_debug_info') ?? c('SharedFunctionInfo', 'script'),
    scriptName: c('Script', 'name') ?? 16,
    scriptSource: c('Script', 'source') ?? 8,
    scriptLineEnds: c('Script', 'line_ends') ?? 56,
    scopeFirstVars: get('v8dbg_scopeinfo_idx_first_vars') ?? 3,
    scopeContextLocals: get('v8dbg_scopeinfo_idx_ncontextlocals') ?? 2,
    uncompiledStart: c('UncompiledData', 'start_position') ?? 16,
    uncompiledInferredName: c('UncompiledData', 'inferred_name') ?? 8,
    debugInfoShared: 8, // DebugInfo::shared (the SFI): script_or_debug_info's DebugInfo case (V8 < 12)
    arrayLength: c('FixedArrayBase', 'length') ?? 8,
    arrayData: c('FixedArray', 'data') ?? 16,
    bytecodeData: c('BytecodeArray', 'data') ?? 54,
    // Code
    codeInstructionStart: c('Code', 'instruction_start') ?? known?.codeInstructionStart,
    codeInstructionSize: c('Code', 'instruction_size') ?? known?.codeInstructionSize,
    codeFlags: c('Code', 'flags') ?? known?.codeFlags,
    codeKindMask: get('v8dbg_CodeKindFieldMask') ?? 15,
    codeKindShift: get('v8dbg_CodeKindFieldShift') ?? 0,
    codeKindBaseline: get('v8dbg_CodeKindBaseline'),
    codeKindInterpreted: get('v8dbg_CodeKindInterpretedFunction'),
    deoptInlinedCount: get('v8dbg_DeoptimizationDataInlinedFunctionCountIndex') ?? 1,
    deoptLiterals: get('v8dbg_DeoptimizationDataLiteralArrayIndex') ?? 2,
    deoptSfi: get('v8dbg_DeoptimizationDataSharedFunctionInfoIndex') ?? get('v8dbg_DeoptimizationDataWrappedSharedFunctionInfoIndex') ?? 6,
    deoptInliningPositions: get('v8dbg_DeoptimizationDataInliningPositionsIndex') ?? 7,
    types: {
      sfi: t('SharedFunctionInfo'),
      scopeInfo: t('ScopeInfo'),
      script: t('Script'),
      debugInfo: t('DebugInfo'),
      bytecode: t('BytecodeArray'),
      interpreterData: t('InterpreterData'),
      code: t('Code'),
      fixedArray: t('FixedArray'),
      oddball: t('Oddball'),
      instructionStream: t('InstructionStream'),
      byteArray: t('ByteArray'),
      trustedByteArray: t('TrustedByteArray'),
    },
    streamInstructions: c('InstructionStream', 'instruction_start'),
    streamCode: 8, // InstructionStream::code, right after its map
    uncompiled: [...values].filter(([k]) => k.startsWith('v8dbg_type_Uncompiled')).map(([k, v]) => sane(k, v)),
  };
  if (layout.sfiName === undefined || layout.sfiScript === undefined || layout.types.sfi === undefined) layout.unknown ??= `V8 ${key}: no SharedFunctionInfo layout among its v8dbg_* symbols`;
  return layout;
}

/** Reads V8 objects of one process: `mem` its Memory, `layout` a heapLayout. */
class Heap {
  constructor(mem, layout) {
    this.mem = mem;
    this.L = layout;
  }

  /** Whether `v` (a number) is a tagged heap object pointer. */
  isObject(v) {
    return typeof v === 'number' && v % 4 === 1 && v > PAGE;
  }

  /** A SMI's value, or null. */
  smi(raw) {
    if (raw === null || (raw & 1n) !== 0n) return null;
    return Number(BigInt.asIntN(64, raw) >> BigInt(this.L.smiShift));
  }

  /** The tagged field at `offset` of object `obj`: a number (a pointer), or null. */
  field(obj, offset) {
    return this.mem.word(obj - 1 + offset);
  }

  /** The SMI field at `offset` of `obj`, or null. */
  smiField(obj, offset) {
    return this.smi(this.mem.u64(obj - 1 + offset));
  }

  /** The instance type of object `obj`, or null. */
  type(obj) {
    if (!this.isObject(obj)) return null;
    const map = this.field(obj, this.L.map);
    if (!this.isObject(map)) return null;
    return this.mem.u16(map - 1 + this.L.instanceType);
  }

  isString(type) {
    return type !== null && (type & this.L.notStringMask) === 0;
  }

  /** String `obj`'s value (at most MAX_STRING characters), or null. */
  string(obj, depth = 0, from = 0, max = MAX_STRING) {
    const L = this.L;
    const type = this.type(obj);
    if (!this.isString(type) || depth > MAX_STRING_DEPTH) return null;
    const length = this.mem.i32(obj - 1 + L.stringLength);
    if (length === null || length < 0 || length > 1 << 30 || from > length) return null;
    const n = Math.min(length - from, max);
    const oneByte = (type & L.encodingMask) === L.oneByteTag;
    const rep = type & L.representationMask;
    const bytes = (at) => {
      if (!at) return null;
      const b = this.mem.read(at + from * (oneByte ? 1 : 2), n * (oneByte ? 1 : 2));
      return b && (oneByte ? b.toString('latin1') : b.toString('utf16le'));
    };
    if (rep === 0) return bytes(obj - 1 + L.seqChars);
    if (rep === L.externalTag) {
      // the resource's cached data pointer (uncached external strings: none)
      if (type & 0x10) return null;
      return bytes(this.mem.word(obj - 1 + L.externalResource + 8));
    }
    if (rep === L.thinTag) return this.string(this.field(obj, L.thinActual), depth + 1, from, max);
    if (rep === L.slicedTag) {
      const offset = this.smiField(obj, L.slicedOffset);
      if (offset === null || offset < 0) return null;
      return this.string(this.field(obj, L.slicedParent), depth + 1, from + offset, n);
    }
    if (rep === L.consTag) {
      const a = this.field(obj, L.consFirst);
      const aLength = this.isObject(a) ? this.mem.i32(a - 1 + L.stringLength) : null;
      if (aLength === null || aLength < 0 || aLength > length) return null;
      let out = '';
      if (from < aLength) {
        const s = this.string(a, depth + 1, from, Math.min(n, aLength - from));
        if (s === null) return null;
        out = s;
      }
      if (out.length < n) {
        const s = this.string(this.field(obj, L.consSecond), depth + 1, Math.max(0, from - aLength), n - out.length);
        if (s === null) return null;
        out += s;
      }
      return out;
    }
    return null;
  }

  /**
   * SharedFunctionInfo `sfi`: `{ name, script, start, bytecode }` (name ''
   * for an anonymous function; script: the Script object or null; start: the
   * function's start position or null; bytecode: its BytecodeArray or null),
   * or null: not an SFI.
   */
  sfi(sfi) {
    const L = this.L;
    if (this.type(sfi) !== L.types.sfi) return null;
    const nos = this.field(sfi, L.sfiName);
    const nosType = this.type(nos);
    let name = '';
    let start = null;
    if (this.isString(nosType)) name = this.string(nos) ?? '';
    else if (nosType === L.types.scopeInfo) ({ name, start } = this.scopeInfo(nos));
    let script = this.field(sfi, L.sfiScript);
    let scriptType = this.type(script);
    if (scriptType === L.types.debugInfo && L.types.debugInfo !== undefined) {
      // (V8 < 12: the SFI's DebugInfo holds its script)
      script = this.field(script, L.debugInfoShared);
      scriptType = this.type(script) === L.types.sfi ? this.type((script = this.field(script, L.sfiScript))) : null;
    }
    if (scriptType !== L.types.script) script = null;
    const { data, dataType } = this.functionData(sfi);
    if (L.uncompiled.includes(dataType)) {
      if (start === null) start = this.mem.i32(data - 1 + L.uncompiledStart);
      // (not compiled: its inferred name is UncompiledData's)
      if (!name) {
        const inferred = this.field(data, L.uncompiledInferredName);
        if (this.isString(this.type(inferred))) name = this.string(inferred) ?? '';
      }
    }
    return { name, script, start, bytecode: dataType === L.types.bytecode ? data : null };
  }

  /** SFI `sfi`'s code data and its type: its BytecodeArray (also through InterpreterData or baseline Code), or UncompiledData. */
  functionData(sfi) {
    const L = this.L;
    let data = this.field(sfi, L.sfiFunctionData);
    let dataType = this.type(data);
    if (dataType === L.types.interpreterData) {
      data = this.field(data, L.interpreterDataBytecode);
      dataType = this.type(data);
    } else if (dataType === L.types.code) {
      data = this.field(data, L.codeDeopt);
      dataType = this.type(data);
    }
    return { data, dataType };
  }

  /** SFI `sfi`'s BytecodeArray now (flushed or replaced since it was cached: read afresh), or null. */
  bytecode(sfi) {
    const { data, dataType } = this.functionData(sfi);
    return dataType === this.L.types.bytecode ? data : null;
  }

  /**
   * A ScopeInfo's function name and start position (or null): the name in
   * its function-variable slot (a String, or Zero: none), else its inferred
   * name (V8's DebugName: `obj.method = function () {}` is "obj.method"),
   * else ''. Its slots are found from its flags (V8 11-14: the saved class
   * variable bit 10, the function variable 12-13, the inferred name 14),
   * never by scanning: past its last slot is another object (a context
   * local of the next ScopeInfo read as the name: ".catch").
   */
  scopeInfo(si) {
    const L = this.L;
    const slot = (i) => this.mem.u64(si - 1 + 8 + i * 8); // slots after the map
    const raw = slot(0);
    if (raw === null) return { name: '', start: null };
    // flags: a SMI (V8 < 12.8), or a uint32 and its padding (V8 >= 12.8, where the positions are at slots 3, 4)
    const flags = L.scopeInfoPositions ? Number(raw & 0xffffffffn) : this.smi(raw);
    let start = null;
    if (L.scopeInfoPositions) {
      const s = this.smi(slot(3));
      const e = this.smi(slot(4));
      if (s !== null && e !== null && s >= 0 && s <= e) start = s;
    }
    const locals = this.smi(slot(L.scopeContextLocals));
    if (flags === null || locals === null || locals < 0 || locals > 1 << 16) return { name: '', start };
    // after the context local names (inlined below 75 of them, else one hash table) and their infos
    let at = L.scopeFirstVars + (locals < 75 ? 2 * locals : 1 + locals);
    if (flags & (1 << 10)) at++; // saved class variable
    const str = (i) => {
      const v = this.smiOrPointer(slot(i));
      return this.isObject(v) && this.isString(this.type(v)) ? (this.string(v) ?? '') : '';
    };
    let name = '';
    if ((flags >> 12) & 3) {
      name = str(at); // (Zero: no name)
      at += 2;
    }
    if (!name && flags & (1 << 14)) name = str(at);
    if (flags & (1 << 14)) at++;
    if (!L.scopeInfoPositions) {
      // (before 12.8.44) the position info next, for function, script, eval and module scopes
      const s = this.smi(slot(at));
      const e = this.smi(slot(at + 1));
      if (s !== null && e !== null && s >= 0 && s <= e) start = s;
    }
    return { name, start };
  }

  /** A raw slot `raw` (bigint or null) as a number where it can be a pointer, else 0. */
  smiOrPointer(raw) {
    return raw !== null && raw < 2n ** 53n ? Number(raw) : 0;
  }

  /** Script `script`: `{ name, lineEnds }` (lineEnds: positions of the line ends, or null). */
  script(script) {
    return { name: this.scriptName(script), lineEnds: this.lineEnds(script) };
  }

  /** Script `script`'s name (its file), or null. */
  scriptName(script) {
    const nameObj = this.field(script, this.L.scriptName);
    return this.isString(this.type(nameObj)) ? this.string(nameObj) : null;
  }

  /** Script `script`'s line ends: its own line_ends table where that rises, or else computed from its source (capped). */
  lineEnds(script) {
    return this.ownLineEnds(script).ends ?? this.sourceLineEnds(this.field(script, this.L.scriptSource));
  }

  /**
   * Script `script`'s line_ends FixedArray of SMIs: `{ ends, refused }`,
   * ends null where it has none (or one not read); `refused`: it has one
   * whose ends do not rise strictly (garbage: no line is read from it).
   */
  ownLineEnds(script) {
    const L = this.L;
    const arr = this.field(script, L.scriptLineEnds);
    if (this.type(arr) !== L.types.fixedArray) return { ends: null, refused: false };
    const n = this.smiField(arr, L.arrayLength);
    if (n === null || n < 0 || n > MAX_LINES) return { ends: null, refused: false };
    const ends = new Int32Array(n);
    // (a big script's table is more than one read: 1 MiB at a time)
    for (let i = 0; i < n; ) {
      const k = Math.min(n - i, MAX_READ / 8);
      const b = this.mem.read(arr - 1 + L.arrayData + i * 8, k * 8);
      if (!b) return { ends: null, refused: false };
      for (let j = 0; j < k; j++) ends[i + j] = this.smi(b.readBigUInt64LE(j * 8)) ?? -1;
      i += k;
    }
    return rising(ends) ? { ends, refused: false } : { ends: null, refused: true };
  }

  /**
   * Calls `visit(bytes, oneByte)` on the characters of string `obj`, in
   * order, in flat pieces of at most 1 MiB read through Memory.raw (never
   * the page cache): sequential, external (its cached data), cons, sliced
   * and thin strings, at most `maxChars` characters. False where a piece
   * could not be read (a wrong type, an unreadable address, an uncached
   * external string, more than MAX_PIECES pieces).
   */
  stringChunks(obj, maxChars, visit) {
    const L = this.L;
    const stack = [[obj, 0, maxChars]];
    for (let hops = 0; stack.length; ) {
      const [o, from, n] = /** @type {number[]} */ (stack.pop());
      if (n <= 0) continue;
      if (++hops > MAX_PIECES) return false;
      const type = this.type(o);
      if (!this.isString(type)) return false;
      const length = this.mem.i32(o - 1 + L.stringLength);
      if (length === null || length < 0 || from < 0 || from + n > length) return false;
      const rep = type & L.representationMask;
      let at = null;
      if (rep === 0) at = o - 1 + L.seqChars;
      else if (rep === L.externalTag) {
        if (type & 0x10) return false; // uncached: no data pointer
        at = this.mem.word(o - 1 + L.externalResource + 8);
      } else if (rep === L.thinTag) {
        stack.push([this.field(o, L.thinActual), from, n]);
        continue;
      } else if (rep === L.slicedTag) {
        const offset = this.smiField(o, L.slicedOffset);
        if (offset === null || offset < 0) return false;
        stack.push([this.field(o, L.slicedParent), from + offset, n]);
        continue;
      } else if (rep === L.consTag) {
        const a = this.field(o, L.consFirst);
        const aLength = this.isObject(a) ? this.mem.i32(a - 1 + L.stringLength) : null;
        if (aLength === null || aLength < 0 || aLength > length) return false;
        // (the second part first on the stack: the first is read first)
        if (from + n > aLength) stack.push([this.field(o, L.consSecond), Math.max(0, from - aLength), from + n - Math.max(from, aLength)]);
        if (from < aLength) stack.push([a, from, Math.min(n, aLength - from)]);
        continue;
      } else return false;
      const w = (type & L.encodingMask) === L.oneByteTag ? 1 : 2;
      if (!at || at < PAGE || at + (from + n) * w > 2 ** 53) return false;
      for (let done = 0; done < n; ) {
        const k = Math.min(n - done, SOURCE_CHUNK / w);
        const b = this.mem.raw(at + (from + done) * w, k * w);
        if (!b) return false;
        visit(b, w === 1);
        done += k;
      }
    }
    return true;
  }

  /**
   * The line ends of source string `src`, computed from its characters:
   * `{ ends, why }`, ends null where the source could not be read; a source
   * of more than MAX_SOURCE bytes (or MAX_LINES lines) gives the ends of
   * its first part, and `why` says where they stop.
   */
  sourceLines(src) {
    const type = this.type(src);
    if (!this.isString(type)) return { ends: null, why: "no line: the script's source is not a string" };
    const length = this.mem.i32(src - 1 + this.L.stringLength);
    if (length === null || length < 0 || length > 1 << 30) return { ends: null, why: "no line: the script's source length could not be read" };
    const w = (type & this.L.encodingMask) === this.L.oneByteTag ? 1 : 2;
    const n = Math.min(length, MAX_SOURCE / w);
    const ends = [];
    let at = 0; // characters scanned
    const ok = this.stringChunks(src, n, (b, oneByte) => {
      if (ends.length < MAX_LINES) {
        // '\n' a byte, or a 16-bit unit (0x0a 0x00, at an even offset)
        for (let i = b.indexOf(10); i >= 0 && ends.length < MAX_LINES; i = b.indexOf(10, i + 1)) {
          if (oneByte) ends.push(at + i);
          else if (i % 2 === 0 && b[i + 1] === 0) ends.push(at + i / 2);
        }
      }
      at += oneByte ? b.length : b.length / 2;
    });
    if (!ok || at !== n) return { ends: null, why: "no line: the script's source could not be read" };
    if (n === length && ends.length < MAX_LINES) {
      ends.push(length);
      return { ends: Int32Array.from(ends), why: null };
    }
    const why = ends.length >= MAX_LINES ? `no line: past the script's first ${MAX_LINES} lines` : `no line: past the first ${MAX_SOURCE >> 20} MiB of the script's source (${length} characters)`;
    return { ends: Int32Array.from(ends), why };
  }

  /** The line ends of source string `src` (sourceLines' ends), or null. */
  sourceLineEnds(src) {
    return this.sourceLines(src).ends;
  }

  /** The bytes of ByteArray-like `arr` (its SMI length at arrayLength, data after), capped; or null. */
  byteArray(arr) {
    if (!this.isObject(arr)) return null;
    // (a freed one is free space now, its first bytes the free list's: code collected since the sample)
    const { byteArray, trustedByteArray } = this.L.types;
    const type = byteArray === undefined && trustedByteArray === undefined ? null : this.type(arr);
    if (type !== null && type !== byteArray && type !== trustedByteArray) return null;
    const n = this.smiField(arr, this.L.arrayLength);
    if (n === null || n < 0 || n > MAX_TABLE) return null;
    return this.mem.read(arr - 1 + this.L.arrayData, n);
  }

  /** BytecodeArray `ba`'s bytecodes (capped), or null. */
  bytecodes(ba) {
    const L = this.L;
    if (this.type(ba) !== L.types.bytecode) return null;
    const n = this.smiField(ba, L.arrayLength);
    if (n === null || n < 0 || n > MAX_TABLE) return null;
    return this.mem.read(ba - 1 + L.bytecodeData, n);
  }

  /** BytecodeArray `ba`'s source position table (bytes), or null (none collected: lazy source positions). */
  bytecodePositions(ba) {
    const t = this.field(ba, this.L.bytecodePositions);
    if (!this.isObject(t) || this.type(t) === this.L.types.oddball) return null;
    return this.byteArray(t);
  }

  /** Code `code`: `{ start, size, kind, positions, deopt }`, or null: not a Code. */
  code(code) {
    const L = this.L;
    if (this.type(code) !== L.types.code || L.codeInstructionStart === undefined) return null;
    const start = this.mem.word(code - 1 + L.codeInstructionStart);
    const size = this.mem.i32(code - 1 + L.codeInstructionSize);
    const flags = this.mem.u32(code - 1 + L.codeFlags);
    if (start === null || size === null || size < 0 || flags === null) return null;
    return { start, size, kind: (flags >>> L.codeKindShift) & L.codeKindMask, positionsObj: this.field(code, L.codePositions), deopt: this.field(code, L.codeDeopt) };
  }

  /**
   * The Code whose instructions hold `pc`, found from the pc alone (where the
   * walk has none: leaptiering, on-stack replacement): the InstructionStream
   * that starts at most MAX_CODE_SCAN bytes below, its Code pointing back at
   * it. `{ addr, ...code(addr) }`, or null.
   */
  codeAt(pc) {
    const L = this.L;
    if (L.types.instructionStream === undefined || L.streamInstructions === undefined) return null;
    const top = pc - (pc % 32);
    // (once the map is known, a candidate's map word is compared in the cached page: no BigInt)
    const lo = this.streamMap === undefined ? 0 : this.streamMap % 2 ** 32;
    const hi = this.streamMap === undefined ? 0 : Math.floor(this.streamMap / 2 ** 32);
    for (let s = top; s > top - MAX_CODE_SCAN; s -= 32) {
      const stream = s - L.streamInstructions + 1;
      const mapAt = stream - 1 + L.map;
      if (this.streamMap !== undefined && mapAt % PAGE <= PAGE - 8 && mapAt > PAGE) {
        const page = this.mem.page(mapAt - (mapAt % PAGE));
        if (!page) return null;
        if (page.readUInt32LE(mapAt % PAGE) !== lo || page.readUInt32LE((mapAt % PAGE) + 4) !== hi) continue;
      }
      const map = this.field(stream, L.map);
      if (map === null) return null;
      if (map !== this.streamMap) {
        if (this.streamMap !== undefined || !this.isObject(map) || this.mem.u16(map - 1 + L.instanceType) !== L.types.instructionStream) continue;
        return this.learnStreamMap(map) && this.codeAt(pc); // (one map for all of them: the fast scan from here)
      }
      const addr = this.field(stream, L.streamCode);
      const code = this.code(addr);
      if (!code || code.start !== s) continue;
      // the nearest code below pc: pc is in it, or in no code (its own collected, or not V8 heap code)
      return pc < code.start + code.size ? { addr, ...code } : null;
    }
    return null;
  }

  /**
   * Remembers `map` as the InstructionStream map (codeAt compares it in the
   * cached pages from then on); true if it is one. Also from a Code the
   * walk recorded (`fromCode`: h.code's), where the scan has found none yet.
   */
  learnStreamMap(map, fromCode = undefined) {
    const L = this.L;
    if (this.streamMap !== undefined || L.types.instructionStream === undefined || L.streamInstructions === undefined) return false;
    if (fromCode) map = this.field(fromCode.start - L.streamInstructions + 1, L.map);
    if (!this.isObject(map) || this.mem.u16(map - 1 + L.instanceType) !== L.types.instructionStream) return false;
    this.streamMap = map;
    return true;
  }

  /**
   * The inlined functions of optimized code's deopt data `deopt`: `{ sfis:
   * [SFI of inlining id i], positions: [caller position of inlining id i,
   * with its own inlining id] }`, or null.
   */
  inlining(deopt) {
    const L = this.L;
    const len = this.smiField(deopt, L.arrayLength);
    if (len === null || len <= L.deoptInliningPositions || len > 1 << 20) return null;
    const el = (i) => this.field(deopt, L.arrayData + i * 8);
    const literals = el(L.deoptLiterals);
    const positions = this.byteArray(el(L.deoptInliningPositions));
    if (!this.isObject(literals) || !positions) return null;
    const count = Math.min(Math.floor(positions.length / L.inliningPositionSize), MAX_INLINED);
    const nLiterals = this.smiField(literals, L.arrayLength);
    const out = { sfis: [], positions: [] };
    for (let i = 0; i < count; i++) {
      const pos = positions.readBigUInt64LE(i * L.inliningPositionSize);
      const id = positions.readInt32LE(i * L.inliningPositionSize + 8);
      let sfi = null;
      if (nLiterals !== null && id >= 0 && id < nLiterals) {
        sfi = this.field(literals, L.arrayData + id * 8);
        // (V8 >= 13: a SharedFunctionInfoWrapper: its SFI right after its map)
        if (this.type(sfi) !== L.types.sfi && this.isObject(sfi)) sfi = this.field(sfi, 8);
      }
      out.sfis.push(this.type(sfi) === L.types.sfi ? sfi : null);
      out.positions.push(pos);
    }
    return out;
  }
}

/**
 * The entry of source position table `table` (bytes) that covers code
 * offset `offset`: the raw source position (a bigint: script offset << 1,
 * inlining id from bit 31), or null where none does. Bounded by the table.
 * Each entry: the code offset's delta, then the position's delta (a signed,
 * zigzag VLQ). The code delta is an unsigned VLQ whose low `codeShift` bits
 * are flags: V8 <= 13, 1 (a zigzag sign: the statement flag); V8 14, 2.
 */
function positionAt(table, offset, codeShift = 1) {
  // (Numbers, not BigInts: a raw position has 47 bits, a VLQ past 49 bits is garbage)
  const uvlq = uvlqReader(table, 2 ** 49);
  const div = 2 ** codeShift;
  let code = -1;
  let pos = 0;
  let found = null;
  for (;;) {
    const d = uvlq();
    if (d === null) break;
    code += Math.floor(d / div);
    if (code > offset) break;
    const p = uvlq();
    if (p === null) break;
    pos += p % 2 ? -(p + 1) / 2 : p / 2;
    found = pos;
  }
  return found === null || !Number.isSafeInteger(found) ? null : BigInt(found);
}

/**
 * A reader of the unsigned VLQs (7 bits a byte, the high bit: more) of
 * `table` in turn: each call gives the next, or null at the table's end or
 * for one of `limit` or more (garbage).
 */
function uvlqReader(table, limit) {
  let at = 0;
  return () => {
    let v = 0;
    for (let scale = 1; scale < limit; scale *= 128) {
      if (at >= table.length) return null;
      const b = table[at++];
      v += (b & 0x7f) * scale;
      if (!(b & 0x80)) return v;
    }
    return null;
  };
}

/**
 * The bytecode offset that baseline (Sparkplug) code's pc offset `at`
 * runs, from its bytecode offset table `table` (one unsigned VLQ per
 * bytecode: the end of its machine code, as a delta; the first: the
 * prologue's) walked along the bytecodes `bytecodes` (their sizes from
 * V8's Bytecodes::kBytecodeSizes `sizes`: [single | double | quadruple
 * operand scale][bytecode]; Wide, ExtraWide and their DebugBreak forms,
 * bytecodes 0-3, are the scaling prefixes). -1: the prologue; null: out of
 * the table or garbage. Bounded by the table and the bytecodes.
 */
function baselineBytecodeOffset(table, bytecodes, sizes, at) {
  const count = sizes.length / 3;
  const uvlq = uvlqReader(table, 2 ** 35);
  let end = uvlq();
  if (end === null) return null;
  if (at < end) return -1;
  let offset = 0; // the bytecode iterator's
  while (offset < bytecodes.length) {
    const d = uvlq();
    if (d === null) return null;
    end += d;
    const b = bytecodes[offset];
    const prefix = b <= 3 ? 1 : 0;
    const scale = prefix ? (b === 0 || b === 2 ? 1 : 2) : 0;
    const op = bytecodes[offset + prefix];
    if (op === undefined || op >= count) return null;
    const size = prefix + sizes[scale * count + op];
    if (size <= prefix) return null;
    if (at < end) return offset;
    offset += size;
  }
  return null;
}

/** Whether line ends `ends` rise strictly from 0 up (a table read from the target may be garbage: a wrong line, unmarked). */
function rising(ends) {
  for (let i = 0; i < ends.length; i++) if (ends[i] < 0 || (i > 0 && ends[i] <= ends[i - 1])) return false;
  return true;
}

/**
 * The inlined functions at raw position `raw` of optimized code (`inlining`:
 * Heap.inlining's positions), innermost first, up the inlining positions to
 * the physical function: `{ chain: [{ id, offset }] (the inlining id and its
 * script offset), outer: the physical function's position or null, cut }`;
 * `cut` says why the walk stopped before the physical function (a cycle in
 * the positions, or more than `max` of them): null where it did not.
 */
function inliningChain(raw, positions, max = MAX_INLINING_DEPTH) {
  const chain = [];
  const visited = new Set();
  let cur = splitPosition(raw);
  while (cur && cur.inlining >= 0 && cur.inlining < positions.length) {
    if (visited.has(cur.inlining)) return { chain, outer: null, cut: `a cycle in the inlining positions (inlining id ${cur.inlining} again)` };
    if (chain.length >= max) return { chain, outer: null, cut: `more than ${max} inlined functions` };
    visited.add(cur.inlining);
    chain.push({ id: cur.inlining, offset: cur.offset });
    cur = splitPosition(positions[cur.inlining]);
  }
  return { chain, outer: cur, cut: null };
}

/** The script offset and inlining id of raw source position `raw`, or null (an external position). */
function splitPosition(raw) {
  if (raw === null || (raw & 1n) === 1n) return null;
  return { offset: Number((raw >> 1n) & ((1n << 30n) - 1n)), inlining: Number((raw >> 31n) & 0xffffn) - 1 };
}

/** Line and column (1-based) of source `position` by `lineEnds`, or null. */
function lineOf(lineEnds, position) {
  if (!lineEnds || !lineEnds.length || position === null || position < 0) return null;
  let lo = 0;
  let hi = lineEnds.length - 1;
  if (position > lineEnds[hi]) return null;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (lineEnds[mid] < position) lo = mid + 1;
    else hi = mid;
  }
  const lineStart = lo === 0 ? 0 : lineEnds[lo - 1] + 1;
  return { line: lo + 1, column: position - lineStart + 1 };
}

module.exports = { Memory, Heap, heapLayout, positionAt, baselineBytecodeOffset, splitPosition, lineOf, rising, inliningChain, KNOWN, codedError };
