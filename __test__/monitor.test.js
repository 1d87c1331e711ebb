'use strict';
// bpf.monitor(): a process counting its own kernel-level behaviour. Each
// scenario runs in a child process of its own (a clean process: its
// syscalls are only what the scenario makes), against the real kernel.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const bpf = require('..');
const { sleep } = require('./helpers');

const ROOT = path.join(__dirname, '..');
const root = process.getuid?.() === 0;
const skip = root ? false : 'the monitor loads BPF programs: run the tests as root';
if (skip) console.log(`# skipping monitor.test.js: ${skip}`);

/** Runs `body` (a function's source, given `bpf`) in a new node process (optionally under `prefix`, e.g. setpriv); its JSON result. */
function child(body, { prefix = [], timeout = 60_000 } = {}) {
  const script = `const bpf = require(${JSON.stringify(ROOT)});
    (async () => { const out = await (${body})(bpf); process.stdout.write(JSON.stringify(out) + '\\n'); process.exit(0); })()
      .catch((e) => { process.stdout.write(JSON.stringify({ error: { code: e.code, message: e.message } }) + '\\n'); process.exit(0); });`;
  const [cmd, ...args] = [...prefix, process.execPath, '-e', script];
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout });
  assert.equal(r.status, 0, `child exited ${r.status} ${r.signal}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1));
}

// the scenario of the no-feedback and least-privilege tests: N writes of
// its own while the monitor counts writes (syscalls part). Node's own
// threads write now and then too (its platform's delayed-task scheduler
// wakes the loop through an eventfd): \`others\` is what they wrote over a
// window around the monitor's, from the kernel's per-thread write counts
// (/proc/self/task/*/io syscw), node-libbpf's threads left out as the
// monitor leaves them out.
const WRITES = `async (bpf) => {
  const fs = require('node:fs');
  const m = bpf.monitor({ syscalls: true, files: true, connects: true, eventLoop: true });
  const library = new Set(bpf.libraryThreads().map((t) => t.tid));
  const othersWrote = () => fs.readdirSync('/proc/self/task').map(Number).filter((tid) => tid !== process.pid && !library.has(tid))
    .reduce((sum, tid) => { try { return sum + Number(/syscw: (\\d+)/.exec(fs.readFileSync('/proc/self/task/' + tid + '/io', 'utf8'))[1]); } catch { return sum; } }, 0);
  const writes = () => m.read().syscalls.find((s) => s.syscall === 'write')?.count ?? 0;
  const fd = fs.openSync('/dev/null', 'w');
  const othersBefore = othersWrote();
  const before = writes();
  for (let i = 0; i < 25; i++) fs.writeSync(fd, 'x');
  const after = writes();
  const others = othersWrote() - othersBefore;
  const parts = m.parts;
  m.close();
  return { before, after, others, parts };
}`;

/** The monitor counted the 25 writes, and none but those of the process's other threads meanwhile (exact when they wrote nothing). */
function assertWrites(r) {
  const counted = r.after - r.before;
  assert.ok(counted >= 25 && counted <= 25 + r.others, `counted ${counted} writes: 25 of the test, and Node's own threads wrote ${r.others} around it`);
}

describe('bpf.libraryThreads()', () => {
  test('the poller and the release thread, by their kernel tids, threads of this process named as listed', () => {
    const threads = bpf.libraryThreads();
    assert.deepEqual(threads.map((t) => t.name).sort(), ['node-libbpf-poller', 'node-libbpf-release']);
    for (const t of threads) {
      assert.equal(fs.readFileSync(`/proc/self/task/${t.tid}/comm`, 'utf8').trim(), t.name.slice(0, 15));
    }
    assert.deepEqual(bpf.libraryThreads(), threads, 'the same list every time');
  });
});

