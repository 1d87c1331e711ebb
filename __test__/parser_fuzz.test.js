'use strict';
// Fuzzing the parsers of untrusted files (issue 21): mutated and truncated
// copies of real inputs go through
//
// - elf:     elfSymbols, on ELF binaries (gcc fixtures, one with compressed DWARF)
// - dwarf:   dwarfMemberOffset, on binaries with DWARF 2, 4, 5 and zlib-compressed DWARF
// - btf:     loadBpfProgram(obj, { btfPath }) then load(), the BTF a raw blob
//            (the .BTF of shipped objects), mutated (needs root: the kernel loads it)
// - types:   typeNames and typeLayout of mutated BPF objects (opened, not loaded)
// - perfmap: Symbolizer.process of a live process whose perf map is
//            malformed, truncated, binary, huge-lined
// - mapped:  Symbolizer.process of a live process that maps a mutated ELF
//            file (blazesym parses its sealed copy)
//
// Each case must end in a result or a JS Error with a string `code`: never a
// signal, never a hang. Cases run in child processes, BATCH to a child, run
// as `nobody` where the family needs no root (setpriv), and each child says
// which case it starts, so a crash pins its case.
//
// The seed is random and printed; FUZZ_SEED=<n> replays a run, FUZZ_CASES
// sets how many cases per family (default 200; the full run is 5000),
// FUZZ_FAMILIES=elf,dwarf picks families. `node parser_fuzz.test.js write
// <family> <seed> <case> <dir>` writes one case's input into <dir> (made if
// need be) and prints what it is.
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');

const FAMILIES = ['elf', 'dwarf', 'btf', 'types', 'perfmap', 'mapped'];
const BATCH = 100;
const CASE_TIMEOUT_MS = 30_000;

// ---- deterministic cases -------------------------------------------------

const { prng } = require('./helpers');

/** The random source of case `id` of family `family` in run `seed`: the same in the parent and the child. */
function caseRandom(seed, family, id) {
  const salt = FAMILIES.indexOf(family) + 1;
  const r = prng((Math.imul(seed ^ 0x85ebca6b, 0xc2b2ae35) ^ Math.imul(id + 1, 0x9e3779b1) ^ Math.imul(salt, 0x27d4eb2f)) >>> 0);
  const int = (n) => Math.floor(r() * n);
  return { r, int, pick: (xs) => xs[int(xs.length)] };
}

/** The sections of a 64-bit little-endian ELF: where each header is, its name, offset and size. */
function sections(buf) {
  if (buf.length < 64 || buf.readUInt32BE(0) !== 0x7f454c46 || buf[4] !== 2 || buf[5] !== 1) return [];
  const shoff = Number(buf.readBigUInt64LE(0x28));
  const shnum = buf.readUInt16LE(0x3c);
  const shstrndx = buf.readUInt16LE(0x3e);
  if (buf.readUInt16LE(0x3a) !== 64 || shoff + shnum * 64 > buf.length) return [];
  /** @type {{ index: number, at: number, nameOff: number, type: number, offset: number, size: number, name?: string }[]} */
  const headers = [];
  for (let i = 0; i < shnum; i++) {
    const at = shoff + i * 64;
    headers.push({ index: i, at, nameOff: buf.readUInt32LE(at), type: buf.readUInt32LE(at + 4), offset: Number(buf.readBigUInt64LE(at + 24)), size: Number(buf.readBigUInt64LE(at + 32)) });
  }
  const strtab = headers[shstrndx];
  for (const h of headers) {
    h.name = `#${h.index}`;
    if (strtab && strtab.offset + strtab.size <= buf.length && h.nameOff < strtab.size) {
      const s = strtab.offset + h.nameOff;
      const e = buf.indexOf(0, s);
      if (e > s) h.name = buf.latin1Slice(s, e);
    }
  }
  return headers;
}

const EDGES32 = [0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffff0];
const EDGES64 = [0n, 1n, (1n << 63n), (1n << 64n) - 1n, 0xffffffffn, 1n << 40n];

