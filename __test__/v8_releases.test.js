'use strict';
// JS frames named on older patch releases (npm run test:releases picks them:
// scripts/test-releases.js): for each release in NODE_RELEASES
// (`24.11.0,22.12.0`, cached by scripts/nodes.js), the hot fixture from the
// host (stackcount -p PID --profile: hotLoopNf with its file and a line of
// it in >= 90% of the samples, as v8_frames.test.js's newest rows) and the
// layout's self-check from the host and in process (V8Frames.selfCheck).
// Where V8 keeps no source positions for Maglev code (Node 24.0.0 to
// 24.19.0), the Maglev processImmediate hotLoopNf is inlined into counts.
// Without NODE_RELEASES: nothing to run, and it says so.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { bpf, objectPath, sleep } = require('./helpers');
const stacks = require('../lib/frames/stacks');
const { CACHE } = require('../scripts/nodes');

const HOT = path.join(__dirname, 'fixtures', 'v8_hot.js');
const STACKCOUNT = path.join(__dirname, '..', 'examples', 'stackcount.js');
const HOT_LINES = [5, 9]; // hotLoopNf in fixtures/v8_hot.js
const RELEASES = (process.env.NODE_RELEASES ?? '').split(',').filter(Boolean);
const skip = process.getuid?.() !== 0 ? 'the walk runs in BPF programs: run the tests as root' : !RELEASES.length && 'no NODE_RELEASES (npm run test:releases sets it: NODE_RELEASES=24.11.0,22.12.0)';
if (skip) console.log(`# skipping v8_releases.test.js: ${skip}`);

for (const release of RELEASES) {
  const node = path.join(CACHE, release, 'bin', 'node');
  const missing = !fs.existsSync(node) && `no ${node}: node scripts/nodes.js ${release} fetches it`;
  if (missing && process.env.NODE_LIBBPF_REQUIRE_NODES === '1') throw new Error(missing);
  test(`Node ${release}: hotLoopNf named (file, line) in >= 90% of stackcount's samples; the self-check passes from the host and in process`, { skip: skip || missing }, async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'v8-releases-'));
    const child = spawn(node, [HOT], { stdio: ['pipe', 'pipe', 'inherit'], cwd: tmp });
    try {
      await new Promise((resolve, reject) => {
        child.stdout.on('data', (d) => String(d).includes('ready') && resolve(undefined));
        child.on('exit', (code) => reject(new Error(`${node} ${HOT} exited ${code} before it was ready`)));
      });
      const pid = /** @type {number} */ (child.pid);
      // the self-check from the host, on the JS frames walked in 1 s at 499 Hz
      const obj = bpf.loadBpfProgram(objectPath('stackcount'));
      let host;
      let hostMs;
      let walk;
      let noPositions = false;
      try {
        obj.setGlobalVariable('target_pid', pid);
        const symbolizer = new stacks.StackSymbolizer(bpf);
        assert.equal(symbolizer.v8.watch(obj, pid), null, 'the layout');
        obj.attachPerfEvent('handle_sample', { event: 'cpu-clock', frequency: 499 });
        await sleep(1000);
        obj.detachAll();
        // the walk: its share of the main thread's samples (v8_frames.test.js: >= 90%)
        const main = stacks.readStacks(obj).filter((e) => e.pid === pid && e.comm !== 'V8Worker' && e.user.length);
        walk = [main.filter((e) => e.v8).reduce((n, e) => n + e.count, 0), main.reduce((n, e) => n + e.count, 0)];
        // Node 24.0.0 to 24.19.0: V8 keeps no source positions for Maglev code (its table is empty), so
        // a Maglev frame has no line of its own and none of the functions inlined into it (the naming
        // says so in its reason): hotLoopNf, inlined into processImmediate there, is not seen
        const frames = main.filter((e) => e.v8).flatMap((e) => symbolizer.v8.namesOf(pid, symbolizer.v8.align(e.user, e.v8)).flatMap((n) => n ?? []));
        noPositions = frames.some((g) => g.kind === 'maglev' && /no source position/.test(g.reason ?? ''));
        const started = performance.now();
        host = symbolizer.v8.selfCheck(obj, pid);
        hostMs = performance.now() - started;
        symbolizer.v8.close();
      } finally {
        obj.close();
      }
      // stackcount -p PID --profile, as v8_frames.test.js's assertHotLoopNf
      const r = spawnSync(process.execPath, [STACKCOUNT, '-p', String(pid), '--profile', '--duration', '3', '--folded', '-U'], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(r.status, 0, r.stderr);
      let samples = 0;
      let named = 0;
      for (const line of r.stdout.trim().split('\n')) {
        const m = /^(.*) (\d+)$/.exec(line);
        if (!m || /^V8Worker|^node-libbpf/.test(m[1])) continue;
        samples += Number(m[2]);
        const where = /(?:^|;)hotLoopNf (\S+):(\d+):\d+(?:;|$)/.exec(m[1]);
        if (where && path.basename(where[1]) === 'v8_hot.js' && Number(where[2]) >= HOT_LINES[0] && Number(where[2]) <= HOT_LINES[1]) named += Number(m[2]);
        // (without Maglev's positions: the Maglev code hotLoopNf is inlined into, named as its function)
        else if (noPositions && /(?:^|;)processImmediate node:internal\/timers:\d+:\d+(?:;|$)/.test(m[1])) named += Number(m[2]);
      }
      // the self-check in process: bpf.profile()'s, under this node
      const inProcess = spawnSync(node, [path.join(__dirname, 'v8_selfcheck.test.js')], { env: { ...process.env, V8_SELFCHECK_FORGE: 'check' }, encoding: 'utf8', timeout: 60_000 });
      const own = inProcess.status === 0 ? JSON.parse(inProcess.stdout.trim().split('\n').pop()) : { error: inProcess.stderr.trim().split('\n').slice(-3).join(' ') };
      const pct = samples ? (100 * named) / samples : 0;
      console.log(`# release ${release}: named ${pct.toFixed(1)}% (${named} of ${samples}${noPositions ? ', hotLoopNf or the Maglev processImmediate it is inlined into: V8 keeps no Maglev source positions here' : ''}), walk ${walk[0]} of ${walk[1]} samples, self-check host ${host === null ? 'OK' : host === undefined ? 'no JS frame' : host.code} (${hostMs.toFixed(1)} ms), in process ${own.error ?? (own.checkMs ? `OK (${own.checkMs.map((ms) => ms.toFixed(1)).join(', ')} ms)` : 'failed')}`);
      assert.equal(host, null, `the self-check from the host: ${host?.message}`);
      assert.ok(own.checkMs, `the self-check in process: ${own.error}`);
      // (a loaded machine gives fewer samples: the share is what is checked)
      assert.ok(walk[1] >= 50 && walk[0] >= 0.9 * walk[1], `${walk[0]} of ${walk[1]} samples walked`);
      assert.ok(samples >= 30, `${samples} samples`);
      assert.ok(named >= 0.9 * samples, `hotLoopNf named in ${named} of ${samples} samples:\n${r.stdout.slice(0, 3000)}`);
    } finally {
      child.stdin.end();
      child.kill();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
}
