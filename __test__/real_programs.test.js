'use strict';
// The real-programs suite as a test (__test__/real_programs.js): on every
// program, V8's top 10 functions (node --cpu-prof) in our top 20, 95% of
// the program's samples with a line (a column in the minified bundle), and
// the bundle's frames at their original .ts file, from the host
// (stackcount) and in process (bpf.profile()), under one node:
// REAL_PROGRAMS_NODE (a major cached by scripts/nodes.js, or a path), else
// a major of 20, 22, 24 and 26 picked by the commit (the commits rotate
// through them). A row under a threshold is measured again, twice at most,
// each time with a new run of V8's profiler: two runs of V8's own differ
// too. One run takes ~4 minutes on 2 CPUs; npm run real-programs prints the
// table for more nodes.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const real = require('./real_programs');
const { cachedNode, commitTurn } = require('../scripts/nodes');

const MAJORS = ['20', '22', '24', '26'];

const asked = process.env.REAL_PROGRAMS_NODE ?? MAJORS[commitTurn(__dirname).n % MAJORS.length];
const nodePath = asked === process.versions.node.split('.')[0] ? process.execPath : /^\d+$/.test(asked) ? cachedNode(asked) : asked;
const skip =
  process.getuid?.() !== 0
    ? 'needs root (stackcount and bpf.profile() load BPF programs)'
    : !nodePath || !fs.existsSync(nodePath)
      ? `Node ${asked}: not cached (node scripts/nodes.js --if-missing ${asked})`
      : false;

test(`real programs under Node ${asked}: V8's top functions, lines and source maps against node --cpu-prof`, { skip, timeout: 20 * 60_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'real-programs-'));
  try {
    const node = { label: asked, path: /** @type {string} */ (nodePath) };
    const say = (row) => `${row.program} ${row.mode}: ${row.error ?? `${row.top}/${row.topOf} (${row.topV8}/${row.topOf} charged as V8 charges), ${(100 * row.line).toFixed(1)}% with a line`}`;
    const rows = await real.measure({ nodes: [node], dir, retries: 2, log: (row) => t.diagnostic(`${say(row)}${row.tries.length > 1 ? ` (try ${row.tries.length}; before: ${row.tries.slice(0, -1).map((f) => f.join('; ')).join(' / ')})` : ''}`) });
    for (const line of real.table(rows).split('\n')) t.diagnostic(line);
    assert.strictEqual(rows.length, Object.keys(real.PROGRAMS).length * real.MODES.length);
    const failed = rows.filter((r) => r.failures.length).map((r) => `${r.program} ${r.mode}: ${r.failures.join('; ')}`);
    assert.deepStrictEqual(failed, [], `rows under the thresholds three times:\n${failed.join('\n')}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