/** One generic mutation of `buf` (in place, or a shorter copy), inside `[from, to)` when given. */
function mutateBytes(rnd, buf, from = 0, to = buf.length) {
  const span = Math.max(1, to - from);
  const kind = rnd.pick(['flip', 'flip', 'bytes', 'bytes', 'word', 'truncate']);
  switch (kind) {
    case 'flip': {
      const n = 1 + rnd.int(8);
      for (let i = 0; i < n; i++) buf[from + rnd.int(span)] ^= 1 << rnd.int(8);
      return [buf, `flip ${n} bits in [${from}, ${to})`];
    }
    case 'bytes': {
      const n = 1 + rnd.int(16);
      const start = from + rnd.int(span);
      const fill = rnd.pick([0x00, 0xff, 0x7f, 0x80, -1]);
      for (let i = 0; i < n; i++) buf[Math.min(start + i, buf.length - 1)] = fill < 0 ? rnd.int(256) : fill;
      return [buf, `overwrite ${n} bytes at ${start}`];
    }
    case 'word': {
      // an edge value where a length, offset or count may be
      const at = from + rnd.int(span);
      if (rnd.r() < 0.5 && at + 4 <= buf.length) buf.writeUInt32LE(rnd.pick(EDGES32), at);
      else if (at + 8 <= buf.length) buf.writeBigUInt64LE(rnd.pick(EDGES64), at);
      return [buf, `edge value at ${at}`];
    }
    case 'truncate': {
      const len = rnd.r() < 0.5 ? from + rnd.int(span) : rnd.int(buf.length);
      return [Buffer.from(buf.subarray(0, len)), `truncate to ${len}`];
    }
  }
  throw new Error(kind);
}

/** One mutation of an ELF file: anywhere, in a section header, or inside a section (`prefer`: sections named so, more often). */
function mutateElf(rnd, buf, prefer) {
  const headers = sections(buf);
  const withData = headers.filter((h) => h.type !== 8 && h.size > 0 && h.offset + h.size <= buf.length);
  const preferred = withData.filter((h) => prefer.test(h.name));
  const where = rnd.int(10);
  if (where < 2 || withData.length === 0) return mutateBytes(rnd, buf);
  if (where < 4 && headers.length > 1) {
    const h = rnd.pick(headers.slice(1));
    const [off, width] = rnd.pick([[4, 4], [24, 8], [32, 8], [40, 4], [56, 8], [8, 8]]);
    if (width === 4) buf.writeUInt32LE(rnd.r() < 0.5 ? rnd.pick(EDGES32) : rnd.int(buf.length + 64), h.at + off);
    else buf.writeBigUInt64LE(rnd.r() < 0.5 ? rnd.pick(EDGES64) : BigInt(rnd.int(buf.length + 64)), h.at + off);
    return [buf, `section ${h.name}: header field at ${off}`];
  }
  const h = preferred.length && rnd.r() < 0.8 ? rnd.pick(preferred) : rnd.pick(withData);
  const [out, what] = mutateBytes(rnd, buf, h.offset, h.offset + h.size);
  return [out, `section ${h.name}: ${what}`];
}

/** One mutation of a raw BTF blob: its header's fields, or its types and strings. */
function mutateBtf(rnd, buf) {
  if (rnd.r() < 0.3 && buf.length >= 24) {
    // magic, version, flags, hdr_len, type_off, type_len, str_off, str_len
    const field = rnd.pick([[4, 4], [8, 4], [12, 4], [16, 4], [20, 4], [2, 1], [3, 1]]);
    const v = rnd.r() < 0.5 ? rnd.pick(EDGES32) : rnd.int(buf.length + 64);
    if (field[1] === 4) buf.writeUInt32LE(v >>> 0, field[0]);
    else buf[field[0]] = v & 0xff;
    return [buf, `header at ${field[0]} = ${v}`];
  }
  return mutateBytes(rnd, buf, 24, buf.length);
}

const SYMBOL_NAMES = ['JS:*hot x.js:1:1', 'LazyCompile:~f y.js:2:3', 'Builtin:ArgumentsAdaptorTrampoline', 'JS:~ z.js:9:5', 'ä名前', ''];

