'use strict';
// Uprobes and uretprobes: a C function called exactly K times in a child
// process, and uv__io_poll in the node binary running this very test.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { spawn, execFileSync } = require('node:child_process');
const { bpf, objectPath, buildFixture, sleep, waitFor, throwsCode } = require('./helpers');
const { syscallNumber } = require('../lib/core/names');

/** Decodes `struct call_event` (__test__/bpf/uprobe.h). */
const decode = (d) => ({ pid: d.readUInt32LE(0), arg: d.readInt32LE(4), ret: Number(d.readBigInt64LE(8)) });

/** Starts add_one waiting on stdin; `go()` lets it make its K calls. */
function startAddOne(k) {
  const child = spawn(buildFixture('add_one'), [String(k)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
  return { child, exited, go: () => child.stdin.end('go\n') };
}

test('a function called K times gives K uprobe hits and K uretprobe returns', async (t) => {
  const K = 1000;
  const binary = buildFixture('add_one');
  const { child, exited, go } = startAddOne(K);
  const obj = bpf.loadBpfProgram(objectPath('uprobe'));
  t.after(() => obj.close());
  const entry = obj.attachUprobe(binary, 'add_one', obj.programs.handle_add_one, { pid: child.pid });
  obj.attachUretprobe(binary, 'add_one', 'handle_add_one_return', { pid: child.pid });
  assert.match(entry.target, new RegExp(`uprobe .*add_one:add_one \\(pid ${child.pid}\\)`));
  const calls = [];
  const rb = obj.getMap('events').openRingBuffer((d) => calls.push(decode(d)));
  go();
  const { code, out } = await exited;
  assert.strictEqual(code, 0);
  assert.strictEqual(out.trim(), String((K * (K + 1)) / 2));
  await waitFor(() => calls.length >= K);
  rb.close();
  assert.strictEqual(obj.getGlobalVariable('entries'), BigInt(K));
  assert.strictEqual(calls.length, K);
  calls.forEach((c, i) => {
    assert.strictEqual(c.pid, child.pid);
    assert.strictEqual(c.arg, i, 'in call order');
    assert.strictEqual(c.ret, i + 1, 'return value');
  });
});

test('prog.stats: the kernel id, K runs counted while kernel.bpf_stats_enabled is 1, no misses', async (t) => {
  const K = 300;
  const binary = buildFixture('add_one');
  const { child, exited, go } = startAddOne(K);
  const obj = bpf.loadBpfProgram(objectPath('uprobe'));
  t.after(() => obj.close());
  obj.attachUprobe(binary, 'add_one', 'handle_add_one', { pid: child.pid });
  const prog = obj.programs.handle_add_one;
  const listed = JSON.parse(execFileSync('bpftool', ['-j', 'prog', 'show', 'id', String(prog.stats.id)], { encoding: 'utf8' }));
  assert.strictEqual(listed.name, 'handle_add_one', 'bpftool lists the program under that id');
  const sysctl = '/proc/sys/kernel/bpf_stats_enabled';
  const was = fs.readFileSync(sysctl, 'utf8').trim();
  fs.writeFileSync(sysctl, '1');
  t.after(() => fs.writeFileSync(sysctl, was));
  go();
  assert.strictEqual((await exited).code, 0);
  const stats = prog.stats;
  assert.strictEqual(stats.runCount, K, 'one run per call');
  assert.ok(stats.runTimeNs > 0, `time counted: ${stats.runTimeNs}`);
  assert.strictEqual(stats.recursionMisses, 0);
});

test('a uprobe on another process than the one given counts nothing', async (t) => {
  const binary = buildFixture('add_one');
  const first = startAddOne(50);
  const second = startAddOne(50);
  const obj = bpf.loadBpfProgram(objectPath('uprobe'));
  t.after(() => obj.close());
  obj.attachUprobe(binary, 'add_one', 'handle_add_one', { pid: first.child.pid });
  second.go();
  await second.exited;
  assert.strictEqual(obj.getGlobalVariable('entries'), 0n);
  first.go();
  await first.exited;
  assert.strictEqual(obj.getGlobalVariable('entries'), 50n);
});

test('a uprobe by file offset hits like the symbol', async (t) => {
  const binary = buildFixture('add_one');
  // the symbol's file offset, from the ELF (nm gives the virtual address)
  const addr = parseInt(execFileSync('nm', [binary], { encoding: 'utf8' }).match(/^([0-9a-f]+) T add_one$/m)[1], 16);
  const phdrs = execFileSync('readelf', ['-lW', binary], { encoding: 'utf8' });
  const load = phdrs
    .split('\n')
    .filter((l) => /^\s*LOAD/.test(l) && /R E|R.E/.test(l))
    .map((l) => l.trim().split(/\s+/))[0];
  const offset = addr - parseInt(load[2], 16) + parseInt(load[1], 16);
  const { child, exited, go } = startAddOne(7);
  const obj = bpf.loadBpfProgram(objectPath('uprobe'));
  t.after(() => obj.close());
  obj.attachUprobe(binary, offset, 'handle_add_one', { pid: child.pid });
  go();
  await exited;
  assert.strictEqual(obj.getGlobalVariable('entries'), 7n);
});

test('uprobe on a missing symbol or binary is a clear error', (t) => {
  const obj = bpf.loadBpfProgram(objectPath('uprobe'));
  t.after(() => obj.close());
  throwsCode(assert, () => obj.attachUprobe(buildFixture('add_one'), 'no_such_function', 'handle_add_one'), 'ERR_BPF_UNKNOWN_NAME', /no function symbol 'no_such_function'/);
  throwsCode(assert, () => obj.attachUprobe('/no/such/binary', 'main', 'handle_add_one'), 'ENOENT', /\/no\/such\/binary does not exist/);
});

test('self-tracing: uv__io_poll of this node process, at the idle rate', async (t) => {
  const obj = bpf.loadBpfProgram(objectPath('uprobe'));
  t.after(() => obj.close());
  obj.attachUprobe(process.execPath, 'uv__io_poll', 'handle_io_poll', { pid: process.pid });
  let ticks = 0;
  const timer = setInterval(() => ticks++, 50);
  await sleep(1000);
  clearInterval(timer);
  const polls = Number(obj.getGlobalVariable('io_polls'));
  // a loop iteration per timer tick (20/s on a machine that gives it the CPU; the ticks it ran are what it got), and
  // a few others (the sleep's timer, V8's tasks): no storm
  t.diagnostic(`idle process with a 50 ms timer: ${polls} uv__io_poll calls in 1 s, ${ticks} ticks`);
  assert.ok(ticks >= 1, 'the timer ticked');
  assert.ok(polls >= ticks && polls <= 2 * ticks + 20, `${polls} uv__io_poll calls for ${ticks} ticks`);
});

test('self-tracing through a ring buffer does not feed itself into a storm', async (t) => {
  const obj = bpf.loadBpfProgram(objectPath('uprobe'));
  t.after(() => obj.close());
  obj.attachUretprobe(process.execPath, 'uv__io_poll', 'handle_io_poll_return', { pid: process.pid });
  let records = 0;
  // each delivery wakes the event loop, whose uv__io_poll returns: one more record
  const rb = obj.getMap('events').openRingBuffer(() => records++);
  const timer = setInterval(() => {}, 50); // wake the loop 20 times a second
  await sleep(1000);
  clearInterval(timer);
  rb.close();
  t.diagnostic(`uretprobe on uv__io_poll delivered to this process: ${records} records in 1 s`);
  assert.ok(records > 0, 'self-tracing delivers');
  assert.ok(records <= 250, `bounded by the poll interval (10 ms), got ${records}/s`);
});

test('a USDT probe fired K times is counted K times, with its argument and cookie', async (t) => {
  const K = 100;
  const binary = buildFixture('usdt_ticks');
  const child = spawn(binary, [String(K)], { stdio: ['pipe', 'inherit', 'inherit'] });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const obj = bpf.loadBpfProgram(objectPath('usdt'));
  t.after(() => obj.close());
  obj.attachUsdt(binary, 'nodelibbpf', 'tick', obj.programs.handle_tick, { pid: child.pid, cookie: 42n });
  throwsCode(assert, () => obj.attachUsdt(binary, 'nodelibbpf', 'tock', 'handle_tick'), 'ERR_BPF_UNKNOWN_NAME', /no USDT probe nodelibbpf:tock/);
  child.stdin.end('go\n');
  assert.strictEqual(await exited, 0);
  assert.strictEqual(obj.getGlobalVariable('ticks'), BigInt(K));
  assert.strictEqual(obj.getGlobalVariable('sum'), BigInt((K * (K - 1)) / 2));
  assert.strictEqual(obj.getGlobalVariable('cookie'), 42n);
});

test('uprobe.multi: many functions in one link, told apart by cookies', async (t) => {
  if (!bpf.features().uprobeMulti) {
    const obj = bpf.loadBpfProgram(objectPath('uprobe'));
    t.after(() => obj.close());
    throwsCode(assert, () => obj.attachUprobeMulti(buildFixture('add_one'), 'add_*', 'handle_multi'), 'ENOTSUP', /no uprobe\.multi links \(Linux 6\.6\+\)/);
    t.skip('this kernel has no uprobe.multi: checked the ENOTSUP error instead');
    return;
  }
  const binary = buildFixture('add_one');
  const { child, exited, go } = startAddOne(30);
  // main has been entered once the child waits in read(2) for 'go'
  const read = String(syscallNumber('read'));
  const inRead = () => {
    try {
      return fs.readFileSync(`/proc/${child.pid}/syscall`, 'utf8').split(' ')[0] === read;
    } catch {
      return false;
    }
  };
  assert.ok(await waitFor(inRead, 5000), 'the fixture reached its read(2)');
  const obj = bpf.loadBpfProgram(objectPath('uprobe'));
  t.after(() => obj.close());
  obj.attachUprobeMulti(binary, ['add_one', 'main'], 'handle_multi', { pid: child.pid, cookies: [1n, 2n] });
  throwsCode(assert, () => obj.attachUprobeMulti(binary, ['add_one'], 'handle_multi', { cookies: [1n, 2n] }), 'ERR_BPF_INVALID_VALUE', /one cookie per symbol/);
  go();
  await exited;
  const counts = new Map(obj.getMap('multi_counts').entries());
  assert.strictEqual(counts.get(1n), 30n, 'add_one, 30 calls');
  assert.strictEqual(counts.get(2n), undefined, 'main was entered before the attach');
});
