'use strict';
/**
 * Request labels on profile samples (lib/service/profile.js): which
 * request's code ran, taken as the sample is.
 *
 *   bpf.withLabels({ route: '/users/:id' }, handler, req, res);
 *   // every CPU sample and off-CPU interval of handler, and of what it awaits, has labels { route }
 *
 * A set of labels is interned to a small id; the context's store in an
 * AsyncLocalStorage of ours *is* that id, as a Smi with a tag in its high
 * bits (TAG | id). Where node keeps ALS in V8's continuation-preserved
 * embedder data (the AsyncContextFrame: Node 24 on, 22 with
 * --experimental-async-context-frame), the program reads it at the sample
 * from V8's memory (bpf/labels.bpf.h): entering a context costs one
 * `als.run` and a lookup here, nothing per await. Elsewhere (Node 20, 22)
 * a word of this thread's (`word`) holds the current id: written by
 * withLabels/setLabels, and by an async_hooks before/after hook while a
 * profiler needs it (a cost per callback and per promise reaction).
 *
 * Ids stay resolvable while they are used: one not entered and not seen
 * in a window's samples for PRUNE_MS is dropped (a sample that still
 * carries it gets no labels and a note); ids are never reused before the
 * 2^24 of them have gone round. A lazy record (one a request, a span) and
 * those made over it go sooner: after LAZY_PRUNE_MS, or the longest window
 * collected and 10 s more, checked every 10 s: a busy service's requests
 * are held for half a minute or so, not ten minutes.
 */
const { AsyncLocalStorage, createHook } = require('node:async_hooks');
const { codedError } = require('../core/validate');

/** The tag in a store's high byte (the program finds our value by it): Smi 0x5Axxxxxx, id in the low 24 bits. */
const TAG = 0x5a000000;
const ID_BITS = 24;
const MAX_ID = 2 ** ID_BITS - 1;
/** The calibration's two stores (ids never given to a label set). */
const CALIBRATION = [MAX_ID, MAX_ID - 1];
const LAST_ID = MAX_ID - 2;
/** Bytes of the isolate the calibration reads for the CPED slot. */
const SCAN_BYTES = 16384;
const MAX_KEYS = 64;
const MAX_VALUE = 256;
const PRUNE_MS = 10 * 60 * 1000;
const LAZY_PRUNE_MS = 30 * 1000;
/** How long a lazy record is kept unused: LAZY_PRUNE_MS, or the longest window asked for (holdFor) and 10 s more. */
let lazyAge = LAZY_PRUNE_MS;
let ticks = 0;
/** How deep a chain of records (labels over a lazy record) is resolved. */
const MAX_DEPTH = 32;
const KEY = /^[A-Za-z_][A-Za-z0-9_.]*$/;
const EMPTY = Object.freeze({});

const als = new AsyncLocalStorage();

/**
 * id -> record: `{ id, parent, own, lazy, key, used }`: `own` the labels it
 * sets (frozen), `lazy` an object whose resolve() gives labels at read time,
 * `parent` the id it was entered under when that one is lazy (else 0: its
 * labels are folded into `own`), `used` when last entered or sampled.
 */
const records = new Map();
/** interning key -> id: `parent \0 entries` of records without a lazy record */
const byKey = new Map();
/** `current id` + the labels as given (unsorted, unchecked: each value with its length) -> id: withLabels' fast path */
const quick = new Map();
/** lazy object -> id (entered again: the same id) */
const byLazy = new WeakMap();
let nextId = 1;
let now = Date.now();
// (Date.now() once a second, not at every entry)
let clock = null;

/** This thread's current id, for the program where ALS is no AsyncContextFrame (Node 20, 22): its backing store does not move. */
const word = new Int32Array(new ArrayBuffer(8));
let hook = null;
let hookUsers = 0;
const saved = [];

function tick() {
  now = Date.now();
}

/** The clock's second: the time, and every 10 s the lazy records' pruning (a window's read prunes too). */
function second() {
  tick();
  if (++ticks % 10 === 0) prune(PRUNE_MS);
}

/** A window of `ms` starts: a lazy record is kept unused at least that long (and 10 s more), so its samples resolve at the read. */
function holdFor(ms) {
  if (Number.isFinite(ms) && ms + 10_000 > lazyAge) lazyAge = ms + 10_000;
}

