'use strict';
// PID namespaces (a container's view of pids): BPF programs compare the
// kernel's ids (the initial namespace's), the library and the tools are
// given pids as the process they run in sees them. The monitor run as pid 1
// of its own namespace (as root, as nobody with CAP_BPF + CAP_PERFMON, and
// in a namespace inside a namespace), the tools from the host into a
// namespace and inside one, against the real kernel.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync, execFileSync } = require('node:child_process');
const { once } = require('node:events');
const fs = require('node:fs');
const path = require('node:path');
const bpf = require('..');
const { startExample, sleep, AS_NOBODY, UNSHARE_PID, memlockPrefix, nobodyCannotRun, pidNamespaceCannotRun } = require('./helpers');

const ROOT = path.join(__dirname, '..');
const SYSCALLS = path.join(ROOT, 'examples', 'node_syscalls.js');
const EVENT_LOOP = path.join(ROOT, 'examples', 'trace_event_loop.js');
const TICKS_FIXTURE = path.join(__dirname, 'fixtures', 'trace_event_loop_ticks.js');
const HTTP = path.join(ROOT, 'examples', 'workloads', 'http.js');
const UNSHARE = UNSHARE_PID;
const SETPRIV = AS_NOBODY;

const skip = pidNamespaceCannotRun();
if (skip) console.log(`# skipping pidns.test.js: ${skip}`);

