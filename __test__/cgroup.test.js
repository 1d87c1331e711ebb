'use strict';
// --cgroup PATH and --per-container of the system-wide tools (lib/host/cgroup.js,
// bpf/filter.bpf.h): the same workload in two cgroups of its own, each
// counted exactly, in the kernel; container ids from the cgroup paths of
// the runtimes; and the perf map of a Node.js in a PID and mount namespace
// of its own (lib/host/procfs.js perfMapPath).
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { bpf, getppidLoop, startExample, throwsCode, waitFor } = require('./helpers');
const { objectPath } = require('../lib/core/objects');
const { chooseThreadStorage } = require('../lib/core/compat');
const { cgroupV2Root, resolveCgroup, parseContainer, CgroupNames, containerLabel, configureCgroup } = require('../lib/host/cgroup');
const { perfMapPath, namespacePid } = require('../lib/host/procfs');

const EXAMPLES = path.join(__dirname, '..', 'examples');
const TIMEOUT_MS = 60_000;
const ID = 'a'.repeat(48) + '0123456789abcdef'; // 64 hex digits
const ROOT = cgroupV2Root();

const skip = process.getuid?.() !== 0 ? 'the tools load BPF programs and the test makes cgroups: run the tests as root' : !ROOT ? 'no cgroup v2 hierarchy mounted' : false;
if (skip) console.log(`# skipping the tools in cgroup.test.js: ${skip}`);

describe('lib/cgroup: container ids from cgroup paths', () => {
  /** @type {[string, object][]} */
  const cases = [
    // podman (systemd driver), and its conmon (no container); a container with systemd inside
    [`/machine.slice/libpod-${ID}.scope`, { containerId: ID }],
    [`/machine.slice/libpod-conmon-${ID}.scope`, {}],
    [`/machine.slice/libpod-${ID}.scope/container`, { containerId: ID }],
    [`/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-${ID}.scope`, { containerId: ID }],
    // podman, cgroupfs driver
    [`/libpod_parent/libpod-${ID}`, { containerId: ID }],
    // docker: systemd driver, cgroupfs driver
    [`/system.slice/docker-${ID}.scope`, { containerId: ID }],
    [`/docker/${ID}`, { containerId: ID }],
    // kubelet, systemd driver: containerd and cri-o
    [`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b3f7c2e_6d1a_4f0e_9a3b_2c4d5e6f7a8b.slice/cri-containerd-${ID}.scope`, { containerId: ID, podUid: '1b3f7c2e-6d1a-4f0e-9a3b-2c4d5e6f7a8b' }],
    [`/kubepods.slice/kubepods-pod1b3f7c2e_6d1a_4f0e_9a3b_2c4d5e6f7a8b.slice/crio-${ID}.scope`, { containerId: ID, podUid: '1b3f7c2e-6d1a-4f0e-9a3b-2c4d5e6f7a8b' }],
    [`/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1b3f7c2e_6d1a_4f0e_9a3b_2c4d5e6f7a8b.slice/crio-conmon-${ID}.scope`, { podUid: '1b3f7c2e-6d1a-4f0e-9a3b-2c4d5e6f7a8b' }],
    // the pod's slice itself: a pod, no container
    ['/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b3f7c2e_6d1a_4f0e_9a3b_2c4d5e6f7a8b.slice', { podUid: '1b3f7c2e-6d1a-4f0e-9a3b-2c4d5e6f7a8b' }],
    // kubelet, cgroupfs driver
    [`/kubepods/burstable/pod1b3f7c2e-6d1a-4f0e-9a3b-2c4d5e6f7a8b/${ID}`, { containerId: ID, podUid: '1b3f7c2e-6d1a-4f0e-9a3b-2c4d5e6f7a8b' }],
    // no container: a service, a session, the root, a shorter hex name
    ['/system.slice/sshd.service', {}],
    ['/user.slice/user-0.slice/session-3.scope', {}],
    ['/', {}],
    [`/system.slice/docker-${ID.slice(1)}.scope`, {}],
  ];
  for (const [p, want] of cases) {
    test(p, () => assert.deepEqual(JSON.parse(JSON.stringify(parseContainer(p))), want));
  }

  test('the CONTAINER column: 12 characters of the id, else the path', () => {
    assert.equal(containerLabel({ cgroup: `/docker/${ID}`, containerId: ID }), 'aaaaaaaaaaaa');
    assert.equal(containerLabel({ cgroup: '/system.slice/sshd.service' }), '/system.slice/sshd.service');
  });

  test('the v2 mount: /sys/fs/cgroup on a v2 host, the unified one on a hybrid host, none on v1', () => {
    const v1 = 'cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n';
    assert.equal(cgroupV2Root('cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n'), '/sys/fs/cgroup');
    assert.equal(cgroupV2Root(`tmpfs /sys/fs/cgroup tmpfs rw 0 0\n${v1}cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n`), '/sys/fs/cgroup/unified');
    assert.equal(cgroupV2Root(v1), undefined);
    assert.equal(cgroupV2Root('cgroup2 /mnt/cg\\040v2 cgroup2 rw 0 0\n'), '/mnt/cg v2', 'octal escapes of /proc/self/mounts');
  });
});

