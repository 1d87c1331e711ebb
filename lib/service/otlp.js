'use strict';
/**
 * A profile window (lib/service/profile.js) as OpenTelemetry profiles: an
 * OTLP `ExportProfilesServiceRequest` (opentelemetry-proto's
 * `profiles/v1development`, alpha: the format with one dictionary of
 * strings, mappings, locations, functions, stacks, links and attributes
 * for the whole request), encoded here by a small protobuf writer (no
 * dependency).
 *
 * CPU: sample type `samples/count`, period `cpu/nanoseconds` (the
 * sampling period, as the OpenTelemetry eBPF profiler). Off-CPU:
 * `off_cpu/nanoseconds`. Both kinds ('all') are two profiles of one
 * request. Every sample has the attributes `thread.name`, `thread.id`,
 * `node_libbpf.thread_kind` and, off CPU, `node_libbpf.off_cpu_state`,
 * then its stack's labels (a label named like one of those is left out);
 * `trace_id` (32 hex digits) and `span_id` (16) together become the
 * sample's link, not attributes. A frame is a location, its inlined
 * functions lines before its own, as pprof. The resource: `service.name`
 * (the option, else $OTEL_SERVICE_NAME, else `unknown_service:node`),
 * `process.pid`, `process.runtime.*`.
 */
const crypto = require('node:crypto');
const { codedError } = require('../core/validate');

const KINDS = {
  cpu: { type: ['samples', 'count'], period: ['cpu', 'nanoseconds'] },
  offCpu: { type: ['off_cpu', 'nanoseconds'], period: ['off_cpu', 'nanoseconds'] },
};
const TRACE_ID = /^[0-9a-fA-F]{32}$/;
const SPAN_ID = /^[0-9a-fA-F]{16}$/;
const NO_LINK = { trace: Buffer.alloc(16), span: Buffer.alloc(8) };

/** A protobuf message being written: fields in the order asked, proto3 defaults (0, '') left out. */
class Writer {
  constructor(size = 64) {
    this.buf = Buffer.allocUnsafe(size);
    this.len = 0;
  }

  #room(n) {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  /** A varint of a number (an integer; negative ones as 64-bit two's complement) or a BigInt. */
  raw(v) {
    if (typeof v === 'bigint' || v < 0 || v > Number.MAX_SAFE_INTEGER) {
      let b = BigInt.asUintN(64, BigInt(v));
      this.#room(10);
      while (b > 0x7fn) {
        this.buf[this.len++] = Number(b & 0x7fn) | 0x80;
        b >>= 7n;
      }
      this.buf[this.len++] = Number(b);
      return this;
    }
    this.#room(8);
    while (v > 0x7f) {
      this.buf[this.len++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.len++] = v;
    return this;
  }

  /** A varint field (int32, int64, uint64, bool); 0 is left out. */
  varint(field, v) {
    if (!v) return this;
    return this.raw(field * 8).raw(v);
  }

  fixed64(field, v) {
    if (!v) return this;
    this.raw(field * 8 + 1);
    this.#room(8);
    this.buf.writeBigUInt64LE(BigInt.asUintN(64, BigInt(v)), this.len);
    this.len += 8;
    return this;
  }

  double(field, v) {
    this.raw(field * 8 + 1);
    this.#room(8);
    this.buf.writeDoubleLE(v, this.len);
    this.len += 8;
    return this;
  }

  /** A length-delimited field: bytes, or a message already written; `always`: even when empty (a table's zero entry). */
  bytes(field, b, always = false) {
    if (!b.length && !always) return this;
    this.raw(field * 8 + 2).raw(b.length);
    this.#room(b.length);
    if (b instanceof Writer) b.buf.copy(this.buf, this.len, 0, b.len);
    else this.buf.set(b, this.len);
    this.len += b.length;
    return this;
  }

  string(field, s, always = false) {
    return this.bytes(field, Buffer.from(s, 'utf8'), always);
  }

  /** A packed repeated varint field. */
  packed(field, values) {
    if (!values.length) return this;
    const w = new Writer(values.length * 2 + 8);
    for (const v of values) w.raw(v);
    return this.bytes(field, w);
  }

  /** A message field written by `fill(writer)`. */
  message(field, fill, always = false) {
    const w = new Writer();
    fill(w);
    return this.bytes(field, w, always);
  }

  get length() {
    return this.len;
  }

  finish() {
    return Buffer.from(this.buf.subarray(0, this.len));
  }
}

/** common.v1.AnyValue of a string, a number (int64 if an integer, else a double), a boolean or an array of those. */
function anyValue(w, v) {
  if (typeof v === 'string') w.string(1, v, true);
  else if (typeof v === 'boolean') w.raw(2 * 8).raw(v ? 1 : 0);
  else if (typeof v === 'number' && Number.isSafeInteger(v)) w.raw(3 * 8).raw(v);
  else if (typeof v === 'number') w.double(4, v);
  else if (Array.isArray(v)) w.message(5, (a) => v.forEach((x) => a.message(1, (e) => anyValue(e, x), true)), true);
  else w.string(1, String(v), true);
}

/** The tables of a ProfilesDictionary: each entry's encoding once, by its index (entry 0 the zero value). */
class Dictionary {
  strings = new Map([['', 0]]);
  attributes = new Map([['', 0]]); // key \0 typeof \0 value -> index
  mappings = new Map([['', 0]]);
  functions = new Map([['', 0]]);
  locations = new Map([['', 0]]);
  stacks = new Map([['', 0]]);
  links = new Map([['', 0]]);
  byFrame = new Map(); // frame object -> location (frames are shared among a window's stacks)
  out = { mapping: [new Writer()], location: [new Writer()], function: [new Writer()], link: [new Writer().bytes(1, NO_LINK.trace).bytes(2, NO_LINK.span)], attribute: [new Writer()], stack: [new Writer()] };

