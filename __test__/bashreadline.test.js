'use strict';
// examples/bashreadline.js: the command lines typed into interactive bash
// shells running on pseudo-terminals of their own (lib/tools/pty.js), read by a
// uretprobe on readline().
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { waitFor, sleep, startExample: startScript, workloadOf } = require('./helpers');
const { spawnInteractive } = require('../lib/tools/pty');

const EXAMPLE = path.join(__dirname, '..', 'examples', 'bashreadline.js');
const RUN_TIMEOUT_MS = 30_000;

const skip = process.getuid?.() !== 0 ? 'bashreadline.js loads BPF programs: run the tests as root' : false;
if (skip) console.log(`# skipping bashreadline.test.js: ${skip}`);

/** Starts the example; `ready` resolves once it traces, `stop()` sends SIGTERM and resolves with its output. */
const startExample = (args) => startScript(EXAMPLE, args, RUN_TIMEOUT_MS);

/** The --json records printed so far. */
const records = (stdout) => stdout.split('\n').slice(0, -1).map((l) => JSON.parse(l));

/**
 * An interactive bash on a pty of its own that waits, in its rc file,
 * until `release()`: it reaches its first prompt (its first readline())
 * only then, after the tracer has attached. A bash already waiting in
 * readline() when a uretprobe is attached returns from that call unseen.
 */
async function heldBash(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bashreadline-test-'));
  const fifo = path.join(dir, 'go');
  execFileSync('mkfifo', [fifo]);
  fs.writeFileSync(path.join(dir, 'rc'), `read -r _ < ${fifo}\nPS1='$ '\n`);
  const shell = await spawnInteractive(['bash', '--rcfile', path.join(dir, 'rc'), '--noprofile', '-i']);
  t.after(async () => {
    await shell.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { ...shell, release: () => fs.writeFileSync(fifo, 'go\n') };
}

describe('examples/bashreadline.js', { skip }, () => {
  test('--pid: exactly the three commands typed into that bash, none of another bash', async (t) => {
    const traced = await heldBash(t);
    const other = await heldBash(t);
    const run = startExample(['--pid', String(traced.pid), '--json']);
    t.after(() => run.stop());
    await run.ready;
    traced.release();
    other.release();
    const commands = ['echo "node-libbpf one"', 'cd / && pwd', "printf '%s\\n' three | tr a-z A-Z"];
    for (const [i, command] of commands.entries()) {
      traced.type(command);
      other.type(`echo other ${i}`);
      assert.ok(await waitFor(() => records(run.out.stdout).length > i, 5000), `"${command}" traced:\n${run.out.stdout}`);
    }
    assert.ok(await waitFor(() => other.output().includes('other 2'), 5000), 'the other bash ran its commands');
    await sleep(200);
    const { code, signal, stdout, stderr } = await run.stop();
    assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
    assert.match(stderr, new RegExp(`^Tracing pid ${traced.pid} `, 'm'));
    const seen = records(stdout);
    assert.deepEqual(
      seen.map((r) => r.command),
      commands,
      'the three commands, in order, and nothing else',
    );
    for (const r of seen) {
      assert.equal(r.pid, traced.pid);
      assert.equal(r.comm, 'bash');
      assert.ok(Math.abs(Date.parse(r.time) - Date.now()) < 10_000, `a wall-clock time: ${r.time}`);
    }
    assert.match(traced.output(), /NODE-LIBBPF|THREE/, 'bash ran them');
  });

  test('without -p: the lines of every bash, each with its own pid; text output', async (t) => {
    const first = await heldBash(t);
    const second = await heldBash(t);
    const run = startExample([]);
    t.after(() => run.stop());
    await run.ready;
    first.release();
    second.release();
    first.type('echo from first');
    second.type('echo from second');
    first.type('true');
    const ours = () =>
      run.out.stdout
        .split('\n')
        .slice(1)
        .map((l) => /^(\d\d:\d\d:\d\d) +(\d+)  (.*)$/.exec(l))
        .filter((m) => m && [first.pid, second.pid].includes(Number(m[2])))
        .map((m) => `${m[2]} ${m[3]}`);
    assert.ok(await waitFor(() => ours().length >= 3, 5000), run.out.stdout);
    const { code, signal, stdout, stderr } = await run.stop();
    assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
    assert.match(stdout, /^TIME +PID  COMMAND$/m);
    assert.match(stderr, /^Tracing every bash \(\/bin\/bash\) /m);
    assert.deepEqual(ours().sort(), [`${first.pid} echo from first`, `${first.pid} true`, `${second.pid} echo from second`].sort());
  });

  test('the built-in workload: the commands it types, in order, from its bash', async () => {
    const run = startExample(['--demo', '--duration', '2', '--json']);
    const { code, signal, stdout, stderr } = await run.exited;
    assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
    const workload = workloadOf(stderr);
    assert.ok(workload, stderr);
    const { info } = workload;
    assert.match(stderr, new RegExp(`^Tracing pid ${info.pid} `, 'm'));
    const seen = records(stdout);
    // one every 300 ms; the first typed after the attach returns from a readline() entered before it
    assert.ok(seen.length >= 4, `commands seen in 2 s: ${seen.length}`);
    const numbers = seen.map((r) => {
      assert.equal(r.pid, info.pid);
      const [, n] = /^echo node-libbpf (\d+)$/.exec(r.command) ?? assert.fail(`a workload command: ${r.command}`);
      return Number(n);
    });
    numbers.forEach((n, i) => i > 0 && assert.equal(n, numbers[i - 1] + 1, `consecutive: ${numbers}`));
    assert.ok(await waitFor(() => !fs.existsSync(`/proc/${info.pid}`), 2000), 'the workload ended its bash');
  });
});
