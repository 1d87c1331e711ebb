'use strict';
// The docs' checks (issue 26): scripts/check-doc-links.js on small trees
// with a broken link, a broken anchor and a README over 400 lines, and
// scripts/check-deps.js redrawing docs/development.md's module graph with
// --docs and its old name --readme. Needs no root.
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..');

function tree(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'doc-links-'));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

function run(dir, script, args = []) {
  return spawnSync(process.execPath, [path.join(dir, 'scripts', script), ...args], { encoding: 'utf8' });
}

test('this repository: every link and anchor of README.md, docs/, examples/, bench/ and scripts/ resolves; README.md is at most 400 lines', () => {
  const r = run(ROOT, 'check-doc-links.js');
  assert.strictEqual(r.status, 0, r.stderr);
  assert.match(r.stdout, /, 0 broken links/);
  assert.ok(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n').length - 1 <= 400);
});

test('check-doc-links: a broken file link, a broken anchor (in docs/ and under scripts/), and a README over 400 lines fail', () => {
  const script = fs.readFileSync(path.join(ROOT, 'scripts', 'check-doc-links.js'), 'utf8');
  const good = tree({
    'scripts/check-doc-links.js': script,
    'README.md': '# Guide\n\nSee [api](docs/api.md#errors).\n',
    'docs/api.md': '# API\n\n## Errors\n\nBack to the [guide](../README.md#guide).\n',
    'scripts/kernels/README.md': '# Kernels\n\n[api](../../docs/api.md#errors)\n',
  });
  const ok = run(good, 'check-doc-links.js');
  assert.strictEqual(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, / 0 broken links/);
  fs.rmSync(good, { recursive: true });

  const bad = tree({
    'scripts/check-doc-links.js': script,
    'README.md': `# Guide\n\nSee [api](docs/api.md#errors).\n${'a line\n'.repeat(398)}`,
    'docs/api.md': '# API\n\n## Errors\n\nSee [the kernels](kernels.md) and [design](../README.md#design).\n',
    'scripts/kernels/README.md': '# Kernels\n\n[api](../../docs/api.md#no-such)\n',
  });
  const r = run(bad, 'check-doc-links.js');
  assert.strictEqual(r.status, 1);
  assert.deepStrictEqual(r.stderr.trim().split('\n'), [
    'docs/api.md: kernels.md: no such file',
    'docs/api.md: ../README.md#design: no such heading',
    'scripts/kernels/README.md: ../../docs/api.md#no-such: no such heading',
    'README.md: 401 lines, more than 400: move reference text into a docs/ page',
  ]);
  fs.rmSync(bad, { recursive: true });
});

test('check-deps redraws docs/development.md\'s module graph with --docs, and with its old name --readme', () => {
  const dir = tree({
    'scripts/check-deps.js': fs.readFileSync(path.join(ROOT, 'scripts', 'check-deps.js'), 'utf8'),
    'src/lib.rs': 'mod a; mod b;',
    'src/a.rs': 'use crate::b;',
    'src/b.rs': '',
    'lib/core/native.js': '',
    'docs/development.md': '# Development\n\n```mermaid\nflowchart TD\n  stale\n```\n\nAfter.\n',
    'README.md': '# Guide\n',
  });
  const stale = fs.readFileSync(path.join(dir, 'docs', 'development.md'), 'utf8');
  const check = run(dir, 'check-deps.js');
  assert.strictEqual(check.status, 1);
  assert.match(check.stderr, /docs\/development\.md's module graph is not the one src\/ makes: run node scripts\/check-deps\.js --docs/);
  for (const flag of ['--docs', '--readme']) {
    fs.writeFileSync(path.join(dir, 'docs', 'development.md'), stale);
    assert.strictEqual(run(dir, 'check-deps.js', [flag]).status, 0);
    const drawn = fs.readFileSync(path.join(dir, 'docs', 'development.md'), 'utf8');
    assert.match(drawn, /```mermaid\nflowchart TD\n[\s\S]*a --> b\n[\s\S]*```\n\nAfter\.\n$/, flag);
    assert.doesNotMatch(drawn, /stale/);
    assert.strictEqual(run(dir, 'check-deps.js').status, 0, flag);
    assert.strictEqual(fs.readFileSync(path.join(dir, 'README.md'), 'utf8'), '# Guide\n');
  }
  fs.rmSync(dir, { recursive: true });
});
