'use strict';
// examples/goroutines.js: goroutine state changes from a uprobe on
// runtime.casgstatus, against a Go program built here that starts a known
// number of goroutines (__test__/fixtures/goroutines_spawn.go).
const { describe, test, before } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const { once } = require('node:events');
const path = require('node:path');
const readline = require('node:readline');
const { bpf, sleep, startExample: startScript, workloadOf } = require('./helpers');
const { buildGo, goStateName } = require('../lib/host/go');

const EXAMPLE = path.join(__dirname, '..', 'examples', 'goroutines.js');
const SOURCE = path.join(__dirname, 'fixtures', 'goroutines_spawn.go');
const BUILD = path.join(__dirname, '.build');
const RUN_TIMEOUT_MS = 60_000;

function whyskip() {
  if (process.getuid?.() !== 0) return 'goroutines.js loads BPF programs: run the tests as root';
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    return 'no go tool to build the Go test program: npm run setup installs golang-go';
  }
  return false;
}
const skip = whyskip();
if (skip) console.log(`# skipping goroutines.test.js: ${skip}`);

/** Starts the example; `ready` resolves once it traces, `stop()` sends SIGTERM and resolves with its output. */
const startExample = (args) => startScript(EXAMPLE, args, RUN_TIMEOUT_MS);