/** A perf map's text: good lines and every kind of bad one, perhaps truncated. */
function perfMapText(rnd) {
  const lines = [];
  const n = rnd.int(200);
  const hex = (v) => v.toString(16);
  for (let i = 0; i < n; i++) {
    const start = rnd.r() < 0.8 ? 0x10000 + rnd.int(0x100000) : rnd.int(2 ** 32) * 2 ** 16;
    const size = rnd.pick([0, 1, 0x10, 0x40, rnd.int(0x10000)]);
    const name = rnd.pick(SYMBOL_NAMES);
    lines.push(rnd.pick([
      () => `${hex(start)} ${hex(size)} ${name}`,
      () => `${hex(start)} ${hex(size)} ${name}`,
      () => `${hex(start)} ${hex(size)} ${name}`,
      () => `0x${hex(start)} 0x${hex(size)} ${name}`,
      () => `${hex(start).toUpperCase()}\t${hex(size)}\t${name}`,
      () => `${hex(start)}  ${hex(size)}  ${name}`,
      () => `${hex(start)} ${hex(size)}`,
      () => `${hex(start)}`,
      () => `zz${hex(start)} ${hex(size)} ${name}`,
      () => `${hex(start)} -${hex(size)} ${name}`,
      () => `ffffffffffffffff ${hex(size + 1)} wraps`,
      () => `${'f'.repeat(17 + rnd.int(20))} 10 too long`,
      () => ` ${hex(start)} ${hex(size)} ${name}`,
      () => `${hex(start)} ${hex(size)} ${name}\r`,
      () => `${hex(start)} ${hex(size)} \u0000${name}\u0000`,
      () => '',
      () => `${hex(start)} ${hex(size)} ${'x'.repeat(rnd.int(100_000))}`,
      () => String.fromCharCode(...Array.from({ length: rnd.int(64) }, () => rnd.int(256))),
    ])());
  }
  let bytes = Buffer.from(lines.join(rnd.r() < 0.9 ? '\n' : '\r\n'), rnd.r() < 0.9 ? 'utf8' : 'latin1');
  if (rnd.r() < 0.2) bytes = Buffer.concat([bytes, crypto.randomBytes(0)]).subarray(0, rnd.int(bytes.length + 1));
  if (rnd.r() < 0.1) for (let i = 0; i < 8; i++) if (bytes.length) bytes[rnd.int(bytes.length)] = rnd.int(256);
  const addrs = Array.from({ length: 1 + rnd.int(20) }, () => rnd.pick([
    () => BigInt(0x10000 + rnd.int(0x110000)),
    () => 0n,
    () => (1n << 64n) - 1n,
    () => BigInt(rnd.int(2 ** 32)) << 16n,
  ])());
  return { bytes, addrs };
}

/** Case `id` of a family: its input bytes (perfmap: and the addresses), and what was done. */
function makeCase(family, seed, id, manifest) {
  const rnd = caseRandom(seed, family, id);
  if (family === 'perfmap') {
    const { bytes, addrs } = perfMapText(rnd);
    return { bytes, addrs, what: `perf map of ${bytes.length} bytes, ${addrs.length} addresses` };
  }
  const bases = manifest[family === 'mapped' ? 'elf' : family];
  const base = rnd.pick(bases);
  let buf = Buffer.from(fs.readFileSync(base.path));
  const what = [path.basename(base.path)];
  const n = rnd.r() < 0.8 ? 1 : 2 + rnd.int(2);
  for (let i = 0; i < n && buf.length > 0; i++) {
    let w;
    if (family === 'btf') [buf, w] = mutateBtf(rnd, buf);
    else [buf, w] = mutateElf(rnd, buf, family === 'dwarf' ? /^\.(z?debug_|rela\.debug)/ : family === 'types' ? /^\.BTF/ : /sym|str|text|dyn|eh_frame|note|gnu/);
    what.push(w);
  }
  // where in the mapping the addresses are: inside the file, or past its end
  const offsets = family === 'mapped' ? Array.from({ length: 1 + rnd.int(12) }, () => rnd.int(buf.length + 0x2000)) : undefined;
  return { bytes: buf, base, offsets, what: what.join('; ') };
}

// ---- the child: runs cases, one line before and one after each -----------

/** A call's outcome: 'ok', or the error's code; a thrown non-Error or an Error without a code is BAD. */
function attempt(name, fn) {
  try {
    fn();
    return null;
  } catch (e) {
    return e instanceof Error && typeof /** @type {NodeJS.ErrnoException} */ (e).code === 'string' ? `${name}:${/** @type {NodeJS.ErrnoException} */ (e).code}` : `${name}:BAD ${String(e && e.stack ? e.stack : e).slice(0, 300)}`;
  }
}

