'use strict';
// The experiment behind funccount's exact uprobe count (issue 14): a uprobe
// on pthread_mutex_unlock counted by funccount.bpf.o's handle_uprobe in the
// hash map `counts`, K calls of a fixture, with kernel.bpf_stats_enabled=1,
// while user space reads the map in three ways:
//   none:    not at all until the fixture is done;
//   delete:  lookupAndDeleteBatch() every 5 ms, summing (what funccount did);
//   entries: entries() every 5 ms, the counts only growing (what it does now).
// Each line gives the count, the program's run count and recursion misses.
// Run it in a VM:
//   KERNELS=debian-6.1 TEST_FILES=scripts/kernels/uprobe_count.experiment.js VERBOSE=1 npm run test:kernels
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const { bpf, objectPath, buildFixture } = require('../../__test__/helpers');

const K = Number(process.env.EXPERIMENT_K || 200000);
const ROUNDS = 3;
const LIBC = '/lib/x86_64-linux-gnu/libc.so.6';
const STATS = '/proc/sys/kernel/bpf_stats_enabled';

async function once(mode) {
  const child = spawn(buildFixture('funccount_mutex'), [String(K)], { stdio: ['pipe', 'ignore', 'inherit'] });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const obj = bpf.loadBpfProgram(objectPath('funccount'));
  try {
    obj.setGlobalVariable('target_pid', child.pid);
    obj.attachUprobe(LIBC, 'pthread_mutex_unlock', 'handle_uprobe', { pid: child.pid });
    const counts = obj.getMap('counts', { int64: 'number' });
    let summed = 0;
    let done = false;
    exited.then(() => (done = true));
    child.stdin.end('go\n');
    while (!done) {
      if (mode === 'delete') for (const [, v] of counts.lookupAndDeleteBatch()) summed += v.count;
      else if (mode === 'entries') counts.entries();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const rest = counts.entries().reduce((n, [, v]) => n + v.count, 0);
    const stats = obj.programs.handle_uprobe.stats;
    return { mode, counted: summed + rest, runs: stats.runCount, misses: stats.recursionMisses };
  } finally {
    obj.close();
  }
}

test(`uprobe count of ${K} pthread_mutex_unlock calls, ${ROUNDS} rounds per way of reading the map`, async (t) => {
  const before = fs.readFileSync(STATS, 'utf8').trim();
  fs.writeFileSync(STATS, '1');
  t.after(() => fs.writeFileSync(STATS, before));
  const results = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of ['none', 'delete', 'entries']) {
      const r = await once(mode);
      t.diagnostic(`${bpf.features().release} ${r.mode}: counted ${r.counted} of ${K}, program runs ${r.runs}, recursion misses ${r.misses}`);
      results.push(r);
    }
  }
  // every call ran the program; what a way of reading loses is its own
  for (const r of results) assert.strictEqual(r.runs, K, `${r.mode}: runs`);
  for (const r of results.filter((x) => x.mode !== 'delete')) assert.strictEqual(r.counted, K, `${r.mode}: counted`);
});
