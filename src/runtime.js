// The JavaScript half of the addon, evaluated once per Node.js environment by
// src/runtime.rs (this file is one expression). It holds what is faster in
// JavaScript than through N-API calls:
//
// - the codec: BTF layouts (computed in Rust, src/btf.rs) compiled into
//   decoder functions, once per type, that build plain objects at the
//   struct's offsets (V8 compiles them like hand-written code), and the
//   encoder that checks and writes values for maps and globals;
// - the dispatcher, which calls the user's callback once per record of a
//   batch handed over by the poller thread.
(function makeRuntime() {
  'use strict';

  const layouts = []; // by id: { layout, options, decode?, name }

  class CodecError extends Error {
    constructor(message) {
      super(message);
      this.code = 'ERR_BPF_INVALID_VALUE';
    }
  }

  const ids = new Map(); // layout + options JSON -> id

  /** Registers a layout (JSON) with decode options; returns its id. */
  function register(layoutJson, optionsJson) {
    const key = `${optionsJson}\n${layoutJson}`;
    let id = ids.get(key);
    if (id === undefined) {
      layouts.push({ layout: JSON.parse(layoutJson), options: JSON.parse(optionsJson || '{}'), decode: undefined });
      id = layouts.length - 1;
      ids.set(key, id);
    }
    return id;
  }

  function layoutOf(id) {
    return layouts[id].layout;
  }

  // ---- decoding: code generation ----------------------------------------

  /** A C string: up to the first NUL within `n` bytes. */
  function cstr(b, s, n) {
    const m = s + n;
    let e = s;
    while (e < m && b[e] !== 0) e++;
    return b.utf8Slice(s, e);
  }

  function decoderOf(id) {
    const entry = layouts[id];
    if (!entry.decode) entry.decode = compile(entry.layout, entry.options);
    return entry.decode;
  }

  /**
   * Compiles a layout into `decode(b, o, end)`: the value at offset `o` of
   * Buffer `b` (`end`: where the record ends, for flexible arrays).
   */
  function compile(layout, options) {
    const consts = [];
    const constant = (v) => {
      consts.push(v);
      return `k${consts.length - 1}`;
    };
    const int64 = options.int64 === 'number';
    const enumNames = options.enums !== 'number';

    const intExpr = (t, at) => {
      switch (t.size) {
        case 1:
          return t.signed ? `(b[${at}] << 24 >> 24)` : `b[${at}]`;
        case 2:
          return t.signed ? `dv.getInt16(${at}, true)` : `dv.getUint16(${at}, true)`;
        case 4:
          return t.signed ? `dv.getInt32(${at}, true)` : `dv.getUint32(${at}, true)`;
        case 8:
          if (int64) {
            return `(dv.getUint32(${at}, true) + dv.${t.signed ? 'getInt32' : 'getUint32'}(${at} + 4, true) * 4294967296)`;
          }
          return t.signed ? `dv.getBigInt64(${at}, true)` : `dv.getBigUint64(${at}, true)`;
        default:
          return `b.subarray(${at}, ${at} + ${t.size})`;
      }
    };

    const bitfieldExpr = (f, base) => {
      const first = f.bitOffset >> 3;
      const shift = f.bitOffset & 7;
      const nbytes = (shift + f.bitSize + 7) >> 3;
      if (nbytes > 4) {
        // wide bitfields: BigInt arithmetic
        const bytes = Array.from({ length: nbytes }, (_, i) => `(BigInt(b[${base} + ${first + i}]) << ${8 * i}n)`).join(' | ');
        const v = `((${bytes}) >> ${shift}n) & ${(1n << BigInt(f.bitSize)) - 1n}n`;
        const signedV = f.type.signed ? `BigInt.asIntN(${f.bitSize}, ${v})` : v;
        return int64 ? `Number(${signedV})` : signedV;
      }
      const bytes = Array.from({ length: nbytes }, (_, i) => `(b[${base} + ${first + i}] << ${8 * i})`).join(' | ');
      const raw = `(((${bytes}) >>> ${shift}) & ${f.bitSize === 32 ? 0xffffffff : (1 << f.bitSize) - 1})`;
      if (f.type.signed) return `(${raw} << ${32 - f.bitSize} >> ${32 - f.bitSize})`;
      return f.bitSize === 32 ? `(${raw} >>> 0)` : raw;
    };

    const expr = (t, at) => {
      switch (t.kind) {
        case 'int':
          return intExpr(t, at);
        case 'bool':
          return `(b[${at}] !== 0)`;
        case 'float':
          return t.size === 4 ? `dv.getFloat32(${at}, true)` : `dv.getFloat64(${at}, true)`;
        case 'ptr':
          return int64 ? `(dv.getUint32(${at}, true) + dv.getUint32(${at} + 4, true) * 4294967296)` : `dv.getBigUint64(${at}, true)`;
        case 'enum': {
          const v = intExpr({ size: t.size, signed: t.signed }, at);
          if (!enumNames) return v;
          const names = constant(new Map(t.values.map(([name, value]) => [t.size === 8 && !int64 ? BigInt(value) : value, name])));
          return `enumName(${names}, ${v})`;
        }
        case 'string':
          return `cstr(b, ${at}, ${t.size})`;
        // copies: a kept field must not pin the whole batch in memory
        case 'bytes':
          return `Buffer.from(b.subarray(${at}, ${at} + ${t.size}))`;
        case 'flex':
          return `Buffer.from(b.subarray(${at}, end))`;
        case 'stack':
          return `stackOf(b, ${at}, ${t.len}, ${int64})`;
        case 'array': {
          const es = t.elem.size;
          if (t.len <= 64) {
            return `[${Array.from({ length: t.len }, (_, i) => expr(t.elem, `${at} + ${i * es}`)).join(', ')}]`;
          }
          const elem = constant(compile(t.elem, options));
          return `arrayOf(b, ${at}, ${t.len}, ${es}, ${elem}, end, dv)`;
        }
        case 'struct':
        case 'union': {
          const props = t.fields.map((f) => {
            const value = f.bitSize ? bitfieldExpr(f, at) : expr(f.type, `${at} + ${f.offset}`);
            return `${JSON.stringify(f.name)}: ${value}`;
          });
          return `{ ${props.join(', ')} }`;
        }
        default:
          return `b.subarray(${at}, ${at} + ${t.size})`;
      }
    };

    const body = `return ${expr(layout, 'o')};`;
    const params = consts.map((_, i) => `k${i}`);
    // eslint-disable-next-line no-new-func
    const make = new Function('cstr', 'enumName', 'arrayOf', 'stackOf', ...params, `return function decode(b, o, end, dv) { ${body} };`);
    const decode = make(cstr, enumName, arrayOf, stackOf, ...consts);
    decode.size = layout.size;
    return decode;
  }

  function enumName(names, v) {
    const name = names.get(v);
    return name === undefined ? v : name;
  }

  function arrayOf(b, at, len, size, elem, end, dv) {
    const out = new Array(len);
    for (let i = 0; i < len; i++) out[i] = elem(b, at + i * size, end, dv);
    return out;
  }

  /** A stack trace: the instruction addresses up to the first zero. */
  function stackOf(b, at, len, asNumber) {
    const out = [];
    for (let i = 0; i < len; i++) {
      const ip = b.readBigUInt64LE(at + 8 * i);
      if (ip === 0n) break;
      out.push(asNumber ? Number(ip) : ip);
    }
    return out;
  }

  /** Decodes a whole Buffer (maps, globals). */
  function decode(id, buf) {
    return decoderOf(id)(buf, 0, buf.length, new DataView(buf.buffer, buf.byteOffset, buf.length));
  }

  // ---- encoding: checked, interpreted (maps and globals are not hot) ------

  /**
   * Encodes `value` of layout `id` into a new Buffer, or returns a string
   * saying what is wrong with it.
   */
  function encode(id, value, what) {
    const t = layoutOf(id);
    try {
      if (Buffer.isBuffer(value) || value instanceof Uint8Array) {
        if (value.length !== t.size && t.kind !== 'string' && t.kind !== 'bytes') {
          throw new CodecError(`${what} is a Buffer of ${value.length} bytes; the type is ${t.size} bytes`);
        }
      }
      const b = Buffer.alloc(t.size);
      put(t, value, b, 0, what);
      return b;
    } catch (e) {
      if (e instanceof CodecError) return e.message;
      throw e;
    }
  }

  const typeName = (t) => {
    switch (t.kind) {
      case 'int':
        return `${t.signed ? 's' : 'u'}${t.size * 8}`;
      case 'string':
        return `char[${t.size}]`;
      case 'bytes':
        return `u8[${t.size}]`;
      case 'struct':
      case 'union':
      case 'enum':
        return `${t.kind} ${t.name}`;
      case 'array':
        return `${typeName(t.elem)}[${t.len}]`;
      default:
        return t.kind;
    }
  };

  function toBigInt(v, t, what) {
    if (typeof v === 'bigint') return v;
    if (typeof v === 'number') {
      if (!Number.isInteger(v)) throw new CodecError(`${what}: ${v} is not an integer (${typeName(t)})`);
      if (!Number.isSafeInteger(v)) throw new CodecError(`${what}: ${v} is beyond Number.MAX_SAFE_INTEGER; pass a BigInt`);
      return BigInt(v);
    }
    if (typeof v === 'boolean') return v ? 1n : 0n;
    throw new CodecError(`${what}: expected a number or bigint for ${typeName(t)}, got ${describe(v)}`);
  }

  function describe(v) {
    if (v === null) return 'null';
    if (Array.isArray(v)) return 'an array';
    if (Buffer.isBuffer(v)) return `a Buffer of ${v.length} bytes`;
    return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
  }

  function putInt(t, v, b, at, what, bits = t.size * 8) {
    const n = toBigInt(v, t, what);
    const min = t.signed ? -(1n << BigInt(bits - 1)) : 0n;
    const max = t.signed ? (1n << BigInt(bits - 1)) - 1n : (1n << BigInt(bits)) - 1n;
    if (n < min || n > max) throw new CodecError(`${what}: ${n} does not fit ${t.signed ? 's' : 'u'}${bits} (range ${min}..${max})`);
    return BigInt.asUintN(bits, n);
  }

  function writeUint(b, at, size, u) {
    for (let i = 0; i < size; i++) b[at + i] = Number((u >> BigInt(8 * i)) & 0xffn);
  }

  function put(t, v, b, at, what) {
    if ((Buffer.isBuffer(v) || v instanceof Uint8Array) && t.kind !== 'string') {
      if (v.length > t.size) throw new CodecError(`${what} is a Buffer of ${v.length} bytes; ${typeName(t)} has ${t.size}`);
      b.set(v, at);
      return;
    }
    switch (t.kind) {
      case 'int':
      case 'ptr':
        writeUint(b, at, t.size, putInt(t, v, b, at, what));
        return;
      case 'bool':
        if (typeof v !== 'boolean' && v !== 0 && v !== 1) throw new CodecError(`${what}: expected a boolean, got ${describe(v)}`);
        b[at] = v ? 1 : 0;
        return;
      case 'float':
        if (typeof v !== 'number') throw new CodecError(`${what}: expected a number, got ${describe(v)}`);
        if (t.size === 4) b.writeFloatLE(v, at);
        else b.writeDoubleLE(v, at);
        return;
      case 'enum': {
        let n = v;
        if (typeof v === 'string') {
          const found = t.values.find(([name]) => name === v);
          if (!found) throw new CodecError(`${what}: '${v}' is not an enumerator of enum ${t.name} (${t.values.map(([name]) => name).join(', ')})`);
          n = found[1];
        }
        writeUint(b, at, t.size, putInt(t, n, b, at, what));
        return;
      }
      case 'string': {
        const bytes = Buffer.isBuffer(v) || v instanceof Uint8Array ? v : typeof v === 'string' ? Buffer.from(v, 'utf8') : null;
        if (!bytes) throw new CodecError(`${what}: expected a string for char[${t.size}], got ${describe(v)}`);
        if (bytes.length > t.size) throw new CodecError(`${what}: ${bytes.length} bytes do not fit char[${t.size}]`);
        b.set(bytes, at);
        return;
      }
      case 'stack':
        if (!Array.isArray(v) || v.length > t.len) throw new CodecError(`${what}: expected an array of at most ${t.len} addresses, got ${describe(v)}`);
        v.forEach((ip, i) => writeUint(b, at + 8 * i, 8, putInt({ kind: 'int', size: 8, signed: false }, ip, b, at, `${what}[${i}]`)));
        return;
      case 'bytes':
      case 'flex':
        throw new CodecError(`${what}: expected a Buffer for ${typeName(t)}, got ${describe(v)}`);
      case 'array': {
        if (!Array.isArray(v)) throw new CodecError(`${what}: expected an array for ${typeName(t)}, got ${describe(v)}`);
        if (v.length > t.len) throw new CodecError(`${what}: ${v.length} elements do not fit ${typeName(t)}`);
        v.forEach((e, i) => put(t.elem, e, b, at + i * t.elem.size, `${what}[${i}]`));
        return;
      }
      case 'struct':
      case 'union': {
        if (v === null || typeof v !== 'object' || Array.isArray(v)) {
          throw new CodecError(`${what}: expected an object for ${typeName(t)}, got ${describe(v)}`);
        }
        const fields = new Map(t.fields.map((f) => [f.name, f]));
        const given = Object.keys(v).filter((k) => v[k] !== undefined);
        for (const k of given) {
          if (!fields.has(k)) throw new CodecError(`${what}: ${typeName(t)} has no field '${k}' (fields: ${t.fields.map((f) => f.name).join(', ')})`);
        }
        if (t.kind === 'union' && given.length > 1) throw new CodecError(`${what}: give one member of ${typeName(t)}, not ${given.join(', ')}`);
        for (const k of given) {
          const f = fields.get(k);
          if (f.bitSize) {
            const u = putInt(f.type, v[k], b, at, `${what}.${k}`, f.bitSize);
            for (let i = 0; i < f.bitSize; i++) {
              const bit = f.bitOffset + i;
              const byte = at + (bit >> 3);
              if ((u >> BigInt(i)) & 1n) b[byte] |= 1 << (bit & 7);
              else b[byte] &= ~(1 << (bit & 7));
            }
          } else {
            put(f.type, v[k], b, at + f.offset, `${what}.${k}`);
          }
        }
        return;
      }
      default:
        throw new CodecError(`${what}: cannot encode ${t.kind}`);
    }
  }

  // ---- the dispatcher -------------------------------------------------

  const rethrow = (e) => process.nextTick(() => {
    throw e;
  });

  /**
   * The function the poller's batches are handed to: calls `callback` once
   * per record (decoded with layout `typeId` when it is >= 0), and `lost`
   * for the losses. Exceptions are rethrown on the next tick
   * ('uncaughtException') and the batch goes on. Returns how many records
   * were shorter than the type (skipped, reported to `onError`). With
   * `batch`, `callback(data, ends[, cpus])` once per batch instead.
   */
  function dispatcher(callback, lost, perCpu, typeId, onError, batch) {
    const decode = typeId >= 0 ? decoderOf(typeId) : null;
    const size = decode ? decode.size : 0;
    let warned = false;
    const short = (len) => {
      const err = new Error(`a record of ${len} bytes is shorter than ${typeName(layoutOf(typeId))} (${size} bytes): skipped`);
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
      if (losses !== undefined && losses !== null && lost) {
        for (let i = 0; i < losses.length; i += 2) {
          try {
            if (perCpu) lost(losses[i], losses[i + 1]);
            else lost(losses[i + 1]);
          } catch (e) {
            rethrow(e);
          }
        }
      }
    };
    if (batch) {
      // one call per batch: no object per record at all
      return function dispatchBatch(data, ends, cpus, losses) {
        if (ends.length > 0) {
          try {
            if (perCpu) callback(data, ends, cpus);
            else callback(data, ends);
          } catch (e) {
            rethrow(e);
          }
        }
        reportLosses(losses);
        return 0;
      };
    }
    return function dispatch(data, ends, cpus, losses) {
      let start = 0;
      let shortRecords = 0;
      const n = ends.length;
      // one view per batch: DataView reads are inlined by V8, Buffer's
      // read*LE methods are not (about half the cost of a decode)
      const dv = new DataView(data.buffer, data.byteOffset, data.length);
      for (let i = 0; i < n; i++) {
        const end = ends[i];
        let record;
        if (decode === null) {
          record = data.subarray(start, end);
        } else if (end - start < size) {
          shortRecords++;
          short(end - start);
          start = end;
          continue;
        } else {
          record = decode(data, start, end, dv);
        }
        start = end;
        try {
          if (perCpu) callback(cpus[i], record);
          else callback(record);
        } catch (e) {
          rethrow(e);
        }
      }
      reportLosses(losses);
      return shortRecords;
    };
  }

  const iterator = (iterable) => iterable[Symbol.iterator]();

  return { register, decode, encode, dispatcher, iterator };
})
