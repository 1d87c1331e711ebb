'use strict';
// Fuzzing the object loader: thousands of mutated and truncated copies of
// real BPF objects (bit flips, byte overwrites, truncations, corrupted ELF
// section headers) are opened, loaded, listed and closed. Each one must end
// in success or a JS Error with a string `code`: never a signal, never a
// hang. The cases run in child processes, 100 to a child, and each child
// says which case it starts before running it, so a crash pins the case.
//
// A commit gives the same answer on every run: the seeds are a fixed list
// (SEEDS, 1000 cases each), and then every file of the libFuzzer corpus
// (fuzz/object/corpus/, kept by the coverage-guided campaign) and every
// crasher found so far (fixtures/fuzz/) is loaded the same way.
// FUZZ_SEED=<n> runs that one seed instead (5000 cases: how `npm run fuzz`
// runs a random one, and how its crash is replayed), FUZZ_CASES sets how many
// cases each seed runs. New kinds of crashers are written to
// __test__/fixtures/fuzz/ (up to 30 files there; not with FUZZ_NO_KEEP=1, nor in CI).
//
// This file is also the child: `node fuzz.test.js run <seed> <from> <to>`
// runs cases, `node fuzz.test.js files <from> <to>` loads files of the corpus
// and fixtures, `node fuzz.test.js open <file>` loads one file, and
// `node fuzz.test.js write <seed> <case> <file>` writes a case's bytes.
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');

// small and large objects, with maps of every kind, globals and BTF
const BASES = ['stream', 'bashreadline', 'openat', 'syscall_hist', 'types', 'tcpretrans'];
// the seeds `npm test` runs (the first two found crashers before their fixes)
const SEEDS = [1280505699, 1711148836, 1, 2, 3];
const CASES_PER_SEED = 1000;
const BATCH = 100;
// a case without an answer this long is a hang: a mutated map size can make
// the kernel allocate and zero gigabytes (FUZZ_SEED=1711148836 case 4508,
// `types` with 12 bytes of 0x7f: 3 to 6.5 s of system time alone, more
// beside another child), which is slow, not hung
const CASE_TIMEOUT_MS = 60_000;
const FIXTURES = path.join(__dirname, 'fixtures', 'fuzz');
const CORPUS = path.join(__dirname, '..', 'fuzz', 'object', 'corpus');
// new crashers written per run, and at most in the directory
const KEEP_CRASHERS = 10;
const MAX_FIXTURES = 30;

// ---- deterministic cases -------------------------------------------------

const { prng } = require('./helpers');

/** The random source of case `id` of run `seed`: the same in the parent and the child. */
function caseRandom(seed, id) {
  const r = prng((Math.imul(seed ^ 0x85ebca6b, 0xc2b2ae35) ^ Math.imul(id + 1, 0x9e3779b1)) >>> 0);
  const int = (n) => Math.floor(r() * n);
  return { r, int, pick: (xs) => xs[int(xs.length)] };
}

/** The section headers of a 64-bit little-endian ELF (where each header is, and its fields). */
function sectionHeaders(buf) {
  if (buf.length < 64 || buf.readUInt32BE(0) !== 0x7f454c46 || buf[4] !== 2 || buf[5] !== 1) return [];
  const shoff = Number(buf.readBigUInt64LE(0x28));
  const entsize = buf.readUInt16LE(0x3a);
  const shnum = buf.readUInt16LE(0x3c);
  const shstrndx = buf.readUInt16LE(0x3e);
  if (entsize !== 64 || shoff + shnum * 64 > buf.length) return [];
  /** @type {{ index: number, at: number, nameOff: number, type: number, offset: number, size: number, name?: string }[]} */
  const headers = [];
  for (let i = 0; i < shnum; i++) {
    const at = shoff + i * 64;
    headers.push({
      index: i,
      at,
      nameOff: buf.readUInt32LE(at),
      type: buf.readUInt32LE(at + 4),
      offset: Number(buf.readBigUInt64LE(at + 24)),
      size: Number(buf.readBigUInt64LE(at + 32)),
    });
  }
  const strtab = headers[shstrndx];
  for (const h of headers) {
    h.name = `#${h.index}`;
    if (strtab && strtab.offset + strtab.size <= buf.length && h.nameOff < strtab.size) {
      const s = strtab.offset + h.nameOff;
      const e = buf.indexOf(0, s);
      if (e > s) h.name = buf.toString('latin1', s, e);
    }
  }
  return headers;
}

