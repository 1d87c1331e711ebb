'use strict';
// Lines in big scripts: a JS frame's line and column come from its script's
// line ends, computed from the source (read in 1 MiB pieces) where V8 has
// none. A hot function at the end of a 9 MB script (fixtures/v8_big.js) is
// named from the host with the line and column of its loop, for each way
// V8 holds the source: sequential one-byte, two-byte, one minified line
// (the column is the only position), a string built by concatenation.
const { describe, test, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { testNode } = require('../scripts/nodes');

const BIG = path.join(__dirname, 'fixtures', 'v8_big.js');
const STACKCOUNT = path.join(__dirname, '..', 'examples', 'stackcount.js');
const MAJORS = ['20', '22', '24', '26'];
const MODES = ['onebyte', 'twobyte', 'minified', 'cons'];
const skip = process.getuid?.() !== 0 ? 'the walk runs in BPF programs: run the tests as root' : false;
if (skip) console.log(`# skipping v8_lines.test.js: ${skip}`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'v8-lines-test-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Runs the fixture under `node` in `mode`: its pid and the loop's line and columns once ready. */
function startBig(node, mode) {
  const child = spawn(node, [BIG, mode, tmp], { stdio: ['pipe', 'pipe', 'inherit'] });
  const ready = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      const m = /ready (\d+) (\d+) (\d+)/.exec(String(d));
      if (m) resolve({ pid: child.pid, line: Number(m[1]), from: Number(m[2]), to: Number(m[3]) });
    });
    child.on('exit', (code) => reject(new Error(`${node} ${BIG} ${mode} exited ${code} before it was ready`)));
  });
  return { ready, stop: () => (child.stdin.end(), child.kill()) };
}

describe('lines in a 9 MB script, from the host', { skip }, () => {
  for (const major of MAJORS) {
    const { node, skip: noNode } = testNode(major);
    for (const mode of MODES) {
      test(`Node ${major}, ${mode} source: bigHot named at its loop's line and column in >= 90% of its frames`, { skip: noNode }, async () => {
        const big = startBig(/** @type {string} */ (node), mode);
        try {
          const { pid, line, from, to } = await big.ready;
          const r = spawnSync(process.execPath, [STACKCOUNT, '-p', String(pid), '--profile', '--duration', '3', '--folded', '-U'], { encoding: 'utf8', timeout: 60_000 });
          assert.equal(r.status, 0, r.stderr);
          let frames = 0;
          let atLoop = 0;
          for (const row of r.stdout.trim().split('\n')) {
            const m = /^(.*) (\d+)$/.exec(row);
            const frame = m?.[1].split(';').find((f) => f.startsWith('bigHot '));
            if (!frame) continue;
            frames += Number(m?.[2]);
            const where = /^bigHot (\S+):(\d+):(\d+)$/.exec(frame);
            assert.ok(where, `a line and column: ${frame}`);
            assert.equal(where[1], path.join(tmp, `big_${mode}.js`));
            if (Number(where[2]) === line && Number(where[3]) >= from && Number(where[3]) <= to) atLoop += Number(m?.[2]);
          }
          console.log(`# Node ${major}, ${mode}: bigHot at line ${line}, columns ${from}-${to} in ${atLoop} of its ${frames} frames`);
          assert.ok(frames >= 50, `${frames} frames of bigHot:\n${r.stdout.slice(0, 2000)}`);
          assert.ok(atLoop >= 0.9 * frames, `bigHot at its loop in ${atLoop} of ${frames} frames:\n${r.stdout.slice(0, 2000)}`);
        } finally {
          big.stop();
        }
      });
    }
  }
});
