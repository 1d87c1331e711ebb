'use strict';
// Every `#[napi]` export (function, method, getter, setter, constructor) is
// panic-safe: its body runs inside `guard(...)` (src/error.rs: a Rust panic
// becomes an ERR_BPF_INTERNAL error) or the export is marked
// `#[napi(catch_unwind)]`. napi-rs 3 catches a panic nowhere else, and one
// that unwinds into napi aborts the whole process. This test reads the
// Rust sources, so a new export without a guard fails here, by name.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');

const SRC = path.join(__dirname, '..', 'src');

function rustFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return rustFiles(full);
    return e.name.endsWith('.rs') ? [full] : [];
  });
}

/** The index just past the literal, comment or char that starts at `i` (or `i` when none does). */
function skipLiteral(src, i) {
  if (src.startsWith('//', i)) return src.indexOf('\n', i) === -1 ? src.length : src.indexOf('\n', i);
  if (src.startsWith('/*', i)) return src.indexOf('*/', i + 2) + 2;
  const raw = /^r(#*)"/.exec(src.slice(i, i + 12));
  if (raw) return src.indexOf(`"${raw[1]}`, i + raw[0].length) + 1 + raw[1].length;
  if (src[i] === '"') {
    let j = i + 1;
    while (src[j] !== '"') j += src[j] === '\\' ? 2 : 1;
    return j + 1;
  }
  // a char literal ('{', '\'', '\n'), not a lifetime ('env)
  const char = /^'(?:\\.|[^\\'])'/.exec(src.slice(i, i + 4));
  if (char) return i + char[0].length;
  return i;
}

/** The index just past the bracket that closes the one at `open`. */
function closing(src, open) {
  const pairs = { '(': ')', '[': ']', '{': '}' };
  const stack = [];
  let i = open;
  while (i < src.length) {
    const next = skipLiteral(src, i);
    if (next !== i) {
      i = next;
      continue;
    }
    const c = src[i];
    if (pairs[c]) stack.push(pairs[c]);
    else if (c === ')' || c === ']' || c === '}') {
      assert.strictEqual(c, stack.pop(), `unbalanced ${c} at ${i}`);
      if (stack.length === 0) return i + 1;
    }
    i++;
  }
  throw new Error(`no closing bracket for ${open}`);
}

/** The `#[napi]` functions of a Rust source: name, attribute, body, line. */
function napiExports(file) {
  const src = fs.readFileSync(file, 'utf8');
  const found = [];
  const attr = /#\[(?:napi_derive::)?napi\b/g;
  let m;
  while ((m = attr.exec(src))) {
    const end = closing(src, m.index + 1);
    const attribute = src.slice(m.index, end);
    // what the attribute is on: skip other attributes, doc comments, space
    let i = end;
    for (;;) {
      while (/\s/.test(src[i])) i++;
      if (src.startsWith('#[', i)) i = closing(src, i + 1);
      else if (src.startsWith('//', i)) i = skipLiteral(src, i);
      else break;
    }
    const item = /^(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)/.exec(src.slice(i, i + 200));
    if (!item) continue; // a struct, an impl block, an argument's attribute
    // the body: the first `{` after the signature (its return type has no braces)
    let open = i + item[0].length;
    let depth = 0;
    while (src[open] !== '{' || depth > 0) {
      if (src[open] === '(' || src[open] === '<') depth++;
      if (src[open] === ')' || (src[open] === '>' && src[open - 1] !== '-')) depth--;
      open++;
    }
    const body = src.slice(open, closing(src, open));
    const line = src.slice(0, m.index).split('\n').length;
    found.push({ name: item[1], attribute, body, where: `${path.relative(SRC, file)}:${line}` });
  }
  return found;
}

/** Whether an export is panic-safe: its body calls guard, or it asks napi to catch. */
function panicSafe(exp) {
  return /\bguard\s*\(/.test(exp.body) || /\bcatch_unwind\b/.test(exp.attribute);
}

const exportsOf = () => rustFiles(SRC).flatMap(napiExports);

test('the parser finds exports of every kind', () => {
  const all = exportsOf();
  const names = new Set(all.map((e) => e.name));
  // a function, a method, a getter, a setter, a constructor, a js_name
  for (const name of ['open_object', 'lookup', 'loaded', 'set_autoload', 'new', 'panic_for_tests', 'elf_symbols', 'features']) {
    assert.ok(names.has(name), `found export ${name}`);
  }
  assert.ok(all.length >= 60, `${all.length} exports found`);
  // and it tells a guarded body from one that is not
  const [plain] = napiExports(writeTemp('#[napi]\npub fn bare(x: u32) -> u32 { x + 1 }\n#[napi(getter)]\npub fn ok(&self) -> Result<u32> { guard(|| Ok(1)) }\n#[napi(catch_unwind)]\nfn caught() {}\n'));
  assert.strictEqual(plain.name, 'bare');
  assert.strictEqual(panicSafe(plain), false);
  const temp = napiExports(writeTemp('#[napi(getter)]\n/// doc\npub fn ok(&self) -> Result<Vec<u8>> { let c = \'{\'; guard(|| Ok(vec![])) }\n#[napi(catch_unwind)]\nfn caught() {}\n'));
  assert.deepStrictEqual(temp.map((e) => [e.name, panicSafe(e)]), [['ok', true], ['caught', true]]);
});

test('every #[napi] export runs inside guard() or has catch_unwind', () => {
  const unsafe = exportsOf().filter((e) => !panicSafe(e));
  assert.deepStrictEqual(
    unsafe.map((e) => `${e.name} (${e.where})`),
    [],
    'these exports let a Rust panic unwind into napi (an abort): wrap the body in guard(|| ...) (src/error.rs)',
  );
});

function writeTemp(text) {
  const file = path.join(require('node:os').tmpdir(), `exports_guard_${process.pid}.rs`);
  fs.writeFileSync(file, text);
  process.on('exit', () => fs.rmSync(file, { force: true }));
  return file;
}
