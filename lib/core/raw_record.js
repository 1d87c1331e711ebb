'use strict';
/**
 * A raw record: a Buffer (instanceof Buffer, every Buffer method) viewing
 * its bytes in the dispatcher's batch. Made with `new`, it costs a third of
 * `data.subarray()` (12 ns instead of 35 on the bench machine), which goes
 * through Buffer's deprecated-constructor path to make each view.
 *
 * Its fixed-size read methods (`readUInt32LE`, `readBigUInt64LE`,
 * `readDoubleBE`, ... and their `Uint` spellings) are Buffer's without the
 * cost of Node's argument check on the way in: Node checks `offset` through
 * a wrapper V8 does not inline (rest arguments, `Reflect.apply`, a `try`),
 * which cost as much as the read itself (the dispatcher alone, 20 M
 * records, two `readUInt32LE` calls each: 34 ns -> 28 ns per record). An
 * offset that is a number naming bytes inside the record is read at once;
 * anything else goes to Buffer's own method, which returns or throws what
 * it always does. Same results, same errors (__test__/dispatch.test.js
 * compares them for every method).
 */
const B = Buffer.prototype;

class RawRecord extends Uint8Array {}
Object.setPrototypeOf(RawRecord.prototype, B);

// 8-byte and floating-point values are put together here and read back
// with the byte order asked for (DataView calls are inlined by V8)
const scratch = new DataView(new ArrayBuffer(8));

/** Whether bytes `offset` to `offset + size - 1` are in `b`: `offset` a number, an integer, in range. */
const inside = (b, offset, size) => typeof offset === 'number' && b[offset] !== undefined && b[offset + size - 1] !== undefined;
const u16le = (b, o) => b[o] + b[o + 1] * 2 ** 8;
const u16be = (b, o) => b[o] * 2 ** 8 + b[o + 1];
const u32le = (b, o) => b[o] + b[o + 1] * 2 ** 8 + b[o + 2] * 2 ** 16 + b[o + 3] * 2 ** 24;
const u32be = (b, o) => b[o] * 2 ** 24 + b[o + 1] * 2 ** 16 + b[o + 2] * 2 ** 8 + b[o + 3];
/** Puts the 8 bytes at `o` into `scratch` in the record's order. */
const eight = (b, o) => {
  scratch.setUint32(0, u32le(b, o), true);
  scratch.setUint32(4, u32le(b, o + 4), true);
};

const fast = {
  readUInt8(offset = 0) {
    return inside(this, offset, 1) ? this[offset] : B.readUInt8.call(this, offset);
  },
  readInt8(offset = 0) {
    if (!inside(this, offset, 1)) return B.readInt8.call(this, offset);
    const v = this[offset];
    return v | ((v & 2 ** 7) * 0x1fffffe);
  },
  readUInt16LE(offset = 0) {
    return inside(this, offset, 2) ? u16le(this, offset) : B.readUInt16LE.call(this, offset);
  },
  readUInt16BE(offset = 0) {
    return inside(this, offset, 2) ? u16be(this, offset) : B.readUInt16BE.call(this, offset);
  },
  readInt16LE(offset = 0) {
    if (!inside(this, offset, 2)) return B.readInt16LE.call(this, offset);
    const v = u16le(this, offset);
    return v | ((v & 2 ** 15) * 0x1fffe);
  },
  readInt16BE(offset = 0) {
    if (!inside(this, offset, 2)) return B.readInt16BE.call(this, offset);
    const v = u16be(this, offset);
    return v | ((v & 2 ** 15) * 0x1fffe);
  },
  readUInt32LE(offset = 0) {
    return inside(this, offset, 4) ? u32le(this, offset) : B.readUInt32LE.call(this, offset);
  },
  readUInt32BE(offset = 0) {
    return inside(this, offset, 4) ? u32be(this, offset) : B.readUInt32BE.call(this, offset);
  },
  readInt32LE(offset = 0) {
    return inside(this, offset, 4) ? u32le(this, offset) | 0 : B.readInt32LE.call(this, offset);
  },
  readInt32BE(offset = 0) {
    return inside(this, offset, 4) ? u32be(this, offset) | 0 : B.readInt32BE.call(this, offset);
  },
  readBigUInt64LE(offset = 0) {
    if (!inside(this, offset, 8)) return B.readBigUInt64LE.call(this, offset);
    eight(this, offset);
    return scratch.getBigUint64(0, true);
  },
  readBigUInt64BE(offset = 0) {
    if (!inside(this, offset, 8)) return B.readBigUInt64BE.call(this, offset);
    eight(this, offset);
    return scratch.getBigUint64(0, false);
  },
  readBigInt64LE(offset = 0) {
    if (!inside(this, offset, 8)) return B.readBigInt64LE.call(this, offset);
    eight(this, offset);
    return scratch.getBigInt64(0, true);
  },
  readBigInt64BE(offset = 0) {
    if (!inside(this, offset, 8)) return B.readBigInt64BE.call(this, offset);
    eight(this, offset);
    return scratch.getBigInt64(0, false);
  },
  readFloatLE(offset = 0) {
    if (!inside(this, offset, 4)) return B.readFloatLE.call(this, offset);
    scratch.setUint32(0, u32le(this, offset), true);
    return scratch.getFloat32(0, true);
  },
  readFloatBE(offset = 0) {
    if (!inside(this, offset, 4)) return B.readFloatBE.call(this, offset);
    scratch.setUint32(0, u32le(this, offset), true);
    return scratch.getFloat32(0, false);
  },
  readDoubleLE(offset = 0) {
    if (!inside(this, offset, 8)) return B.readDoubleLE.call(this, offset);
    eight(this, offset);
    return scratch.getFloat64(0, true);
  },
  readDoubleBE(offset = 0) {
    if (!inside(this, offset, 8)) return B.readDoubleBE.call(this, offset);
    eight(this, offset);
    return scratch.getFloat64(0, false);
  },
};

for (const [name, method] of Object.entries(fast)) {
  // as Buffer has them: writable, configurable, not enumerable; `readUint32LE` is `readUInt32LE`
  const define = (key) => Object.defineProperty(RawRecord.prototype, key, { value: method, writable: true, configurable: true });
  define(name);
  if (name.includes('UInt')) define(name.replace('UInt', 'Uint'));
}

/** The names of the read methods RawRecord has its own of (for the tests). */
const FAST_READS = Object.keys(fast);

module.exports = { RawRecord, FAST_READS };