function show(v) {
  return typeof v === 'string' ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v) : String(v);
}

/** `labels`, checked: its entries `[key, value]` sorted by key. */
function checkLabels(labels, where) {
  if (labels === null || typeof labels !== 'object' || Array.isArray(labels)) {
    throw codedError('ERR_INVALID_ARG_TYPE', `${where}: labels must be an object of name -> string or number ({ route: '/users/:id' }), got ${labels === null ? 'null' : Array.isArray(labels) ? 'an array' : typeof labels}`);
  }
  const entries = Object.entries(labels);
  if (entries.length > MAX_KEYS) throw codedError('ERR_BPF_INVALID_VALUE', `${where}: at most ${MAX_KEYS} labels in a set, got ${entries.length}`);
  for (const [k, v] of entries) {
    if (!KEY.test(k)) throw codedError('ERR_BPF_INVALID_VALUE', `${where}: label name ${show(k)}: names are identifiers (letters, digits, _ and ., not first a digit), as route or http.route`);
    if (typeof v === 'string') {
      if (v.length > MAX_VALUE) throw codedError('ERR_BPF_INVALID_VALUE', `${where}: label ${k}: a string of at most ${MAX_VALUE} characters, got ${v.length}; keep ids and routes, not bodies`);
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw codedError('ERR_BPF_INVALID_VALUE', `${where}: label ${k}: a number must be finite, got ${v}`);
    } else {
      throw codedError('ERR_INVALID_ARG_TYPE', `${where}: label ${k}: a value is a string or a number, got ${v === null ? 'null' : typeof v}; convert it (String(x)) or leave the label out`);
    }
  }
  if (entries.length > 1) entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return entries;
}

function checkFn(fn, where) {
  if (typeof fn !== 'function') throw codedError('ERR_INVALID_ARG_TYPE', `${where}: fn must be a function (the code to run with the labels), got ${fn === null ? 'null' : typeof fn}`);
}

function allocate() {
  if (records.size >= LAST_ID) prune(0);
  if (records.size >= LAST_ID) throw codedError('ERR_BPF_LIMIT', `withLabels(): ${LAST_ID} label sets are in use at once; label with fewer distinct values (a route, not a request id)`);
  while (records.has(nextId)) nextId = nextId === LAST_ID ? 1 : nextId + 1;
  const id = nextId;
  nextId = nextId === LAST_ID ? 1 : nextId + 1;
  // (the word's hook starts with the first label set, not with the profiler)
  if (hookUsers && !hook) startHook();
  if (!clock) {
    clock = setInterval(second, 1000);
    clock.unref();
  }
  return id;
}

/** The id of `entries` (sorted, checked) set over the context `cur` (an id, 0: none). */
function intern(cur, entries) {
  const base = cur ? records.get(cur) : undefined;
  if (base && !base.lazy && !base.parent) {
    // (folded: the set is the current labels with these over them)
    if (!entries.length) return cur;
    const merged = { ...base.own };
    for (const [k, v] of entries) merged[k] = v;
    entries = Object.entries(merged).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    cur = 0;
  } else if (!base) cur = 0;
  let key = `${cur}`;
  for (const [k, v] of entries) key += `\0${k}\0${typeof v === 'number' ? '#' : ''}${v}`;
  let id = byKey.get(key);
  if (id !== undefined) {
    records.get(id).used = now;
    return id;
  }
  id = allocate();
  // (volatile: over a lazy record, a request's: pruned as it is)
  const volatile = !!(cur && (records.get(cur)?.lazy || records.get(cur)?.volatile));
  records.set(id, { id, parent: cur, own: Object.freeze(Object.fromEntries(entries)), lazy: null, key, used: now, volatile });
  byKey.set(key, id);
  return id;
}

/** The current context's id (0: none), tag dropped. */
function currentId() {
  const s = als.getStore();
  return typeof s === 'number' ? s & MAX_ID : 0;
}

function enter(id, fn, args) {
  const store = TAG | id;
  if (!hook) return als.run(store, fn, ...args);
  const prev = word[0];
  word[0] = store;
  try {
    return als.run(store, fn, ...args);
  } finally {
    word[0] = prev;
  }
}