describe('bpf.monitor()', { skip }, () => {
  test('counts exactly the writes the process makes', () => {
    const r = child(WRITES);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assertWrites(r);
  });

  test('no feedback: an idle process streaming records of its own writes counts exactly the writes of its own threads, none of the poller\'s', async () => {
    // file_io traces the writes of this process into a perf buffer (the
    // naive tracer: every thread); each delivery is a write of the poller to
    // libuv's eventfd, traced in turn. Node's own threads write now and then
    // too (its platform's delayed-task scheduler): those are the process's.
    const r = child(`async (bpf) => {
      const { objectPath } = require(${JSON.stringify(path.join(ROOT, 'lib', 'core', 'objects'))});
      const fs = require('node:fs');
      const m = bpf.monitor({ syscalls: true, offCpu: false, tcpRetransmits: false });
      const obj = bpf.loadBpfProgram(objectPath('file_io'));
      require(${JSON.stringify(path.join(ROOT, 'lib', 'core', 'compat'))}).chooseThreadStorage(obj); // a hash by thread before 5.11
      obj.setGlobalVariable('target_pid', process.pid);
      let window = false;
      const seen = []; // [tid, fd] of each write delivered in the window
      const buffer = obj.getMap('events').openPerfBuffer((cpu, e) => {
        if (window && e.syscall === 'FILE_IO_WRITE') seen.push([e.tid, e.fd]);
      }, { type: 'file_io_event', wakeupBytes: 1 });
      obj.attachTracepoint('syscalls', 'sys_enter_write', 'handle_enter_write');
      obj.attachTracepoint('syscalls', 'sys_exit_write', 'handle_exit_write');
      const writes = () => m.read().syscalls.find((s) => s.syscall === 'write')?.count ?? 0;
      const fd = fs.openSync('/dev/null', 'w');
      fs.writeSync(fd, 'x'); // a first record: deliveries begin
      await new Promise((r) => setTimeout(r, 300));
      window = true;
      const before = writes();
      for (let i = 0; i < 10; i++) fs.writeSync(fd, 'x');
      await new Promise((r) => setTimeout(r, 1000)); // idle, but for the deliveries
      const after = writes();
      window = false;
      buffer.close();
      obj.close();
      m.close();
      const library = new Set(bpf.libraryThreads().map((t) => t.tid));
      return { counted: after - before, ours: seen.filter(([tid, f]) => tid === process.pid && f === fd).length,
        process: seen.filter(([tid]) => !library.has(tid)).length, library: seen.filter(([tid]) => library.has(tid)).length };
    }`);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.ours, 10, JSON.stringify(r));
    assert.ok(r.library > 0, `node-libbpf's poller wrote (for each delivery): ${JSON.stringify(r)}`);
    assert.equal(r.counted, r.process, `the monitor counts the writes of the process's threads (${r.process}: 10 of the test, the rest Node's), none of the library's ${r.library}`);
  });

  test('offCpu: the main thread blocked K times in futex (Atomics.wait) shows as futex, blocked, for as long as it waited', () => {
    // the syscall a sleeping thread is in comes from its saved registers:
    // bpf_task_pt_regs() on 5.15+, the top of its kernel stack before
    const r = child(`async (bpf) => {
      const m = bpf.monitor({ offCpu: true, tcpRetransmits: false });
      const futex = () => m.read().offCpu.reasons.find((x) => x.reason === 'futex') ?? { count: 0, seconds: 0 };
      const blocked = () => m.read().offCpu.blocked;
      const [f0, b0] = [futex(), blocked()];
      const cell = new Int32Array(new SharedArrayBuffer(4));
      for (let i = 0; i < 5; i++) Atomics.wait(cell, 0, 0, 50); // 50 ms each, nothing wakes it
      const [f1, b1] = [futex(), blocked()];
      m.close();
      const le100ms = bpf.Monitor.BUCKET_BOUNDS.findIndex((b) => b >= 0.1);
      return { count: f1.count - f0.count, seconds: f1.seconds - f0.seconds, blocked: b1.count - b0.count,
        under100ms: b1.buckets[le100ms] - b0.buckets[le100ms], bound: bpf.Monitor.BUCKET_BOUNDS[le100ms] };
    }`);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.ok(r.count >= 5, `5 waits in futex: ${JSON.stringify(r)}`);
    // off the CPU from the switch out to the switch back in: a little less than the 250 ms asked
    assert.ok(r.seconds >= 0.2 && r.seconds < 5, `~0.25 s off the CPU in futex: ${JSON.stringify(r)}`);
    assert.ok(r.blocked >= 5 && r.under100ms >= 5, `5 blocked intervals under ${r.bound} s: ${JSON.stringify(r)}`);
  });

  test('unknown parts and bad options are coded errors', () => {
    // wrong on purpose: the casts let them past the type check
    assert.throws(() => bpf.monitor(/** @type {any} */ ({ sycalls: true })), { code: 'ERR_BPF_UNKNOWN_NAME', message: /sycalls.*syscalls/ });
    assert.throws(() => bpf.monitor({ top: 0 }), { code: 'ERR_BPF_INVALID_VALUE' });
    assert.throws(() => bpf.monitor(/** @type {any} */ (5)), { code: 'ERR_INVALID_ARG_TYPE' });
    assert.throws(() => bpf.monitor(/** @type {any} */ ({ syscalls: 'yes' })), { code: 'ERR_INVALID_ARG_TYPE', message: /syscalls: yes/ });
  });

  test('a read takes no syscall for the arrays, and its histograms have every bucket', () => {
    const r = child(`async (bpf) => {
      const m = bpf.monitor({ syscalls: true, eventLoop: true });
      m.read();
      const bpfCalls = () => m.read().syscalls.find((s) => s.syscall === 'bpf')?.count ?? 0;
      const a = bpfCalls();
      const b = bpfCalls();
      const snap = m.read();
      const t = process.hrtime.bigint();
      for (let i = 0; i < 20; i++) m.read();
      const us = Number(process.hrtime.bigint() - t) / 20e3;
      m.close();
      return { perRead: b - a, buckets: snap.syscalls.map((s) => s.duration.buckets.length), phases: snap.eventLoop.map((p) => p.phase), us };
    }`);
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    // the tables (files, connects, retransmits: off here but tcpRetransmits) take one batch call each
    assert.ok(r.perRead <= 2, `bpf() calls per read: ${r.perRead}`);
    assert.ok(r.buckets.every((n) => n === bpf.Monitor.BUCKET_BOUNDS.length));
    assert.ok(r.phases.includes('poll') && r.phases.includes('timers'), JSON.stringify(r.phases));
    console.log(`# a read of the default parts and syscalls: ${r.us.toFixed(0)} µs`);
  });
});