function exercise(family, c, file, ctx) {
  const { bpf } = ctx;
  const out = [];
  const step = (name, fn) => {
    const r = attempt(name, fn);
    if (r) out.push(r);
    return !r;
  };
  switch (family) {
    case 'elf':
      step('elfSymbols', () => {
        const syms = bpf.elfSymbols(file);
        if (!Array.isArray(syms) || syms.some((s) => typeof s.name !== 'string' || typeof s.address !== 'bigint')) throw new Error('a malformed result');
      });
      break;
    case 'dwarf':
      for (const [struct, member] of c.base.queries) step(`${struct}.${member}`, () => bpf.dwarfMemberOffset(file, struct, member));
      break;
    case 'btf': {
      let obj;
      if (!step('open', () => (obj = bpf.loadBpfProgram(ctx.manifest.btfObject, { btfPath: file })))) break;
      step('load', () => obj.load());
      step('close', () => obj.close());
      break;
    }
    case 'types': {
      let obj;
      if (!step('open', () => (obj = bpf.loadBpfProgram(c.bytes)))) break;
      let names = [];
      step('typeNames', () => (names = obj.typeNames()));
      for (const name of names.slice(0, 12)) step('typeLayout', () => obj.typeLayout(name));
      step('typeLayout', () => obj.typeLayout('no_such_type'));
      step('close', () => obj.close());
      break;
    }
    case 'mapped': {
      // one Symbolizer for the child's cases: a rewritten file is a new copy
      ctx.symbolizer ??= new bpf.Symbolizer();
      step('process', () => {
        const addrs = c.offsets.map((o) => ctx.start + BigInt(o));
        const frames = ctx.symbolizer.process(ctx.mapper.pid, addrs);
        if (frames.length !== addrs.length || frames.some((f) => f.name !== undefined && typeof f.name !== 'string')) throw new Error('a malformed result');
        if (frames.some((f) => f.name)) out.push('named');
      });
      break;
    }
    case 'perfmap': {
      fs.writeFileSync(ctx.perfMap, c.bytes);
      // a Symbolizer kept across cases (its cache refreshed) and, sometimes, a new one
      if (!ctx.symbolizer || c.addrs.length % 5 === 0) ctx.symbolizer = new bpf.Symbolizer();
      step('process', () => {
        const frames = ctx.symbolizer.process(ctx.target.pid, c.addrs);
        if (frames.length !== c.addrs.length || frames.some((f) => f.name !== undefined && typeof f.name !== 'string')) throw new Error('a malformed result');
        if (frames.some((f) => f.name)) out.push('named');
      });
      break;
    }
  }
  return out;
}

async function child() {
  const say = (line) => fs.writeSync(1, `${line}\n`);
  const [mode, family, ...args] = process.argv.slice(2);
  const dir = args.at(-1);
  if (mode === 'write' && !fs.existsSync(path.join(dir, 'manifest.json'))) prepare(dir);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  if (mode === 'write') {
    const c = makeCase(family, Number(args[0]), Number(args[1]), manifest);
    const file = path.join(dir, `case-${family}-${args[1]}`);
    fs.writeFileSync(file, c.bytes);
    say(`${file}: ${c.what}${c.addrs ? `; addresses ${c.addrs.join(',')}` : ''}`);
    return;
  }
  const bpf = require(path.join(__dirname, '..'));
  const [seed, from, to] = args.slice(0, 3).map(Number);
  const ctx = { bpf, manifest };
  if (family === 'perfmap') {
    // a live process of our own (same user) to symbolize: it maps an ELF too
    const { spawn } = require('node:child_process');
    // a pid whose perf map some earlier process left (another user's, in
    // sticky /tmp) cannot be ours to write: take another
    for (let tries = 0; !ctx.target || fs.existsSync(ctx.perfMap); tries++) {
      if (tries === 20) throw new Error(`every pid has a stale perf map in /tmp (${ctx.perfMap})`);
      ctx.target?.kill('SIGKILL');
      ctx.target = spawn(manifest.mapper, [manifest.elf[0].path], { stdio: ['pipe', 'ignore', 'inherit'] });
      ctx.perfMap = `/tmp/perf-${ctx.target.pid}.map`;
    }
    process.on('exit', () => {
      fs.rmSync(ctx.perfMap, { force: true });
      ctx.target.kill('SIGKILL');
    });
  }
  const file = path.join(dir, `input-${family}-${process.pid}`);
  for (let id = from; id < to; id++) {
    const c = makeCase(family, seed, id, manifest);
    if (family !== 'perfmap' && family !== 'types') fs.writeFileSync(file, c.bytes);
    say(`run ${id}`);
    if (family === 'mapped') await startMapper(ctx, file);
    say(`done ${id} ${JSON.stringify(exercise(family, c, file, ctx))}`);
    if (family === 'mapped') await stopMapper(ctx);
  }
  fs.rmSync(file, { force: true });
  process.exit(0);
}

