'use strict';
/**
 * OpenTelemetry's trace context on profile samples: `bpf.profile({
 * traceContext: true })` (lib/service/profile.js). While a span of
 * @opentelemetry/api is active, every CPU sample and off-CPU interval
 * carries the labels `trace_id`, `span_id` (hex, the active span's) and the
 * local root span's `http.route` (or the attributes named instead:
 * `traceContext: 'tenant'`, `['http.route', 'tenant']`); the service adds
 * no code.
 *
 * How: the global context manager's `with()` (what `context.with()`,
 * `startActiveSpan()` and the instrumentations' bound callbacks call) is
 * wrapped so that fn runs under a lazily resolved label record of the
 * context's span (lib/service/labels.js withLazyLabels): the values are read
 * when a window is read, so an `http.route` set as the request ends is
 * there. A manager registered before or after profile() is wrapped (the
 * latter through this copy of @opentelemetry/api's setGlobalContextManager:
 * one copy in node_modules, as its peer dependency asks). A with() of a
 * context without a span keeps the labels it runs under.
 *
 * The local root span is the first span of the trace in this process: a
 * span whose parent is remote or absent (sdk-trace-base's
 * parentSpanContext, or parentSpanId for 1.x spans), else its parent's
 * root when the parent is the active span as the child is entered (as
 * startActiveSpan and the instrumentations make them), else the latest
 * local root of that trace seen (among the last 32,768-65,536 traces). A record keeps the ids and its
 * root's attributes object (sdk-trace-base's setAttribute() fills it in
 * place), not the span.
 */
const { codedError } = require('../core/validate');
const labels = require('./labels');

/** What `traceContext: true` reads of the local root span. */
const DEFAULT_ATTRIBUTES = ['http.route'];
const NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/;
const RESERVED = ['trace_id', 'span_id'];
const MAX_VALUE = 256;
/** The traces whose latest local root is kept, at least half of them (a child whose parent is not the active span takes it, else is its own root) */
const MAX_SPANS = 65536;
const WRAPPED = Symbol('node-libbpf trace context');

/** A map of the newest keys: two generations of MAX_SPANS / 2, the older dropped whole (Map.delete of its first key is no O(1)). */
class Recent {
  constructor() {
    this.now = new Map();
    this.old = new Map();
  }

  get(key) {
    const v = this.now.get(key);
    return v !== undefined ? v : this.old.get(key);
  }

  set(key, value) {
    if (this.now.size >= MAX_SPANS / 2) {
      this.old = this.now;
      this.now = new Map();
    }
    this.now.set(key, value);
  }
}

let api = null;
/** the attribute names each user (a profiler) asked for, and their union */
const users = new Map();
let attributes = [];
/** span -> its record (null: a span with no valid, local context) */
const bySpan = new WeakMap();
/** traceId -> its latest local root's attributes (the newest MAX_SPANS traces): a child's root where its parent is not the active span */
const byTrace = new Recent();

/**
 * `traceContext`'s value checked: the local root span's attributes to read
 * (true: http.route), or null (false, undefined).
 * @param {unknown} value
 * @returns {string[] | null}
 */
function checkOption(value) {
  if (value === undefined || value === false) return null;
  const names = value === true ? DEFAULT_ATTRIBUTES : typeof value === 'string' ? [value] : value;
  if (!Array.isArray(names) || names.some((n) => typeof n !== 'string' || !NAME.test(n) || RESERVED.includes(n))) {
    throw codedError('ERR_BPF_INVALID_VALUE', `profile(): traceContext labels samples with the active OpenTelemetry span's trace_id and span_id and attributes of its local root span: true (http.route), an attribute's name ('http.route') or an array of them, names as label names (letters, digits, _ and ., not trace_id or span_id), got ${JSON.stringify(value) ?? String(value)}`);
  }
  if (!api) {
    try {
      api = require('@opentelemetry/api');
    } catch (cause) {
      throw codedError('ERR_BPF_NOT_SUPPORTED', `profile({ traceContext }): reads the spans of @opentelemetry/api, which is not installed: npm install @opentelemetry/api (${cause.message.split('\n')[0]})`);
    }
  }
  return [...new Set(names)];
}

/** A label value from an attribute's: a string (cut to 256 characters), a finite number, a boolean as a string; else none. */
function labelValue(v) {
  if (typeof v === 'string') return v.length > MAX_VALUE ? v.slice(0, MAX_VALUE) : v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'boolean') return String(v);
  return undefined;
}