describe('least privilege', { skip }, () => {
  // a user that is not root, with CAP_BPF and CAP_PERFMON only
  // before 5.11 the kernel charges BPF memory to RLIMIT_MEMLOCK, which
  // libbpf can raise only with CAP_SYS_RESOURCE: nobody gets it raised by
  // root, as a unit's LimitMEMLOCK=infinity does (else EPERM at the first map)
  const [major, minor] = require('node:os').release().split('.').map(Number);
  const memlock = major < 5 || (major === 5 && minor < 11) ? ['prlimit', '--memlock=unlimited'] : [];
  const setpriv = [...memlock, 'setpriv', '--reuid', 'nobody', '--regid', 'nogroup', '--clear-groups'];
  const caps = ['--inh-caps', '+bpf,+perfmon', '--ambient-caps', '+bpf,+perfmon'];
  const canRun = spawnSync(setpriv[0], [...setpriv.slice(1), process.execPath, '-e', `require(${JSON.stringify(ROOT)})`], { encoding: 'utf8' });
  const why = canRun.status === 0 ? false : `nobody cannot load the package from ${ROOT} (${canRun.stderr.split('\n').find((l) => l.includes('Error')) ?? canRun.status})`;
  if (why) console.log(`# skipping the least-privilege tests: ${why}`);

  test('as nobody with CAP_BPF + CAP_PERFMON: every part attaches and the counts are exact', { skip: why }, () => {
    const r = child(WRITES, { prefix: [...setpriv, ...caps] });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.deepEqual(r.parts, bpf.Monitor.PARTS);
    assertWrites(r);
  });

  test('as nobody without them: a coded EPERM that names them', { skip: why }, () => {
    const r = child(WRITES, { prefix: setpriv });
    assert.equal(r.error?.code, 'EPERM', JSON.stringify(r));
    assert.match(r.error.message, /CAP_BPF/);
    assert.match(r.error.message, /CAP_PERFMON/);
  });

  test('features() tells what is not permitted from what the kernel lacks; a tracepoint attach says tracefs is unreadable, not unmounted', { skip: why }, () => {
    const r = child(`async (bpf) => {
      const f = bpf.features();
      const obj = bpf.loadBpfProgram(${JSON.stringify(path.join(ROOT, 'bpf', require('../lib/core/objects').bpfArch(), 'file_io.bpf.o'))});
      let error;
      try { obj.attachTracepoint('syscalls', 'sys_enter_write', 'handle_enter_write'); } catch (e) { error = { code: e.code, message: e.message }; }
      obj.close();
      return { f, error };
    }`, { prefix: [...setpriv, ...caps] });
    const mode = fs.statSync('/sys/kernel/tracing').mode & 0o777;
    assert.equal(r.f.ringBuffer, true);
    assert.deepEqual(r.f.capabilities, ['CAP_BPF', 'CAP_PERFMON']);
    if (mode & 0o005) return; // tracefs readable by others here: nothing refused
    assert.equal(r.f.tracepoints, true, 'the kernel has tracepoints');
    assert.ok(r.f.notPermitted.some((n) => n.startsWith('tracepoints:')), JSON.stringify(r.f.notPermitted));
    assert.equal(r.error?.code, 'EPERM', JSON.stringify(r.error));
    assert.match(r.error.message, /mounted at .* may not read it/);
    assert.match(r.error.message, /raw_tp/);
  });
});