const SHT = { NULL: 0, PROGBITS: 1, SYMTAB: 2, STRTAB: 3, RELA: 4, NOBITS: 8, REL: 9, LLVM_ADDRSIG: 0x6fff4c03 };
// sh_name, sh_type, sh_link, sh_info are 4 bytes; sh_offset, sh_size, sh_entsize 8
const SHDR_FIELDS = { sh_name: [0, 4], sh_type: [4, 4], sh_offset: [24, 8], sh_size: [32, 8], sh_link: [40, 4], sh_info: [44, 4], sh_entsize: [56, 8] };

/** A value for a section header field: edge values, near the old one, or another section's. */
function fieldValue(rnd, field, old, headers, fileLen) {
  const width = SHDR_FIELDS[field][1];
  const max = width === 8 ? (1n << 64n) - 1n : 0xffffffffn;
  const other = rnd.pick(headers);
  const choices = [
    () => 0n,
    () => 1n,
    () => max,
    () => (width === 8 ? 1n << 63n : 0x80000000n),
    () => 0xffffffffn,
    () => BigInt(fileLen),
    () => BigInt(fileLen + rnd.int(64)),
    () => BigInt(rnd.int(fileLen + 1)),
    () => {
      const v = BigInt(old) + BigInt(rnd.int(33) - 16);
      return v < 0n ? 0n : v & max;
    },
    () => BigInt.asUintN(width * 8, BigInt(old) ^ (1n << BigInt(rnd.int(width * 8)))),
    () => BigInt({ sh_name: other.nameOff, sh_type: other.type, sh_offset: other.offset, sh_size: other.size }[field] ?? old),
  ];
  if (field === 'sh_type') choices.push(...Object.values(SHT).map((t) => () => BigInt(t)));
  return rnd.pick(choices)() & max;
}

/** Applies one random mutation to `buf` (in place, or a shorter copy); returns [buf, what it did]. */
function mutate(rnd, buf) {
  const headers = sectionHeaders(buf);
  const withData = headers.filter((h) => h.type !== SHT.NOBITS && h.size > 0 && h.offset + h.size <= buf.length);
  const kind = rnd.pick(['flip', 'flip', 'bytes', 'bytes', 'truncate', 'shdr', 'shdr', 'shdr', 'section', 'section']);
  switch (kind) {
    case 'flip': {
      const n = 1 + rnd.int(8);
      const at = [];
      for (let i = 0; i < n; i++) {
        const bit = rnd.int(buf.length * 8);
        buf[bit >> 3] ^= 1 << (bit & 7);
        at.push(bit);
      }
      return [buf, `flip bits ${at.join(',')}`];
    }
    case 'bytes': {
      const n = 1 + rnd.int(16);
      const start = rnd.int(buf.length);
      const run = rnd.r() < 0.5;
      const fill = rnd.pick([0x00, 0xff, 0x7f, 0x80, -1]);
      for (let i = 0; i < n; i++) {
        const at = run ? Math.min(start + i, buf.length - 1) : rnd.int(buf.length);
        buf[at] = fill < 0 ? rnd.int(256) : fill;
      }
      return [buf, `overwrite ${n} bytes ${run ? `from ${start}` : 'scattered'} with ${fill < 0 ? 'random' : `0x${fill.toString(16)}`}`];
    }
    case 'truncate': {
      let len;
      const h = rnd.pick(withData);
      const how = rnd.int(3);
      if (how === 0 || !h) len = rnd.int(buf.length);
      else if (how === 1) len = h.offset + rnd.int(h.size);
      else len = buf.length - 1 - rnd.int(Math.min(256, buf.length - 1));
      return [Buffer.from(buf.subarray(0, len)), `truncate to ${len} of ${buf.length}`];
    }
    case 'shdr': {
      if (headers.length === 0) return [buf, 'no section headers'];
      const h = rnd.pick(headers.slice(1));
      const field = rnd.pick(['sh_name', 'sh_type', 'sh_offset', 'sh_size', 'sh_name', 'sh_type', 'sh_offset', 'sh_size', 'sh_link', 'sh_info', 'sh_entsize']);
      const [off, width] = SHDR_FIELDS[field];
      const old = width === 8 ? buf.readBigUInt64LE(h.at + off) : BigInt(buf.readUInt32LE(h.at + off));
      const v = fieldValue(rnd, field, old, headers, buf.length);
      if (width === 8) buf.writeBigUInt64LE(v, h.at + off);
      else buf.writeUInt32LE(Number(v), h.at + off);
      return [buf, `section ${h.index} ${h.name}: ${field} 0x${old.toString(16)} -> 0x${v.toString(16)}`];
    }
    case 'section': {
      // inside one section's contents (BTF, relocations, maps, strings, code)
      const h = rnd.pick(withData);
      if (!h) return [buf, 'no section data'];
      const n = 1 + rnd.int(4);
      const at = [];
      for (let i = 0; i < n; i++) {
        const pos = h.offset + rnd.int(h.size);
        if (rnd.r() < 0.5) buf[pos] ^= 1 << rnd.int(8);
        else buf[pos] = rnd.pick([0, 0xff, 0x80, rnd.int(256)]);
        at.push(pos - h.offset);
      }
      return [buf, `section ${h.index} ${h.name}: bytes at ${at.join(',')}`];
    }
  }
  throw new Error(`unknown mutation ${kind}`);
}