/**
 * Runs `fn(...args)` with `labels` (name -> string or number) over the
 * current ones, and returns what it returns. As AsyncLocalStorage.run: what
 * fn starts (awaits, timers, callbacks) keeps them.
 * @template R
 * @param {Record<string, string | number>} labels
 * @param {(...args: any[]) => R} fn
 * @param {...any} args
 * @returns {R}
 */
function withLabels(labels, fn, ...args) {
  const cur = currentId();
  // (the same labels over the same context as before: their id, without sorting or checking them again)
  let key = labels !== null && typeof labels === 'object' && !Array.isArray(labels) ? `${cur}` : null;
  if (key !== null) {
    for (const k of Object.keys(labels)) {
      const v = labels[k];
      if (typeof v === 'string') key += `\0${k}\0${v.length}:${v}`;
      else if (typeof v === 'number') key += `\0${k}\0#${v}`;
      else {
        key = null;
        break;
      }
    }
  }
  let id = key === null ? undefined : quick.get(key);
  if (id === undefined || !records.has(id)) {
    id = intern(cur, checkLabels(labels, 'withLabels()'));
    if (key !== null) quick.set(key, id);
  } else records.get(id).used = now;
  checkFn(fn, 'withLabels()');
  return enter(id, fn, args);
}

/**
 * Sets `labels` over the current ones for the rest of the current
 * synchronous run and what it starts (AsyncLocalStorage.enterWith).
 * @param {Record<string, string | number>} labels
 */
function setLabels(labels) {
  const entries = checkLabels(labels, 'setLabels()');
  const store = TAG | intern(currentId(), entries);
  als.enterWith(store);
  if (hook) word[0] = store;
}

/** The current labels, a frozen object (`{}`: none); a lazy record's as it resolves now. */
function getLabels() {
  const id = currentId();
  return id ? resolveId(id, null) : EMPTY;
}

/**
 * For a layer over this one (trace context): runs `fn(...args)` under
 * `record`, whose `resolve()` gives its labels (name -> string or number)
 * when a window is read, not now (a span's http.route is set after it
 * starts), over the current labels. The same record entered again has the
 * same id.
 * @template R
 * @param {{ resolve(): Record<string, string | number> | null | undefined }} record
 * @param {(...args: any[]) => R} fn
 * @param {...any} args
 * @returns {R}
 */
function withLazyLabels(record, fn, ...args) {
  if (record === null || typeof record !== 'object' || typeof record.resolve !== 'function') {
    throw codedError('ERR_INVALID_ARG_TYPE', 'withLazyLabels(): record must be an object with a resolve() method that returns the labels');
  }
  checkFn(fn, 'withLazyLabels()');
  let id = byLazy.get(record);
  const r = id === undefined ? undefined : records.get(id);
  if (r) r.used = now;
  else {
    id = allocate();
    records.set(id, { id, parent: currentId(), own: EMPTY, lazy: record, key: null, used: now, volatile: true });
    byLazy.set(record, id);
  }
  return enter(id, fn, args);
}

/**
 * The labels of `id` (a plain frozen object), EMPTY when it is not known;
 * `problems` (an array, or null) hears a lazy record's failure.
 */
function resolveId(id, problems, depth = 0) {
  const r = records.get(id);
  if (!r || depth > MAX_DEPTH) return EMPTY;
  let out = r.parent ? resolveId(r.parent, problems, depth + 1) : EMPTY;
  if (r.lazy) {
    let got;
    try {
      got = r.lazy.resolve();
      if (got !== null && got !== undefined) got = Object.fromEntries(checkLabels(got, 'a lazy label record\'s resolve()'));
    } catch (err) {
      problems?.push(err.message);
      got = null;
    }
    if (got) out = { ...out, ...got };
  }
  if (r.own !== EMPTY) out = out === EMPTY ? r.own : { ...out, ...r.own };
  return Object.isFrozen(out) ? out : Object.freeze(out);
}

/**
 * For a window (lib/service/profile.js): the labels of each id its samples
 * carry (marking them used), and what could not be: `{ labels: Map(id ->
 * object), expired, failed: [messages] }`.
 */
function resolveIds(ids) {
  tick();
  const labels = new Map();
  const failed = [];
  let expired = 0;
  for (const id of ids) {
    if (!id || labels.has(id)) continue;
    const r = records.get(id);
    if (!r) {
      expired++;
      labels.set(id, EMPTY);
      continue;
    }
    for (let p = r, d = 0; p && d <= MAX_DEPTH; p = p.parent ? records.get(p.parent) : undefined, d++) p.used = now;
    labels.set(id, resolveId(id, failed));
  }
  prune(PRUNE_MS);
  return { labels, expired, failed };
}