describe('clean exit', { skip }, () => {
  /** The ids of the BPF programs process `pid` holds (its fds' fdinfo). */
  const progsOf = (pid) => {
    const ids = [];
    for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) !== 'anon_inode:bpf-prog') continue;
        const id = /^prog_id:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'));
        if (id) ids.push(Number(id[1]));
      } catch {} // closed meanwhile
    }
    return ids;
  };
  const alive = (ids) => {
    const now = new Set(JSON.parse(execFileSync('bpftool', ['-j', 'prog', 'show'], { encoding: 'utf8' }) || '[]').map((p) => p.id));
    return ids.filter((id) => now.has(id));
  };

  for (const how of ['close', 'exit', 'SIGKILL']) {
    test(`after ${how === 'close' ? 'm.closeAsync()' : how === 'exit' ? 'process exit' : 'SIGKILL'}, none of the monitor's programs is left`, async () => {
      const script = `const bpf = require(${JSON.stringify(ROOT)});
        const m = bpf.monitor({ syscalls: true, files: true, connects: true, eventLoop: true });
        process.stdout.write('ready\\n');
        process.stdin.once('data', async () => {
          ${how === 'close' ? "await m.closeAsync(); process.stdout.write('closed\\n'); setInterval(() => {}, 1000);" : 'process.exit(0);'}
        });`;
      const c = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
      let out = '';
      c.stdout.on('data', (d) => (out += d));
      const exited = new Promise((r) => c.on('exit', r));
      for (let i = 0; i < 300 && !out.includes('ready'); i++) await sleep(100);
      assert.ok(out.includes('ready'), 'the monitor started');
      const ids = progsOf(c.pid);
      // sys_enter, sys_exit, sched_switch, two TCP ones and the phase programs this kernel takes
      assert.ok(ids.length >= 6, `the monitor's programs, held by pid ${c.pid}: ${ids}`);
      if (how === 'SIGKILL') c.kill('SIGKILL');
      else c.stdin.write('\n');
      if (how === 'close') {
        for (let i = 0; i < 300 && !out.includes('closed'); i++) await sleep(100);
        // maps go a grace period after their programs
        for (let i = 0; i < 50 && alive(ids).length; i++) await sleep(100);
        assert.deepEqual(alive(ids), [], 'closed, the process still running');
        c.kill('SIGKILL');
      }
      await exited;
      for (let i = 0; i < 50 && alive(ids).length; i++) await sleep(100);
      assert.deepEqual(alive(ids), []);
    });
  }
});

