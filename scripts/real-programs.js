#!/usr/bin/env node
'use strict';
/**
 * npm run real-programs: how well JS frames are named on real programs
 * (the TypeScript compiler, fastify, an esbuild bundle, a worker thread),
 * against V8's own profiler (`node --cpu-prof`). Prints a table and exits
 * 1 when a row misses a threshold (__test__/real_programs.js: THRESHOLDS).
 * Needs root (stackcount, bpf.profile()).
 *
 *   npm run real-programs                                  # every program, Node 20 (this node), host and in process
 *   npm run real-programs -- --nodes 20,24,26 --programs typescript,worker --modes host
 *   npm run real-programs -- --seconds 8 --keep /tmp/rp --json
 *   npm run real-programs -- --retries 1    # a row under a threshold measured once more (as npm test does)
 *   npm run real-programs -- --explain getReferencedValueSymbol   # V8's view of a function: callers, positionTicks
 *
 * --nodes takes majors: the newest cached release of each
 * (scripts/nodes.js: `node scripts/nodes.js --if-missing 20 22 24 26`
 * fetches them), or paths of node binaries.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { cachedNode } = require('./nodes');
const real = require('../__test__/real_programs');

const HELP = `Usage: npm run real-programs -- [--programs ${Object.keys(real.PROGRAMS).join(',')}] [--nodes 20,24,26] [--modes host,inprocess]
       [--seconds S] [--retries N] [--keep DIR] [--json] [--explain FUNCTION]`;

function main() {
  let opts;
  try {
    opts = parseArgs({
      options: {
        programs: { type: 'string' },
        nodes: { type: 'string' },
        modes: { type: 'string' },
        seconds: { type: 'string' },
        retries: { type: 'string' },
        keep: { type: 'string' },
        json: { type: 'boolean' },
        explain: { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    console.error(`real-programs: ${err.message}\n${HELP}`);
    process.exit(2);
  }
  if (opts.help) {
    console.log(HELP);
    return;
  }
  const list = (v, all) => (v ? v.split(',').map((s) => s.trim()).filter(Boolean) : all);
  const programs = list(opts.programs, Object.keys(real.PROGRAMS));
  const modes = list(opts.modes, real.MODES);
  const bad = [...programs.filter((p) => !real.PROGRAMS[p]).map((p) => `program ${p} (${Object.keys(real.PROGRAMS).join(', ')})`), ...modes.filter((m) => !real.MODES.includes(m)).map((m) => `mode ${m} (${real.MODES.join(', ')})`)];
  const seconds = opts.seconds === undefined ? undefined : Number(opts.seconds);
  if (seconds !== undefined && !(seconds >= 1 && seconds <= 60)) bad.push(`--seconds ${opts.seconds} (1 to 60)`);
  const retries = opts.retries === undefined ? 0 : Number(opts.retries);
  if (!(Number.isInteger(retries) && retries >= 0 && retries <= 3)) bad.push(`--retries ${opts.retries} (0 to 3)`);
  const nodes = list(opts.nodes, [process.versions.node.split('.')[0]]).map((n) => {
    if (/^\d+$/.test(n)) {
      const bin = n === process.versions.node.split('.')[0] ? process.execPath : cachedNode(n);
      if (!bin) bad.push(`node ${n}: not cached (node scripts/nodes.js --if-missing ${n})`);
      return { label: bin === process.execPath ? process.versions.node : path.basename(path.dirname(path.dirname(bin ?? '/x/x'))), path: bin };
    }
    if (!fs.existsSync(n)) bad.push(`node ${n}: no such file`);
    return { label: n, path: n };
  });
  if (bad.length) {
    console.error(`real-programs: unknown or missing: ${bad.join('; ')}\n${HELP}`);
    process.exit(2);
  }
  if (process.getuid?.() !== 0) {
    console.error('real-programs: needs root (stackcount and bpf.profile() load BPF programs): run it with sudo');
    process.exit(2);
  }
  const dir = opts.keep ? path.resolve(opts.keep) : fs.mkdtempSync(path.join(os.tmpdir(), 'real-programs-'));
  console.error(`real-programs: under node ${nodes.map((n) => n.label).join(', ')}, ${modes.join(' and ')} (runs in ${dir}):`);
  for (const p of programs) console.error(`  ${p}: ${real.PROGRAMS[p].what}, ${seconds ?? real.PROGRAMS[p].seconds ?? real.SECONDS} s a run`);
  real.measure({ programs, nodes, modes, seconds, retries, dir, log: (row) => console.error(`  ${row.program} node ${row.node} ${row.mode}: ${row.error ? `error: ${row.error}` : `${row.top}/${row.topOf} (${row.topV8}/${row.topOf} charged as V8 charges), ${(100 * row.line).toFixed(1)}% with a line`}`) }).then((rows) => {
    if (opts.json) {
      console.log(JSON.stringify(rows.map(({ oracle, ours, ...r }) => r), null, 2));
    } else {
      console.log(real.table(rows));
      for (const r of rows) {
        for (const m of r.missesV8 ?? []) console.log(`miss: ${r.program} node ${r.node} ${r.mode}: ${m.name} (${(100 * m.v8Share).toFixed(1)}% of V8's samples in the program, ${(100 * m.oursShare).toFixed(1)}% of ours, charged as V8 charges)`);
      }
      for (const name of opts.explain ?? []) {
        const seen = new Set();
        for (const r of rows) {
          if (!r.oracle) continue;
          if (!seen.has(`${r.program} ${r.node}`)) console.log(`V8's ${name} (${r.program}, node ${r.node}): ${JSON.stringify(real.explainOracle(r.oracle.profile, name, r.oracle.readyUs))}`);
          seen.add(`${r.program} ${r.node}`);
          if (r.ours) console.log(`our ${name} (${r.program}, node ${r.node}, ${r.mode}): ${JSON.stringify(real.explainOurs(r.ours, name))}`);
        }
      }
    }
    const failed = rows.filter((r) => r.failures.length);
    for (const r of failed) console.error(`FAIL ${r.program} node ${r.node} ${r.mode}: ${r.failures.join('; ')}`);
    if (!opts.keep) fs.rmSync(dir, { recursive: true, force: true });
    process.exitCode = failed.length ? 1 : 0;
  }, (err) => {
    console.error(`real-programs: ${err.stack}`);
    process.exitCode = 1;
  });
}

main();
