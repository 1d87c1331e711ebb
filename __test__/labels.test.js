'use strict';
// Request labels on profile samples: bpf.withLabels() tags the CPU samples and
// off-CPU intervals of the code it runs (and of what it awaits), taken as the
// sample is (bpf/labels.bpf.h: V8's AsyncContextFrame on Node 24 on, the
// async_hooks word on Node 20 and 22). Two interleaved requests, a blocking
// read, pprof read back by pprof-format and `go tool pprof -tags`.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const bpf = require('..');
const labels = require('../lib/service/labels');
const native = require('../lib/core/native');

const asRoot = process.getuid?.() !== 0 ? 'profiles load BPF programs: run the tests as root' : false;
const goOk = spawnSync('go', ['version']).status === 0;
if (asRoot) console.log(`# labels.test.js: skipping the profiles: ${asRoot}`);
const major = Number(process.versions.node.split('.')[0]);
// (Node 24 on keeps AsyncLocalStorage in V8's continuation data: read there, no hook)
const cped = major >= 24 || process.execArgv.includes('--experimental-async-context-frame');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'labels-test-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function spin(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) x += Math.sqrt(x + 1);
  return x;
}
// each request's own burn function: a sample in it belongs to that request alone
function burnA(ms) {
  return spin(ms);
}
function burnB(ms) {
  return spin(ms);
}
function burnOutside(ms) {
  return spin(ms);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The names of a stack's JS frames (inlined ones too). */
const names = (s) => s.frames.flatMap((f) => [f.name, ...(f.inlined ?? []).map((g) => g.name)]);
/** CPU samples of the main thread whose stack runs `fn`, by their labels (JSON). */
function samplesIn(w, fn) {
  const by = {};
  for (const s of w.cpu) {
    if (s.threadKind !== 'main' || !names(s).includes(fn)) continue;
    const k = JSON.stringify(s.labels);
    by[k] = (by[k] ?? 0) + s.count;
  }
  return by;
}

describe('labels: the API', () => {
  test('withLabels merges over the current labels, across await, timers and callbacks; returns fn\'s result', async () => {
    assert.deepEqual(bpf.getLabels(), {});
    const seen = await bpf.withLabels(
      { route: '/a', shard: 3 },
      async (x) => {
        await sleep(2);
        const inTimer = await new Promise((resolve) => setTimeout(() => resolve(bpf.getLabels()), 1));
        const inner = bpf.withLabels({ user: 'u1' }, () => bpf.getLabels());
        return { x, afterAwait: bpf.getLabels(), inTimer, inner };
      },
      7,
    );
    assert.deepEqual(seen, { x: 7, afterAwait: { route: '/a', shard: 3 }, inTimer: { route: '/a', shard: 3 }, inner: { route: '/a', shard: 3, user: 'u1' } });
    assert.ok(Object.isFrozen(seen.afterAwait));
    assert.deepEqual(bpf.getLabels(), {});
    assert.equal(bpf.Profiler.prototype.withLabels, bpf.withLabels);
    assert.equal(bpf.Profiler.prototype.getLabels, bpf.getLabels);
  });

  test('setLabels holds for the rest of the async context only', async () => {
    const inside = await bpf.withLabels({ a: 1 }, async () => {
      bpf.setLabels({ b: 'x' });
      await sleep(1);
      return bpf.getLabels();
    });
    assert.deepEqual(inside, { a: 1, b: 'x' });
    assert.deepEqual(bpf.getLabels(), {});
  });

  test('bad labels: a coded error naming the label and the fix', () => {
    const cases = [
      [null, 'ERR_INVALID_ARG_TYPE', /labels must be an object/],
      [['a'], 'ERR_INVALID_ARG_TYPE', /got an array/],
      [{ 'no space': 1 }, 'ERR_BPF_INVALID_VALUE', /label name "no space": names are identifiers/],
      [{ n: Infinity }, 'ERR_BPF_INVALID_VALUE', /label n: a number must be finite/],
      [{ s: 'x'.repeat(257) }, 'ERR_BPF_INVALID_VALUE', /label s: a string of at most 256 characters/],
      [{ o: {} }, 'ERR_INVALID_ARG_TYPE', /label o: a value is a string or a number, got object/],
    ];
    // (bad on purpose: the type check would refuse them)
    const untyped = /** @type {any} */ (bpf);
    for (const [bad, code, message] of cases) {
      assert.throws(() => untyped.withLabels(bad, () => {}), { code, message }, JSON.stringify(bad));
      assert.throws(() => untyped.setLabels(bad), { code });
    }
    assert.throws(() => untyped.withLabels({ a: 1 }, 'not a function'), { code: 'ERR_INVALID_ARG_TYPE', message: /fn must be a function/ });
    assert.deepEqual(bpf.getLabels(), {});
  });

  test('a lazy record resolves when the window is read, over the labels it was entered under', async () => {
    const span = { route: null };
    const record = { resolve: () => ({ trace_id: 'a'.repeat(32), 'http.route': span.route ?? 'unset' }) };
    const id = await bpf.withLabels({ service: 's' }, () =>
      labels.withLazyLabels(record, async () => {
        await sleep(1);
        return labels.als.getStore() & labels.MAX_ID;
      }),
    );
    span.route = '/users/:id';
    const { labels: got } = labels.resolveIds([id]);
    assert.deepEqual(got.get(id), { service: 's', trace_id: 'a'.repeat(32), 'http.route': '/users/:id' });
  });

  test("a request's lazy records (and the sets made over them) are forgotten half a minute after their last use (or the longest window's length), a route's set after ten minutes", () => {
    const route = bpf.withLabels({ route: 'kept' }, () => labels.als.getStore() & labels.MAX_ID);
    const requests = [];
    for (let i = 0; i < 1000; i++) {
      requests.push(labels.withLazyLabels({ resolve: () => ({ span_id: String(i) }) }, () => bpf.withLabels({ step: 'b' }, () => labels.als.getStore() & labels.MAX_ID)));
    }
    const real = Date.now;
    try {
      // (a window's read resolves its ids, then prunes)
      Date.now = () => real() + labels.LAZY_PRUNE_MS + 20_000;
      assert.deepEqual(labels.resolveIds([route]).labels.get(route), { route: 'kept' });
      assert.equal(labels.resolveIds(requests).expired, requests.length);
      Date.now = () => real() + labels.LAZY_PRUNE_MS + 20_000 + labels.PRUNE_MS + 1000;
      labels.resolveIds([]);
      assert.equal(labels.resolveIds([route]).expired, 1);
    } finally {
      Date.now = real;
    }
  });
});

describe('labels: taken at the sample', { skip: asRoot }, () => {
  let profiler;
  before(() => {
    profiler = bpf.profile({ clock: 'cpu-clock', frequency: 499 });
  });
  after(() => profiler?.close());

  test(`this thread's labels are read ${cped ? "from V8's AsyncContextFrame (no hook)" : 'from the word an async_hooks hook keeps'}`, () => {
    const reg = labels.registration(native);
    assert.equal(reg.kind, cped ? 'cped' : 'word', reg.why ?? '');
  });

  test('two interleaved requests: every sample of each burn function under its own labels, the rest unlabelled', async () => {
    const window = profiler.collect({ seconds: 2 });
    const request = (route, burn) =>
      bpf.withLabels({ route, n: route === 'A' ? 1 : 2 }, async () => {
        for (let i = 0; i < 8; i++) {
          burn(15);
          await sleep(1);
          // a timer's callback, and a promise it resolves
          await new Promise((resolve) => setTimeout(() => resolve(burn(10)), 1));
        }
      });
    await Promise.all([request('A', burnA), request('B', burnB)]);
    burnOutside(150);
    const w = await window;
    const a = samplesIn(w, 'burnA');
    const b = samplesIn(w, 'burnB');
    const out = samplesIn(w, 'burnOutside');
    const A = JSON.stringify({ n: 1, route: 'A' });
    const B = JSON.stringify({ n: 2, route: 'B' });
    assert.deepEqual(Object.keys(a), [A], `burnA's samples: ${JSON.stringify(a)}`);
    assert.deepEqual(Object.keys(b), [B], `burnB's samples: ${JSON.stringify(b)}`);
    assert.deepEqual(Object.keys(out), ['{}'], `burnOutside's samples: ${JSON.stringify(out)}`);
    assert.ok(a[A] >= 5 && b[B] >= 5 && out['{}'] >= 5, `samples: A ${a[A]}, B ${b[B]}, outside ${out['{}']}`);

    // folded stacks put the labels first; pprof carries them (numbers as num), go tool pprof -tags shows them
    const folded = w.folded('cpu', { labels: ['route'] }).split('\n');
    assert.ok(folded.some((l) => l.startsWith('route=A;') && l.includes('burnA')));
    assert.ok(!folded.some((l) => l.startsWith('route=B;') && l.includes('burnA')));
    const { Profile } = require('pprof-format');
    const p = Profile.decode(zlib.gunzipSync(w.pprof('cpu')));
    const str = (i) => p.stringTable.strings[Number(i)];
    const routes = {};
    for (const s of p.sample) {
      const l = Object.fromEntries(s.label.map((x) => [str(x.key), x.str ? str(x.str) : Number(x.num)]));
      if (l.route) routes[`${l.route}:${l.n}`] = (routes[`${l.route}:${l.n}`] ?? 0) + Number(s.value[0]);
    }
    assert.ok(routes['A:1'] >= a[A] && routes['B:2'] >= b[B], JSON.stringify(routes));
    if (goOk) {
      const file = path.join(tmp, 'cpu.pb.gz');
      fs.writeFileSync(file, w.pprof('cpu'));
      const tags = execFileSync('go', ['tool', 'pprof', '-tags', file], { encoding: 'utf8', env: { ...process.env, HOME: tmp } });
      // (values in the profile's default type: cpu time)
      assert.match(tags, /^ route: Total [\d.]+m?s$/m);
      assert.match(tags, /^ +[\d.]+m?s \(\s*[\d.]+%\): A$/m);
      assert.match(tags, /^ +[\d.]+m?s \(\s*[\d.]+%\): B$/m);
      assert.match(tags, /^ n: Total [\d.]+m?s$/m);
    } else console.log('# labels.test.js: no go toolchain: go tool pprof -tags not run');
  });

  test('off CPU: a labelled blocking read of a FIFO is under its labels, in the kernel\'s read', async () => {
    const fifo = path.join(tmp, `fifo-${process.pid}`);
    execFileSync('mkfifo', [fifo]);
    const window = profiler.collect({ seconds: 1.5 });
    // the writer opens the FIFO at once and writes 50 ms later
    const writer = spawn(process.execPath, ['-e', `const fs = require('fs'); const fd = fs.openSync(${JSON.stringify(fifo)}, 'w'); setTimeout(() => { fs.writeSync(fd, 'x'); fs.closeSync(fd); }, 50);`]);
    const got = bpf.withLabels({ route: 'fifo' }, () => {
      const fd = fs.openSync(fifo, 'r');
      try {
        const buf = Buffer.alloc(1);
        return fs.readSync(fd, buf, 0, 1, null);
      } finally {
        fs.closeSync(fd);
      }
    });
    assert.equal(got, 1);
    await new Promise((resolve) => writer.on('exit', resolve));
    const w = await window;
    const reads = w.offCpu.filter((s) => s.frames.some((f) => f.kind === 'kernel' && /^(pipe_read|vfs_read|ksys_read)$/.test(f.name)) && s.ns >= 20e6);
    assert.ok(reads.length, `an off-CPU stack in the kernel's read of 20 ms or more: ${w.offCpu.map((s) => `${JSON.stringify(s.labels)} ${s.ns}`).join(', ')}`);
    for (const s of reads) assert.deepEqual(s.labels, { route: 'fifo' });
  });
});
