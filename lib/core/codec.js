'use strict';
/**
 * The typed codec: BTF layouts (computed once per type in Rust, src/btf.rs,
 * handed over as plain data) turned into decoders and encoders.
 *
 * A decoder is a function `decode(b, o, end, dv[, u64, i64])` that reads the
 * value at offset `o` of Buffer `b` (`end`: where the record ends, for a
 * flexible trailing array; `dv`: a DataView over `b`). `u64` and `i64`, when
 * given, are a BigUint64Array and a BigInt64Array over the same bytes
 * (`wordViews`), for a value at an 8-byte-aligned `o` on a little-endian
 * host: the generated decoder reads its aligned 64-bit fields from them
 * (Node 20 and 22 do not inline DataView's getBigUint64: two u64 fields cost
 * ~8 ns more per record that way). `decoder()` generates its code
 * once per layout, so that V8 compiles it like hand-written code; where code
 * generation is refused (`node --disallow-code-generation-from-strings`, a
 * CSP) it builds the same decoder from closures instead (`interpretedDecoder`,
 * slower, same results). Encoding is interpreted: maps and globals are not a
 * hot path, and every value is checked.
 *
 * Layouts (see src/btf.rs): `{kind:'int', size, signed}`, `bool`, `float`,
 * `ptr`, `{kind:'enum', name, size, signed, values:[[name, value]]}`,
 * `{kind:'string', size}` (char arrays), `bytes`, `{kind:'array', size, len,
 * elem}`, `{kind:'struct'|'union', name, size, fields:[{name, offset, type,
 * bitOffset?, bitSize?}]}`, `{kind:'flex', size:0, elem}`, `{kind:'stack',
 * size, len}`.
 */

/** An Error with the codec's code. */
function invalid(message) {
  const err = /** @type {NodeJS.ErrnoException} */ (new Error(message));
  err.code = 'ERR_BPF_INVALID_VALUE';
  return err;
}

/** Checks the decode options (`int64`, `enums`); returns them normalized. */
function checkOptions(options = {}) {
  const { int64 = 'bigint', enums = 'name' } = options ?? {};
  if (int64 !== 'bigint' && int64 !== 'number') throw invalid(`option int64: '${int64}' is not one of 'bigint', 'number'`);
  if (enums !== 'name' && enums !== 'number') throw invalid(`option enums: '${enums}' is not one of 'name', 'number'`);
  return { int64, enums };
}

// ---- decoding: helpers shared by both kinds of decoder ---------------------

