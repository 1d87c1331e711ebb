'use strict';
/**
 * JavaScript frames at their original place: a script's source map
 * (TypeScript, a bundler, a minifier) read from the script's
 * `//# sourceMappingURL=` comment and traced with @jridgewell/trace-mapping.
 *
 *   const maps = new SourceMaps({ pid });            // default: this process
 *   maps.map({ name, file: '/app/dist/a.js', line: 10, column: 5 });
 *   // -> { name, file: '/app/src/a.ts', line: 7, column: 3, generated: { file, line, column }, ... }
 *   maps.mapFrames(frames);                           // a stack, innermost first (inlined ones too)
 *
 * The comment is the script's last line that is not blank: a path
 * relative to the script (or absolute, or file://), or an inline
 * `data:application/json;base64,` URL. A map's sources are resolved
 * against its `sourceRoot` and the map's own place (the script's, for an
 * inline map). Lines and columns are 1-based, in and out. The name: the
 * map's name for the function at the calling frame's call site, where the
 * caller is in the same script (how node's --enable-source-maps names
 * frames), else the generated one.
 *
 * A map is untrusted input: a last line or a map over `maxFileBytes`
 * (64 MiB), a malformed map, a missing one, a map on the network, a
 * position with no mapping leave the generated position, with a `reason`
 * saying why. A script without the comment is left as it is, without one.
 * Files of another process are read inside its root (the addon's
 * readTargetFile: no link it planted, no FIFO or device); this process's
 * with fs. Maps are parsed once per file and kept while their total size
 * is under `maxBytes` (256 MiB; the least recently used go first); a
 * script is looked at again when its size or time changed (checked at
 * most once a second).
 */
const fs = require('node:fs');
const path = require('node:path');
const { fileURLToPath } = require('node:url');
const native = require('../core/native');
const { codedError } = require('../core/validate');