describe('tcpRetransmits', { skip }, () => {
  const { createVethPair } = require('../lib/host/netns');
  const PEER = path.join(ROOT, 'examples', 'workloads', 'tcp_peer.js');
  const PORT = 9000;
  const BYTES = 128 * 1024;
  /** @type {string | false} */
  let why = false;
  try {
    execFileSync('sh', ['-c', 'command -v nft && command -v nstat'], { stdio: 'ignore' });
    createVethPair('probe').destroy();
  } catch (err) {
    why = `no network namespaces with nftables here: ${err.message.split('\n')[0]}`;
  }
  if (why) console.log(`# skipping the tcpRetransmits test: ${why}`);

  test('the segments a connection of the process retransmitted over a link dropping 20% of its packets, as the kernel counts them', { skip: why }, async (t) => {
    const link = createVethPair('monitor-test');
    t.after(() => link.destroy());
    const [, serverAddr] = link.ipv4;
    link.dropRandom(1, 20, { dport: PORT });
    const server = link.spawn(1, [process.execPath, PEER, 'server', serverAddr, String(PORT)], { stdio: ['pipe', 'pipe', 'inherit'] });
    t.after(() => server.kill('SIGKILL'));
    await new Promise((resolve) => server.stdout.once('data', resolve)); // {"ready"}
    // a client monitoring itself: one transfer, then what it counted
    const script = `const bpf = require(${JSON.stringify(ROOT)});
      const net = require('node:net');
      const m = bpf.monitor({ offCpu: false });
      const sock = net.connect(${PORT}, ${JSON.stringify(serverAddr)}, () => sock.write('${BYTES}\\n' + 'x'.repeat(${BYTES})));
      sock.on('data', (d) => {
        if (!String(d).startsWith('ok')) return;
        // the kernel's count first, then the monitor's: a retransmit between them is the monitor's alone (after
        // them, the FIN the link drops is retransmitted by the kernel for the closed socket: counted by neither)
        const nstat = Number(/^TcpRetransSegs\\s+(\\d+)/m.exec(require('node:child_process').execFileSync('nstat', ['-asz', 'TcpRetransSegs'], { encoding: 'utf8' }))[1]);
        const r = m.read().tcpRetransmits;
        sock.destroy();
        m.close();
        process.stdout.write(JSON.stringify({ rows: r, nstat }) + '\\n');
      });`;
    const client = link.spawn(0, [process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    client.stdout.on('data', (d) => (out += d));
    await Promise.race([new Promise((r) => client.on('exit', r)), sleep(60_000)]);
    const { rows, nstat } = JSON.parse(out.trim());
    t.diagnostic(`monitor: ${JSON.stringify(rows)}; nstat TcpRetransSegs: ${nstat}; dropped ${link.dropped(1)}`);
    assert.ok(link.dropped(1) > 0, 'nftables dropped packets');
    assert.equal(rows.length, 1, 'one endpoint');
    assert.equal(rows[0].endpoint, `${serverAddr}:${PORT}`);
    // nstat leaves out retransmits whose skb was still queued in the host (EBUSY); the tracepoint has them
    assert.ok(rows[0].segments >= nstat && nstat >= 1, `segments ${rows[0].segments}, nstat ${nstat}`);
  });
});