  str(s) {
    s = String(s ?? '');
    let i = this.strings.get(s);
    if (i === undefined) this.strings.set(s, (i = this.strings.size));
    return i;
  }

  #entry(table, out, key, fill) {
    let i = table.get(key);
    if (i === undefined) {
      table.set(key, (i = table.size));
      const w = new Writer();
      fill(w);
      this.out[out].push(w);
    }
    return i;
  }

  attribute(key, value) {
    return this.#entry(this.attributes, 'attribute', `${key}\0${typeof value}\0${value}`, (w) => w.varint(1, this.str(key)).message(2, (v) => anyValue(v, value), true));
  }

  mapping(m) {
    if (!m) return 0;
    return this.#entry(this.mappings, 'mapping', `${m.start}-${m.path}`, (w) => w.varint(1, m.start).varint(2, m.end).varint(3, m.offset ?? 0).varint(4, this.str(m.path)));
  }

  function(f) {
    const file = f.file ?? f.module ?? '';
    return this.#entry(this.functions, 'function', `${f.name}\0${file}`, (w) => w.varint(1, this.str(f.name)).varint(2, this.str(f.name)).varint(3, this.str(file)));
  }

  location(f) {
    const known = this.byFrame.get(f);
    if (known !== undefined) return known;
    // one location per address, name and line (interpreted JS frames share the interpreter's address), as pprof.js
    const key = `${f.kind}:${f.address ?? ''}:${f.name}:${f.file ?? ''}:${f.line ?? ''}:${f.column ?? ''}:${(f.inlined ?? []).map((i) => `${i.name}@${i.line}`).join(',')}`;
    const i = this.#entry(this.locations, 'location', key, (w) => {
      w.varint(1, this.mapping(f.mapping)).varint(2, f.address ?? 0);
      // the functions inlined here first, the physical one last
      for (const g of [...(f.inlined ?? []), f]) w.message(3, (l) => l.varint(1, this.function(g)).varint(2, g.line ?? 0).varint(3, g.column ?? 0), true);
    });
    this.byFrame.set(f, i);
    return i;
  }

  stack(frames) {
    const ids = frames.map((f) => this.location(f));
    return this.#entry(this.stacks, 'stack', ids.join(','), (w) => w.packed(1, ids));
  }

  link(traceId, spanId) {
    return this.#entry(this.links, 'link', `${traceId}${spanId}`.toLowerCase(), (w) => w.bytes(1, Buffer.from(traceId, 'hex')).bytes(2, Buffer.from(spanId, 'hex')));
  }

  /** ProfilesDictionary: every table, its zero entry first. */
  write(w) {
    const strings = [...this.strings.keys()];
    /** @type {[number, Writer[]][]} */
    const tables = [
      [1, this.out.mapping],
      [2, this.out.location],
      [3, this.out.function],
      [4, this.out.link],
    ];
    for (const [field, entries] of tables) for (const e of entries) w.bytes(field, e, true);
    for (const s of strings) w.string(5, s, true);
    for (const e of this.out.attribute) w.bytes(6, e, true);
    for (const e of this.out.stack) w.bytes(7, e, true);
  }
}