const MiB = 1 << 20;
const DEFAULT_MAX_BYTES = 256 * MiB;
const DEFAULT_MAX_FILE_BYTES = 64 * MiB;
const FIRST_TAIL = 64 * 1024;
const RECHECK_MS = 1000;
const ENTRY_BYTES = 256;
const COMMENT = /^\s*\/\/[#@]\s*sourceMappingURL=(\S+)\s*$/;

let traceMapping;
function tracer() {
  traceMapping ??= require('@jridgewell/trace-mapping');
  return traceMapping;
}

/** This process's files, with fs: `{ stat(file), read(file, offset, length) }` (regular files only). */
const OWN_FILES = {
  stat(file) {
    const st = fs.statSync(file);
    if (!st.isFile()) throw codedError('ERR_BPF_INVALID_OBJECT', `${file} is not a regular file`);
    return { size: st.size, id: `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}` };
  },
  read(file, offset, length) {
    const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    try {
      const buf = Buffer.alloc(length);
      let got = 0;
      while (got < length) {
        const n = fs.readSync(fd, buf, got, length - got, offset + got);
        if (n === 0) break;
        got += n;
      }
      return buf.subarray(0, got);
    } finally {
      fs.closeSync(fd);
    }
  },
};

/** Process `pid`'s files, inside its root (the addon's statTargetFile and readTargetFile), or null: an addon without them. */
function targetFiles(pid) {
  if (typeof native.readTargetFile !== 'function' || typeof native.statTargetFile !== 'function') return null;
  return {
    stat(file) {
      const st = native.statTargetFile(file, { pid });
      return { size: st.size, id: `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}` };
    },
    read: (file, offset, length) => native.readTargetFile(file, { pid, offset, length }),
  };
}

/** `name file:line:column`, as lib/frames/v8.js labels a JS frame. */
function labelOf(f) {
  if (!f.file) return f.name;
  if (!f.line) return `${f.name} ${f.file}`;
  return `${f.name} ${f.file}:${f.line}:${f.column ?? 0}`;
}

/** A script's path from the name V8 gives it (a path, or file:// for ES modules), or null: not a file (node:internal/..., eval). */
function scriptPath(file) {
  if (typeof file !== 'string') return null;
  if (file.startsWith('file://')) {
    try {
      return fileURLToPath(file);
    } catch {
      return null;
    }
  }
  return path.isAbsolute(file) ? file : null;
}

const mib = (n) => `${Math.round((n / MiB) * 10) / 10} MiB`;

class SourceMaps {
  #pid;
  #files;
  #maxBytes;
  #maxFileBytes;
  #cache = new Map(); // script path -> { id, checked, map?, mapFile?, reason?, bytes } (least recently used first)
  #bytes = 0;

  /** @param {{ pid?: number, maxBytes?: number, maxFileBytes?: number }} [options] */
  constructor({ pid = process.pid, maxBytes = DEFAULT_MAX_BYTES, maxFileBytes = DEFAULT_MAX_FILE_BYTES } = {}) {
    if (!Number.isInteger(pid) || pid <= 0) throw codedError('ERR_BPF_INVALID_VALUE', `new SourceMaps({ pid }): pid is a process id, a whole number above 0, got ${pid}`);
    for (const [k, v] of Object.entries({ maxBytes, maxFileBytes })) {
      if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) throw codedError('ERR_BPF_INVALID_VALUE', `new SourceMaps({ ${k} }): ${k} is a size in bytes, a whole number above 0, got ${v}`);
    }
    this.#pid = pid;
    this.#files = pid === process.pid ? OWN_FILES : targetFiles(pid);
    this.#maxBytes = maxBytes;
    this.#maxFileBytes = maxFileBytes;
  }

  /** How many maps (and scripts without one) are kept, and their bytes. */
  get cached() {
    return { files: this.#cache.size, bytes: this.#bytes };
  }

  /**
   * A stack's frames (innermost first, each with its `inlined`, innermost
   * first), each JS one at its original place: a new array.
   */
  mapFrames(frames) {
    return frames.map((f, i) => {
      const next = frames[i + 1];
      return this.map(f, next?.inlined?.[0] ?? next);
    });
  }

  /**
   * `frame` (`{ name, file, line, column }`, 1-based) at its original
   * place, with `generated: { file, line, column }`; its `inlined` too. Or
   * `frame` itself: no file, no line, or a script without a map; or with a
   * `reason`: the map could not be used. `caller`: the frame that called it
   * (its call site names the function in the map), if known.
   */
  map(frame, caller) {
    if (!frame || (frame.kind !== undefined && frame.kind !== 'js')) return frame;
    let out = this.#one(frame, caller);
    if (frame.inlined?.length) {
      // the caller of an inlined function is the next one out, the physical frame last
      const inlined = frame.inlined.map((g, i) => this.#one(g, frame.inlined[i + 1] ?? frame));
      if (out === frame) out = { ...frame };
      out.inlined = inlined;
    }
    return out;
  }

  #one(frame, caller) {
    if (!frame.line) return frame;
    const entry = this.#entry(frame.file);
    if (!entry) return frame;
    if (entry.reason) return { ...frame, reason: frame.reason ? `${frame.reason}; ${entry.reason}` : entry.reason };
    let pos;
    try {
      pos = this.#original(entry.map, frame.line, frame.column);
    } catch (err) {
      // (mappings are decoded at the first look-up: a malformed one throws here)
      const why = `the source map ${entry.mapFile} is malformed: ${String(err.message).slice(0, 200)}`;
      return { ...frame, reason: frame.reason ? `${frame.reason}; ${why}` : why };
    }
    if (!pos) {
      const why = `no mapping at ${frame.line}:${frame.column ?? 0} in ${entry.mapFile}`;
      return { ...frame, reason: frame.reason ? `${frame.reason}; ${why}` : why };
    }
    let name = frame.name;
    if (caller?.line && caller.file === frame.file) {
      try {
        name = this.#original(entry.map, caller.line, caller.column)?.name ?? name;
      } catch {
        // (the generated name stays)
      }
    }
    const file = scriptPath(pos.source) ?? pos.source;
    const out = { ...frame, name, file, line: pos.line, column: pos.column + 1, generated: { file: frame.file, line: frame.line, column: frame.column } };
    if ('label' in frame) out.label = labelOf(out);
    return out;
  }

  /** The original position at a generated one (1-based column), or null: no mapping there. */
  #original(map, line, column) {
    const { originalPositionFor, LEAST_UPPER_BOUND } = tracer();
    const needle = { line, column: Math.max(0, (column ?? 1) - 1) };
    let pos = originalPositionFor(map, needle);
    // (a column before the line's first segment: that segment)
    if (pos.source === null) pos = originalPositionFor(map, { ...needle, bias: LEAST_UPPER_BOUND });
    return pos.source === null || pos.line === null ? null : { source: pos.source, line: pos.line, column: pos.column ?? 0, name: pos.name };
  }

  /** The cache entry of script `file`: `{ map, mapFile }`, `{ reason }`, or null (not a file, or no map). */
  #entry(file) {
    const script = scriptPath(file);
    if (!script) return null;
    let entry = this.#cache.get(script);
    const now = Date.now();
    if (entry && now - entry.checked < RECHECK_MS) return this.#touch(script, entry);
    let st;
    try {
      if (!this.#files) throw codedError('ERR_BPF_NOT_SUPPORTED', 'this addon cannot read another process\'s files (no readTargetFile): rebuild it');
      st = this.#files.stat(script);
    } catch (err) {
      return this.#keep(script, { id: null, checked: now, reason: `no source map read: ${err.message}`, bytes: 0 });
    }
    if (entry && entry.id === st.id) {
      entry.checked = now;
      return this.#touch(script, entry);
    }
    entry = this.#load(script, st);
    entry.id = st.id;
    entry.checked = now;
    return this.#keep(script, entry);
  }

  #touch(script, entry) {
    this.#cache.delete(script);
    this.#cache.set(script, entry);
    return entry.none ? null : entry;
  }

  #keep(script, entry) {
    // (an entry without a map weighs its path and a little: a target's many script names stay bounded too)
    entry.bytes += ENTRY_BYTES + script.length;
    const old = this.#cache.get(script);
    if (old) {
      this.#bytes -= old.bytes;
      this.#cache.delete(script);
    }
    this.#cache.set(script, entry);
    this.#bytes += entry.bytes;
    for (const [k, e] of this.#cache) {
      if (this.#bytes <= this.#maxBytes || k === script) break;
      this.#cache.delete(k);
      this.#bytes -= e.bytes;
    }
    return entry.none ? null : entry;
  }

  /** Reads script `script`'s map: `{ map, mapFile, bytes }`, `{ reason, bytes }` or `{ none }`. */
  #load(script, st) {
    let url;
    try {
      url = this.#mapUrl(script, st.size);
    } catch (err) {
      return { reason: `no source map read: ${err.message}`, bytes: 0 };
    }
    if (url === null) return { none: true, bytes: 0 };
    let text;
    let mapFile;
    if (url.startsWith('data:')) {
      // data:[<mediatype>][;base64],<data>
      const comma = url.indexOf(',');
      const head = comma < 0 ? url : url.slice(0, comma);
      const data = comma < 0 ? '' : url.slice(comma + 1);
      if (!/;base64$/i.test(head)) return { reason: `the inline source map of ${script} is a data: URL that is not base64 (${head.slice(0, 60)}): not read`, bytes: 0 };
      if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(data)) return { reason: `the inline source map of ${script} is not valid base64`, bytes: 0 };
      text = Buffer.from(data, 'base64').toString('utf8');
      mapFile = script;
    } else {
      if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(url) && !url.startsWith('file:')) return { reason: `the source map of ${script} is at ${url.slice(0, 200)}: not fetched (a file or a data: URL is read)`, bytes: 0 };
      mapFile = url.startsWith('file:') ? scriptPath(url) : path.resolve(path.dirname(script), safeDecode(url));
      if (!mapFile) return { reason: `the source map of ${script} is at ${url.slice(0, 200)}: not a file path`, bytes: 0 };
      try {
        const mst = this.#files.stat(mapFile);
        if (mst.size > this.#maxFileBytes) return { reason: `the source map ${mapFile} has ${mib(mst.size)}, more than the ${mib(this.#maxFileBytes)} read`, bytes: 0 };
        text = this.#files.read(mapFile, 0, mst.size).toString('utf8');
      } catch (err) {
        return { reason: `the source map of ${script} is missing: ${err.message}`, bytes: 0 };
      }
    }
    let map;
    try {
      const json = JSON.parse(text);
      if (!json || typeof json !== 'object' || json.version !== 3 || (typeof json.mappings !== 'string' && !Array.isArray(json.sections))) throw new Error('not a version 3 source map (version, mappings)');
      if (json.sources !== undefined && !Array.isArray(json.sources)) throw new Error('sources is not a list');
      const { AnyMap } = tracer();
      map = new AnyMap(json, mapFile);
    } catch (err) {
      return { reason: `the source map ${mapFile === script ? `inline in ${script}` : mapFile} is malformed: ${String(err.message).slice(0, 200)}`, bytes: 0 };
    }
    return { map, mapFile, bytes: text.length };
  }

  /**
   * The URL in script `script`'s last line that is not blank, or null: no
   * sourceMappingURL comment. Read from the end, a tail at a time (an
   * inline map is one long line).
   */
  #mapUrl(script, size) {
    let length = Math.min(size, FIRST_TAIL);
    for (;;) {
      const tail = this.#files.read(script, size - length, length);
      let end = tail.length;
      while (end > 0 && (tail[end - 1] === 0x0a || tail[end - 1] === 0x0d || tail[end - 1] === 0x20 || tail[end - 1] === 0x09)) end--;
      const nl = tail.lastIndexOf(0x0a, end - 1);
      if (nl >= 0 || length === size) {
        // (a line that cannot be the comment, by its first bytes: no need to decode it all)
        const line = tail.subarray(nl + 1, end);
        const head = line.subarray(0, 64).toString('latin1');
        if (!/^\s*\/\/[#@]\s*sourceMappingURL=/.test(head)) return null;
        const m = COMMENT.exec(line.toString('utf8'));
        return m ? m[1] : null;
      }
      if (length >= this.#maxFileBytes) throw codedError('ERR_BPF_INVALID_OBJECT', `the last line of ${script} is more than ${mib(this.#maxFileBytes)}`);
      // (the last line may be the comment only if the tail so far could be part of it)
      if (!tail.subarray(0, end).toString('latin1').includes('sourceMappingURL=') && !/^[A-Za-z0-9+/=_-]*$/.test(tail.subarray(0, end).toString('latin1'))) return null;
      length = Math.min(size, this.#maxFileBytes, length * 4);
    }
  }
}

function safeDecode(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

module.exports = { SourceMaps, DEFAULT_MAX_BYTES, DEFAULT_MAX_FILE_BYTES };