/** Case `id` of run `seed`: which object, its mutated bytes, and what was done to it. */
function makeCase(seed, id, bases) {
  const rnd = caseRandom(seed, id);
  const base = rnd.pick(bases);
  let buf = Buffer.from(base.bytes);
  const what = [];
  // mostly one mutation, sometimes two or three on top of each other
  const n = rnd.r() < 0.8 ? 1 : 2 + rnd.int(2);
  for (let i = 0; i < n && buf.length > 0; i++) {
    let w;
    [buf, w] = mutate(rnd, buf);
    what.push(w);
  }
  return { id, base: base.name, bytes: buf, kind: what.map((w) => w.split(' ')[0]).join('+'), what: what.join('; ') };
}

/** The files every run loads: the libFuzzer corpus, then the crashers found so far (sorted: the same list in parent and child). */
function replayFiles() {
  const list = (dir, keep) => (fs.existsSync(dir) ? fs.readdirSync(dir).filter(keep).sort().map((f) => path.join(dir, f)) : []);
  return [...list(CORPUS, (f) => !f.startsWith('.')), ...list(FIXTURES, (f) => f.endsWith('.bpf.o'))];
}

function readBases() {
  const { objectPath } = require('./helpers');
  return BASES.map((name) => ({ name, bytes: fs.readFileSync(objectPath(name)) }));
}

// ---- the child: runs cases, one line before and one after each -----------

/** What the loader does with one object: open, load, list maps and globals, close. */
function exercise(bpf, bytes) {
  const outcome = [];
  const step = (name, fn) => {
    try {
      fn();
      return true;
    } catch (e) {
      const err = /** @type {NodeJS.ErrnoException} */ (e);
      outcome.push(err instanceof Error && typeof err.code === 'string' ? `${name}:${err.code}` : `${name}:BAD ${JSON.stringify(String(e && e.stack ? e.stack : e))}`);
      return false;
    }
  };
  let obj;
  if (!step('open', () => (obj = bpf.loadBpfProgram(bytes)))) return outcome;
  step('load', () => obj.load());
  step('maps', () => obj.maps);
  step('globals', () => obj.globals);
  step('close', () => obj.close());
  return outcome;
}

