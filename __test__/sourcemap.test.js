'use strict';
// Source maps (lib/frames/sourcemap.js): JS frames of a TypeScript module
// compiled with its map (typescript's transpileModule), an esbuild-style
// inline map, a minifier's names; maps that cannot be used keep the
// generated place and say why; and a real profile of this process running
// the compiled module names the .ts file and line in pprof and folded.
const { describe, test, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');
const { pathToFileURL } = require('node:url');
const ts = require('typescript');
const { encode } = require('@jridgewell/sourcemap-codec');
const bpf = require('..');
const native = require('../lib/core/native');
const { SourceMaps } = require('../lib/frames/sourcemap');

const TS_FILE = path.join(__dirname, 'fixtures', 'sourcemap', 'spin.ts');
const TS_SOURCE = fs.readFileSync(TS_FILE, 'utf8');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sourcemap-test-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** The 1-based line of `text` that holds `marker`. */
const lineOf = (text, marker) => text.split('\n').findIndex((l) => l.includes(marker)) + 1;
/** The 1-based column of `what` on that line. */
const columnOf = (text, marker, what) => text.split('\n')[lineOf(text, marker) - 1].indexOf(what) + 1;

const compiled = ts.transpileModule(TS_SOURCE, { fileName: 'spin.ts', compilerOptions: { sourceMap: true, module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
const JS = compiled.outputText;
const MAP = JSON.parse(compiled.sourceMapText);
const SPIN = { ts: lineOf(TS_SOURCE, 'SPIN_LINE'), js: lineOf(JS, 'SPIN_LINE'), column: columnOf(JS, 'SPIN_LINE', 'x = (') };
const CALL = { ts: lineOf(TS_SOURCE, 'CALL_LINE'), js: lineOf(JS, 'CALL_LINE'), column: columnOf(JS, 'CALL_LINE', 'spinLeaf(') };

/**
 * Writes the compiled module into a folder of its own: `spin.js` with its
 * map beside it (`map: 'file'`), inline (`'inline'`: esbuild's base64 data
 * URL), or the comment `comment` with the map text `mapText` as spin.js.map.
 * @param {string} name
 * @param {{ map?: 'file' | 'inline' | 'none', sourceRoot?: string, comment?: string, mapText?: string }} [options]
 */
function writeModule(name, { map = 'file', sourceRoot, comment, mapText } = {}) {
  const dir = fs.mkdtempSync(path.join(tmp, `${name}-`));
  const json = { ...MAP, ...(sourceRoot !== undefined && { sourceRoot }) };
  const body = JS.replace(/\/\/# sourceMappingURL=.*\s*$/, '');
  const text = mapText ?? JSON.stringify(json);
  if (map === 'inline') {
    fs.writeFileSync(path.join(dir, 'spin.js'), `${body}//# sourceMappingURL=data:application/json;base64,${Buffer.from(text).toString('base64')}\n`);
  } else {
    fs.writeFileSync(path.join(dir, 'spin.js'), `${body}${comment ?? '//# sourceMappingURL=spin.js.map'}`);
    if (map === 'file') fs.writeFileSync(path.join(dir, 'spin.js.map'), text);
  }
  return { dir, js: path.join(dir, 'spin.js') };
}

const frame = (file, at, name = 'spinLeaf') => ({ name, kind: 'js', file, line: at.js, column: at.column, label: `${name} ${file}:${at.js}:${at.column}` });

describe('frames at their original place', () => {
  test("a TypeScript module's map beside it: the .ts file and line, the generated place kept, the label too", () => {
    const { dir, js } = writeModule('file');
    const m = new SourceMaps().map(frame(js, SPIN));
    assert.equal(m.file, path.join(dir, 'spin.ts'));
    assert.equal(m.line, SPIN.ts);
    assert.notEqual(SPIN.ts, SPIN.js, 'the fixture has lines the JavaScript does not');
    assert.deepEqual(m.generated, { file: js, line: SPIN.js, column: SPIN.column });
    assert.equal(m.label, `spinLeaf ${m.file}:${SPIN.ts}:${m.column}`);
    assert.equal(m.reason, undefined);
    // an ES module's frame names its file as a file: URL
    assert.equal(new SourceMaps().map(frame(pathToFileURL(js).href, SPIN)).line, SPIN.ts);
  });

  test('a stack: each frame, inlined ones too, at its line (the caller of an inlined function is the frame it is inlined into)', () => {
    const { dir, js } = writeModule('stack');
    const outer = { ...frame(js, CALL, 'spinOuter'), inlined: [frame(js, SPIN)] };
    const [mapped] = new SourceMaps().mapFrames([outer]);
    assert.equal(mapped.line, CALL.ts);
    assert.equal(mapped.inlined[0].line, SPIN.ts);
    assert.equal(mapped.inlined[0].file, path.join(dir, 'spin.ts'));
    assert.equal(outer.line, CALL.js, 'the input is not changed');
  });

  test("an esbuild-style inline base64 map with a sourceRoot: sources resolved against it and the script's folder", () => {
    const { dir, js } = writeModule('inline', { map: 'inline', sourceRoot: 'src/' });
    const m = new SourceMaps().map(frame(js, SPIN));
    assert.equal(m.file, path.join(dir, 'src', 'spin.ts'));
    assert.equal(m.line, SPIN.ts);
  });

  test("a minifier's names: a frame is named by the map's name at its caller's call site", () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'names-'));
    const gen = 'function a(n){let x=0;for(let i=0;i<n;i++)x+=i;return x}function b(){return a(5)}';
    // original.js: `function double(count) {` ... `  return double(5);` at line 7
    const at = (s) => gen.indexOf(s);
    const mappings = /** @type {any} */ ([[[at('function a'), 0, 0, 0], [at('x+=i'), 0, 2, 4], [at('function b'), 0, 5, 0], [at('a(5)'), 0, 6, 9, 0]]]);
    fs.writeFileSync(path.join(dir, 'min.js'), `${gen}\n//# sourceMappingURL=min.js.map\n`);
    fs.writeFileSync(path.join(dir, 'min.js.map'), JSON.stringify({ version: 3, sources: ['original.js'], names: ['double'], mappings: encode(mappings) }));
    const file = path.join(dir, 'min.js');
    const [inner, outer] = new SourceMaps().mapFrames([
      { name: 'a', kind: 'js', file, line: 1, column: at('x+=i') + 1 },
      { name: 'b', kind: 'js', file, line: 1, column: at('a(5)') + 1 },
    ]);
    assert.deepEqual([inner.name, inner.line, inner.column], ['double', 3, 5]);
    assert.deepEqual([outer.name, outer.line, outer.column], ['b', 7, 10], 'no caller: the generated name');
  });

  test('a script without a sourceMappingURL comment, a frame without a line, a native frame: as they were, no reason', () => {
    const file = path.join(tmp, 'plain.js');
    fs.writeFileSync(file, 'function f() {}\n// the end\n');
    const maps = new SourceMaps();
    const plain = { name: 'f', kind: 'js', file, line: 1, column: 1 };
    assert.equal(maps.map(plain), plain);
    const noLine = { name: 'f', kind: 'js', file: writeModule('noline').js, reason: 'no source positions' };
    assert.equal(maps.map(noLine), noLine);
    const nat = { name: 'uv_run', kind: 'native', module: process.execPath };
    assert.equal(maps.map(nat), nat);
    assert.equal(maps.map({ name: 'x', kind: 'js', file: 'node:internal/timers', line: 3, column: 1 }).file, 'node:internal/timers');
  });
});

describe("maps that cannot be used: the generated place stays, with a reason", () => {
  const kept = (m, js, reason) => {
    assert.equal(m.file, js);
    assert.equal(m.line, SPIN.js);
    assert.equal(m.generated, undefined);
    assert.match(m.reason, reason);
  };

  test('a malformed map (not JSON; JSON that is no version 3 map; mappings that are not VLQ)', () => {
    const maps = new SourceMaps();
    /** @type {[string, RegExp][]} */
    const cases = [
      ['{"version":3,"mappings":', /source map .*spin\.js\.map is malformed: .*JSON/],
      ['{"version":2,"sources":[]}', /malformed: not a version 3 source map/],
      ['[1,2,3]', /malformed/],
      ['{"version":3,"sources":["a.ts"],"names":[],"mappings":"!!!!"}', /malformed/],
    ];
    for (const [mapText, reason] of cases) {
      const { js } = writeModule('malformed', { mapText });
      kept(maps.map(frame(js, SPIN)), js, reason);
    }
  });

  test('a 100 MiB map (over the 64 MiB read): not read', () => {
    const { dir, js } = writeModule('big', { map: 'none' });
    // (sparse: the size is what is checked, before a byte is read)
    fs.writeFileSync(path.join(dir, 'spin.js.map'), '');
    fs.truncateSync(path.join(dir, 'spin.js.map'), 100 << 20);
    kept(new SourceMaps().map(frame(js, SPIN)), js, /spin\.js\.map has 100 MiB, more than the 64 MiB read/);
  });

  test('a missing map, a FIFO in its place (never blocks), a map on the network', () => {
    const missing = writeModule('missing', { map: 'none' });
    kept(new SourceMaps().map(frame(missing.js, SPIN)), missing.js, /source map of .*spin\.js is missing: .*ENOENT/);
    const fifo = writeModule('fifo', { map: 'none' });
    execFileSync('mkfifo', [path.join(fifo.dir, 'spin.js.map')]);
    kept(new SourceMaps().map(frame(fifo.js, SPIN)), fifo.js, /missing: .*not a regular file/);
    const net = writeModule('net', { map: 'none', comment: '//# sourceMappingURL=https://cdn.example/spin.js.map' });
    kept(new SourceMaps().map(frame(net.js, SPIN)), net.js, /at https:\/\/cdn\.example\/spin\.js\.map: not fetched/);
  });

  test('a data: URL that is not base64; base64 that is not', () => {
    const json = writeModule('json-url', { map: 'none', comment: `//# sourceMappingURL=data:application/json;charset=utf-8,${encodeURIComponent(JSON.stringify(MAP))}` });
    kept(new SourceMaps().map(frame(json.js, SPIN)), json.js, /a data: URL that is not base64 \(data:application\/json;charset=utf-8\)/);
    const bad = writeModule('bad-b64', { map: 'none', comment: '//# sourceMappingURL=data:application/json;base64,eyJ2Z$$$' });
    kept(new SourceMaps().map(frame(bad.js, SPIN)), bad.js, /is not valid base64/);
  });

  test('a position the map has no mapping for', () => {
    const { js } = writeModule('nomapping');
    const m = new SourceMaps().map({ ...frame(js, SPIN), line: 500 });
    assert.equal(m.line, 500);
    assert.match(m.reason, /no mapping at 500:\d+ in .*spin\.js\.map/);
    // a reason the frame had stays first
    assert.match(new SourceMaps().map({ ...frame(js, SPIN), line: 500, reason: 'the line where the function starts' }).reason, /^the line where the function starts; no mapping/);
  });

  test('a last line over maxFileBytes (an inline map too big): not read; one under it is', () => {
    const { js } = writeModule('longline', { map: 'inline', mapText: JSON.stringify({ ...MAP, sourcesContent: ['x'.repeat(3 << 20)] }) });
    kept(new SourceMaps({ maxFileBytes: 1 << 20 }).map(frame(js, SPIN)), js, /the last line of .*spin\.js is more than 1 MiB/);
    assert.equal(new SourceMaps({ maxFileBytes: 8 << 20 }).map(frame(js, SPIN)).line, SPIN.ts);
  });

  test('bad options: coded errors', () => {
    assert.throws(() => new SourceMaps({ pid: -1 }), { code: 'ERR_BPF_INVALID_VALUE', message: /pid is a process id/ });
    assert.throws(() => new SourceMaps({ maxBytes: 0 }), { code: 'ERR_BPF_INVALID_VALUE', message: /maxBytes is a size in bytes/ });
  });
});

test("the cache keeps its maps' bytes under maxBytes (the least recently used go first)", () => {
  const scripts = [1, 2, 3].map((i) => writeModule(`cache${i}`).js);
  // (an entry weighs its map's text, its path and 256 bytes)
  const size = JSON.stringify(MAP).length + scripts[0].length + 256;
  const maps = new SourceMaps({ maxBytes: 2 * size + 10 });
  for (const js of scripts) assert.equal(maps.map(frame(js, SPIN)).line, SPIN.ts);
  assert.deepEqual(maps.cached, { files: 2, bytes: 2 * size });
  // the first was dropped, and is read again
  assert.equal(maps.map(frame(scripts[0], SPIN)).line, SPIN.ts);
  assert.deepEqual(maps.cached, { files: 2, bytes: 2 * size });
});

describe("another process's files, inside its root", () => {
  const noAddon = typeof native.readTargetFile !== 'function' ? 'this addon has no readTargetFile (npm run build:addon)' : false;
  const noRoot = process.getuid?.() !== 0 ? "reading another process's root needs root" : false;
  test('its module mapped as ours is; a map it planted as a link is not followed', { skip: noAddon || noRoot }, async () => {
    const { dir, js } = writeModule('other');
    const linked = writeModule('linked', { map: 'none' });
    fs.symlinkSync(path.join(dir, 'spin.js.map'), path.join(linked.dir, 'spin.js.map'));
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await new Promise((r) => child.once('spawn', r));
      const maps = new SourceMaps({ pid: child.pid });
      const m = maps.map(frame(js, SPIN));
      assert.equal(m.file, path.join(dir, 'spin.ts'));
      assert.equal(m.line, SPIN.ts);
      const l = maps.map(frame(linked.js, SPIN));
      assert.equal(l.line, SPIN.js);
      assert.match(l.reason, /source map of .*is missing: /);
    } finally {
      child.kill();
    }
  });
});

describe('in a profile of this process', { skip: process.getuid?.() !== 0 && 'profiles load BPF programs: run the tests as root' }, () => {
  test('the compiled module\'s hot function: the .ts file and line in pprof and folded; sourceMaps: false keeps the .js', async () => {
    const { dir, js } = writeModule('profiled');
    const tsFile = path.join(dir, 'spin.ts');
    const { spinFor } = require(js);
    const { Profile } = require('pprof-format');
    const zlib = require('node:zlib');
    for (const sourceMaps of [true, false]) {
      const p = bpf.profile({ frequency: 997, offCpu: false, sourceMaps });
      let w;
      try {
        const window = p.collect({ seconds: 0.8 });
        await spinFor(700);
        w = await window;
      } finally {
        p.close();
      }
      const fns = (s) => s.frames.flatMap((f) => [f, ...(f.inlined ?? [])]);
      const mine = w.cpu.filter((s) => s.threadKind === 'main' && fns(s).some((f) => f.name === 'spinLeaf'));
      const samples = mine.reduce((k, s) => k + s.count, 0);
      assert.ok(samples >= 20, `${samples} samples in spinLeaf`);
      const where = sourceMaps ? { file: tsFile, line: SPIN.ts } : { file: js, line: SPIN.js };
      // (the loop's header, a line above its body in the JavaScript, is the same line in the TypeScript)
      const at = (f) => f.name === 'spinLeaf' && f.file === where.file && (f.line === where.line || (!sourceMaps && f.line === where.line - 1));
      const named = mine.filter((s) => fns(s).some(at)).reduce((k, s) => k + s.count, 0);
      assert.ok(named >= 0.9 * samples, `sourceMaps ${sourceMaps}: ${named} of ${samples} samples name spinLeaf at ${where.file}:${where.line}`);
      // pprof: the function's file, the location's line
      const prof = Profile.decode(zlib.gunzipSync(w.pprof('cpu')));
      const str = (i) => prof.stringTable.strings[Number(i)];
      const fn = prof.function.filter((f) => str(f.name) === 'spinLeaf');
      assert.ok(fn.some((f) => str(f.filename) === where.file), `pprof's spinLeaf files: ${fn.map((f) => str(f.filename))}`);
      const ids = new Set(fn.filter((f) => str(f.filename) === where.file).map((f) => Number(f.id)));
      const lines = prof.location.flatMap((l) => l.line).filter((l) => ids.has(Number(l.functionId))).map((l) => Number(l.line));
      assert.ok(lines.includes(where.line), `pprof's spinLeaf lines: ${lines}`);
      // folded: the labels
      assert.match(w.folded('cpu'), new RegExp(`;spinLeaf ${where.file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:${where.line}:\\d+`));
      if (sourceMaps) assert.doesNotMatch(w.folded('cpu'), new RegExp(`spinLeaf ${js.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`));
    }
  });
});