describe('lib/cgroup: paths and ids', { skip: ROOT ? false : 'no cgroup v2 hierarchy mounted' }, () => {
  test('the root, absolute or relative to the mount: id 1 (the root directory\'s inode), level 0', () => {
    const want = { id: fs.statSync(ROOT, { bigint: true }).ino, path: '/', level: 0 };
    assert.deepEqual(resolveCgroup(ROOT), want);
    assert.deepEqual(resolveCgroup('/'), want, '/ is no cgroup v2 directory: / of the v2 mount');
  });

  test('no such cgroup, and a directory of no cgroup v2: ERR_BPF_INVALID_VALUE naming the path and the fix', () => {
    throwsCode(assert, () => resolveCgroup('nlbpf-no-such-cgroup'), 'ERR_BPF_INVALID_VALUE', /cgroup nlbpf-no-such-cgroup: no such directory \(give a cgroup v2 directory, absolute or relative to /);
    throwsCode(assert, () => resolveCgroup('/proc/self'), 'ERR_BPF_INVALID_VALUE', /cgroup \/proc\/self: \/proc\/\d+ is not a cgroup v2 directory \(give one under /);
    throwsCode(assert, () => resolveCgroup('x', null), 'ERR_BPF_INVALID_VALUE', /no cgroup v2 hierarchy mounted/);
  });

  test('CgroupNames: a cgroup made after the first walk is named after refresh(); one removed stays named; an unknown id is gone', { skip }, () => {
    const names = new CgroupNames();
    assert.deepEqual(names.get(1), { cgroupId: 1, cgroup: '/' });
    const dir = path.join(ROOT, `nlbpf-test-${process.pid}-names`);
    fs.mkdirSync(dir);
    const id = fs.statSync(dir).ino;
    try {
      assert.equal(names.get(id).cgroup, 'unknown (cgroup gone)', 'walked once already in this interval');
      names.refresh();
      assert.deepEqual(names.get(id), { cgroupId: id, cgroup: `/${path.basename(dir)}` });
    } finally {
      fs.rmdirSync(dir);
    }
    names.refresh();
    assert.equal(names.get(id).cgroup, `/${path.basename(dir)}`, 'named as it was');
  });
});

/** Runs `examples/<tool>.js args` until it exits; `ready` once it traces. */
const tool = (name, args) => startExample(path.join(EXAMPLES, `${name}.js`), args, TIMEOUT_MS);

describe('the tools with --cgroup and --per-container', { skip, timeout: 4 * TIMEOUT_MS }, () => {
  const K = { a: 300, b: 500 };
  const dirs = {};
  before(() => {
    for (const name of ['a', 'b']) {
      dirs[name] = path.join(ROOT, `nlbpf-test-${process.pid}-${name}`);
      fs.mkdirSync(dirs[name]);
    }
  });
  after(() => {
    for (const dir of Object.values(dirs)) fs.rmdirSync(dir);
  });

  /** getppid_loop in cgroup a (K.a calls), in b (K.b) and in this test's cgroup (77), started once `tools` trace, and the tools' outputs. */
  async function workloads(tools) {
    await Promise.all(tools.map((t) => t.ready));
    const loops = { a: getppidLoop(K.a), b: getppidLoop(K.b), here: getppidLoop(77) };
    for (const name of ['a', 'b']) fs.writeFileSync(path.join(dirs[name], 'cgroup.procs'), String(loops[name].child.pid));
    for (const loop of Object.values(loops)) loop.go();
    for (const loop of Object.values(loops)) assert.equal((await loop.exited).code, 0, 'the loop exits cleanly');
    // the cgroups are empty again: the after hook can remove them
    assert.ok(await waitFor(() => ['a', 'b'].every((n) => fs.readFileSync(path.join(dirs[n], 'cgroup.procs'), 'utf8') === '')));
    /** @type {any[] & { pids?: { a: number, b: number } }} */
    const outs = [];
    for (const t of tools) {
      const out = await t.stop();
      assert.equal(out.code, 0, `the tool exits cleanly; stderr:\n${out.stderr}`);
      outs.push(out);
    }
    outs.pids = { a: loops.a.child.pid, b: loops.b.child.pid };
    return outs;
  }

  const probe = 't:syscalls:sys_enter_getppid';
  const total = (stdout) => JSON.parse(stdout.trim().split('\n').pop());

  test('funccount and syscall_hist, --cgroup: the calls of that cgroup, exactly; --per-container: a row per cgroup, with its path', async () => {
    const rel = (name) => `/${path.basename(dirs[name])}`;
    const tools = [
      tool('funccount', ['--cgroup', dirs.a, '-j', probe]),
      tool('funccount', ['--cgroup', rel('b').slice(1), '-j', probe]), // relative to the v2 mount
      tool('funccount', ['--per-container', '-j', probe]),
      tool('syscall_hist', ['--cgroup', dirs.b, '-s', 'getppid', '-j']),
      tool('syscall_hist', ['--per-container', '-s', 'getppid', '-j']),
      tool('trace_file_io', ['--cgroup', dirs.a, '-j']),
    ];
    const outs = await workloads(tools);
    const [a, b, perContainer, hist, histPerContainer, fileIo] = outs;
    assert.match(a.stderr, new RegExp(`^Tracing every process in cgroup ${rel('a')} until Ctrl\\+C`, 'm'));
    assert.deepEqual(total(a.stdout).counts, [{ probe: 'syscalls:sys_enter_getppid', count: K.a }], a.stdout);
    assert.deepEqual(total(b.stdout).counts, [{ probe: 'syscalls:sys_enter_getppid', count: K.b }], b.stdout);
    const rows = total(perContainer.stdout).counts;
    for (const name of ['a', 'b']) {
      const row = rows.find((r) => r.cgroup === rel(name));
      assert.deepEqual(row, { cgroupId: fs.statSync(dirs[name]).ino, cgroup: rel(name), probe: 'syscalls:sys_enter_getppid', count: K[name] }, perContainer.stdout);
    }
    assert.ok(rows.every((r) => r.cgroupId > 0 && r.cgroup && r.count > 0), perContainer.stdout);
    assert.equal(new Set(rows.map((r) => r.cgroupId)).size, rows.length, 'one row per cgroup');
    const calls = total(hist.stdout).syscalls;
    assert.deepEqual(calls.map((s) => [s.syscall, s.count]), [['getppid', K.b]], hist.stdout);
    const perCgroup = total(histPerContainer.stdout).syscalls;
    for (const name of ['a', 'b']) {
      const row = perCgroup.find((r) => r.cgroup === rel(name));
      assert.deepEqual([row?.cgroupId, row?.syscall, row?.count], [fs.statSync(dirs[name]).ino, 'getppid', K[name]], histPerContainer.stdout);
      assert.equal(row.buckets.reduce((n, bucket) => n + bucket.count, 0), K[name], 'its histogram counts each call once');
    }
    // the article's tracers (lib/tools/trace_syscalls.js): the loop in cgroup a writes its result once, at exit
    const events = fileIo.stdout.split('\n').filter((l) => l.startsWith('{"')).map((l) => JSON.parse(l)).filter((e) => e.syscall);
    assert.deepEqual([...new Set(events.map((e) => e.pid))], [outs.pids.a], fileIo.stdout);
    assert.deepEqual(events.map((e) => e.syscall), ['write'], fileIo.stdout);
  });

  test('the walk up a thread\'s cgroups (kernels before 6.4; forced here), at offsets from the kernel\'s BTF: the threads of the cgroup and below, as the helper counts them', async () => {
    // bpf/file_io.bpf.o: the loop writes its result once, at exit, in its cgroup (it was moved while blocked in read)
    const sub = path.join(dirs.a, 'sub');
    fs.mkdirSync(sub);
    const tracers = [];
    try {
      const trace = (dir, walk) => {
        const obj = bpf.loadBpfProgram(objectPath('file_io'));
        tracers.push(obj);
        chooseThreadStorage(obj); // (5.10 has no task storage: the tools choose so too)
        configureCgroup(obj, { cgroup: resolveCgroup(dir) });
        if (walk) obj.setGlobalVariable('cgroup_walk', true);
        for (const [name, prog] of Object.entries(obj.programs)) {
          const [, category, tp] = prog.section.split('/');
          obj.attachTracepoint(category, tp, name);
        }
        const events = [];
        obj.getMap('events').openPerfBuffer((cpu, e) => events.push([e.pid, e.syscall]), { type: 'file_io_event', wakeupBytes: 1 });
        return events;
      };
      const walkA = trace(dirs.a, true); // the loop is two levels down from the root, one below a
      const walkSub = trace(sub, true);
      const walkB = trace(dirs.b, true);
      const helperA = trace(dirs.a, false);
      const loops = { sub: getppidLoop(3), b: getppidLoop(5), here: getppidLoop(7) };
      fs.writeFileSync(path.join(sub, 'cgroup.procs'), String(loops.sub.child.pid));
      fs.writeFileSync(path.join(dirs.b, 'cgroup.procs'), String(loops.b.child.pid));
      for (const loop of Object.values(loops)) loop.go();
      for (const loop of Object.values(loops)) assert.equal((await loop.exited).code, 0);
      const all = [walkA, walkSub, walkB, helperA];
      assert.ok(await waitFor(() => all.every((e) => e.length > 0)), JSON.stringify(all));
      await new Promise((resolve) => setTimeout(resolve, 200)); // anything more would be wrong
      const write = (pid) => [[pid, 'FILE_IO_WRITE']];
      assert.deepEqual(helperA, write(loops.sub.child.pid), 'the helper');
      assert.deepEqual(walkA, helperA, 'the walk, as the helper');
      assert.deepEqual(walkSub, write(loops.sub.child.pid));
      assert.deepEqual(walkB, write(loops.b.child.pid));
    } finally {
      for (const obj of tracers) obj.close();
      await waitFor(() => fs.readFileSync(path.join(sub, 'cgroup.procs'), 'utf8') === '');
      fs.rmdirSync(sub);
    }
  });

  test('-p and --cgroup: both apply; stackcount --per-container: the CONTAINER of each stack', async () => {
    const tools = [];
    // the pid is known only once the loop is started: start it here, in cgroup a
    const loop = getppidLoop(K.a);
    fs.writeFileSync(path.join(dirs.a, 'cgroup.procs'), String(loop.child.pid));
    const pid = String(loop.child.pid);
    tools.push(tool('funccount', ['-p', pid, '--cgroup', dirs.a, '-j', probe]));
    tools.push(tool('funccount', ['-p', pid, '--cgroup', dirs.b, '-j', probe]));
    tools.push(tool('stackcount', ['-p', pid, '--per-container', '-t', 'syscalls:sys_enter_getppid', '-U']));
    await Promise.all(tools.map((t) => t.ready));
    loop.go();
    assert.equal((await loop.exited).code, 0);
    /** @type {any[] & { pids?: { a: number, b: number } }} */
    const outs = [];
    for (const t of tools) outs.push(await t.stop());
    for (const out of outs) assert.equal(out.code, 0, out.stderr);
    assert.deepEqual(total(outs[0].stdout).counts, [{ probe: 'syscalls:sys_enter_getppid', count: K.a }], outs[0].stdout);
    assert.deepEqual(total(outs[1].stdout).counts, [], `pid ${pid} is not in cgroup b:\n${outs[1].stdout}`);
    const lines = outs[2].stdout.split('\n').filter((l) => /^ {4}getppid_loop \[\d+\]/.test(l));
    assert.ok(lines.length > 0, outs[2].stdout);
    for (const l of lines) assert.equal(l.trim(), `getppid_loop [${pid}] /${path.basename(dirs.a)}`);
    const counted = outs[2].stdout.split('\n\n').filter((b) => /getppid_loop \[/.test(b)).reduce((n, b) => n + Number(b.trim().split('\n').pop()), 0);
    assert.equal(counted, K.a, outs[2].stdout);
    assert.ok(await waitFor(() => fs.readFileSync(path.join(dirs.a, 'cgroup.procs'), 'utf8') === ''));
  });

  // before 5.15 the tool refuses --cgroup (no socket cgroup) before its demo starts; from 5.15 the demo's lossy link needs these
  const [major, minor] = require('node:os').release().split('.').map(Number);
  const noSocketCgroup = major < 5 || (major === 5 && minor < 15);
  const noDemo = !noSocketCgroup && ['ip', 'nft', 'ss', 'nstat'].find((cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status !== 0);
  test('tcpretrans: the socket\'s cgroup (retransmits run in softirq and timers), filtered and named', { skip: noDemo && `no ${noDemo} for the demo's lossy link (npm run setup installs nftables; iproute2 has ip, ss and nstat)` }, async () => {
    // the tool, and so its demo's client and server, in cgroup b
    const inB = (args) =>
      new Promise((resolve) => {
        const child = spawn('sh', ['-c', `echo $$ > ${dirs.b}/cgroup.procs && exec "$0" "$@"`, process.execPath, path.join(EXAMPLES, 'tcpretrans.js'), '--demo', '-d', '3', '-j', ...args]);
        let stdout = '';
        let stderr = '';
        child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
        child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
        const timer = setTimeout(() => child.kill('SIGKILL'), TIMEOUT_MS);
        child.on('close', (code) => (clearTimeout(timer), resolve({ code, stdout, stderr })));
      });
    if (noSocketCgroup) {
      // no socket cgroup before 5.15 (bpf/filter.bpf.h sock_cgroup()): the tool says so, and traces nothing
      for (const args of [['--cgroup', dirs.b], ['--per-container']]) {
        const out = await inB(args);
        assert.equal(out.code, 1, out.stderr);
        assert.equal(out.stdout, '');
        assert.match(out.stderr, new RegExp(`^tcpretrans: ENOTSUP: ${args[0]} needs the socket's cgroup, which kernels keep since 5\\.15 \\(this one is \\S+\\); filter by -p PID instead\n$`));
      }
      return;
    }
    const [named, elsewhere] = await Promise.all([inB(['--cgroup', dirs.b, '--per-container']), inB(['--cgroup', dirs.a])]);
    const rel = `/${path.basename(dirs.b)}`;
    assert.equal(named.code, 0, named.stderr);
    const lines = named.stdout.trim().split('\n').map((l) => JSON.parse(l));
    const { summary } = lines.pop();
    assert.ok(lines.length > 0 && summary.length > 0, `retransmits of the demo:\n${named.stdout}`);
    for (const e of [...lines, ...summary]) assert.deepEqual([e.cgroupId, e.cgroup], [fs.statSync(dirs.b).ino, rel]);
    assert.equal(elsewhere.code, 0, elsewhere.stderr);
    assert.equal(elsewhere.stdout, '{"summary":[]}\n', 'none of its sockets is in cgroup a');
  });

  test('--cgroup of no cgroup: exit 2, the path named, the usage', async () => {
    const out = await tool('funccount', ['--cgroup', '/nlbpf-no-such-cgroup', probe]).exited;
    assert.equal(out.code, 2, out.stderr);
    assert.match(out.stderr, /^--cgroup: cgroup \/nlbpf-no-such-cgroup: no such directory \(give a cgroup v2 directory, absolute or relative to \S+; systemd-cgls lists them\)\n\nusage: /);
    const notV2 = await tool('syscall_hist', ['--cgroup', '/proc']).exited;
    assert.equal(notV2.code, 2, notV2.stderr);
    assert.match(notV2.stderr, /^--cgroup: cgroup \/proc: \/proc is not a cgroup v2 directory/);
    const notHere = await tool('bashreadline', ['--per-container']).exited;
    assert.equal(notHere.code, 2, 'bashreadline has no per-key counts: no --per-container');
    assert.match(notHere.stderr, /per-container/);
  });
});

describe('stackcount: the perf map of a Node.js in its own PID and mount namespace', { skip: skip || (!fs.existsSync('/usr/bin/unshare') && 'no unshare(1)'), timeout: 2 * TIMEOUT_MS }, () => {
  test('found at /proc/PID/root/tmp/perf-NSPID.map: no warning, and the hot function named', async () => {
    // a private /tmp: the host's /tmp has no perf map of it. The workload (builtins only) is read before the
    // mount and written into the private /tmp: a checkout under /tmp (a clone in a temporary folder) is hidden by it
    const workload = path.join(EXAMPLES, 'workloads', 'hot_loop.js');
    const ns = spawn('unshare', ['--pid', '--mount', '--fork', '--mount-proc', '--kill-child', 'sh', '-c', 'S=$(cat "$1") && mount -t tmpfs tmpfs /tmp && printf \'%s\\n\' "$S" > /tmp/hot_loop.js && exec "$0" --perf-basic-prof --no-logfile-per-isolate --logfile=+ /tmp/hot_loop.js', process.execPath, workload], {
      stdio: 'ignore',
    });
    let pid;
    try {
      // node: unshare's child, pid 1 in its namespace
      assert.ok(
        await waitFor(() => {
          pid = Number(fs.readFileSync(`/proc/${ns.pid}/task/${ns.pid}/children`, 'utf8').trim().split(' ')[0]) || undefined;
          return pid !== undefined && fs.readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('node') && fs.existsSync(perfMapPath(pid));
        }, 10_000),
        'node started with its perf map',
      );
      assert.equal(namespacePid(pid), 1);
      assert.equal(perfMapPath(pid), `/proc/${pid}/root/tmp/perf-1.map`);
      assert.ok(!fs.existsSync(`/tmp/perf-${pid}.map`), 'no perf map of it in the host\'s /tmp');
      const out = await tool('stackcount', ['--profile', '-p', String(pid), '-d', '3', '-U']).exited;
      assert.equal(out.code, 0, out.stderr);
      assert.doesNotMatch(out.stderr, /perf map|perf-\d+\.map/, 'no warning of a missing perf map');
      assert.match(out.stdout, /^ {4}hotLoop .*hot_loop\.js:\d+:\d+$/m, `hotLoop named:\n${out.stdout}`);
    } finally {
      // unshare ignores SIGTERM while it waits: the workload ends on it (then unshare), else SIGKILL (--kill-child)
      const exited = new Promise((resolve) => (ns.exitCode !== null || ns.signalCode !== null ? resolve() : ns.on('exit', resolve)));
      // (gone already: the test's own assertion, not ESRCH, says why)
      try {
        if (pid) process.kill(pid, 'SIGTERM');
      } catch {}
      const timer = setTimeout(() => ns.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
  });
});