/** Runs `body` (a function's source, given `bpf`) in a new node process under `prefix`; its JSON result. */
function child(body, prefix = UNSHARE) {
  const script = `const bpf = require(${JSON.stringify(ROOT)});
    (async () => { const out = await (${body})(bpf); process.stdout.write(JSON.stringify(out) + '\\n'); process.exit(0); })()
      .catch((e) => { process.stdout.write(JSON.stringify({ error: { code: e.code, message: e.message } }) + '\\n'); process.exit(0); });`;
  const [cmd, ...args] = [...prefix, process.execPath, '-e', script];
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `child exited ${r.status} ${r.signal}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1));
}

// K opens of a file, K getppid (process.ppid), M connects to a loopback
// server of its own, B waits of 50 ms on a futex (off the CPU, blocked),
// B timers of 20 ms (each a loop iteration: a timers phase, seen by the
// uprobes the monitor attached with the namespace's pid), counted by the
// monitor; where it ran (its pid, its pid namespace's inode)
const K = 100;
const M = 7;
const B = 5;
const COUNTS = `async (bpf) => {
  const fs = require('node:fs');
  const net = require('node:net');
  const server = net.createServer((s) => s.destroy()).listen(0, '127.0.0.1');
  await require('node:events').once(server, 'listening');
  const port = server.address().port;
  const m = bpf.monitor({ syscalls: true, files: true, connects: true, offCpu: true, eventLoop: true });
  const timers = () => m.read().eventLoop.find((p) => p.phase === 'timers').duration.count;
  const file = '/proc/self/ns/pid'; // the same name in every namespace
  const getppid = () => m.read().syscalls.find((s) => s.syscall === 'getppid')?.count ?? 0;
  const g0 = getppid();
  const b0 = m.read().offCpu.blocked.count;
  const t0 = timers();
  for (let i = 0; i < ${K}; i++) fs.closeSync(fs.openSync(file, 'r'));
  for (let i = 0; i < ${K}; i++) process.ppid;
  for (let i = 0; i < ${M}; i++) {
    const sock = net.connect(port, '127.0.0.1');
    await require('node:events').once(sock, 'connect');
    sock.destroy();
  }
  const cell = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < ${B}; i++) Atomics.wait(cell, 0, 0, 50);
  for (let i = 0; i < ${B}; i++) await new Promise((r) => setTimeout(r, 20));
  const snap = m.read();
  m.close();
  server.close();
  return { pid: process.pid, ns: fs.statSync('/proc/self/ns/pid').ino, uid: process.getuid(), kernelPid: bpf.kernelPid(process.pid),
    getppid: (snap.syscalls.find((s) => s.syscall === 'getppid')?.count ?? 0) - g0,
    opens: snap.files.find((f) => f.path === file)?.count ?? 0,
    connects: snap.connects.find((c) => c.endpoint === '127.0.0.1:' + port)?.count ?? 0,
    blocked: snap.offCpu.blocked.count - b0,
    timers: snap.eventLoop.find((p) => p.phase === 'timers').duration.count - t0,
    futex: snap.offCpu.reasons.find((x) => x.reason === 'futex')?.count ?? 0 };
}`;

function assertCounts(r, { pid = 1, uid = 0 } = {}) {
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.pid, pid, `pid ${pid} of its namespace`);
  assert.notEqual(r.ns, 0xeffffffc, 'not in the initial pid namespace');
  assert.notEqual(r.kernelPid, r.pid, 'the kernel knows it by another pid');
  assert.equal(r.uid, uid);
  assert.equal(r.opens, K, `${K} opens: ${JSON.stringify(r)}`);
  assert.equal(r.getppid, K, `${K} getppid: ${JSON.stringify(r)}`);
  assert.equal(r.connects, M, `${M} connects: ${JSON.stringify(r)}`);
  // as the host's monitor test: each wait is one interval off the CPU, blocked in futex
  assert.ok(r.blocked >= B && r.futex >= B, `${B} blocked intervals in futex: ${JSON.stringify(r)}`);
  // at least one loop iteration per timer (others run too: the connects, V8's tasks)
  assert.ok(r.timers >= B, `${B} timers phases or more: ${JSON.stringify(r)}`);
}

describe('kernelIds() and readIterator()', { skip }, () => {
  test('on the host, pids are the kernel\'s: the identity, every thread of the process', () => {
    const ids = bpf.kernelIds(process.pid);
    assert.equal(ids.tgid, process.pid);
    const tids = fs.readdirSync('/proc/self/task').map(Number);
    for (const tid of tids) assert.equal(ids.tids.get(tid), tid);
    assert.equal(bpf.kernelPid(process.pid), process.pid);
  });

  test('in a namespace: pid 1 there is the kernel\'s pid the host sees, each thread its own', () => {
    const host = spawn(UNSHARE[0], [...UNSHARE.slice(1), process.execPath, '-e', `
      const bpf = require(${JSON.stringify(ROOT)});
      bpf.libraryThreads(); // (started now: the list of threads does not change under the test)
      const ids = bpf.kernelIds(process.pid);
      console.log(JSON.stringify({ pid: process.pid, tgid: ids.tgid, tids: [...ids.tids], threads: require('fs').readdirSync('/proc/self/task').map(Number) }));
      process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`], { stdio: ['pipe', 'pipe', 'inherit'] });
    return new Promise((resolve, reject) => {
      let out = '';
      host.stdout.on('data', (d) => {
        out += d;
        if (!out.includes('\n')) return;
        try {
          const r = JSON.parse(out);
          // the host's view of the same process: unshare's child
          const hostPid = Number(fs.readFileSync(`/proc/${host.pid}/task/${host.pid}/children`, 'utf8').trim().split(' ')[0]);
          assert.equal(r.pid, 1);
          assert.equal(r.tgid, hostPid);
          const hostTids = fs.readdirSync(`/proc/${hostPid}/task`).map(Number);
          assert.equal(r.tids.length, r.threads.length, 'every thread it has');
          for (const [nsTid, hostTid] of r.tids) {
            assert.ok(r.threads.includes(nsTid));
            assert.ok(hostTids.includes(hostTid), `host tid ${hostTid} is a thread of ${hostPid}`);
            // NSpid: the ids of the thread from the host's level down
            const nspid = /^NSpid:\s+(.*)$/m.exec(fs.readFileSync(`/proc/${hostPid}/task/${hostTid}/status`, 'utf8'))[1].split(/\s+/).map(Number);
            assert.deepEqual(nspid, [hostTid, nsTid]);
          }
          resolve();
        } catch (err) {
          reject(err);
        } finally {
          host.stdin.end();
        }
      });
    });
  });

  test('a pid not in the namespace is a coded ENOENT naming it; bad pids are ERR_BPF_INVALID_VALUE', () => {
    const r = child(`async (bpf) => {
      const codes = [];
      for (const pid of [${process.pid}, 999999, 0, -1, 1.5, 'x']) {
        try { bpf.kernelPid(pid); codes.push('ok'); } catch (e) { codes.push(e.code + ' ' + e.message); }
      }
      return codes;
    }`);
    assert.match(r[0], new RegExp(`^ENOENT pid ${process.pid}: no such process in this pid namespace`), 'the host\'s pid of this test means nothing there');
    assert.match(r[1], /^ENOENT pid 999999/);
    for (const c of r.slice(2)) assert.match(c, /^ERR_BPF_INVALID_VALUE kernelIds\(\): a pid is a positive integer/);
  });

  test('readIterator(): a program of another kind, a limit too small, are coded errors; nothing stays in the kernel', () => {
    const obj = bpf.loadBpfProgram(require('../lib/core/objects').objectPath('pidns'));
    obj.setGlobalVariable('ns_tgid', 0);
    const all = obj.readIterator('dump_task');
    assert.equal(all.length % 16, 0);
    assert.ok(all.length / 16 >= fs.readdirSync('/proc/self/task').length, 'at least the threads of this process');
    assert.throws(() => obj.readIterator('dump_task', { maxBytes: 16 }), { code: 'ERR_BPF_INVALID_VALUE', message: /wrote more than maxBytes \(16 bytes\)/ });
    assert.throws(() => obj.readIterator('dump_task', { maxBytes: 0 }), { code: 'ERR_BPF_INVALID_VALUE' });
    assert.throws(() => obj.readIterator('nope'), { code: 'ERR_BPF_UNKNOWN_NAME' });
    obj.close();
    const tp = bpf.loadBpfProgram(require('../lib/core/objects').objectPath('file_io'));
    require('../lib/core/compat').chooseThreadStorage(tp);
    assert.throws(() => tp.readIterator('handle_enter_write'), { code: 'ERR_INVALID_ARG_TYPE', message: /needs a SEC\("iter\/<target>"\) program/ });
    tp.close();
  });
});

describe('the monitor in a pid namespace', { skip }, () => {
  test(`as pid 1 of its namespace (root): ${K} opens, ${K} getppid, ${M} connects, ${B} blocked intervals, its event loop`, () => {
    assertCounts(child(COUNTS));
  });

  test('in a namespace inside a namespace', () => {
    assertCounts(child(COUNTS, [...UNSHARE, ...UNSHARE]));
  });

  const why = nobodyCannotRun();
  if (why) console.log(`# skipping the least-privilege namespace test: ${why}`);
  const memlock = memlockPrefix();
  test('as nobody with CAP_BPF + CAP_PERFMON only, pid 1 of its namespace', { skip: why }, () => {
    const caps = child(`async () => require('node:fs').readFileSync('/proc/self/status', 'utf8').match(/^Cap(Eff|Prm):.*$/gm)`, [...UNSHARE, ...memlock, ...SETPRIV]);
    // CAP_PERFMON (38) and CAP_BPF (39), nothing else
    assert.deepEqual(caps, ['CapPrm:\t000000c000000000', 'CapEff:\t000000c000000000']);
    assertCounts(child(COUNTS, [...UNSHARE, ...memlock, ...SETPRIV]), { uid: Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' })) });
  });

  test('a pid namespace whose /proc is the host\'s (no --mount-proc): the monitor and the profiler refuse with ERR_BPF_PROC_MOUNT naming the fix, and start with it', () => {
    const noMount = UNSHARE.filter((a) => a !== '--mount-proc');
    for (const what of ['bpf.monitor({ syscalls: true })', 'bpf.profile()']) {
      const r = child(`async (bpf) => { const m = ${what}; m.close(); return { pid: process.pid }; }`, noMount);
      assert.equal(r.error?.code, 'ERR_BPF_PROC_MOUNT', `${what}: ${JSON.stringify(r)}`);
      assert.match(r.error.message, /^\/proc is another pid namespace's: this process is pid 1 in its namespace and \d+ in \/proc, .*--mount-proc/, what);
      assert.deepEqual(child(`async (bpf) => { const m = ${what}; m.close(); return { pid: process.pid }; }`), { pid: 1 }, `${what} with --mount-proc`);
    }
  });

  test('no feedback: the library\'s threads stay out (their tids translated), the process\'s own writes are all in', () => {
    // as monitor.test.js's no-feedback test: each delivery of the perf
    // buffer is a write of the poller to libuv's eventfd, traced in turn
    const r = child(`async (bpf) => {
      const { objectPath } = require(${JSON.stringify(path.join(ROOT, 'lib', 'core', 'objects'))});
      const fs = require('node:fs');
      const m = bpf.monitor({ syscalls: true, offCpu: false, tcpRetransmits: false });
      const obj = bpf.loadBpfProgram(objectPath('file_io'));
      require(${JSON.stringify(path.join(ROOT, 'lib', 'core', 'compat'))}).chooseThreadStorage(obj);
      const ids = bpf.kernelIds(process.pid);
      obj.setGlobalVariable('target_pid', ids.tgid);
      let window = false;
      const seen = []; // [kernel tid, fd] of each write delivered in the window
      const buffer = obj.getMap('events').openPerfBuffer((cpu, e) => {
        if (window && e.syscall === 'FILE_IO_WRITE') seen.push([e.tid, e.fd]);
      }, { type: 'file_io_event', wakeupBytes: 1 });
      obj.attachTracepoint('syscalls', 'sys_enter_write', 'handle_enter_write');
      obj.attachTracepoint('syscalls', 'sys_exit_write', 'handle_exit_write');
      const writes = () => m.read().syscalls.find((s) => s.syscall === 'write')?.count ?? 0;
      const fd = fs.openSync('/dev/null', 'w');
      fs.writeSync(fd, 'x');
      await new Promise((r) => setTimeout(r, 300));
      window = true;
      const before = writes();
      for (let i = 0; i < 10; i++) fs.writeSync(fd, 'x');
      await new Promise((r) => setTimeout(r, 1000));
      const after = writes();
      window = false;
      buffer.close();
      obj.close();
      m.close();
      const library = new Set(bpf.libraryThreads().map((t) => ids.tids.get(t.tid)));
      return { pid: process.pid, counted: after - before, ours: seen.filter(([tid, f]) => tid === ids.tgid && f === fd).length,
        process: seen.filter(([tid]) => !library.has(tid)).length, library: seen.filter(([tid]) => library.has(tid)).length };
    }`);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.pid, 1);
    assert.equal(r.ours, 10, JSON.stringify(r));
    assert.ok(r.library > 0, `node-libbpf's poller wrote (for each delivery): ${JSON.stringify(r)}`);
    assert.equal(r.counted, r.process, `the monitor counts the writes of the process's threads (${r.process}), none of the library's ${r.library}`);
  });
});