/** A valid id: its hex digits, not all zeros (an invalid id per OTLP). */
const validId = (v, re) => typeof v === 'string' && re.test(v) && /[1-9a-fA-F]/.test(v);

/** The samples of `window`'s `kind` (a Profile message into `w`). */
function writeProfile(w, dict, window, kind) {
  const spec = KINDS[kind];
  const samples = new Map(); // stack, attributes, link -> { ..., value }: one sample per identity
  for (const s of window[kind]) {
    const labels = s.labels ?? {};
    const link = validId(labels.trace_id, TRACE_ID) && validId(labels.span_id, SPAN_ID) ? dict.link(labels.trace_id, labels.span_id) : 0;
    const attrs = new Map([
      ['thread.name', s.thread],
      ['thread.id', s.tid],
      ['node_libbpf.thread_kind', s.threadKind],
    ]);
    if (s.state) attrs.set('node_libbpf.off_cpu_state', s.state);
    for (const [k, v] of Object.entries(labels)) {
      if (link && (k === 'trace_id' || k === 'span_id')) continue;
      if (!attrs.has(k) && v !== undefined && v !== null) attrs.set(k, v);
    }
    const sample = { stack: dict.stack(s.frames), attributes: [...attrs].map(([k, v]) => dict.attribute(k, v)), link };
    const key = `${sample.stack}/${sample.attributes.join(',')}/${link}`;
    const value = kind === 'cpu' ? s.count : s.ns;
    const seen = samples.get(key);
    if (seen) seen.value += value;
    else samples.set(key, { ...sample, value });
  }
  w.message(1, (t) => t.varint(1, dict.str(spec.type[0])).varint(2, dict.str(spec.type[1])), true);
  for (const s of samples.values()) w.message(2, (m) => m.varint(1, s.stack).packed(2, s.attributes).varint(3, s.link).packed(4, [s.value]), true);
  w.fixed64(3, window.startNs);
  w.varint(4, Math.round(window.durationNs));
  w.message(5, (t) => t.varint(1, dict.str(spec.period[0])).varint(2, dict.str(spec.period[1])), true);
  w.varint(6, kind === 'cpu' ? window.periodNs : 1);
  w.bytes(7, crypto.randomBytes(16));
  // what the window says of itself (pprof's comments): why frames are unnamed, what was dropped
  if (window.notes?.length) w.packed(11, [dict.attribute('node_libbpf.notes', /** @type {any} */ (window.notes))]);
}

/** `options` of encode(), checked (`where`: who asks, for the message). */
function checkOptions(options, where = 'w.otlp()') {
  if (options === null || typeof options !== 'object') throw codedError('ERR_INVALID_ARG_TYPE', `${where}: options must be an object, got ${options}`);
  const known = ['serviceName', 'attributes'];
  const unknown = Object.keys(options).filter((k) => !known.includes(k));
  if (unknown.length) throw codedError('ERR_BPF_UNKNOWN_NAME', `${where}: no option named ${unknown.join(', ')}; the options are ${known.join(', ')}`);
  const { serviceName, attributes = {} } = options;
  if (serviceName !== undefined && (typeof serviceName !== 'string' || !serviceName)) {
    throw codedError('ERR_BPF_INVALID_VALUE', `${where}: serviceName is the resource's service.name, a non-empty string, got ${serviceName}`);
  }
  if (attributes === null || typeof attributes !== 'object') throw codedError('ERR_INVALID_ARG_TYPE', `${where}: attributes are the resource's, an object of strings, numbers or booleans, got ${attributes}`);
  for (const [k, v] of Object.entries(attributes)) {
    if (!(typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)))) {
      throw codedError('ERR_BPF_INVALID_VALUE', `${where}: resource attribute ${k} must be a string, a finite number or a boolean, got ${v}`);
    }
  }
  return { serviceName, attributes };
}