/** A C string: up to the first NUL within `n` bytes. */
function cstr(b, s, n) {
  const m = s + n;
  let e = s;
  while (e < m && b[e] !== 0) e++;
  return b.utf8Slice(s, e);
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
function stackOf(b, at, len, asNumber, dv) {
  const out = [];
  for (let i = 0; i < len; i++) {
    const ip = dv.getBigUint64(at + 8 * i, true);
    if (ip === 0n) break;
    out.push(asNumber ? Number(ip) : ip);
  }
  return out;
}

/** The enumerator names of an enum layout, keyed as its decoder reads them. */
function enumNames(t, int64) {
  return new Map(t.values.map(([name, value]) => [t.size === 8 && int64 === 'bigint' ? BigInt(value) : value, name]));
}

// ---- decoding: generated code ----------------------------------------------

/** Compiles `layout` into a decoder by code generation (throws EvalError where refused). */
function generatedDecoder(layout, options) {
  const { int64, enums } = checkOptions(options);
  const consts = [];
  const constant = (v) => {
    consts.push(v);
    return `k${consts.length - 1}`;
  };
  const asNumber = int64 === 'number';

  // `at`: the expression of the offset in `b`; `off`: its offset from the
  // value's start (`o`), for the 64-bit words read from `u64`/`i64`
  const intExpr = (t, at, off) => {
    switch (t.size) {
      case 1:
        return t.signed ? `(b[${at}] << 24 >> 24)` : `b[${at}]`;
      case 2:
        return t.signed ? `dv.getInt16(${at}, true)` : `dv.getUint16(${at}, true)`;
      case 4:
        return t.signed ? `dv.getInt32(${at}, true)` : `dv.getUint32(${at}, true)`;
      case 8:
        if (asNumber) return `(dv.getUint32(${at}, true) + dv.${t.signed ? 'getInt32' : 'getUint32'}(${at} + 4, true) * 4294967296)`;
        {
          const read = t.signed ? `dv.getBigInt64(${at}, true)` : `dv.getBigUint64(${at}, true)`;
          if (off % 8 !== 0) return read;
          return `(u64 === undefined ? ${read} : ${t.signed ? 'i64' : 'u64'}[(${at}) >>> 3])`;
        }
      default:
        return `Buffer.from(b.subarray(${at}, ${at} + ${t.size}))`;
    }
  };

  const bitfieldExpr = (f, base) => {
    const first = f.bitOffset >> 3;
    const shift = f.bitOffset & 7;
    const nbytes = (shift + f.bitSize + 7) >> 3;
    if (nbytes > 4) {
      // bitfields over more than 4 bytes: BigInt arithmetic; a number when
      // it fits 32 bits, as narrower bitfields are
      const bytes = Array.from({ length: nbytes }, (_, i) => `(BigInt(b[${base} + ${first + i}]) << ${8 * i}n)`).join(' | ');
      const v = `((${bytes}) >> ${shift}n) & ${(1n << BigInt(f.bitSize)) - 1n}n`;
      const signedV = f.type.signed ? `BigInt.asIntN(${f.bitSize}, ${v})` : v;
      return asNumber || f.bitSize <= 32 ? `Number(${signedV})` : signedV;
    }
    const bytes = Array.from({ length: nbytes }, (_, i) => `(b[${base} + ${first + i}] << ${8 * i})`).join(' | ');
    const raw = `(((${bytes}) >>> ${shift}) & ${f.bitSize === 32 ? 0xffffffff : (1 << f.bitSize) - 1})`;
    if (f.type.signed) return `(${raw} << ${32 - f.bitSize} >> ${32 - f.bitSize})`;
    return f.bitSize === 32 ? `(${raw} >>> 0)` : raw;
  };

  const expr = (t, off) => {
    const at = off === 0 ? 'o' : `o + ${off}`;
    switch (t.kind) {
      case 'int':
        return intExpr(t, at, off);
      case 'bool':
        return `(b[${at}] !== 0)`;
      case 'float':
        return t.size === 4 ? `dv.getFloat32(${at}, true)` : `dv.getFloat64(${at}, true)`;
      case 'ptr':
        return intExpr({ size: 8, signed: false }, at, off);
      case 'enum': {
        const v = intExpr(t, at, off);
        return enums === 'name' ? `enumName(${constant(enumNames(t, int64))}, ${v})` : v;
      }
      case 'string':
        return `cstr(b, ${at}, ${t.size})`;
      // copies: a kept field must not pin the whole batch in memory
      case 'bytes':
        return `Buffer.from(b.subarray(${at}, ${at} + ${t.size}))`;
      case 'flex':
        return `Buffer.from(b.subarray(${at}, end))`;
      case 'stack':
        return `stackOf(b, ${at}, ${t.len}, ${asNumber}, dv)`;
      case 'array': {
        const es = t.elem.size;
        if (t.len <= 64) return `[${Array.from({ length: t.len }, (_, i) => expr(t.elem, off + i * es)).join(', ')}]`;
        return `arrayOf(b, ${at}, ${t.len}, ${es}, ${constant(generatedDecoder(t.elem, options))}, end, dv)`;
      }
      case 'struct':
      case 'union': {
        const props = t.fields.map((f) => {
          const value = f.bitSize ? bitfieldExpr(f, at) : expr(f.type, off + f.offset);
          // a C field may be called __proto__: a computed key makes it a field, not the prototype
          return `${f.name === '__proto__' ? '["__proto__"]' : JSON.stringify(f.name)}: ${value}`;
        });
        return `{ ${props.join(', ')} }`;
      }
      default:
        return `Buffer.from(b.subarray(${at}, ${at} + ${t.size}))`;
    }
  };

  const body = `return ${expr(layout, 0)};`;
  const params = consts.map((_, i) => `k${i}`);
  // eslint-disable-next-line no-new-func
  const make = new Function('cstr', 'enumName', 'arrayOf', 'stackOf', ...params, `return function decode(b, o, end, dv, u64, i64) { ${body} };`);
  const decode = make(cstr, enumName, arrayOf, stackOf, ...consts);
  decode.size = layout.size;
  return decode;
}

// ---- decoding: closures (no code generation) -------------------------------

/** The same decoder as `generatedDecoder`, built from closures. */
function interpretedDecoder(layout, options) {
  const { int64, enums } = checkOptions(options);
  const asNumber = int64 === 'number';

  const int = (t) => {
    switch (t.size) {
      case 1:
        return t.signed ? (b, at) => (b[at] << 24) >> 24 : (b, at) => b[at];
      case 2:
        return t.signed ? (b, at, end, dv) => dv.getInt16(at, true) : (b, at, end, dv) => dv.getUint16(at, true);
      case 4:
        return t.signed ? (b, at, end, dv) => dv.getInt32(at, true) : (b, at, end, dv) => dv.getUint32(at, true);
      case 8:
        if (asNumber) {
          return t.signed
            ? (b, at, end, dv) => dv.getUint32(at, true) + dv.getInt32(at + 4, true) * 4294967296
            : (b, at, end, dv) => dv.getUint32(at, true) + dv.getUint32(at + 4, true) * 4294967296;
        }
        return t.signed ? (b, at, end, dv) => dv.getBigInt64(at, true) : (b, at, end, dv) => dv.getBigUint64(at, true);
      default:
        return (b, at) => Buffer.from(b.subarray(at, at + t.size));
    }
  };

  // a bitfield reads from the struct's base, not from a field offset
  const bitfield = (f) => {
    const first = f.bitOffset >> 3;
    const shift = f.bitOffset & 7;
    const nbytes = (shift + f.bitSize + 7) >> 3;
    if (nbytes > 4) {
      const mask = (1n << BigInt(f.bitSize)) - 1n;
      return (b, base) => {
        let v = 0n;
        for (let i = 0; i < nbytes; i++) v |= BigInt(b[base + first + i]) << BigInt(8 * i);
        v = (v >> BigInt(shift)) & mask;
        if (f.type.signed) v = BigInt.asIntN(f.bitSize, v);
        return asNumber || f.bitSize <= 32 ? Number(v) : v;
      };
    }
    const mask = f.bitSize === 32 ? 0xffffffff : (1 << f.bitSize) - 1;
    return (b, base) => {
      let v = 0;
      for (let i = 0; i < nbytes; i++) v |= b[base + first + i] << (8 * i);
      v = (v >>> shift) & mask;
      if (f.type.signed) return (v << (32 - f.bitSize)) >> (32 - f.bitSize);
      return f.bitSize === 32 ? v >>> 0 : v;
    };
  };

  const build = (t) => {
    switch (t.kind) {
      case 'int':
        return int(t);
      case 'bool':
        return (b, at) => b[at] !== 0;
      case 'float':
        return t.size === 4 ? (b, at, end, dv) => dv.getFloat32(at, true) : (b, at, end, dv) => dv.getFloat64(at, true);
      case 'ptr':
        return int({ size: 8, signed: false });
      case 'enum': {
        const read = int(t);
        if (enums !== 'name') return read;
        const names = enumNames(t, int64);
        return (b, at, end, dv) => enumName(names, read(b, at, end, dv));
      }
      case 'string':
        return (b, at) => cstr(b, at, t.size);
      case 'flex':
        return (b, at, end) => Buffer.from(b.subarray(at, end));
      case 'stack':
        return (b, at, end, dv) => stackOf(b, at, t.len, asNumber, dv);
      case 'array': {
        const elem = build(t.elem);
        const es = t.elem.size;
        return (b, at, end, dv) => arrayOf(b, at, t.len, es, elem, end, dv);
      }
      case 'struct':
      case 'union': {
        const fields = t.fields.map((f) => ({ name: f.name, offset: f.bitSize ? 0 : f.offset, read: f.bitSize ? bitfield(f) : build(f.type) }));
        const set = (o, name, v) => {
          if (name === '__proto__') Object.defineProperty(o, name, { value: v, enumerable: true, writable: true, configurable: true });
          else o[name] = v;
        };
        return (b, at, end, dv) => {
          const o = {};
          for (const f of fields) set(o, f.name, f.read(b, at + f.offset, end, dv));
          return o;
        };
      }
      default:
        return (b, at) => Buffer.from(b.subarray(at, at + t.size));
    }
  };

  const read = build(layout);
  const decode = (b, o, end, dv) => read(b, o, end, dv);
  decode.size = layout.size;
  return decode;
}

let codeGeneration;

/** Whether this process lets us compile code from strings. */
function codeGenerationAllowed() {
  if (codeGeneration === undefined) {
    try {
      codeGeneration = new Function('return true')(); // eslint-disable-line no-new-func
    } catch {
      codeGeneration = false;
    }
  }
  return codeGeneration;
}

const LITTLE_ENDIAN = require('node:os').endianness() === 'LE';

/**
 * The 64-bit word views of Buffer `b` for a decoder (`{ u64, i64 }`), or
 * undefined ones where the words would not read as the DataView does: a
 * big-endian host, or `b` not 8-byte aligned in its ArrayBuffer.
 */
function wordViews(b) {
  if (!LITTLE_ENDIAN || b.byteOffset % 8 !== 0) return { u64: undefined, i64: undefined };
  const n = Math.floor(b.length / 8);
  return { u64: new BigUint64Array(b.buffer, b.byteOffset, n), i64: new BigInt64Array(b.buffer, b.byteOffset, n) };
}

// decoders by layout object, then by options
const decoders = new WeakMap();

/**
 * The decoder of `layout` with `options` (`{ int64, enums }`), made once per
 * layout object: generated code, or closures where code generation is refused.
 */
function decoder(layout, options) {
  const { int64, enums } = checkOptions(options);
  const key = `${int64}/${enums}`;
  let byOptions = decoders.get(layout);
  if (!byOptions) decoders.set(layout, (byOptions = new Map()));
  let decode = byOptions.get(key);
  if (!decode) {
    decode = codeGenerationAllowed() ? generatedDecoder(layout, { int64, enums }) : interpretedDecoder(layout, { int64, enums });
    byOptions.set(key, decode);
  }
  return decode;
}

/** Decodes a whole Buffer (a map value, a global) as `layout`. */
function decode(layout, buf, options) {
  return decoder(layout, options)(buf, 0, buf.length, new DataView(buf.buffer, buf.byteOffset, buf.length));
}

// ---- encoding ---------------------------------------------------------------

/** A C spelling of a layout's type, for messages: `u32`, `char[16]`, `struct event`. */
function typeName(t) {
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
}

function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (Buffer.isBuffer(v)) return `a Buffer of ${v.length} bytes`;
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
}