function child() {
  const { bpf } = require('./helpers');
  const say = (line) => fs.writeSync(1, `${line}\n`);
  const [mode, ...args] = process.argv.slice(2);
  if (mode === 'write') {
    const c = makeCase(Number(args[0]), Number(args[1]), readBases());
    fs.writeFileSync(args[2], c.bytes);
    say(`${args[2]}: ${c.base}: ${c.what}`);
    return;
  }
  if (mode === 'open') {
    say(`result ${JSON.stringify(exercise(bpf, fs.readFileSync(args[0])))}`);
    return;
  }
  if (mode === 'files') {
    const files = replayFiles();
    for (let id = Number(args[0]); id < Number(args[1]); id++) {
      say(`run ${id}`);
      // by path, as users load objects (the file check reads it whole)
      say(`done ${id} ${JSON.stringify(exercise(bpf, files[id]))}`);
    }
    return;
  }
  const [seed, from, to] = args.map(Number);
  const bases = readBases();
  for (let id = from; id < to; id++) {
    const c = makeCase(seed, id, bases);
    say(`run ${id}`);
    say(`done ${id} ${JSON.stringify(exercise(bpf, c.bytes))}`);
  }
}

// ---- the parent: batches of cases in children ------------------------------

const test = require('node:test');
const assert = require('node:assert');
const os = require('node:os');
const { objectPath, runLines, runCases } = require('./helpers');

/**
 * What a child's stderr says about its death: the Rust panic's place and
 * message, and for a panic on a libbpf message that is not UTF-8 (vsprintf's
 * FromUtf8Error), that message's start: its words name the crash's class.
 */
