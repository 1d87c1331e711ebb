'use strict';
// Functions without a name of their own, named as V8's profiler names them
// (its name, else its inferred name, else "(anonymous)"): the fixture
// (fixtures/v8_anonymous.js) runs under `node --cpu-prof`, the oracle, while
// stackcount -p PID --profile names its frames from the host. Each line
// V8's profile ticks in the fixture belongs to one function: our frames at
// that line must carry V8's name for it, and each of its functions must be
// seen. Before, a ScopeInfo's slots past its end were read for a name: an
// async handler came out ".catch", a callback "statusCode".
const { describe, test, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { testNode } = require('../scripts/nodes');

const FIXTURE = path.join(__dirname, 'fixtures', 'v8_anonymous.js');
const STACKCOUNT = path.join(__dirname, '..', 'examples', 'stackcount.js');
const MAJORS = ['20', '22', '24', '26'];
/** The fixture's functions, as `node --cpu-prof` names them. */
const NAMES = ['(anonymous)', 'router.route', 'Shape', 'area', 'get size', 'namedExpression'];
const skip = process.getuid?.() !== 0 ? 'the walk runs in BPF programs: run the tests as root' : false;
if (skip) console.log(`# skipping v8_anonymous.test.js: ${skip}`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'v8-anonymous-test-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('anonymous functions, from the host: named as node --cpu-prof names them', { skip }, () => {
  for (const major of MAJORS) {
    const { node, skip: noNode } = testNode(major);
    test(`Node ${major}: an anonymous arrow, an async handler with a .catch local, an inferred name, a method, a constructor, a getter`, { skip: noNode }, async () => {
      const dir = fs.mkdtempSync(path.join(tmp, `${major}-`));
      const child = spawn(/** @type {string} */ (node), ['--cpu-prof', '--cpu-prof-dir', dir, FIXTURE], { stdio: ['pipe', 'pipe', 'inherit'] });
      const exited = new Promise((resolve) => child.on('exit', resolve));
      let ours;
      try {
        await new Promise((resolve, reject) => {
          child.stdout.on('data', (d) => String(d).includes('ready') && resolve(null));
          child.on('exit', (code) => reject(new Error(`${FIXTURE} exited ${code} before it was ready`)));
        });
        ours = spawnSync(process.execPath, [STACKCOUNT, '-p', String(child.pid), '--profile', '--duration', '3', '--folded', '-U'], { encoding: 'utf8', timeout: 60_000 });
      } finally {
        child.stdin.end();
      }
      await exited;
      assert.equal(ours.status, 0, ours.stderr);
      // V8's: each line it ticked in the fixture, and the name of the function there
      const [file] = fs.readdirSync(dir);
      const profile = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
      const oracle = new Map();
      for (const n of profile.nodes) {
        if (!n.callFrame.url.endsWith('/v8_anonymous.js') || n.callFrame.functionName === 'tick') continue;
        for (const t of n.positionTicks ?? []) if (t.ticks >= 10) oracle.set(t.line, n.callFrame.functionName || '(anonymous)');
      }
      assert.deepEqual([...new Set(oracle.values())].sort(), [...NAMES].sort(), `V8's names: ${JSON.stringify([...oracle])}`);
      const seen = new Map();
      let checked = 0;
      for (const row of ours.stdout.trim().split('\n')) {
        const m = /^(.*) (\d+)$/.exec(row);
        for (const frame of m?.[1].split(';') ?? []) {
          const where = /^(.*) (\S+\/v8_anonymous\.js):(\d+):\d+$/.exec(frame);
          if (!where || !oracle.has(Number(where[3]))) continue;
          assert.equal(where[1], oracle.get(Number(where[3])), `our frame ${frame}: V8 names line ${where[3]} ${oracle.get(Number(where[3]))}`);
          seen.set(where[1], (seen.get(where[1]) ?? 0) + Number(m?.[2]));
          checked += Number(m?.[2]);
        }
      }
      console.log(`# Node ${major}: ${checked} frames at V8's lines, each named as V8 names it: ${JSON.stringify(Object.fromEntries(seen))}`);
      assert.deepEqual([...seen.keys()].sort(), [...NAMES].sort());
    });
  }
});