const isBytes = (v) => Buffer.isBuffer(v) || v instanceof Uint8Array;

function toBigInt(v, t, what) {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw invalid(`${what}: ${v} is not an integer (${typeName(t)})`);
    if (!Number.isSafeInteger(v)) throw invalid(`${what}: ${v} is beyond Number.MAX_SAFE_INTEGER; pass a BigInt`);
    return BigInt(v);
  }
  if (typeof v === 'boolean') return v ? 1n : 0n;
  throw invalid(`${what}: expected a number or bigint for ${typeName(t)}, got ${describe(v)}`);
}

/** `v` as the unsigned bit pattern of an integer of `bits`, checked against its range. */
function intBits(t, v, what, bits = t.size * 8) {
  const n = toBigInt(v, t, what);
  const signed = Boolean(t.signed);
  const min = signed ? -(1n << BigInt(bits - 1)) : 0n;
  const max = signed ? (1n << BigInt(bits - 1)) - 1n : (1n << BigInt(bits)) - 1n;
  if (n < min || n > max) throw invalid(`${what}: ${n} does not fit ${signed ? 's' : 'u'}${bits} (range ${min}..${max})`);
  return BigInt.asUintN(bits, n);
}

function writeUint(b, at, size, u) {
  for (let i = 0; i < size; i++) b[at + i] = Number((u >> BigInt(8 * i)) & 0xffn);
}