function panicOf(stderr) {
  const m = /panicked at ([^\n]*):\n([^\n]*)/.exec(stderr);
  if (!m) return { panic: stderr.trim().split('\n').slice(-2).join(' | '), slug: null };
  const bytes = /FromUtf8Error \{ bytes: \[([\d, ]*)/.exec(m[2]);
  if (!bytes) return { panic: `${m[2].slice(0, 200)} (at ${m[1]})`, slug: m[2].split(/\W+/).filter(Boolean).slice(0, 5).join('-') };
  const text = Buffer.from(bytes[1].split(',').map(Number).filter((n) => n >= 0 && n < 256).slice(0, 160)).toString('latin1').replace(/[^\x20-\x7e\n]/g, '?');
  // the message's own words: not the names, numbers and bytes printed in it
  const words = text
    .split('\n')[0]
    .replace(/^libbpf: /, '')
    .replace(/'[^']*'/g, ' ')
    .split(/\s+/)
    .map((w) => /^([A-Za-z]+)(?:\(\d+\))?[:,]?$/.exec(w))
    .filter(Boolean)
    .map((m) => m[1]);
  return { panic: `${m[2].split(':')[0]}: "${text.split('\n')[0]}"`, slug: words.slice(0, 5).join('-').toLowerCase() };
}

/** Runs `node fuzz.test.js ...args`, its lines to `onLine` (helpers.runLines). */
function runChild(args, onLine, timeoutMs) {
  return runLines(process.execPath, [__filename, ...args], onLine, timeoutMs);
}

/**
 * Runs cases [from, to) of run `seed`; a case that kills its child is
 * recorded and the next child goes on after it. Results go to `results[id]`.
 */
async function runBatch(seed, from, to, results) {
  const died = ({ code, signal, hung, stderr }) => ({ died: hung ? 'hang' : signal || `exit code ${code}`, ...panicOf(stderr) });
  await runCases(from, to, results, (start, onLine) => runChild(['run', String(seed), String(start), String(to)], onLine, CASE_TIMEOUT_MS), died, 'a fuzz child');
}

/**
 * Keeps new crashers as fixtures: one per class (what the panic was about)
 * not kept before, the smallest; returns the names written.
 */
function keepCrashers(crashers) {
  fs.mkdirSync(FIXTURES, { recursive: true });
  const files = fs.readdirSync(FIXTURES).filter((f) => f.endsWith('.bpf.o'));
  const known = new Set(files.map((f) => f.replace(/--.*$/, '')));
  const byClass = new Map();
  for (const c of [...crashers].sort((a, b) => a.bytes.length - b.bytes.length)) {
    if (c.slug && !known.has(c.slug) && !byClass.has(c.slug)) byClass.set(c.slug, c);
  }
  const written = [];
  for (const c of [...byClass.values()].slice(0, Math.min(KEEP_CRASHERS, MAX_FIXTURES - files.length))) {
    const name = `${c.slug}--${c.base}.bpf.o`;
    fs.writeFileSync(path.join(FIXTURES, name), c.bytes);
    written.push(name);
  }
  return written;
}

const isRoot = process.getuid && process.getuid() === 0;
const missing = BASES.filter((name) => !fs.existsSync(objectPath(name)));
const skip = !isRoot ? 'needs root (the objects are loaded into the kernel)' : missing.length ? `run npm run build first (missing ${missing.join(', ')})` : false;

/** Runs the batches (each an async function) two at a time: the kernel's verifier runs in each child. */
async function inParallel(batches) {
  const workers = Math.max(1, Math.min(2, os.availableParallelism ? os.availableParallelism() : os.cpus().length));
  await Promise.all(Array.from({ length: workers }, async () => {
    while (batches.length > 0) await batches.shift()();
  }));
}

/** Batches of BATCH cases [0, n), each calling `run(from, to)`. */
function batchesOf(n, run) {
  const out = [];
  for (let from = 0; from < n; from += BATCH) out.push(() => run(from, Math.min(n, from + BATCH)));
  return out;
}

/** Tallies results: loaded, the codes of refusals, the children's deaths, and failures that were not coded Errors. */
function tallyResults(results, crashOf) {
  const codes = new Map();
  const crashed = [];
  const bad = [];
  let loaded = 0;
  results.forEach((res, id) => {
    if (res.outcome) {
      if (res.outcome.length === 0) loaded++;
      for (const o of res.outcome) {
        if (o.includes(':BAD ')) bad.push({ id, o });
        else codes.set(o, (codes.get(o) || 0) + 1);
      }
    } else crashed.push(crashOf(id, res));
  });
  return { codes, crashed, bad, loaded };
}

const codeList = (codes) => [...codes].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} x${n}`).join(', ');

if (['run', 'files', 'open', 'write'].includes(process.argv[2])) {
  child();
} else {
  test('mutated and truncated BPF objects: a coded Error or success, never a signal or a hang', { skip }, async (t) => {
    const seeds = process.env.FUZZ_SEED ? [Number(process.env.FUZZ_SEED)] : SEEDS;
    const cases = process.env.FUZZ_CASES ? Number(process.env.FUZZ_CASES) : process.env.FUZZ_SEED ? 5000 : CASES_PER_SEED;
    const line = `fuzz seeds ${seeds.join(', ')}, ${cases} cases each: replay one with FUZZ_SEED=<seed> FUZZ_CASES=${cases}`;
    console.log(line); // right away, in case the run never ends
    t.diagnostic(line);
    const started = Date.now();
    /** @type {Map<number, any[]>} */
    const results = new Map(seeds.map((seed) => [seed, new Array(cases)]));
    const died = ({ code, signal, hung, stderr }) => ({ died: hung ? 'hang' : signal || `exit code ${code}`, ...panicOf(stderr) });
    await inParallel(seeds.flatMap((seed) => batchesOf(cases, (from, to) =>
      runCases(from, to, results.get(seed), (start, onLine) => runChild(['run', String(seed), String(start), String(to)], onLine, CASE_TIMEOUT_MS), died, 'a fuzz child'))));

    const bases = readBases();
    const all = { codes: new Map(), crashed: [], bad: [], loaded: 0 };
    for (const seed of seeds) {
      const r = tallyResults(results.get(seed), (id, res) => {
        const c = { ...makeCase(seed, id, bases), ...res, seed };
        // a death without a Rust panic (a signal in C, a hang): one class per object and mutation
        c.slug = c.slug || `${c.died.replace(/\W+/g, '-').toLowerCase()}-${c.base}-${c.kind.replace(/\+/g, '-')}`;
        return c;
      });
      for (const [k, n] of r.codes) all.codes.set(k, (all.codes.get(k) || 0) + n);
      all.crashed.push(...r.crashed);
      all.bad.push(...r.bad.map((b) => ({ ...b, seed })));
      all.loaded += r.loaded;
    }
    const { codes, crashed, bad, loaded } = all;
    const total = cases * seeds.length;
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    t.diagnostic(`${total} cases in ${secs} s: ${loaded} loaded, ${total - loaded - crashed.length} refused with a code, ${crashed.length} crashed or hung`);
    t.diagnostic(`codes (step:code x cases): ${codeList(codes)}`);
    const tally = (key) => [...crashed.reduce((m, c) => m.set(key(c), (m.get(key(c)) || 0) + 1), new Map())].map(([k, n]) => `${k} x${n}`).join(', ');
    if (crashed.length > 0) t.diagnostic(`crashed: ${tally((c) => c.died)}; by class: ${tally((c) => c.slug)}`);
    for (const c of crashed.slice(0, 20)) t.diagnostic(`seed ${c.seed} case ${c.id} (${c.base}: ${c.what}): ${c.died === 'hang' ? `no answer for ${CASE_TIMEOUT_MS / 1000} s` : `${c.died}; ${c.panic}`}`);
    if (crashed.length > 20) t.diagnostic(`... and ${crashed.length - 20} more`);
    const kept = crashed.length > 0 && !process.env.FUZZ_NO_KEEP && !process.env.CI ? keepCrashers(crashed) : [];
    if (kept.length > 0) t.diagnostic(`new crashers kept in __test__/fixtures/fuzz/: ${kept.join(', ')}`);
    for (const { seed, id, o } of bad) t.diagnostic(`seed ${seed} case ${id}: not a coded Error: ${o}`);

    assert.strictEqual(seeds.reduce((n, seed) => n + results.get(seed).filter(Boolean).length, 0), total, 'every case ran');
    assert.deepStrictEqual(bad, [], 'every failure is an Error with a string code');
    assert.deepStrictEqual(crashed.map((c) => `seed ${c.seed} case ${c.id}: ${c.died}`), [], `no case crashes or hangs (${line})`);
  });

  test('the libFuzzer corpus and the crashers found so far: each loads to success or a coded Error (child processes)', { skip }, async (t) => {
    const files = replayFiles();
    const crashers = files.filter((f) => path.dirname(f) === FIXTURES);
    assert.ok(crashers.length >= 12, `the crashers are in __test__/fixtures/fuzz/ (found ${crashers.length})`);
    const results = new Array(files.length);
    const died = ({ code, signal, hung, stderr }) => ({ died: hung ? `no answer for ${CASE_TIMEOUT_MS / 1000} s (killed)` : signal || `exit code ${code}`, panic: panicOf(stderr).panic });
    await inParallel(batchesOf(files.length, (from, to) =>
      runCases(from, to, results, (start, onLine) => runChild(['files', String(start), String(to)], onLine, CASE_TIMEOUT_MS), died, 'a fuzz child')));
    const { codes, crashed, bad, loaded } = tallyResults(results, (id, res) => ({ id, ...res }));
    const name = (id) => path.relative(path.join(__dirname, '..'), files[id]);
    t.diagnostic(`${files.length} files (${files.length - crashers.length} of fuzz/object/corpus/): ${loaded} loaded; ${codeList(codes)}`);
    files.forEach((f, id) => {
      if (crashers.includes(f) && results[id].outcome) t.diagnostic(`${path.basename(f)}: ${results[id].outcome.join(', ') || 'loaded'}`);
    });
    const failures = [
      ...crashed.map((c) => `${name(c.id)}: ${c.died}; ${c.panic}`),
      ...bad.map(({ id, o }) => `${name(id)}: not a coded Error: ${o}`),
    ];
    assert.deepStrictEqual(failures, [], `${failures.length} of ${files.length} files still fail`);
    // the crasher whose class the ELF check refuses: refused at open, by the check
    const kcfg = files.findIndex((f) => path.basename(f) === 'sigsegv-kcfg-extern-size--bashreadline.bpf.o');
    assert.deepStrictEqual(results[kcfg].outcome, ['open:ERR_BPF_INVALID_OBJECT']);
    // (in this process: the child showed it is refused before libbpf sees it)
    const { bpf, throwsCode } = require('./helpers');
    throwsCode(assert, () => bpf.loadBpfProgram(files[kcfg]), 'ERR_BPF_INVALID_OBJECT',
      /sigsegv-kcfg-extern-size--bashreadline\.bpf\.o is not a valid BPF object: section \d+ \(\.BTF\): BTF variable \[\d+\] has a type of 2147483652 bytes .*; recompile it: npx node-libbpf build prog\.bpf\.c/);
  });
}
