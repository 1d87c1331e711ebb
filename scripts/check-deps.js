#!/usr/bin/env node
'use strict';
/**
 * Dependencies that run one way (issue 22), checked:
 *
 * - Rust: the `use crate::x` / `crate::x::` references of src/**\/*.rs make
 *   a graph of the crate's top-level modules (src/x.rs, src/x/mod.rs and
 *   what is under src/x/ are module x); it must have no cycle.
 * - JavaScript: no lib/*.js module requires the package entry ('..',
 *   '../index', '../index.js') or the generated binding ('../binding'),
 *   except lib/core/native.js, which owns the binding; and the requires among
 *   lib/*.js (lazy ones included) have no cycle.
 *
 * - docs/development.md's Mermaid graph (src/: the module graph) is the one --mermaid draws.
 *
 *   node scripts/check-deps.js            # exit 1, listing what is wrong
 *   node scripts/check-deps.js --mermaid  # the Rust module graph, as a Mermaid flowchart
 *   node scripts/check-deps.js --docs     # redraws docs/development.md's graph (--readme: the same)
 *
 * No dependencies; comments and string literals are skipped, so a module
 * named in a doc comment is no edge.
 */
const fs = require('fs');
const path = require('path');

const ROOT = path.join(__dirname, '..');

/** Every file under `dir` whose name ends with `ext`, sorted. */
function filesUnder(dir, ext) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(full, ext));
    else if (entry.name.endsWith(ext)) out.push(full);
  }
  return out.sort();
}

/** Rust source without comments, string and char literals (each replaced by a space; newlines kept). */
function stripRust(text) {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < text.length && depth > 0) {
        if (text[i] === '/' && text[i + 1] === '*') (depth++, (i += 2));
        else if (text[i] === '*' && text[i + 1] === '/') (depth--, (i += 2));
        else {
          if (text[i] === '\n') out += '\n';
          i++;
        }
      }
      out += ' ';
    } else if (c === 'r' && /^r(#*)"/.test(text.slice(i, i + 10)) && !/\w/.test(text[i - 1] ?? '')) {
      // a raw string: r"...", r#"..."#
      const hashes = /^r(#*)"/.exec(text.slice(i, i + 10))[1];
      const end = text.indexOf(`"${hashes}`, i + 2 + hashes.length);
      const stop = end < 0 ? text.length : end + 1 + hashes.length;
      out += text.slice(i, stop).replace(/[^\n]/g, '') + ' ';
      i = stop;
    } else if (c === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\') i++;
        else if (text[i] === '\n') out += '\n';
        i++;
      }
      i++;
      out += ' ';
    } else if (c === "'" && /^'(\\.|[^\\'])'/.test(text.slice(i, i + 4))) {
      // a char literal ('x', '\n'); not a lifetime ('a)
      i = text.indexOf("'", i + 2) + 1;
      out += ' ';
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** The top-level module of a file under src/: src/a.rs, src/a/mod.rs and src/a/b.rs are `a`; src/lib.rs is the crate root. */
function moduleOf(file, src) {
  const rel = path.relative(src, file).split(path.sep);
  return rel[0].replace(/\.rs$/, '');
}

/** The items of a `{...}` group at depth 0 (`a::b`, `c::{d, e}`, `f`). */
function groupItems(group) {
  const items = [];
  let depth = 0;
  let current = '';
  for (const c of group) {
    if (c === '{') depth++;
    if (c === '}') depth--;
    if (c === ',' && depth === 0) {
      items.push(current);
      current = '';
    } else current += c;
  }
  items.push(current);
  return items.map((s) => s.trim()).filter(Boolean);
}