function put(t, v, b, at, what) {
  if (isBytes(v) && t.kind !== 'string') {
    if (v.length > t.size) throw invalid(`${what} is a Buffer of ${v.length} bytes; ${typeName(t)} has ${t.size}`);
    b.set(v, at);
    return;
  }
  switch (t.kind) {
    case 'int':
    case 'ptr':
      writeUint(b, at, t.size, intBits(t, v, what));
      return;
    case 'bool':
      if (typeof v !== 'boolean' && v !== 0 && v !== 1) throw invalid(`${what}: expected a boolean, got ${describe(v)}`);
      b[at] = v ? 1 : 0;
      return;
    case 'float':
      if (typeof v !== 'number') throw invalid(`${what}: expected a number, got ${describe(v)}`);
      if (t.size === 4) b.writeFloatLE(v, at);
      else b.writeDoubleLE(v, at);
      return;
    case 'enum': {
      let n = v;
      if (typeof v === 'string') {
        const found = t.values.find(([name]) => name === v);
        if (!found) throw invalid(`${what}: '${v}' is not an enumerator of enum ${t.name} (${t.values.map(([name]) => name).join(', ')})`);
        n = found[1];
      }
      writeUint(b, at, t.size, intBits(t, n, what));
      return;
    }
    case 'string': {
      const bytes = isBytes(v) ? v : typeof v === 'string' ? Buffer.from(v, 'utf8') : null;
      if (!bytes) throw invalid(`${what}: expected a string for char[${t.size}], got ${describe(v)}`);
      if (bytes.length > t.size) throw invalid(`${what}: ${bytes.length} bytes do not fit char[${t.size}]`);
      b.set(bytes, at);
      return;
    }
    case 'stack':
      if (!Array.isArray(v) || v.length > t.len) throw invalid(`${what}: expected an array of at most ${t.len} addresses, got ${describe(v)}`);
      v.forEach((ip, i) => writeUint(b, at + 8 * i, 8, intBits({ kind: 'int', size: 8, signed: false }, ip, `${what}[${i}]`)));
      return;
    case 'bytes':
    case 'flex':
      throw invalid(`${what}: expected a Buffer for ${typeName(t)}, got ${describe(v)}`);
    case 'array':
      if (!Array.isArray(v)) throw invalid(`${what}: expected an array for ${typeName(t)}, got ${describe(v)}`);
      if (v.length > t.len) throw invalid(`${what}: ${v.length} elements do not fit ${typeName(t)}`);
      v.forEach((e, i) => put(t.elem, e, b, at + i * t.elem.size, `${what}[${i}]`));
      return;
    case 'struct':
    case 'union': {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalid(`${what}: expected an object for ${typeName(t)}, got ${describe(v)}`);
      const fields = new Map(t.fields.map((f) => [f.name, f]));
      const given = Object.keys(v).filter((k) => v[k] !== undefined);
      for (const k of given) {
        if (!fields.has(k)) throw invalid(`${what}: ${typeName(t)} has no field '${k}' (fields: ${t.fields.map((f) => f.name).join(', ')})`);
      }
      if (t.kind === 'union' && given.length > 1) throw invalid(`${what}: give one member of ${typeName(t)}, not ${given.join(', ')}`);
      for (const k of given) {
        const f = fields.get(k);
        if (f.bitSize) {
          const u = intBits(f.type, v[k], `${what}.${k}`, f.bitSize);
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
      throw invalid(`${what}: cannot encode ${t.kind}`);
  }
}

/**
 * Encodes `value` as `layout` into a new Buffer of `layout.size` bytes;
 * `what` names the value in errors (`map 'counts' key`). Missing struct
 * fields are zero; unknown fields, out-of-range numbers and strings too long
 * for their array throw ERR_BPF_INVALID_VALUE. A Buffer of the exact size is
 * taken as it is.
 */
function encode(layout, value, what) {
  if (isBytes(value) && value.length !== layout.size && layout.kind !== 'string' && layout.kind !== 'bytes') {
    throw invalid(`${what} is a Buffer of ${value.length} bytes; the type is ${layout.size} bytes`);
  }
  const b = Buffer.alloc(layout.size);
  put(layout, value, b, 0, what);
  return b;
}

module.exports = { decoder, generatedDecoder, interpretedDecoder, wordViews, decode, encode, typeName, checkOptions, codeGenerationAllowed };
