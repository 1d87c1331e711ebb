'use strict';
// Misuse never crashes and close() means closed: no callback after close()
// returns, close() does not wait for the poller or the kernel, re-entrant
// calls get coded errors, panics become ERR_BPF_INTERNAL, forgotten objects
// are closed when collected, typed decoding works where code generation is
// refused.
const test = require('node:test');
const assert = require('node:assert');
const { spawnSync } = require('node:child_process');
const { bpf, objectPath, getppidLoop, streamer, waitFor, sleep, kernelIds, added, throwsCode } = require('./helpers');

/** Runs `script` (JavaScript, with `bpf`, `objectPath`, `getppidLoop`, `streamer` in scope) in a child node with `flags`; its stdout parsed as JSON. */
function inChild(script, flags = []) {
  const helpers = require.resolve('./helpers');
  const prelude = `const { bpf, objectPath, getppidLoop, streamer } = require(${JSON.stringify(helpers)});\n`;
  const run = spawnSync(process.execPath, [...flags, '-e', `${prelude}(async () => { ${script} })().catch((e) => { console.error(e); process.exit(1); });`], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.strictEqual(run.status, 0, `child failed (${run.signal ?? run.status}):\n${run.stderr}`);
  return { out: JSON.parse(run.stdout.trim().split('\n').pop()), stderr: run.stderr };
}

for (const what of ['buffer.close()', 'obj.close()']) {
  test(`a callback that calls ${what} on the first record of a batch gets no further record`, async (t) => {
    const K = 500;
    const { child, exited, go } = getppidLoop(K);
    // no wakeups: the K records are read in one pass, handed over as one batch
    const obj = streamer(child.pid, { noWakeup: true });
    t.after(() => obj.close());
    let calls = 0;
    const events = obj.getMap('events').openRingBuffer(
      () => {
        calls++;
        if (what === 'obj.close()') obj.close();
        else events.close();
      },
      { type: 'stream_event', pollInterval: 50 },
    );
    go();
    await exited;
    assert.ok(await waitFor(() => calls > 0, 3000), 'the first record came');
    await sleep(200);
    assert.strictEqual(calls, 1);
    assert.strictEqual(events.received, 1);
    assert.strictEqual(events.closed, true);
  });
}

test('records queued but not yet delivered are not delivered after close(); close() does not wait for a long poll interval', async (t) => {
  const K = 1000;
  const { child, exited, go } = getppidLoop(K);
  const obj = streamer(child.pid, { noWakeup: true });
  t.after(() => obj.close());
  let calls = 0;
  const events = obj.getMap('events').openRingBuffer(() => calls++, { pollInterval: 10_000 });
  await sleep(50); // the poller is now napping in its 10 s interval
  go();
  await exited;
  const start = process.hrtime.bigint();
  events.close();
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  // the poller used to be asked to stop and waited for: up to the whole interval
  assert.ok(ms < 1000, `close() took ${ms.toFixed(1)} ms`);
  await sleep(300);
  assert.strictEqual(calls, 0);
});

test('closeAsync() resolves once the kernel has released every program, link and map of the object', async () => {
  const before = kernelIds();
  const obj = streamer(process.pid);
  obj.attachTracepoint('syscalls', 'sys_exit_getppid', 'handle_enter_getppid');
  obj.getMap('events').openRingBuffer(() => {});
  const during = kernelIds();
  // a tracepoint attachment is a BPF link since 5.15 (with attach cookies); before, a perf event holds the program
  assert.strictEqual(added(before.links, during.links).length, bpf.features().attachCookie ? 2 : 0);
  await obj.closeAsync();
  const after = kernelIds();
  assert.deepStrictEqual(added(before.progs, after.progs), []);
  assert.deepStrictEqual(added(before.links, after.links), []);
  // the kernel frees a map after an RCU grace period once its last program is gone
  assert.ok(await waitFor(() => added(before.maps, kernelIds().maps).length === 0, 2000), 'the maps are freed');
  throwsCode(assert, () => obj.load(), 'ERR_BPF_CLOSED', /is closed/);
  await obj.closeAsync(); // idempotent
});

test('a value whose Proxy trap closes the object gets a coded error, not a crash', () => {
  const obj = bpf.loadBpfProgram(objectPath('types'));
  const settings = new Proxy(
    { delta: 2 },
    {
      ownKeys(target) {
        obj.close();
        return Reflect.ownKeys(target);
      },
    },
  );
  throwsCode(assert, () => obj.setGlobalVariable('settings', settings), 'ERR_BPF_CLOSED', /is closed/);
  // and a getter that calls back into a live object works
  const obj2 = bpf.loadBpfProgram(objectPath('types'));
  const value = {
    get delta() {
      return obj2.getGlobalVariable('calls') + 5;
    },
  };
  obj2.setGlobalVariable('settings', value);
  assert.strictEqual(obj2.getGlobalVariable('settings').delta, 5);
  obj2.close();
});

test('a Rust panic reaches JavaScript as ERR_BPF_INTERNAL, asking for a bug report', () => {
  throwsCode(assert, () => require('../binding').__panicForTests(), 'ERR_BPF_INTERNAL', /a deliberate panic.*this is a bug: please report it/);
});

test('typed records decode under node --disallow-code-generation-from-strings', () => {
  const { out } = inChild(
    `
    const K = 300;
    const { child, exited, go } = getppidLoop(K);
    const obj = streamer(child.pid);
    const seqs = [];
    obj.getMap('events').openRingBuffer((e) => seqs.push(e.seq), { type: 'stream_event', int64: 'number' });
    go();
    await exited;
    while (seqs.length < K) await new Promise((r) => setTimeout(r, 10));
    obj.close();
    const codec = require(${JSON.stringify(require.resolve('../lib/core/codec'))});
    console.log(JSON.stringify({ seqs: seqs.length, inOrder: seqs.every((s, i) => s === i), codegen: codec.codeGenerationAllowed() }));`,
    ['--disallow-code-generation-from-strings'],
  );
  assert.deepStrictEqual(out, { seqs: 300, inOrder: true, codegen: false });
});

test('an object forgotten with its buffer unref()d is closed when garbage-collected, with a warning', () => {
  const { out, stderr } = inChild(
    `
    const bpfFds = () => require('fs').readdirSync('/proc/self/fd').filter((fd) => {
      try { return /^prog_id:/m.test(require('fs').readFileSync('/proc/self/fdinfo/' + fd, 'utf8')); } catch { return false; }
    }).length;
    (() => {
      const obj = streamer(process.pid);
      obj.getMap('events').openRingBuffer(() => obj.load()).unref(); // the callback refers to its object
    })();
    const attached = bpfFds();
    let warning = '';
    process.on('warning', (w) => (warning = w.message));
    for (let i = 0; i < 50 && (warning === '' || bpfFds() > 0); i++) {
      global.gc();
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(JSON.stringify({ attached, after: bpfFds(), warning }));`,
    ['--expose-gc'],
  );
  assert.ok(out.attached >= 1, `program fds while open: ${out.attached}`);
  assert.strictEqual(out.after, 0, stderr);
  assert.match(out.warning, /stream\.bpf\.o was closed on garbage collection; close objects with obj\.close\(\)/);
});