/**
 * `window`'s `kind` ('cpu', 'offCpu' or 'all': both, two profiles) as an
 * encoded ExportProfilesServiceRequest (a Buffer). `options.serviceName`:
 * the resource's service.name; `options.attributes`: more resource
 * attributes (`{ 'deployment.environment.name': 'prod' }`), over the
 * process ones.
 * @param {any} window
 * @param {'cpu' | 'offCpu' | 'all'} kind
 * @param {{ serviceName?: string, attributes?: Record<string, string | number | boolean> }} [options]
 */
function encode(window, kind, options = {}) {
  if (kind !== 'all' && !KINDS[kind]) throw codedError('ERR_BPF_INVALID_VALUE', `w.otlp(kind): kind is 'cpu', 'offCpu' or 'all' (both, two profiles of one request), got ${kind}`);
  const { serviceName, attributes } = checkOptions(options);
  const dict = new Dictionary();
  const resource = {
    'service.name': serviceName ?? (process.env.OTEL_SERVICE_NAME || 'unknown_service:node'),
    'process.pid': process.pid,
    'process.runtime.name': 'nodejs',
    'process.runtime.version': process.versions.node,
    'process.runtime.description': 'Node.js',
    ...attributes,
  };
  const request = new Writer(4096);
  request.message(1, (rp) => {
    rp.message(1, (r) => {
      for (const [k, v] of Object.entries(resource)) r.message(1, (kv) => kv.string(1, k).message(2, (a) => anyValue(a, v), true), true);
    });
    rp.message(2, (sp) => {
      sp.message(1, (s) => s.string(1, 'node-libbpf').string(2, require('../../package.json').version), true);
      for (const k of kind === 'all' ? Object.keys(KINDS) : [kind]) sp.message(2, (p) => writeProfile(p, dict, window, k), true);
    });
  });
  request.message(2, (d) => dict.write(d), true);
  return request.finish();
}

/**
 * Where `push({ otlp })` posts: `url` as given when it has a path of its
 * own (a signal-specific endpoint, as OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT),
 * else `{url}/v1development/profiles` (OTLP/HTTP's path of the profiles
 * signal, as an OTLP exporter's base endpoint).
 */
function endpoint(url) {
  let u;
  try {
    u = new URL(url);
  } catch {
    u = null;
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) {
    throw codedError('ERR_BPF_INVALID_VALUE', `profiler.push(): otlp must be an OTLP/HTTP endpoint (http://collector:4318, or a full path ending in /v1development/profiles), got ${url}`);
  }
  if (u.pathname === '/') u.pathname = '/v1development/profiles';
  return u;
}

/** POSTs an encoded request to `url` (an endpoint()); a failure or an answer not 2xx: ERR_BPF_PUSH with the status and the answer's first 200 bytes. */
async function post(url, body, headers = {}) {
  const where = `POST ${url.origin}${url.pathname}`;
  const h = new Headers(headers);
  h.set('content-type', 'application/x-protobuf');
  let res;
  try {
    res = await fetch(url, { method: 'POST', body, headers: h, signal: AbortSignal.timeout(30000) });
  } catch (err) {
    const e = codedError('ERR_BPF_PUSH', `${where}: ${err.cause?.message ?? err.message}`);
    e.cause = err;
    throw e;
  }
  const answer = Buffer.from(await res.arrayBuffer());
  if (!res.ok) {
    // (the collector's or backend's reason, cut, control characters escaped: it is another program's text)
    const text = JSON.stringify(answer.subarray(0, 200).toString('utf8'));
    throw codedError('ERR_BPF_PUSH', `${where}: HTTP ${res.status}${answer.length ? `: ${text}${answer.length > 200 ? ' (cut at 200 bytes)' : ''}` : ''}`);
  }
}

module.exports = { encode, endpoint, post, checkOptions, KINDS };