/** A process that maps `file` (fixtures/map_files.c): ctx.mapper, and ctx.start, where the file is. */
async function startMapper(ctx, file) {
  const { spawn } = require('node:child_process');
  ctx.mapper = spawn(ctx.manifest.mapper, [file], { stdio: ['pipe', 'pipe', 'inherit'] });
  ctx.start = await new Promise((resolve, reject) => {
    let text = '';
    ctx.mapper.stdout.on('data', (d) => {
      text += d;
      if (text.includes('\n')) resolve(BigInt(`0x${text.split(' ')[0]}`));
    });
    ctx.mapper.on('exit', (code) => reject(new Error(`map_files exited ${code}`)));
  });
}

async function stopMapper(ctx) {
  const exited = new Promise((resolve) => ctx.mapper.on('exit', resolve));
  ctx.mapper.stdin.end();
  await exited;
}

// ---- the parent ------------------------------------------------------------

// (rawBtf and prepare stay at the top level: the child's write mode prepares the inputs too)
/** The raw BTF (the .BTF section's bytes) of an object. */
function rawBtf(object) {
  const buf = fs.readFileSync(object);
  const h = sections(buf).find((s) => s.name === '.BTF');
  return buf.subarray(h.offset, h.offset + h.size);
}

/** Builds the inputs once, in a directory the children (as nobody) can read. */
function prepare(into) {
  const { buildFixture, objectPath } = require('./helpers');
  const dir = into || fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'parser-fuzz-'));
  fs.mkdirSync(dir, { recursive: true });
  const copy = (from, name) => {
    const to = path.join(dir, name);
    fs.copyFileSync(from, to);
    return to;
  };
  const memberQueries = [['Wide', 'far'], ['outer::inner::Wide', 'mid'], ['Shape', 'area'], ['Shape', 'closed'], ['nope', 'x']];
  const dwarf = [
    { path: copy(buildFixture('add_one'), 'add_one'), queries: [['point', 'y'], ['point', 'z']] },
    { path: copy(buildFixture('member_offsets', ['-gdwarf-4']), 'members4'), queries: memberQueries },
    { path: copy(buildFixture('member_offsets', ['-gdwarf-5']), 'members5'), queries: memberQueries },
    { path: copy(buildFixture('member_offsets', ['-gdwarf-2', '-gstrict-dwarf']), 'members2'), queries: memberQueries },
    { path: copy(buildFixture('member_offsets', ['-gz=zlib']), 'members_zlib'), queries: memberQueries },
  ];
  const manifest = {
    elf: [dwarf[0], dwarf[2], dwarf[4], { path: copy(buildFixture('map_files'), 'map_files') }],
    dwarf,
    // small blobs (the object's own BTF: CO-RE resolves, the verifier then
    // refuses the offsets) and the kernel's (it loads), as often
    btf: ['tcpretrans', 'types'].map((name) => {
      const to = path.join(dir, `${name}.btf`);
      fs.writeFileSync(to, rawBtf(objectPath(name)));
      return { path: to };
    }),
    btfObject: copy(objectPath('tcpretrans'), 'tcpretrans.bpf.o'),
    types: ['types', 'stream', 'tcpretrans'].map((name) => ({ path: copy(objectPath(name), `${name}.bpf.o`) })),
    mapper: copy(buildFixture('map_files'), 'mapper'),
  };
  if (fs.existsSync('/sys/kernel/btf/vmlinux')) {
    const vmlinux = copy('/sys/kernel/btf/vmlinux', 'vmlinux.btf');
    manifest.btf.push({ path: vmlinux }, { path: vmlinux });
  }
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest));
  fs.chmodSync(dir, 0o755);
  fs.chownSync(dir, 65534, 65534);
  return dir;
}