/** The last JSON report of node_syscalls (its total), checked against the N requests of examples/workloads/http.js. */
function assertRequests(total, info, n, pid) {
  assert.equal(total.type, 'total');
  assert.equal(total.pid, pid);
  const files = new Map(total.files.map((f) => [f.file, f]));
  assert.deepEqual(files.get(info.file), { file: info.file, count: n, errors: 0 }, 'the page, once per request');
  assert.deepEqual(files.get(info.log), { file: info.log, count: n, errors: 0 }, 'the log, once per request');
  assert.deepEqual(total.endpoints, [{ endpoint: info.endpoint, family: 'AF_INET', count: n, errors: 0 }], 'one connect per request, nothing else');
  const syscalls = new Map(total.syscalls.map((s) => [s.syscall, s]));
  assert.equal(syscalls.get('connect').count, n);
  assert.equal(syscalls.get('accept4').count, n, 'the server accepted N connections');
}

describe('tools and pid namespaces', { skip, timeout: 120_000 }, () => {
  const N = 12;

  test('syscalls -p HOSTPID from the host, of a service that is pid 1 of its namespace: exactly its N requests', async () => {
    const unshare = spawn(UNSHARE[0], [...UNSHARE.slice(1), process.execPath, HTTP, '--requests', String(N)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    try {
      const [info] = await once(unshare, 'message');
      const hostPid = Number(fs.readFileSync(`/proc/${unshare.pid}/task/${unshare.pid}/children`, 'utf8').trim().split(' ')[0]);
      assert.match(fs.readFileSync(`/proc/${hostPid}/status`, 'utf8'), new RegExp(`^NSpid:\\s+${hostPid}\\s+1$`, 'm'), 'pid 1 of its namespace');
      const tool = startExample(SYSCALLS, ['--pid', String(hostPid), '--json', '-i', '1'], 60_000);
      await tool.ready;
      unshare.send('go');
      const [done] = await once(unshare, 'message');
      assert.deepEqual(done, { done: N });
      tool.child.kill('SIGINT');
      const { code, stdout, stderr } = await tool.exited;
      assert.equal(code, 0, stderr);
      assertRequests(JSON.parse(stdout.trim().split('\n').at(-1)), info, N, hostPid);
    } finally {
      unshare.kill(); // (its child, the workload, with it)
      if (unshare.connected) unshare.disconnect();
    }
  });

  test('syscalls -p NSPID inside a namespace, of a service in the same namespace: exactly its N requests', () => {
    // what the host test of node_syscalls does, run as pid 1 of a namespace
    const r = child(`async () => {
      const { fork, spawn } = require('node:child_process');
      const { once } = require('node:events');
      const workload = fork(${JSON.stringify(HTTP)}, ['--requests', '${N}'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      try {
        const [info] = await once(workload, 'message');
        const tool = spawn(process.execPath, [${JSON.stringify(SYSCALLS)}, '--pid', String(workload.pid), '--json', '-i', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '', stderr = '';
        tool.stdout.on('data', (d) => (stdout += d));
        await new Promise((resolve, reject) => {
          tool.stderr.on('data', (d) => { stderr += d; if (/^Tracing /m.test(stderr)) resolve(); });
          tool.on('exit', () => reject(new Error('the tool exited before tracing: ' + stderr)));
        });
        workload.send('go');
        const [done] = await once(workload, 'message');
        tool.kill('SIGINT');
        const [code] = await once(tool, 'exit');
        return { pid: workload.pid, info, done, code, stderr, total: JSON.parse(stdout.trim().split('\\n').at(-1)) };
      } finally {
        workload.kill();
      }
    }`);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.pid < 100, `a pid of the namespace: ${r.pid}`);
    assert.deepEqual(r.done, { done: N });
    assertRequests(r.total, r.info, N, r.pid);
  });

  test('event-loop -p HOSTPID of a Node.js in its own mount namespace, whose node is at a path the host does not have: its uprobes find it, K ticks exactly', async () => {
    const TICKS = 3;
    // /mnt/node-in-container exists only in the namespace (a tmpfs there, the host's node bound on it)
    const inside = '/mnt/node-in-container';
    assert.equal(fs.existsSync(inside), false, `${inside} must not exist on the host`);
    const setup = `mount -t tmpfs nlbpf /mnt && touch ${inside} && mount --bind ${process.execPath} ${inside} && exec ${inside} ${TICKS_FIXTURE} ticks ${TICKS}`;
    const unshare = spawn(UNSHARE[0], [...UNSHARE.slice(1), 'sh', '-c', setup], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    try {
      const [info] = await once(unshare, 'message');
      const hostPid = Number(fs.readFileSync(`/proc/${unshare.pid}/task/${unshare.pid}/children`, 'utf8').trim().split(' ')[0]);
      assert.equal(fs.readlinkSync(`/proc/${hostPid}/exe`), inside, 'the process runs the node at its path');
      const tool = startExample(EVENT_LOOP, ['--pid', String(hostPid), '--json'], 60_000);
      await tool.ready;
      unshare.send('go');
      await once(unshare, 'message'); // 'done'
      await sleep(100);
      tool.child.kill('SIGINT');
      const { code, stdout, stderr } = await tool.exited;
      assert.equal(code, 0, stderr);
      const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
      const iterations = lines.slice(0, -1);
      assert.ok(iterations.length > 0 && iterations.every((it) => it.pid === hostPid && it.tid === hostPid), 'the main thread of the process, by its kernel pid');
      assert.equal(iterations.filter((it) => it.phases_ms.timers >= info.timerBurnMs).length, TICKS, `${TICKS} timers phases of ${info.timerBurnMs} ms or more`);
      assert.equal(iterations.filter((it) => it.phases_ms.check >= info.immediateBurnMs).length, TICKS, `${TICKS} check phases of ${info.immediateBurnMs} ms or more`);
    } finally {
      unshare.kill();
      if (unshare.connected) unshare.disconnect();
    }
  });
});