/** The top-level modules the stripped source `code` names through `crate::`. */
function crateReferences(code) {
  const names = new Set();
  const re = /\bcrate::(\{|[A-Za-z_]\w*)/g;
  let m;
  while ((m = re.exec(code))) {
    if (m[1] !== '{') {
      names.add(m[1]);
      continue;
    }
    // crate::{a::x, b, c::{...}}: the first segment of each item
    let depth = 1;
    let j = re.lastIndex;
    while (j < code.length && depth > 0) {
      if (code[j] === '{') depth++;
      else if (code[j] === '}') depth--;
      j++;
    }
    for (const item of groupItems(code.slice(re.lastIndex, j - 1))) {
      const first = /^([A-Za-z_]\w*)/.exec(item);
      if (first && first[1] !== 'self') names.add(first[1]);
    }
    re.lastIndex = j;
  }
  return names;
}

/** The crate's module graph: Map(module -> Set(modules it uses)), and the modules with N-API exports. */
function rustGraph(src = path.join(ROOT, 'src')) {
  const graph = new Map();
  const napi = new Set();
  const modules = new Set(filesUnder(src, '.rs').map((f) => moduleOf(f, src)).filter((m) => m !== 'lib'));
  for (const file of filesUnder(src, '.rs')) {
    const from = moduleOf(file, src);
    if (from === 'lib') continue;
    const code = stripRust(fs.readFileSync(file, 'utf8'));
    if (!graph.has(from)) graph.set(from, new Set());
    if (/#\[\s*napi\b/.test(code) || /#\[\s*napi_derive::napi\b/.test(code)) napi.add(from);
    for (const to of crateReferences(code)) {
      if (to !== from && modules.has(to)) graph.get(from).add(to);
    }
  }
  return { graph, napi };
}

/** The strongly connected components of more than one node (Tarjan), each as a cycle through it. */
function cycles(graph) {
  let index = 0;
  const indices = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    indices.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), indices.get(w)));
    }
    if (low.get(v) === indices.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(cycleIn(graph, new Set(component)));
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indices.has(v)) visit(v);
  return found;
}

