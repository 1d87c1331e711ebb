'use strict';
// The real-programs suite as a test (__test__/real_programs.js): on every
// program, V8's top 10 functions (node --cpu-prof) in our top 20, 95% of
// the program's samples with a line (a column in the minified bundle), and
// the bundle's frames at their original .ts file, from the host
// (stackcount) and in process (bpf.profile()), under one node: this one,
// or REAL_PROGRAMS_NODE (a major cached by scripts/nodes.js, or a path).
// Opt-in (REAL_PROGRAMS=1) until the naming meets the thresholds; one run
// takes ~3 minutes on 2 CPUs. npm run real-programs prints the table for
// more nodes.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const real = require('./real_programs');
const { cachedNode } = require('../scripts/nodes');

const enabled = process.env.REAL_PROGRAMS === '1';
const asked = process.env.REAL_PROGRAMS_NODE;
const nodePath = !asked ? process.execPath : /^\d+$/.test(asked) ? cachedNode(asked) : asked;
const skip = !enabled
  ? 'opt-in until the JS frame naming meets its thresholds on real programs: REAL_PROGRAMS=1 node --test __test__/real_programs.test.js (~3 minutes), or npm run real-programs'
  : process.getuid?.() !== 0
    ? 'needs root (stackcount and bpf.profile() load BPF programs)'
    : !nodePath || !fs.existsSync(nodePath)
      ? `REAL_PROGRAMS_NODE=${asked}: not cached (node scripts/nodes.js --if-missing ${asked})`
      : false;

test('real programs: V8\'s top functions, lines and source maps against node --cpu-prof', { skip, timeout: 15 * 60_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'real-programs-'));
  try {
    const node = { label: asked ?? process.versions.node, path: nodePath };
    const rows = await real.measure({ nodes: [node], dir, log: (row) => t.diagnostic(`${row.program} ${row.mode}: ${row.error ?? `${row.top}/${row.topOf} (${row.topV8}/${row.topOf} charged as V8 charges), ${(100 * row.line).toFixed(1)}% with a line`}`) });
    for (const line of real.table(rows).split('\n')) t.diagnostic(line);
    assert.strictEqual(rows.length, Object.keys(real.PROGRAMS).length * real.MODES.length);
    const failed = rows.filter((r) => r.failures.length).map((r) => `${r.program} ${r.mode}: ${r.failures.join('; ')}`);
    assert.deepStrictEqual(failed, [], `rows under the thresholds:\n${failed.join('\n')}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