/** A span's label record: resolve() at a window's read (labels.js). */
class SpanRecord {
  constructor(traceId, spanId, attrs) {
    this.traceId = traceId;
    this.spanId = spanId;
    /** the local root span's attributes: the object the SDK's setAttribute() fills in place, read as it is then */
    this.attrs = attrs;
    /** the labels' store while this record is current (labels.als), once entered */
    this.store = undefined;
  }

  resolve() {
    const out = { trace_id: this.traceId, span_id: this.spanId };
    const attrs = this.attrs;
    if (attrs) {
      for (const name of attributes) {
        const v = labelValue(attrs[name]);
        if (v !== undefined) out[name] = v;
      }
    }
    return out;
  }
}

/**
 * The record of `span` (made on its first with() through `manager`), or
 * null: no span, or one whose context is not valid or not this process's.
 */
function recordOf(span, manager) {
  let rec = bySpan.get(span);
  if (rec !== undefined) return rec;
  rec = null;
  const sc = typeof span.spanContext === 'function' ? span.spanContext() : undefined;
  if (sc && !sc.isRemote && api.trace.isSpanContextValid(sc)) {
    const parent = span.parentSpanContext ?? (typeof span.parentSpanId === 'string' && span.parentSpanId ? { spanId: span.parentSpanId, isRemote: false } : undefined);
    let attrs;
    if (parent && !parent.isRemote) {
      // a local parent: most often the active span (startActiveSpan, an instrumentation's child), else the trace's latest root
      const active = api.trace.getSpan(manager.active());
      const up = active === undefined ? undefined : bySpan.get(active);
      attrs = up && up.spanId === parent.spanId ? up.attrs : byTrace.get(sc.traceId);
    }
    if (attrs === undefined) {
      attrs = span.attributes !== null && typeof span.attributes === 'object' ? span.attributes : null;
      if (!parent || parent.isRemote) byTrace.set(sc.traceId, attrs);
    }
    rec = new SpanRecord(sc.traceId, sc.spanId, attrs);
  }
  bySpan.set(span, rec);
  return rec;
}

/** Runs the manager's own with() under `rec` (labels.withLazyLabels' fn). */
function enter(rec, manager, original, context, fn, thisArg, args) {
  if (rec.store === undefined) rec.store = labels.als.getStore();
  return original.call(manager, context, fn, thisArg, ...args);
}

/** Wraps `manager.with` (once): fn under the record of the context's span while a profiler asks. */
function wrap(manager) {
  if (!manager || typeof manager.with !== 'function' || manager[WRAPPED]) return;
  const original = manager.with;
  manager[WRAPPED] = original;
  manager.with = function withTraceContext(context, fn, thisArg, ...args) {
    if (users.size === 0) return original.call(this, context, fn, thisArg, ...args);
    let rec = null;
    try {
      const span = api.trace.getSpan(context);
      rec = span ? recordOf(span, this) : null;
    } catch {
      rec = null; // (a span that throws is left unlabelled, its with() untouched)
    }
    // (already current: nothing to enter)
    if (rec === null || (rec.store !== undefined && labels.als.getStore() === rec.store)) return original.call(this, context, fn, thisArg, ...args);
    return labels.withLazyLabels(rec, enter, rec, this, original, context, fn, thisArg, args);
  };
}

/** Wraps the context manager registered now and, through setGlobalContextManager, any registered later. */
function install() {
  const contextApi = api.context;
  // (the registry every copy of @opentelemetry/api 1.x shares; the no-op manager is none)
  wrap(globalThis[Symbol.for('opentelemetry.js.api.1')]?.context);
  if (contextApi.setGlobalContextManager[WRAPPED]) return;
  const register = contextApi.setGlobalContextManager;
  const registerTraced = function setGlobalContextManager(manager) {
    const ok = register.call(this, manager);
    if (ok) wrap(manager);
    return ok;
  };
  registerTraced[WRAPPED] = register;
  contextApi.setGlobalContextManager = registerTraced;
}

/**
 * Starts labelling samples with the trace context for one user (a
 * profiler): `names` from checkOption(). Returns the function that stops
 * it (idempotent).
 * @param {string[]} names
 * @returns {() => void}
 */
function start(names) {
  const token = Symbol('profiler');
  users.set(token, names);
  attributes = [...new Set([...users.values()].flat())];
  install();
  return () => {
    if (!users.delete(token)) return;
    attributes = [...new Set([...users.values()].flat())];
  };
}

module.exports = { checkOption, start, DEFAULT_ATTRIBUTES };
