'use strict';
// The harness of the hostile-target tests: a traced process that wants to
// hurt the tracer (a node whose binary is swapped for a FIFO, a perf map
// of one 48 MiB line, a jitdump of a thousand moves...), and the tracer run
// against it as root would run it, `stackcount -p PID --profile -d 2`, with
// what it must hold to:
//   - it ends, within TRACER_LIMIT_MS (a hang is killed and reported);
//   - its peak RSS stays at most MAX_RSS_KB;
//   - it dies of no signal, and exits 0;
//   - it opens none of the planted files (watchOpens: inotify's IN_OPEN);
//   - it prints no raw control byte (C0 but \n and \t, DEL, C1, bidi).
//
//   const target = await hostileNode(t, { script, exe });   // a node running `script`
//   const run = await runTracer(target.pid);                 // { code, signal, ms, maxRssKb, stdout, stderr }
//   assertTracerHeld(run);
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { buildFixture } = require('./helpers');

const STACKCOUNT = path.join(__dirname, '..', 'examples', 'stackcount.js');
/** A tracer still running this long after its start is hung: killed, and the test fails. */
const TRACER_LIMIT_MS = 10_000;
/** The most a tracer's peak RSS may be. */
const MAX_RSS_KB = 256 * 1024;
// C0 controls but \t and \n, DEL, C1 controls, and the bidi controls (embeddings, overrides, isolates)
const RAW_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/** A new directory in the temp dir, removed after test `t`. */
function tempDir(t, prefix = 'hostile-target-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A node process running `script` (its source: a hot loop by default) as
 * the target, stopped after test `t`. `exe`: a path to run node from (node's
 * binary is copied there first), so that the test can swap the file under
 * it; `node`: a node binary to run as it is (a forged copy); `args`: node's
 * own arguments (before the script); `uid`: run as that user. Resolves once
 * the script printed `ready`: `{ pid, child, exe }`.
 */
async function hostileNode(t, { script = HOT_LOOP, exe = undefined, node = process.execPath, args = [], uid = undefined, cwd = undefined, env = undefined } = {}) {
  if (exe) {
    fs.copyFileSync(process.execPath, exe);
    fs.chmodSync(exe, 0o755);
    node = exe;
  }
  const child = spawn(node, [...args, '-e', script], { stdio: ['pipe', 'pipe', 'inherit'], uid, cwd, env: env ?? process.env });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  t.after(() => {
    child.kill('SIGKILL');
    return exited;
  });
  await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('ready')) resolve(undefined);
    });
    child.on('exit', (code, signal) => reject(new Error(`the target exited (${code ?? signal}) before it was ready`)));
  });
  return { pid: child.pid, child, exe: node };
}

/** A hot loop with a named function (the default target script). */
const HOT_LOOP = `
function hostileHotLoop(n) { let x = 0; for (let i = 0; i < n; i++) x += Math.sqrt(i); return x; }
console.log('ready');
setInterval(() => hostileHotLoop(2e6), 1);`;

/**
 * Watches `paths` (the links themselves, not followed) for opens by anyone
 * (fixtures/watch_open.c): `{ opened: string[] (the paths opened so far), stop() }`.
 */
async function watchOpens(t, paths) {
  const child = spawn(buildFixture('watch_open'), paths, { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const stop = () => (child.stdin.end(), exited);
  t.after(stop);
  const opened = [];
  await new Promise((resolve, reject) => {
    let text = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      text += d;
      const lines = text.split('\n');
      text = lines.pop() ?? '';
      for (const l of lines) {
        if (l === 'ready') resolve(undefined);
        else if (l.startsWith('opened ')) opened.push(l.slice('opened '.length));
      }
    });
    child.on('exit', (code) => reject(new Error(`watch_open exited ${code} before it was ready`)));
  });
  return { opened, stop };
}

/**
 * Runs `stackcount -p PID --profile -d 2` (`args`: other arguments, after
 * those) against process `pid`, as root (or under `prefix`, a command
 * that runs the tracer: `['setpriv', '--reuid=1000', ...]`), killed past
 * TRACER_LIMIT_MS.
 * Resolves to `{ code, signal, hung, ms, maxRssKb, stdout, stderr }`:
 * maxRssKb is the tracer's peak RSS, as it reported it at its exit
 * (process.resourceUsage().maxRSS, by a preloaded module: null when it
 * did not exit by itself).
 */
function runTracer(pid, { args = ['--profile', '-d', '2'], env = {}, spawnOptions = {}, prefix = [] } = {}) {
  const report = path.join(os.tmpdir(), `hostile-tracer-rss-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  const preload = path.join(os.tmpdir(), `hostile-tracer-preload-${process.pid}.js`);
  fs.writeFileSync(preload, `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(report)}, String(process.resourceUsage().maxRSS)));\n`);
  const started = Date.now();
  const command = [...prefix, process.execPath, '--require', preload, STACKCOUNT, '-p', String(pid), ...args];
  const child = spawn(command[0], command.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
    ...spawnOptions,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    child.kill('SIGKILL');
  }, TRACER_LIMIT_MS);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      let maxRssKb = null;
      try {
        maxRssKb = Number(fs.readFileSync(report, 'utf8'));
        fs.rmSync(report);
      } catch {
        // (killed: no report)
      }
      resolve({ code, signal, hung, ms: Date.now() - started, maxRssKb, stdout, stderr });
    });
  });
}

/** Asserts what a tracer run against a hostile target must hold to (see the top of this file). */
function assertTracerHeld(run, { opened = [] } = {}) {
  const shown = `\n--- stdout\n${run.stdout.slice(0, 4000)}\n--- stderr\n${run.stderr.slice(0, 4000)}`;
  assert.equal(run.hung, false, `the tracer was still running after ${TRACER_LIMIT_MS} ms: hung${shown}`);
  assert.equal(run.signal, null, `the tracer died of ${run.signal}${shown}`);
  assert.equal(run.code, 0, `the tracer exited ${run.code}${shown}`);
  assert.ok(run.maxRssKb !== null && run.maxRssKb <= MAX_RSS_KB, `the tracer's peak RSS was ${run.maxRssKb} KiB, more than ${MAX_RSS_KB} KiB${shown}`);
  assert.deepEqual(opened, [], `the tracer opened planted files: ${opened.join(', ')}`);
  for (const [name, text] of [['stdout', run.stdout], ['stderr', run.stderr]]) {
    const m = RAW_CONTROL.exec(text);
    assert.equal(m, null, m ? `a raw control character U+${m[0].codePointAt(0).toString(16).padStart(4, '0')} on ${name} at ${m.index}: ${JSON.stringify(text.slice(Math.max(0, m.index - 80), m.index + 80))}` : '');
  }
  console.log(`# the tracer held: ${run.ms} ms, peak RSS ${Math.round((run.maxRssKb ?? 0) / 1024)} MiB`);
}

module.exports = { hostileNode, watchOpens, runTracer, assertTracerHeld, tempDir, HOT_LOOP, TRACER_LIMIT_MS, MAX_RSS_KB, RAW_CONTROL };
