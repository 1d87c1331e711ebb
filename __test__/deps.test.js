'use strict';
// Dependencies run one way (issue 22): scripts/check-deps.js, on this
// repository and on small trees that break the rules. Needs no root.
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const deps = require('../scripts/check-deps');

function tree(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'check-deps-'));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

test('this repository: no cycle in src/ or lib/, lib/ required downwards only, and the addon reached only through core/native.js', () => {
  const out = execFileSync(process.execPath, [path.join(__dirname, '../scripts/check-deps.js')], { encoding: 'utf8' });
  assert.match(out, /no cycle/);
  const { graph, napi } = deps.rustGraph();
  assert.deepStrictEqual(deps.cycles(graph), []);
  // the state model and the delivery queue have no N-API, and the poller and the queue do not know each other
  for (const m of ['state', 'queue', 'poller', 'mmap', 'diagnose']) assert.ok(!napi.has(m), `${m} has no N-API`);
  assert.ok(!graph.get('queue').has('poller') && !graph.get('poller').has('queue'));
  assert.ok(napi.has('object') && graph.get('object').has('state'));
});

test('a cycle among src/ modules is found, through use groups and inline paths, not through comments or strings', () => {
  const dir = tree({
    'src/lib.rs': 'mod a; mod b; mod c; mod d;',
    'src/a.rs': 'use crate::{\n  b::{self, B},\n  error,\n};\n',
    'src/b/mod.rs': 'mod inner;',
    'src/b/inner.rs': 'fn f() { crate::c::g() }',
    'src/c.rs': '// crate::d::x is only a comment\nfn g() { let s = "crate::d::y"; crate::a::h() }',
    'src/d.rs': '/* crate::a */ fn k() {}',
  });
  const { graph } = deps.rustGraph(path.join(dir, 'src'));
  assert.deepStrictEqual([...graph.get('c')], ['a']);
  assert.deepStrictEqual([...graph.get('d')], []);
  assert.deepStrictEqual(deps.cycles(graph), [['a', 'b', 'c', 'a']]);
  fs.rmSync(dir, { recursive: true });
});

test("lib/: a module outside the rooms, a require of '..' or the binding, one against the layers, and a cycle are reported; core/native.js may require the binding", () => {
  const dir = tree({
    'binding.js': '',
    'lib/core/native.js': "module.exports = require('../../binding');",
    'lib/core/a.js': "const bpf = require('../..');\nconst b = require('./b');",
    'lib/core/b.js': "// require('../..') in a comment is fine\nconst n = require('../../binding.js');\nfunction lazy() { return require('./a'); }",
    'lib/host/c.js': "const native = require('../core/native');",
    // a planted bad import: the core requires a tool (a room above it)
    'lib/core/d.js': "const { hist } = require('../tools/hist');",
    'lib/tools/hist.js': "const n = require('../core/native');",
    // service and tools stand side by side
    'lib/service/e.js': "const h = require('../tools/hist');",
    'lib/f.js': '',
  });
  const problems = deps.jsProblems(path.join(dir, 'lib'));
  assert.deepStrictEqual(problems, [
    "lib/core/a.js:1 requires the package entry ('../..'): take what it needs from the lib module that defines it, or from core/native.js",
    "lib/core/b.js:2 requires '../../binding.js': reach the addon through core/native.js",
    'lib/core/d.js:1 requires tools/hist.js, a room above its own (core < tools): move what both need down, or the module up',
    'lib/f.js is in no room: move it into lib/<room>/, one of core, host, frames, service, tools',
    'lib/service/e.js:1 requires tools/hist.js: service and tools stand side by side and never require each other; move what both need into a room below',
    'lib/ modules require each other: core/a.js -> core/b.js -> core/a.js',
  ]);
  fs.rmSync(dir, { recursive: true });
});

test('npm run check:deps fails on a planted import against the layers in a copy of this lib/', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'check-deps-lib-'));
  fs.cpSync(path.join(__dirname, '..', 'lib'), path.join(dir, 'lib'), { recursive: true, filter: (f) => !f.endsWith('.d.ts') });
  assert.deepStrictEqual(deps.jsProblems(path.join(dir, 'lib')), []);
  const map = path.join(dir, 'lib', 'core', 'map.js');
  fs.appendFileSync(map, "\nconst { profile } = require('../service/profile');\n");
  const problems = deps.jsProblems(path.join(dir, 'lib'));
  assert.ok(problems.some((p) => /^lib\/core\/map\.js:\d+ requires service\/profile\.js, a room above its own \(core < service\)/.test(p)), problems.join('\n'));
  fs.rmSync(dir, { recursive: true });
});

test('--mermaid draws the graph, N-API modules marked', () => {
  const out = execFileSync(process.execPath, [path.join(__dirname, '../scripts/check-deps.js'), '--mermaid'], { encoding: 'utf8' });
  assert.match(out, /^flowchart TD\n/);
  assert.match(out, /^ {2}object --> state$/m);
  assert.match(out, /^ {2}class .*\bobject\b.* napi$/m);
});
