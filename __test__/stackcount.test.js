'use strict';
// examples/stackcount.js counts stacks in the kernel and names their
// frames: the hot JavaScript function of a Node.js workload shows in its
// CPU samples, with node's own C++ frames; the stacks of a C workload's
// syscalls are counted exactly.
const { describe, test, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { buildFixture, startExample } = require('./helpers');

const SCRIPT = path.join(__dirname, '..', 'examples', 'stackcount.js');
const TIMEOUT_MS = 60_000;
// a frame of node itself: V8, node, libuv, or V8's builtins
const NODE_FRAME = /^(v8::\S+|node::\S+|uv_\w+|Builtins_\w+)$/;

const skip = process.getuid?.() !== 0 ? 'stackcount loads BPF programs: run the tests as root' : false;
if (skip) console.log(`# skipping stackcount.test.js: ${skip}`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stackcount-test-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Runs the tool with `args`: `ready` once it traces, `done` when it ends. */
const run = (args) => {
  const tool = startExample(SCRIPT, args, TIMEOUT_MS);
  return { ...tool, done: tool.exited };
};

/** The stacks of the text output: `{ kernel: [], user: [], comm, pid, count }`, in order. */
function parseStacks(stdout) {
  const blocks = stdout.trim().split('\n\n').slice(0, -1);
  return blocks.map((block) => {
    const lines = block.split('\n').filter((l) => !/^Total, /.test(l));
    const count = Number(lines.pop().trim());
    const [, comm, pid] = /^ {4}(.*) \[(\d+)\]$/.exec(lines.pop());
    const frames = lines.map((l) => l.trim());
    const sep = frames.indexOf('--');
    return { comm, pid: Number(pid), count, kernel: sep < 0 ? [] : frames.slice(0, sep), user: sep < 0 ? frames : frames.slice(sep + 1) };
  });
}

test('lib/stacks: frame names, folded stacks', () => {
  const { frameName, foldStacks } = require('../lib/frames/stacks');
  assert.equal(frameName({ name: 'JS:*hotLoop /app/x.js:3:18' }), 'hotLoop /app/x.js:3:18');
  assert.equal(frameName({ name: 'LazyCompile:~ /app/x.js:9:5' }), '(anonymous) /app/x.js:9:5');
  // Node 26: on-stack-replaced code (o), Maglev (+), Sparkplug (^)
  assert.equal(frameName({ name: 'JS:o*hotLoop /app/x.js:3:18' }), 'hotLoop /app/x.js:3:18');
  assert.equal(frameName({ name: 'JS:o+hotLoop /app/x.js:3:18' }), 'hotLoop /app/x.js:3:18');
  assert.equal(frameName({ name: 'JS:^hotLoop /app/x.js:3:18' }), 'hotLoop /app/x.js:3:18');
  assert.equal(frameName({ name: 'v8::internal::(anonymous namespace)::Invoke(v8::internal::Isolate*, int) const' }), 'v8::internal::(anonymous namespace)::Invoke');
  assert.equal(frameName({}), '[unknown]');
  const folded = foldStacks([
    { comm: 'node', pid: 1, count: 2, user: ['leaf', 'main'], kernel: ['do_sys_openat2', 'do_syscall_64'] },
    { comm: 'node', pid: 1, count: 3, user: ['leaf', 'main'], kernel: ['do_sys_openat2', 'do_syscall_64'] },
    { comm: 'node', pid: 1, count: 1, user: ['a;b'], kernel: [] },
  ]);
  assert.equal(folded, 'node;main;leaf;do_syscall_64_[k];do_sys_openat2_[k] 5\nnode;a:b 1');
});

describe('examples/stackcount.js', { skip, timeout: 5 * TIMEOUT_MS }, () => {
  test('--profile: hotLoop and node\'s own frames in the top stacks, and in the flame graph', async () => {
    const svg = path.join(tmp, 'profile.svg');
    const { code, stdout, stderr } = await run(['--demo', '--profile', '--duration', '3', '--top', '5', '--svg', svg]).done;
    assert.equal(code, 0, stderr);
    const workload = /^workload: pid (\d+) /m.exec(stderr);
    assert.ok(workload, stderr);
    const stacks = parseStacks(stdout);
    assert.ok(stacks.length > 0 && stacks.length <= 5, `1 to 5 stacks:\n${stdout}`);
    for (const s of stacks) assert.equal(s.pid, Number(workload[1]), 'samples of the workload only');
    const [first] = stacks;
    assert.ok(first.user.some((f) => /^hotLoop .*hot_loop\.js:\d+:\d+$/.test(f)), `hotLoop in the most frequent stack:\n${stdout}`);
    const nodeFrames = first.user.filter((f) => NODE_FRAME.test(f));
    assert.ok(nodeFrames.includes('uv_run') && nodeFrames.some((f) => f.startsWith('Builtins_')), `node's frames: ${first.user.join(', ')}`);
    const hot = stacks.filter((s) => s.user.some((f) => f.startsWith('hotLoop '))).reduce((n, s) => n + s.count, 0);
    const total = Number(/^(\d+) samples in \d+ stacks/m.exec(stdout)[1]);
    assert.ok(hot > total / 2, `most samples in hotLoop: ${hot} of ${total}`);

    const graph = fs.readFileSync(svg, 'utf8');
    assert.match(graph, /^<\?xml/);
    assert.match(graph, /hotLoop/);
    assert.match(graph, /uv_run/);
    assert.match(graph, /Builtins_JSEntry/);
    assert.match(graph, /stackcount: cpu-clock samples at 99 Hz/);
  });

  test('--profile --json: every stack, frames named, innermost first', async () => {
    const { code, stdout, stderr } = await run(['--demo', '--duration', '2', '--json']).done;
    assert.equal(code, 0, stderr);
    const report = JSON.parse(stdout);
    assert.equal(report.type, 'total');
    assert.equal(report.events, 'cpu-clock samples at 99 Hz', 'profiling is the default');
    assert.equal(report.total, report.stacks.reduce((n, s) => n + s.count, 0));
    const hot = report.stacks.find((s) => s.user.some((f) => f.startsWith('hotLoop ')));
    assert.ok(hot, 'a stack in hotLoop');
    assert.ok(hot.user.indexOf('uv_run') > hot.user.findIndex((f) => f.startsWith('hotLoop ')), 'uv_run is an outer frame');
  });

  test('-p PID of a node started with no flags: its JS frames are walked in the kernel, none [unknown] above the JS entry', async () => {
    // no perf map: only the walk (bpf/v8.bpf.h) can tell its JS frames
    const node = spawn(process.execPath, [path.join(__dirname, 'fixtures', 'v8_hot.js')], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      await new Promise((resolve) => node.stdout.once('data', resolve));
      const { code, stdout, stderr } = await run(['--pid', String(node.pid), '--profile', '--duration', '2', '--folded', '-U']).done;
      assert.equal(code, 0, stderr);
      assert.doesNotMatch(stderr, /not named from V8/, 'the walk runs');
      let samples = 0;
      let js = 0;
      for (const line of stdout.trim().split('\n')) {
        const m = /^(\S+?);(.*) (\d+)$/.exec(line);
        if (!m || !/^(?:node|MainThread|node-MainThread)$/.test(m[1])) continue; // the main thread (Node 20 names every thread node; newer ones name it MainThread or node-MainThread)
        const frames = m[2].split(';');
        const entry = frames.lastIndexOf('Builtins_JSEntryTrampoline');
        if (entry < 0) continue;
        samples += Number(m[3]);
        const above = frames.slice(entry + 1);
        if (above.length && above.every((f) => f !== '[unknown]')) js += Number(m[3]);
      }
      assert.ok(samples >= 50, `${samples} samples in JS:\n${stdout.slice(0, 2000)}`);
      assert.ok(js >= 0.9 * samples, `${js} of ${samples} samples with every JS frame walked:\n${stdout.slice(0, 3000)}`);
    } finally {
      node.kill();
    }
  });

  /**
   * stackcount -t sys_enter_getppid --folded on the C workload (`args`):
   * its folded lines as { frames, count }, and the raw stdout.
   */
  async function foldedGetppid(args) {
    const fixture = spawn(buildFixture('stackcount_calls'), args, { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => fixture.on('exit', resolve));
    const tool = run(['--pid', String(fixture.pid), '-t', 'syscalls:sys_enter_getppid', '--folded']);
    await tool.ready;
    fixture.stdin.write('go\n');
    // the fixture stays until its stdin ends: stackcount names its frames while it runs
    await new Promise((resolve) => fixture.stdout.on('data', (d) => String(d).includes('done') && resolve()));
    tool.child.kill('SIGINT');
    const { code, stdout, stderr } = await tool.done;
    fixture.stdin.end();
    assert.equal(await exited, 0);
    assert.equal(code, 0, stderr);
    const lines = stdout.trim().split('\n').map((line) => {
      const m = /^(.*) (\d+)$/.exec(line);
      return { frames: m[1].split(';'), count: Number(m[2]) };
    });
    return { lines, stdout };
  }

  test('-t: the stacks of K syscalls of a C workload, counted exactly, folded', async () => {
    const K = 500;
    const { lines, stdout } = await foldedGetppid([String(K)]);
    const ours = lines.filter((l) => l.frames.join(';').includes(';main;stackcount_outer;stackcount_inner;'));
    assert.equal(ours.reduce((n, l) => n + l.count, 0), K, `K stacks through main, stackcount_outer, stackcount_inner:\n${stdout}`);
    assert.equal(lines.reduce((n, l) => n + l.count, 0), K, 'no other getppid');
    for (const { frames } of ours) {
      assert.equal(frames[0], 'stackcount_call', 'the thread name first (15 characters)');
      const kernel = frames.slice(frames.indexOf('stackcount_inner') + 1);
      assert.ok(kernel.length > 0 && kernel.every((f) => f.endsWith('_[k]')), `kernel frames after the user ones: ${kernel}`);
      assert.ok(kernel.includes('do_syscall_64_[k]'), `the syscall entry: ${kernel}`);
    }
  });

  test('-t: 4096 distinct stacks of a C workload: each counted once, none lost (bpf/stacks.bpf.h: a stack-trace map of 16384 lost ~12% to hash collisions)', async () => {
    const L = 12;
    const { lines, stdout } = await foldedGetppid(['0', String(L)]);
    const count = (list) => list.reduce((n, l) => n + l.count, 0);
    // each path's stack: its chain of path_a and path_b (main's first, the innermost's last) is its number's bits
    const paths = lines.filter((l) => l.frames.includes('stackcount_inner'));
    const numbers = paths.map((l) => l.frames.filter((f) => f === 'path_a' || f === 'path_b').reverse().reduce((v, f, i) => v + (f === 'path_a' ? 2 ** i : 0), 0));
    for (const l of paths) assert.equal(l.count, 1, `one syscall per path: ${l.frames.join(';')}`);
    assert.equal(new Set(numbers).size, paths.length, 'each path a stack of its own');
    const lost = count(lines.filter((l) => l.frames.some((f) => /lost stack/.test(f))));
    assert.equal(count(lines), 2 ** L, `${2 ** L} getppid calls, counted or lost:\n${stdout.slice(0, 2000)}`);
    assert.equal(lost, 0, `${lost} of ${2 ** L} stacks lost`);
    assert.equal(paths.length, 2 ** L, 'every path its own stack');
  });

  test("-p PID of a node running compiled TypeScript: its JS frames at the .ts file and line of the source map, at the .js with --no-source-maps", async () => {
    const ts = require('typescript');
    const source = fs.readFileSync(path.join(__dirname, 'fixtures', 'sourcemap', 'spin.ts'), 'utf8');
    const compiled = ts.transpileModule(source, { fileName: 'spin.ts', compilerOptions: { sourceMap: true, module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
    const dir = fs.mkdtempSync(path.join(tmp, 'ts-'));
    fs.writeFileSync(path.join(dir, 'spin.js'), compiled.outputText.replace(/\/\/# sourceMappingURL=.*\s*$/, '//# sourceMappingURL=spin.js.map\n'));
    fs.writeFileSync(path.join(dir, 'spin.js.map'), compiled.sourceMapText);
    const lineOf = (text) => text.split('\n').findIndex((l) => l.includes('SPIN_LINE')) + 1;
    // the loop, one line in the .ts; in the .js its header (its compare and increment: where Node 26's
    // optimized code has its samples) and its body, the line before
    const spin = { ts: [lineOf(source)], js: [lineOf(compiled.outputText) - 1, lineOf(compiled.outputText)] };
    const node = spawn(process.execPath, ['-e', `require(${JSON.stringify(path.join(dir, 'spin.js'))}).spinFor(60000); console.log('ready')`], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      await new Promise((resolve) => node.stdout.once('data', resolve));
      /** @type {[string[], string, number[]][]} */
      const runs = [[[], path.join(dir, 'spin.ts'), spin.ts], [['--no-source-maps'], path.join(dir, 'spin.js'), spin.js]];
      for (const [args, file, lines] of runs) {
        const { code, stdout, stderr } = await run(['--pid', String(node.pid), '--profile', '--duration', '2', '--folded', '-U', ...args]).done;
        assert.equal(code, 0, stderr);
        let frames = 0;
        let there = 0;
        for (const row of stdout.trim().split('\n')) {
          const m = /^(.*) (\d+)$/.exec(row);
          const leaf = m?.[1].split(';').find((f) => f.startsWith('spinLeaf '));
          if (!leaf) continue;
          frames += Number(m?.[2]);
          if (lines.some((line) => leaf.startsWith(`spinLeaf ${file}:${line}:`))) there += Number(m?.[2]);
        }
        assert.ok(frames >= 50, `${args.join(' ')}: ${frames} spinLeaf frames:\n${stdout.slice(0, 2000)}`);
        assert.ok(there >= 0.9 * frames, `${args.join(' ')}: spinLeaf at ${file}:${lines.join(' or ')} in ${there} of ${frames} frames:\n${stdout.slice(0, 2000)}`);
      }
    } finally {
      node.kill();
    }
  });

  for (const major of ['20', '24']) {
    const { node: nodeOf, skip: noNode } = require('../scripts/nodes').testNode(major);
    // node 24 on makes a worker's `name` its thread's comm; 20 and 22 name every thread node
    const named = major === '20' ? 'worker' : 'worker ts-worker';
    test(`Node ${major}: -p PID of a node with worker threads: their stacks under "${named}" (named) and "worker" (unnamed)`, { skip: noNode }, async () => {
      const node = spawn(/** @type {string} */ (nodeOf), [path.join(__dirname, 'fixtures', 'worker_spin.js')], { stdio: ['pipe', 'pipe', 'inherit'] });
      try {
        await new Promise((resolve) => node.stdout.on('data', (d) => String(d).includes('ready') && resolve(null)));
        const { code, stdout, stderr } = await run(['--pid', String(node.pid), '--profile', '--duration', '2', '--folded', '-U']).done;
        assert.equal(code, 0, stderr);
        const threads = { spinNamed: new Map(), spinUnnamed: new Map() };
        for (const row of stdout.trim().split('\n')) {
          const m = /^([^;]*);(.*) (\d+)$/.exec(row);
          for (const fn of Object.keys(threads)) if (m?.[2].includes(`;${fn} `)) threads[fn].set(m[1], (threads[fn].get(m[1]) ?? 0) + Number(m[3]));
        }
        assert.deepEqual([...threads.spinNamed.keys()], [named], stdout.slice(0, 2000));
        assert.deepEqual([...threads.spinUnnamed.keys()], ['worker'], stdout.slice(0, 2000));
        assert.ok(threads.spinNamed.get(named) >= 20 && threads.spinUnnamed.get('worker') >= 20, JSON.stringify([...threads.spinNamed, ...threads.spinUnnamed]));
      } finally {
        node.stdin.end();
        node.kill();
      }
    });
  }

  test('bad options are usage errors', async () => {
    for (const args of [['--folded', '--top', '3'], ['-K', '-U'], ['x:y']]) {
      const { code, stderr } = await run(['--pid', String(process.pid), ...args]).done;
      assert.equal(code, 2, `${args.join(' ')}: ${stderr}`);
    }
  });
});