/** Drops the records not used for `age` ms (0: all but those of the current context) and not a parent of one kept. */
function prune(age) {
  const cutoff = Date.now() - age;
  const cutoffVolatile = Date.now() - Math.min(age, lazyAge);
  const keep = new Set();
  const cur = currentId();
  for (const r of records.values()) {
    if (r.used < (r.volatile ? cutoffVolatile : cutoff) && r.id !== cur) continue;
    for (let p = r, d = 0; p && d <= MAX_DEPTH && !keep.has(p.id); p = p.parent ? records.get(p.parent) : undefined, d++) keep.add(p.id);
  }
  if (keep.size === records.size) return;
  quick.clear();
  for (const [id, r] of records) {
    if (keep.has(id)) continue;
    records.delete(id);
    if (r.key !== null) byKey.delete(r.key);
    if (r.lazy) byLazy.delete(r.lazy);
  }
}

function startHook() {
  hook = createHook({
    before() {
      saved.push(word[0]);
      const s = als.getStore();
      word[0] = typeof s === 'number' ? s : 0;
    },
    after() {
      word[0] = saved.length ? saved.pop() : 0;
    },
  });
  hook.enable();
  const s = als.getStore();
  word[0] = typeof s === 'number' ? s : 0;
}

/**
 * The word mode's hook (no AsyncContextFrame): `word` follows the context
 * into every callback and promise reaction while a profiler needs it, from
 * the first label set on. Returns the function that ends this use of it.
 */
function useWord() {
  hookUsers++;
  if (records.size && !hook) startHook();
  let done = false;
  return () => {
    if (done) return;
    done = true;
    if (--hookUsers > 0 || !hook) return;
    hook.disable();
    hook = null;
    saved.length = 0;
    word[0] = 0;
  };
}

/**
 * The CPED slot of this thread's isolate (src/labels.rs): the place whose
 * Map holds our store inside als.run for two stores, and not outside it.
 * Returns `{ slotOffset, tableOffset }`, or `{ error }`: why not.
 */
function calibrate(native) {
  const key = (c) => `${c.slotOffset}:${c.tableOffset}`;
  const runs = CALIBRATION.map((id) => als.run(TAG | id, () => native.labelsCalibrate(TAG | id, SCAN_BYTES)));
  const second = new Set(runs[1].map(key));
  const outside = new Set(native.labelsCalibrate(TAG | CALIBRATION[0], SCAN_BYTES).map(key));
  const found = runs[0].filter((c) => second.has(key(c)) && !outside.has(key(c)));
  if (found.length === 1) return found[0];
  return { error: found.length ? `${found.length} places in V8's isolate hold the context (${found.map(key).join(', ')}): which is not known` : `no AsyncContextFrame found in V8's isolate (its first ${SCAN_BYTES / 1024} KiB)` };
}

let registered = null;

/**
 * For a profiler (lib/service/profile.js): where the programs read this
 * thread's label id (bpf/labels.bpf.h): `{ tid (gettid, this pid
 * namespace's), kind: 'cped' | 'word', addr (bigint), tableOffset, why
 * (word: why not the CPED) }`. Calibrated once per thread.
 */
function registration(native) {
  if (registered) return registered;
  const { tid } = native.labelsThread();
  let found;
  try {
    found = calibrate(native);
  } catch (err) {
    found = { error: err.message };
  }
  if (!found.error) {
    const { isolate } = native.labelsThread();
    registered = { tid, kind: 'cped', addr: isolate + BigInt(found.slotOffset), tableOffset: found.tableOffset, why: null };
  } else {
    registered = { tid, kind: 'word', addr: native.labelsWordAddress(word), tableOffset: 0, why: found.error };
  }
  return registered;
}

/** How many ids are interned (for tests and the bench). */
function size() {
  return records.size;
}

module.exports = { withLabels, setLabels, getLabels, withLazyLabels, resolveIds, holdFor, registration, useWord, size, als, word, TAG, ID_BITS, MAX_ID, PRUNE_MS, LAZY_PRUNE_MS };
