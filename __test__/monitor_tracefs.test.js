'use strict';
// features() and the monitor change nothing on the system: with tracefs
// unmounted (in a private mount namespace of a child process, `unshare -m`,
// so the host's mounts are never touched), they mount no tracefs, and a
// SEC("tp/...") attach throws ERR_BPF_TRACEFS naming the mount command
// instead of mounting it. debugfs is mounted in the namespace (where it is
// not already) so that a path walk into /sys/kernel/debug/tracing, which
// automounts a tracefs there, would be seen too.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { objectPath } = require('./helpers');

const ROOT = path.join(__dirname, '..');
const why = process.getuid?.() !== 0 ? 'needs root (a mount namespace, BPF)' : spawnSync('unshare', ['-m', 'true']).status !== 0 ? 'unshare -m does not work here' : false;
if (why) console.log(`# skipping monitor_tracefs.test.js: ${why}`);

/** Runs `body` (a function's source, given `bpf` and `mounts()`) in a new node process in a private mount namespace without tracefs; its JSON result. */
function inNamespaceWithoutTracefs(body) {
  const script = `
    const { execFileSync } = require('node:child_process');
    const fs = require('node:fs');
    const mounts = () => fs.readFileSync('/proc/self/mounts', 'utf8').split('\\n').filter((l) => l.split(' ')[2] === 'tracefs').length;
    for (let i = 0; i < 4 && mounts() > 0; i++) {
      for (const dir of ['/sys/kernel/debug/tracing', '/sys/kernel/tracing']) {
        try { execFileSync('umount', [dir], { stdio: 'ignore' }); } catch {}
      }
    }
    if (!fs.readFileSync('/proc/self/mounts', 'utf8').split('\\n').some((l) => l.split(' ')[1] === '/sys/kernel/debug')) {
      try { execFileSync('mount', ['-t', 'debugfs', 'debugfs', '/sys/kernel/debug'], { stdio: 'ignore' }); } catch {} // (a kernel without debugfs: the automount case is moot)
    }
    const bpf = require(${JSON.stringify(ROOT)});
    (async () => { const out = await (${body})(bpf, mounts); process.stdout.write(JSON.stringify(out) + '\\n'); process.exit(0); })()
      .catch((e) => { process.stdout.write(JSON.stringify({ error: { code: e.code, message: e.message, stack: e.stack } }) + '\\n'); process.exit(0); });`;
  const r = spawnSync('unshare', ['-m', '--propagation', 'private', process.execPath, '-e', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `child exited ${r.status} ${r.signal}: ${r.stderr}`);
  const out = JSON.parse(r.stdout.trim().split('\n').at(-1));
  assert.equal(out.error, undefined, JSON.stringify(out.error));
  return { ...out, stderr: r.stderr };
}

test('features() with tracefs unmounted: tracepoints available, tracefs undefined, a note saying how to mount it, and no tracefs mounted', { skip: why }, () => {
  const out = inNamespaceWithoutTracefs(`async (bpf, mounts) => {
    const before = mounts();
    const f = bpf.features();
    return { before, after: mounts(), tracepoints: f.tracepoints, tracefs: f.tracefs ?? null, notes: f.notes, notPermitted: f.notPermitted };
  }`);
  assert.equal(out.before, 0);
  assert.equal(out.after, 0, 'features() mounted no tracefs');
  assert.equal(out.tracepoints, true);
  assert.equal(out.tracefs, null);
  assert.deepEqual(out.notPermitted, []);
  assert.equal(out.notes.length, 1);
  assert.match(out.notes[0], /^tracepoints: tracefs is not mounted .*mount -t tracefs tracefs \/sys\/kernel\/tracing/);
  assert.equal(out.stderr, '');
});

test('the monitor, every part, with tracefs unmounted: counts exactly and mounts no tracefs from start to close', { skip: why }, () => {
  const K = 7;
  const out = inNamespaceWithoutTracefs(`async (bpf, mounts) => {
    const net = require('node:net');
    const before = mounts();
    const m = bpf.monitor({ syscalls: true, files: true, connects: true, eventLoop: true, offCpu: true, tcpRetransmits: true, top: 1000 });
    const file = '/tmp/node-libbpf-absent-' + process.pid;
    for (let i = 0; i < ${K}; i++) try { fs.openSync(file, 'r'); } catch {}
    const server = net.createServer((s) => s.end()).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const endpoint = '127.0.0.1:' + server.address().port;
    await new Promise((resolve, reject) => net.connect(server.address().port, '127.0.0.1').on('close', resolve).on('error', reject).resume());
    server.close();
    const snap = m.read();
    m.close();
    return {
      before, after: mounts(), parts: Object.keys(snap).sort(), file,
      opens: snap.files.find((f) => f.path === file),
      connects: snap.connects.find((c) => c.endpoint === endpoint),
    };
  }`);
  assert.equal(out.before, 0);
  assert.equal(out.after, 0, 'the monitor mounted no tracefs');
  assert.deepEqual(out.parts, ['connects', 'eventLoop', 'files', 'offCpu', 'syscalls', 'tableOverflows', 'tcpRetransmits']);
  assert.deepEqual(out.opens, { path: out.file, count: K, errors: K });
  assert.deepEqual(out.connects, { endpoint: out.connects?.endpoint, count: 1, errors: 0 });
});

test('with tracefs unmounted, a SEC("tp/...") attach and a t: probe throw ERR_BPF_TRACEFS naming the mount command, and mount nothing', { skip: why }, () => {
  const out = inNamespaceWithoutTracefs(`async (bpf, mounts) => {
    const before = mounts();
    const caught = (fn) => { try { fn(); return null; } catch (e) { return { code: e.code, message: e.message }; } };
    const obj = bpf.loadBpfProgram(${JSON.stringify(objectPath('openat'))});
    const attachTracepoint = caught(() => obj.attachTracepoint('syscalls', 'sys_enter_openat', 'handle_enter_openat'));
    const attach = caught(() => obj.attach('handle_enter_openat'));
    obj.close();
    const probes = require(${JSON.stringify(path.join(ROOT, 'lib', 'tools', 'probes'))});
    const expand = caught(() => probes.expand(['t:syscalls:sys_enter_openat']));
    return { before, after: mounts(), attachTracepoint, attach, expand };
  }`);
  assert.equal(out.before, 0);
  assert.equal(out.after, 0, 'nothing mounted tracefs');
  for (const what of ['attachTracepoint', 'attach', 'expand']) {
    assert.equal(out[what]?.code, 'ERR_BPF_TRACEFS', `${what}: ${JSON.stringify(out[what])}`);
    assert.match(out[what].message, /tracefs is not mounted.*mount -t tracefs tracefs \/sys\/kernel\/tracing.*raw_tp/, what);
  }
  assert.match(out.attachTracepoint.message, /^tracepoint syscalls:sys_enter_openat: /);
  assert.equal(out.stderr, '');
});
