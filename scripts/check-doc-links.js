#!/usr/bin/env node
'use strict';
/**
 * Checks the links of the project's Markdown: every relative file link
 * resolves to a file or directory, and every `#anchor` (in the same file or
 * in another .md) names a heading there, slugged as GitHub does. Code blocks
 * and inline code are skipped. Exit code 1, with each broken link, if any.
 *
 *   node scripts/check-doc-links.js [FILE.md ...]   (default: the docs below)
 */
const fs = require('fs');
const path = require('path');

const ROOT = path.join(__dirname, '..');
/** Every .md file under `dir` (relative to ROOT), sorted. */
function markdownUnder(dir) {
  const out = [];
  if (!fs.existsSync(path.join(ROOT, dir))) return out;
  for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...markdownUnder(rel));
    else if (entry.name.endsWith('.md')) out.push(rel);
  }
  return out.sort();
}

const DEFAULT = ['README.md', 'CHANGELOG.md', 'examples/README.md',
  ...['docs', 'bench', 'scripts'].flatMap(markdownUnder)];
const README_MAX_LINES = 400;

/** The text outside fenced code blocks and inline code spans. */
function prose(text) {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
function anchors(text) {
  const seen = new Map();
  const out = new Set();
  for (const line of text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = m[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n ? `${slug}-${n}` : slug);
  }
  return out;
}

function check(file) {
  const abs = path.join(ROOT, file);
  const text = fs.readFileSync(abs, 'utf8');
  const broken = [];
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1];
    if (/^[a-z]+:/i.test(target)) continue;     // https:, mailto:
    const [ref, anchor] = target.split('#');
    const dest = ref ? path.resolve(path.dirname(abs), ref) : abs;
    if (!fs.existsSync(dest)) { broken.push(`${file}: ${target}: no such file`); continue; }
    if (anchor === undefined) continue;
    if (!dest.endsWith('.md')) { broken.push(`${file}: ${target}: an anchor in a file that is not Markdown`); continue; }
    if (!anchors(fs.readFileSync(dest, 'utf8')).has(anchor)) broken.push(`${file}: ${target}: no such heading`);
  }
  return broken;
}

const files = process.argv.length > 2 ? process.argv.slice(2) : DEFAULT;
const broken = files.filter((f) => fs.existsSync(path.join(ROOT, f))).flatMap(check);
const readmeLines = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n').length - 1;
if (readmeLines > README_MAX_LINES) broken.push(`README.md: ${readmeLines} lines, more than ${README_MAX_LINES}: move reference text into a docs/ page`);
for (const b of broken) console.error(b);
console.log(`${files.length} files, ${broken.length} broken links`);
process.exitCode = broken.length ? 1 : 0;