/** One cycle inside a strongly connected `component`: a -> b -> ... -> a (breadth-first, so the shortest from its first node). */
function cycleIn(graph, component) {
  const start = [...component].sort()[0];
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length) {
    const v = queue.shift();
    for (const w of [...(graph.get(v) ?? [])].sort()) {
      if (!component.has(w)) continue;
      if (w === start) {
        const cycle = [start];
        for (let u = v; u !== start; u = previous.get(u)) cycle.splice(1, 0, u);
        return [...cycle, start];
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [...component, start];
}

/** The graph as a Mermaid flowchart (N-API modules marked; the edges into `error`, which nearly every module uses, left out). */
function mermaid({ graph, napi }) {
  const users = [...graph.keys()].filter((m) => graph.get(m).has('error')).sort();
  const lines = ['flowchart TD', `  %% ${users.length} of the ${graph.size} modules use error (those edges are left out)`];
  for (const from of [...graph.keys()].sort()) {
    const to = [...graph.get(from)].filter((t) => t !== 'error').sort();
    if (to.length === 0) lines.push(`  ${from}`);
    for (const t of to) lines.push(`  ${from} --> ${t}`);
  }
  lines.push('  classDef napi fill:#e8f0fe,stroke:#4a6fa5');
  lines.push(`  class ${[...napi].sort().join(',')} napi`);
  return lines.join('\n');
}

/** JavaScript requires (string literals only) of `file`, with their line numbers. */
function requiresOf(file) {
  const out = [];
  fs.readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (/^\s*(\/\/|\*)/.test(line)) return; // a comment or a JSDoc line
      for (const m of line.matchAll(/\brequire\(\s*(['"])([^'"]+)\1\s*\)/g)) out.push({ spec: m[2], line: i + 1 });
    });
  return out;
}

/**
 * lib/'s rooms, bottom to top: a module requires modules of its own room
 * or of a room below, never above; the rooms of one layer (service and
 * tools) never require each other.
 */
const LAYERS = [
  ['core'], // the API: objects, maps, buffers, records; core/native.js alone owns the binding
  ['host'], // the machine, its processes and containers
  ['frames'], // naming stack frames: ELF, perf map, jitdump, V8
  ['service', 'tools'], // self-tracing (monitor, profiles, exporters); the command-line tools
];
const LAYER = new Map(LAYERS.flatMap((rooms, i) => rooms.map((room) => [room, i])));

/**
 * What is wrong with lib/'s requires: a module outside the rooms, a require
 * of the package entry or of the binding (but from core/native.js), one
 * against the layers, and cycles (lazy requires included).
 */
function jsProblems(lib = path.join(ROOT, 'lib')) {
  const problems = [];
  const graph = new Map();
  const root = path.dirname(lib);
  const entry = new Set([root, path.join(root, 'index'), path.join(root, 'index.js')]);
  const binding = new Set([path.join(root, 'binding'), path.join(root, 'binding.js')]);
  for (const full of filesUnder(lib, '.js')) {
    const name = path.relative(lib, full).replace(/\.js$/, '');
    const room = name.includes('/') ? name.split('/')[0] : null;
    graph.set(name, new Set());
    if (!LAYER.has(room)) {
      problems.push(`lib/${name}.js is in no room: move it into lib/<room>/, one of ${[...LAYER.keys()].join(', ')}`);
      continue;
    }
    for (const { spec, line } of requiresOf(full)) {
      if (!spec.startsWith('.')) continue;
      const target = path.resolve(path.dirname(full), spec).replace(/\/$/, '');
      if (entry.has(target)) {
        problems.push(`lib/${name}.js:${line} requires the package entry ('${spec}'): take what it needs from the lib module that defines it, or from core/native.js`);
      } else if (binding.has(target)) {
        if (name !== 'core/native') problems.push(`lib/${name}.js:${line} requires '${spec}': reach the addon through core/native.js`);
      } else if (target.startsWith(lib + path.sep)) {
        const to = path.relative(lib, target).replace(/\.js$/, '');
        const toRoom = to.split('/')[0];
        graph.get(name).add(to);
        if (!LAYER.has(toRoom) || toRoom === room) continue;
        if (LAYER.get(toRoom) > LAYER.get(room)) problems.push(`lib/${name}.js:${line} requires ${to}.js, a room above its own (${room} < ${toRoom}): move what both need down, or the module up`);
        else if (LAYER.get(toRoom) === LAYER.get(room)) problems.push(`lib/${name}.js:${line} requires ${to}.js: ${room} and ${toRoom} stand side by side and never require each other; move what both need into a room below`);
      }
    }
  }
  for (const cycle of cycles(graph)) problems.push(`lib/ modules require each other: ${cycle.map((m) => `${m}.js`).join(' -> ')}`);
  return problems;
}

const DOCS = path.join(ROOT, 'docs', 'development.md');
const DOCS_GRAPH = /(```mermaid\n)([\s\S]*?)(```)/;

function main(argv) {
  const rust = rustGraph();
  if (argv.includes('--mermaid')) {
    console.log(mermaid(rust));
    return 0;
  }
  const docs = fs.readFileSync(DOCS, 'utf8');
  const drawn = `${mermaid(rust).trimEnd()}\n`;
  if (argv.includes('--docs') || argv.includes('--readme')) {
    fs.writeFileSync(DOCS, docs.replace(DOCS_GRAPH, (_, open, _old, close) => `${open}${drawn}${close}`));
    return 0;
  }
  const problems = [
    ...cycles(rust.graph).map((cycle) => `src/ modules import each other: ${cycle.join(' -> ')}`),
    ...jsProblems(),
    ...(DOCS_GRAPH.exec(docs)?.[2] === drawn ? [] : ['docs/development.md\'s module graph is not the one src/ makes: run node scripts/check-deps.js --docs']),
  ];
  if (problems.length) {
    for (const p of problems) console.error(`check-deps: ${p}`);
    return 1;
  }
  const edges = [...rust.graph.values()].reduce((n, s) => n + s.size, 0);
  console.log(`check-deps: src/ has ${rust.graph.size} modules and ${edges} edges, no cycle; lib/'s rooms (${LAYERS.map((l) => l.join(' | ')).join(' < ')}) are required downwards only, reach the addon only through core/native.js, no cycle`);
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));

module.exports = { stripRust, crateReferences, rustGraph, cycles, mermaid, jsProblems, LAYERS };
