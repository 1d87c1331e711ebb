'use strict';
// Whatever the library attaches, it detaches: after close(), after a
// process that exits without closing, and after one that is killed, the
// kernel holds no program, link or map of ours.
const test = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const path = require('node:path');
const { bpf, objectPath, kernelIds, added, waitFor, root } = require('./helpers');

/** Waits (the kernel frees objects asynchronously) until none of ours is left. */
async function assertNoneLeft(before) {
  let left;
  await waitFor(() => {
    const now = kernelIds();
    left = { progs: added(before.progs, now.progs), links: added(before.links, now.links), maps: added(before.maps, now.maps) };
    return left.progs.length + left.links.length + left.maps.length === 0;
  }, 3000);
  assert.deepStrictEqual(left, { progs: [], links: [], maps: [] });
}

/** Everything the library can make: links of several kinds and both buffers. */
function useEverything(obj) {
  obj.setGlobalVariable('target_pid', process.pid);
  obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
  obj.attachTracepoint('syscalls', 'sys_exit_openat', 'handle_exit_openat');
  obj.getMap('rb_events').openRingBuffer(() => {});
  obj.getMap('perf_events').openPerfBuffer(() => {});
}

test('close() frees every program, link and map of the object', async () => {
  const before = kernelIds();
  const obj = bpf.loadBpfProgram(objectPath('openat'));
  useEverything(obj);
  const perf = bpf.loadBpfProgram(objectPath('perf_sample'));
  perf.attachPerfEvent('handle_cpu_clock', { frequency: 10 });
  const during = kernelIds();
  assert.ok(added(before.progs, during.progs).length >= 3, 'programs were loaded');
  // tracepoint attachments are BPF links since 5.15 (with attach cookies);
  // before, the perf event holds the program and bpftool lists no link
  if (bpf.features().attachCookie) assert.ok(added(before.links, during.links).length >= 2, 'links were made');
  obj.close();
  perf.close();
  await assertNoneLeft(before);
});

const CHILD = (how) => `
  const bpf = require(${JSON.stringify(root)});
  const obj = bpf.loadBpfProgram(${JSON.stringify(objectPath('openat'))});
  obj.setGlobalVariable('target_pid', process.pid);
  obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
  obj.attachTracepoint('syscalls', 'sys_exit_openat', 'handle_exit_openat');
  obj.getMap('rb_events').openRingBuffer(() => {});
  obj.getMap('perf_events').openPerfBuffer(() => {});
  console.log('attached');
  ${how === 'exit' ? 'setTimeout(() => process.exit(0), 100);' : 'setInterval(() => {}, 1000);'}
`;

for (const how of ['exit', 'SIGKILL']) {
  test(`a process that ends by ${how} without close() leaves nothing in the kernel`, async () => {
    const before = kernelIds();
    const child = spawn(process.execPath, ['-e', CHILD(how)], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((resolve) => child.stdout.once('data', resolve));
    const during = kernelIds();
    assert.ok(added(before.progs, during.progs).length >= 2, 'the child loaded its programs');
    if (how === 'SIGKILL') child.kill('SIGKILL');
    await new Promise((resolve) => child.on('exit', resolve));
    await assertNoneLeft(before);
  });
}

test('a closed object lets the process exit at once, an open buffer keeps it alive', async () => {
  // the 1.5 s start once the child has loaded and run `body` (node's start
  // and the load take seconds under qemu TCG)
  const run = (body) => {
    const child = spawn(process.execPath, ['-e', `const bpf = require(${JSON.stringify(root)});
      const obj = bpf.loadBpfProgram(${JSON.stringify(objectPath('openat'))});
      const rb = obj.getMap('rb_events').openRingBuffer(() => {});
      ${body}
      console.log('ready');`], { stdio: ['ignore', 'pipe', 'inherit'] });
    return new Promise((resolve) => {
      let timer;
      child.stdout.once('data', () => (timer = setTimeout(() => child.kill('SIGKILL'), 1500)));
      child.on('exit', (code, signal) => (clearTimeout(timer), resolve({ signal })));
    });
  };
  const open = await run('');
  assert.strictEqual(open.signal, 'SIGKILL', 'an open buffer keeps the process alive');
  const closed = await run('obj.close();');
  // exited by itself, before the kill 1.5 s after it was ready
  assert.strictEqual(closed.signal, null);
  const bufferClosed = await run('rb.close();');
  assert.strictEqual(bufferClosed.signal, null);
  const unrefd = await run('rb.unref();');
  assert.strictEqual(unrefd.signal, null, 'unref() lets it exit');
  const refd = await run('rb.unref(); rb.ref();');
  assert.strictEqual(refd.signal, 'SIGKILL', 'ref() keeps it alive again');
});

test('dropping every handle without close() does not stop an open buffer', async () => {
  // the buffer keeps its object alive (like a listening socket) until closed
  const child = spawn(process.execPath, ['--expose-gc', '-e', `const bpf = require(${JSON.stringify(root)});
    const fs = require('fs');
    let n = 0;
    (() => {
      const obj = bpf.loadBpfProgram(${JSON.stringify(objectPath('openat'))});
      obj.setGlobalVariable('target_pid', process.pid);
      obj.setGlobalVariable('sinks', 1);
      obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat');
      obj.attachTracepoint('syscalls', 'sys_exit_openat', 'handle_exit_openat');
      obj.getMap('rb_events').openRingBuffer(() => { if (++n === 3) { console.log('got 3'); process.exit(0); } });
    })();
    global.gc(); global.gc();
    setTimeout(() => { for (let i = 0; i < 3; i++) fs.closeSync(fs.openSync('/etc/hostname', 'r')); }, 50);
    setTimeout(() => { console.log('only', n); process.exit(1); }, 2000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.strictEqual(out.trim(), 'got 3');
  assert.strictEqual(code, 0);
});