if (['run', 'write'].includes(process.argv[2])) {
  child();
} else {
  const test = require('node:test');
  const assert = require('node:assert');
  const os = require('node:os');
  const { execFileSync } = require('node:child_process');
  const { buildFixture, objectPath, runLines, runCases } = require('./helpers');

  const isRoot = process.getuid() === 0;
  const hasSetpriv = (() => {
    try {
      execFileSync('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', 'true']);
      return true;
    } catch {
      return false;
    }
  })();

  /** Runs a child of this file (as nobody: through setpriv), its lines to `onLine` (helpers.runLines). */
  function runChild(args, asNobody, onLine, timeoutMs) {
    const argv = [process.execPath, __filename, ...args];
    return asNobody ? runLines('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', ...argv], onLine, timeoutMs) : runLines(argv[0], argv.slice(1), onLine, timeoutMs);
  }

  /** Runs cases [from, to); a case that kills its child is recorded, and the next child goes on after it. */
  async function runBatch(family, seed, from, to, dir, asNobody, results) {
    const died = ({ code, signal, hung, stderr }) => ({ died: hung ? 'hang' : signal || `exit code ${code}`, stderr: stderr.trim().split('\n').slice(-4).join(' | ') });
    const run = (start, onLine) => runChild(['run', family, String(seed), String(start), String(to), dir], asNobody, onLine, CASE_TIMEOUT_MS);
    await runCases(from, to, results, run, died, `a ${family} fuzz child`);
  }

  const wanted = (process.env.FUZZ_FAMILIES || FAMILIES.join(',')).split(',');
  const prereq = (() => {
    if (!isRoot) return 'needs root (the btf family loads into the kernel; the others run as nobody through setpriv)';
    try {
      buildFixture('add_one');
      for (const name of ['tcpretrans', 'types', 'stream']) if (!fs.existsSync(objectPath(name))) return `run npm run build first (no ${name}.bpf.o)`;
    } catch (e) {
      return `cannot build the fixtures (gcc): ${e.message}`;
    }
    return false;
  })();

  let dir;
  test.before(() => {
    if (!prereq) dir = prepare();
  });
  test.after(() => dir && fs.rmSync(dir, { recursive: true, force: true }));

  const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : crypto.randomInt(1, 2 ** 31);
  const cases = process.env.FUZZ_CASES ? Number(process.env.FUZZ_CASES) : 200;

  for (const family of FAMILIES.filter((f) => wanted.includes(f))) {
    test(`${family}: mutated inputs give a result or a coded Error, never a signal or a hang`, { skip: prereq }, async (t) => {
      const line = `parser fuzz ${family} seed ${seed}, ${cases} cases: replay with FUZZ_SEED=${seed} FUZZ_FAMILIES=${family}`;
      console.log(line);
      t.diagnostic(line);
      // the kernel loads BTF only for root; the parsers get no privilege they do not need
      const asNobody = family !== 'btf' && hasSetpriv;
      if (!asNobody) t.diagnostic(family === 'btf' ? 'as root: the kernel loads the object' : 'as root: no setpriv');
      const started = Date.now();
      const results = new Array(cases);
      const batches = [];
      for (let from = 0; from < cases; from += BATCH) batches.push([from, Math.min(cases, from + BATCH)]);
      const workers = Math.max(1, Math.min(2, os.availableParallelism()));
      await Promise.all(Array.from({ length: workers }, async () => {
        while (batches.length > 0) {
          const [from, to] = batches.shift();
          await runBatch(family, seed, from, to, dir, asNobody, results);
        }
      }));
      const codes = new Map();
      const died = [];
      const bad = [];
      results.forEach((res, id) => {
        if (res.died) return died.push(`case ${id}: ${res.died} ${res.stderr}`);
        for (const o of res.outcome) {
          if (o.includes(':BAD')) bad.push(`case ${id}: ${o}`);
          const code = o.split(' ')[0];
          codes.set(code, (codes.get(code) || 0) + 1);
        }
        if (res.outcome.length === 0) codes.set('ok', (codes.get('ok') || 0) + 1);
      });
      const summary = `${family}: ${cases} cases in ${((Date.now() - started) / 1000).toFixed(1)} s, ${died.length} died; ${[...codes].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${n}`).join(', ')}`;
      t.diagnostic(summary);
      const replay = (list) => list.slice(0, 10).map((s) => `${s} (write it: node __test__/parser_fuzz.test.js write ${family} ${seed} ${s.split(' ')[1].replace(':', '')} DIR)`).join('\n');
      assert.deepStrictEqual(died, [], `cases that killed their child:\n${replay(died)}`);
      assert.deepStrictEqual(bad, [], `errors without a code:\n${replay(bad)}`);
      assert.ok(codes.size > 1, `the mutations reach more than one outcome: ${summary}`);
    });
  }
}