/** The Go program, started and waiting for its go. */
async function startSpawner(binary, n) {
  const child = spawn(binary, [String(n)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  assert.equal((await lines.next()).value, 'ready');
  return {
    pid: child.pid,
    /** Starts the goroutines; resolves with their goids once they have exited. */
    async go() {
      child.stdin.write('go\n');
      return JSON.parse((await lines.next()).value).goids;
    },
    stop: () => child.stdin.end(),
  };
}

/** The --json output: one object per transition, then the summary. */
function parseJson(stdout) {
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
  const last = lines.pop();
  assert.ok(last.summary, `the last line is the summary: ${JSON.stringify(last)}`);
  return { transitions: lines, summary: last.summary };
}

/** Traces a spawner of `n` goroutines: what it reported and what the example printed. */
async function traceSpawner(binary, n, args = []) {
  const spawner = await startSpawner(binary, n);
  try {
    const run = startExample(['--pid', String(spawner.pid), '--json', ...args]);
    await run.ready;
    const goids = await spawner.go();
    await sleep(200);
    const result = await run.stop();
    return { spawner, goids, ...result };
  } finally {
    spawner.stop();
  }
}

describe('examples/goroutines.js', { skip }, () => {
  let binary;
  let stripped;
  before(() => {
    binary = buildGo(SOURCE, path.join(BUILD, 'goroutines_spawn'));
    stripped = buildGo(SOURCE, path.join(BUILD, 'goroutines_spawn_nodwarf'), { ldflags: '-w' });
  });

  test('--pid: N goroutines started, exactly N goids reach DEAD, each after running', async () => {
    const N = 20;
    const { spawner, goids, code, signal, stdout, stderr } = await traceSpawner(binary, N);
    assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
    assert.equal(new Set(goids).size, N, `the program reported ${N} distinct goids: ${goids}`);
    const offset = bpf.dwarfMemberOffset(binary, 'runtime.g', 'goid');
    assert.match(stderr, new RegExp(`runtime\\.casgstatus, runtime\\.g\\.goid at offset ${offset} \\(DWARF\\)`));
    const { transitions, summary } = parseJson(stdout);
    for (const t of transitions) {
      assert.equal(t.pid, spawner.pid);
      assert.match(t.state, /^(SCAN\|)?[A-Z_]+$/, 'states by name');
    }

    // exits: RUNNING -> DEAD (IDLE -> DEAD is a g being allocated, before it has an id)
    const exits = transitions.filter((t) => t.state === 'DEAD' && t.from === 'RUNNING');
    assert.ok(transitions.filter((t) => t.state === 'DEAD' && t.from !== 'RUNNING').every((t) => t.from === 'IDLE' && t.goid === null));
    const dead = new Set(exits.map((t) => t.goid));
    const ours = new Set(goids);
    assert.deepEqual([...dead].filter((id) => ours.has(id)).sort((a, b) => a - b), [...ours].sort((a, b) => a - b), 'each of ours exited');
    // besides ours, only the runtime's own (none here: its workers live as long as the program)
    const others = exits.filter((t) => !ours.has(t.goid));
    assert.deepEqual(others, [], 'no other goroutine exited');
    assert.equal(exits.length, N, 'each exited once');
    for (const id of ours) {
      const states = transitions.filter((t) => t.goid === id).map((t) => `${t.from}->${t.state}`);
      assert.ok(states.includes('RUNNABLE->RUNNING'), `goroutine ${id} ran: ${states}`);
      assert.equal(states.at(-1), 'RUNNING->DEAD', `goroutine ${id} ends DEAD`);
    }
    assert.equal(summary.exited, N);
    assert.ok(summary.transitions.DEAD >= N, `the kernel counted the DEAD transitions: ${JSON.stringify(summary)}`);
    assert.equal(summary.transitions.RUNNING, transitions.filter((t) => t.state === 'RUNNING').length, 'the kernel counts what was printed');
    assert.equal(summary.lost, 0);
  });

  test('a binary without DWARF: a clear error, and --goid-offset makes it work', async () => {
    assert.throws(() => bpf.dwarfMemberOffset(stripped, 'runtime.g', 'goid'));
    const spawner = await startSpawner(stripped, 1);
    try {
      const run = startExample(['--pid', String(spawner.pid)]);
      const { code, stderr } = await run.exited;
      assert.equal(code, 1);
      assert.match(stderr, /the offset of goid in runtime\.g of .*goroutines_spawn_nodwarf: .*; or give it with --goid-offset N/);
    } finally {
      spawner.stop();
    }
    // the same Go version lays runtime.g out the same way with or without DWARF
    const offset = bpf.dwarfMemberOffset(binary, 'runtime.g', 'goid');
    const N = 3;
    const { goids, code, signal, stdout, stderr } = await traceSpawner(stripped, N, ['--goid-offset', String(offset)]);
    assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
    assert.match(stderr, new RegExp(`runtime\\.g\\.goid at offset ${offset}\\n`));
    const dead = parseJson(stdout).transitions.filter((t) => t.state === 'DEAD' && t.from === 'RUNNING').map((t) => t.goid);
    assert.deepEqual(dead.sort((a, b) => a - b), goids.sort((a, b) => a - b));
  });

  test('the built-in workload, text output: rounds of 5 goroutines that exit', async () => {
    const run = startExample(['--demo', '--duration', '1.5']);
    const { code, signal, stdout, stderr } = await run.exited;
    assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
    const workload = workloadOf(stderr);
    assert.ok(workload, stderr);
    const { info } = workload;
    assert.match(stderr, new RegExp(`^Tracing pid ${info.pid} `, 'm'));
    const LINE = /^(\d\d:\d\d:\d\d\.\d{3}) +(\d+) +(\d+) +(\d+|-)  ([A-Z_|]+) -> ([A-Z_|]+)$/;
    const [header, ...rest] = stdout.split('\n');
    assert.match(header, /^TIME +PID +TID +GOID  TRANSITION$/);
    const lines = rest.filter((l) => LINE.test(l)).map((l) => LINE.exec(l));
    assert.ok(lines.every((l) => Number(l[2]) === info.pid));
    const exits = lines.filter((l) => l[6] === 'DEAD' && l[5] === 'RUNNING').length;
    // a goroutine created on a reused g: no goid yet, not its last goroutine's
    const exited = new Set(lines.filter((l) => l[6] === 'DEAD' && l[5] === 'RUNNING').map((l) => l[4]));
    for (const l of lines.filter((l) => l[5] === 'DEAD' && l[6] === 'RUNNABLE')) assert.ok(!exited.has(l[4]), l[0]);
    // 5 goroutines every 200 ms for 1.5 s: how many rounds a loaded machine let it run (and how late the tool
    // stopped), it decides; a round at least, and a round a tick of the printed span at most (time.Tick's channel
    // holds one tick more, and the tracing may start in a round)
    const ms = (l) => l[1].split(':').reduce((t, n) => t * 60 + Number(n), 0) * 1000;
    const span = lines.length ? (ms(lines.at(-1)) - ms(lines[0]) + 86_400_000) % 86_400_000 : 0;
    assert.ok(exits >= 5 && exits <= 5 * (Math.floor(span / 200) + 3), `goroutines exited: ${exits} in ${span} ms`);
    console.log(`# ${exits} goroutines exited in ${span} ms`);
    const summary = /^(\d+) goroutines seen, (\d+) exited$/m.exec(stdout);
    assert.ok(summary, stdout.slice(-500));
    assert.equal(Number(summary[2]), exits);
    assert.match(stdout, /^STATE +TRANSITIONS$/m);
    assert.match(stdout, /^DEAD +\d+$/m);
    assert.equal(goStateName(0x1004), 'SCAN|WAITING');
  });
});
