#!/usr/bin/env node
'use strict';
// npm run test:containers: the package in real containers, run by crun (OCI
// bundles made here: no registry, no image pulls), not privileged, each with
// its own PID, mount and cgroup namespaces, root inside, the host's network
// namespace (its services listen on loopback only), and podman's default
// seccomp profile (containers-common's seccomp.json, turned into the bundle's
// linux.seccomp as podman does: each rule's includes/excludes.caps resolved
// for the capabilities granted).
//
// The root filesystem is a Debian tree of the host's release (Debian 12
// here; scripts/rootfs.js, debootstrap, cached: the work tree's addon needs
// the host's glibc)
// with the host's node; the package is this work tree as built (npm run
// build), bind-mounted read-only at /opt/node-libbpf, its node_modules at
// /opt/node_modules: what runs is the built work tree, not the tarballs
// (npm run test:package installs those). crun refuses a hybrid cgroup
// layout: each `crun run` is in a private mount namespace without the v2
// mount, and a container's cgroup v2 is set from the host after it starts.
//
//   1. the self-monitoring service (examples/self_monitor_service.js
//      --syscalls --event-loop) with --cap-add BPF --cap-add PERFMON: K
//      requests from the host are K accept4 calls in its /metrics;
//   2. the same without the capabilities: its coded EPERM names them;
//      and with the profile as Debian 12's containers-common ships it (bpf
//      and perf_event_open only with CAP_SYS_ADMIN): the coded EPERM names
//      the seccomp profile;
//   3. from the host, on the service's host pid: syscalls (K accept4),
//      event-loop (KB blocked check phases), and stackcount --profile on a
//      container running examples/workloads/hot_loop.js with
//      NODE_OPTIONS=--perf-basic-prof (hotLoop named from the container's
//      perf map);
//   3b. flagless: stackcount --profile -p HOSTPID on a container's node
//      started with no flags (__test__/fixtures/v8_hot.js; the host's node,
//      and Node 22, 24, 26 from scripts/nodes.js's cache, bind-mounted read-only): hotLoopNf named
//      from V8's own data with its file and line in >= 90% of the samples;
//   4. two containers in two cgroups v2 (libpod-ID under a parent made here
//      in the v2 hierarchy), K1 and K2 getppid calls: syscalls --cgroup
//      counts each exactly its own, funccount --per-container gives both;
//   5. bad input: a traced pid that exits, a container stopped while
//      traced by its pid, and by its cgroup (then removed), a cgroup path
//      that does not exist: a coded or usage error, or a clean stop with
//      the counts; and no program or link the run's processes held is left
//      in the kernel (their ids from /proc/PID/fdinfo, bpftool after).
//
// The last line is `N passed, N failed`; the exit status is non-zero if a
// check failed. Cache (root's, mode 0700): $CONTAINERS_CACHE (default
// /var/cache/node-libbpf/containers): bookworm/ (the debootstrap tree; SUITE
// picks another),
// node-VERSION/ (the host's node), run/ (this run's bundles, removed at the
// end; KEEP=1 keeps them). Knobs: K, VERBOSE=1, ONLY=NAME[,NAME] (those
// scenarios alone: service, refused, stackcount, flagless, cgroups, bad input).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const http = require('node:http');
const { spawn, spawnSync } = require('node:child_process');
const { ensureDebianRoot, aptInstall } = require('./rootfs');
const { checkHarness, secs, run } = require('./chroot-harness');
const { MAJORS, nodeBinary } = require('./nodes');

const ROOT = path.resolve(__dirname, '..');
const CLI = path.join(ROOT, 'lib', 'tools', 'cli.js');
const CACHE = process.env.CONTAINERS_CACHE || '/var/cache/node-libbpf/containers';
// the host's Debian release (bookworm elsewhere): the work tree's addon is
// built against the host's glibc (the release build, glibc 2.17, runs on
// Debian 11 too: npm run test:package)
const SUITE = process.env.SUITE || hostDebianSuite() || 'bookworm';
const BASE = path.join(CACHE, SUITE);
const RUN = path.join(CACHE, 'run');
const NODE_LAYER = path.join(CACHE, `node-${process.version}`);
const SECCOMP_JSON = '/usr/share/containers/seccomp.json';
const CGROUP2 = ['/sys/fs/cgroup/unified', '/sys/fs/cgroup'].find((d) => fs.existsSync(path.join(d, 'cgroup.procs')) && fs.statfsSync(d).type === 0x63677270);
const CGROUP_PARENT = CGROUP2 && path.join(CGROUP2, `node-libbpf-test-${process.pid}`);
const K = Number(process.env.K || 50);
// ONLY=flagless,stackcount: those scenarios alone (while developing one)
const ONLY = (process.env.ONLY || '').split(',').map((n) => n.trim()).filter(Boolean);
const VERBOSE = !!process.env.VERBOSE;
const PKG = '/opt/node-libbpf';

/** VERSION_CODENAME of the host's /etc/os-release when it is Debian. */
function hostDebianSuite() {
  try {
    const text = fs.readFileSync('/etc/os-release', 'utf8');
    return /^ID=debian$/m.test(text) ? /^VERSION_CODENAME=(\w+)$/m.exec(text)?.[1] : undefined;
  } catch {
    return undefined;
  }
}

// the checks, their log and summary, the interrupt: scripts/chroot-harness.js's, as the package tests'
const { log, check, timed, summary, onInterrupt } = checkHarness({ name: 'test:containers' });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const tail = (text, n = 8) => String(text).trim().split('\n').slice(-n).join('\n    ');

/**
 * A process with its output collected; `waitFor(re)` resolves with the match on stdout+stderr, `exited` with `{ code, stdout, stderr }`.
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ timeoutMs?: number, env?: NodeJS.ProcessEnv }} [options]
 */
function start(cmd, args, { timeoutMs = 120000, env } = {}) {
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: env || process.env });
  const out = { stdout: '', stderr: '' };
  const waiters = [];
  const feed = (key) => (d) => {
    out[key] += d;
    if (VERBOSE) process.stderr.write(d);
    for (const w of waiters.splice(0)) {
      const m = w.re.exec(out.stdout + out.stderr);
      if (m) w.resolve(m);
      else waiters.push(w);
    }
  };
  child.stdout.on('data', feed('stdout'));
  child.stderr.on('data', feed('stderr'));
  child.on('error', (e) => (out.stderr += e.message));
  const timer = setTimeout(() => {
    log(`${path.basename(cmd)} ${args.slice(0, 3).join(' ')}: still running after ${secs(timeoutMs)}: killing pid ${child.pid}`);
    child.kill('SIGKILL');
  }, timeoutMs);
  const exited = new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      for (const w of waiters.splice(0)) w.resolve(null);
      resolve({ code: code ?? signal, ...out });
    });
  });
  const waitFor = (re, ms = 30000) =>
    new Promise((resolve) => {
      const m = re.exec(out.stdout + out.stderr);
      if (m || child.exitCode !== null) return resolve(m);
      const w = { re, resolve };
      waiters.push(w);
      setTimeout(() => {
        const i = waiters.indexOf(w);
        if (i >= 0) waiters.splice(i, 1);
        resolve(null);
      }, ms);
    });
  return { child, out, exited, waitFor };
}

/** `npx node-libbpf TOOL ARGS` from the host (the work tree's lib/tools/cli.js). */
function tool(args, opts) {
  return start(process.execPath, [CLI, ...args], opts);
}

// ---------------------------------------------------------------- seccomp

/**
 * containers-common's seccomp.json (podman's default) as an OCI
 * `linux.seccomp` for x86_64 and the capabilities `caps`: a rule stays when
 * every capability of its includes.caps is granted and none of its
 * excludes.caps is, and its arches (if any) name amd64; `extra` rules are
 * added after (with the same conditions), in place of the profile's rules
 * for the same syscalls.
 */
function ociSeccomp(profile, caps, extra = []) {
  const granted = new Set(caps);
  const arches = new Set(['amd64', 'x86_64', 'SCMP_ARCH_X86_64']);
  const applies = (s) =>
    (s.includes?.caps ?? []).every((c) => granted.has(c)) &&
    !(s.excludes?.caps ?? []).some((c) => granted.has(c)) &&
    (!(s.includes?.arches ?? []).length || s.includes.arches.some((a) => arches.has(a))) &&
    !(s.excludes?.arches ?? []).some((a) => arches.has(a));
  // the extra rules replace the profile's for their syscalls (its errno rules
  // for bpf and perf_event_open without CAP_SYS_ADMIN would win otherwise)
  const replaced = new Set(extra.flatMap((s) => s.names));
  const x86 = profile.archMap.find((a) => a.architecture === 'SCMP_ARCH_X86_64');
  return {
    defaultAction: profile.defaultAction,
    ...(profile.defaultErrnoRet !== undefined && { defaultErrnoRet: profile.defaultErrnoRet }),
    architectures: [x86.architecture, ...(x86.subArchitectures ?? [])],
    syscalls: [...profile.syscalls.map((s) => ({ ...s, names: s.names.filter((n) => !replaced.has(n)) })).filter((s) => s.names.length), ...extra].filter(applies).map((s) => ({
      names: s.names,
      action: s.action,
      ...(s.errnoRet !== undefined && { errnoRet: s.errnoRet }),
      ...(s.args?.length && { args: s.args.map((a) => ({ index: a.index, value: a.value, ...(a.valueTwo && { valueTwo: a.valueTwo }), op: a.op })) }),
    })),
  };
}

/**
 * The rules of docker's default profile (moby profiles/seccomp/default.json)
 * for bpf and perf_event_open: allowed with CAP_BPF, CAP_PERFMON; without,
 * EPERM (docker's default errno; podman's is ENOSYS, but its own rules for
 * these two say EPERM).
 */
const MOBY_BPF_RULES = [
  { names: ['bpf'], action: 'SCMP_ACT_ALLOW', includes: { caps: ['CAP_BPF'] } },
  { names: ['bpf'], action: 'SCMP_ACT_ERRNO', excludes: { caps: ['CAP_BPF'] } },
  { names: ['perf_event_open'], action: 'SCMP_ACT_ALLOW', includes: { caps: ['CAP_PERFMON'] } },
  { names: ['perf_event_open'], action: 'SCMP_ACT_ERRNO', excludes: { caps: ['CAP_PERFMON'] } },
];

/** podman's default capabilities (containers.conf default_capabilities). */
const PODMAN_CAPS = ['CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FOWNER', 'CAP_FSETID', 'CAP_KILL', 'CAP_NET_BIND_SERVICE', 'CAP_SETFCAP', 'CAP_SETGID', 'CAP_SETPCAP', 'CAP_SETUID', 'CAP_SYS_CHROOT'];
const BPF_CAPS = ['CAP_BPF', 'CAP_PERFMON'];

// ---------------------------------------------------------------- containers

const containers = new Map(); // id -> { proc, dir, cgroup }, the running ones
const created = []; // every id

/**
 * Starts container `name` running `args`: an overlay of the node layer over
 * the bullseye tree (mounted in a private mount namespace that lives as long
 * as `crun run`), the package bind-mounted. `seccompProfile`: false for none.
 */
async function startContainer(name, args, { caps = [...PODMAN_CAPS, ...BPF_CAPS], seccompExtra = MOBY_BPF_RULES, cgroup = false, env = [], binds = [] } = {}) {
  const id = crypto.createHash('sha256').update(`${name}-${process.pid}-${Date.now()}`).digest('hex');
  const dir = path.join(RUN, name);
  fs.rmSync(dir, { recursive: true, force: true });
  for (const d of ['upper', 'work', 'rootfs']) fs.mkdirSync(path.join(dir, d), { recursive: true });
  const profile = JSON.parse(fs.readFileSync(SECCOMP_JSON, 'utf8'));
  const bind = (source, destination) => ({ destination, type: 'bind', source, options: ['rbind', 'ro', 'nosuid', 'nodev'] });
  const config = {
    ociVersion: '1.0.0',
    process: {
      terminal: false,
      user: { uid: 0, gid: 0 },
      args,
      env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'HOME=/root', 'LANG=C.UTF-8', ...env],
      cwd: '/',
      capabilities: { bounding: caps, effective: caps, permitted: caps, inheritable: [], ambient: [] },
      noNewPrivileges: false,
    },
    root: { path: path.join(dir, 'rootfs'), readonly: false },
    hostname: name,
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc' },
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
      { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'] },
      { destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'] },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
      { destination: '/tmp', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777'] },
      bind(ROOT, PKG),
      bind(fs.realpathSync(path.join(ROOT, 'node_modules')), '/opt/node_modules'),
      ...binds.map(([source, destination]) => bind(source, destination)),
    ],
    linux: {
      namespaces: ['pid', 'ipc', 'uts', 'mount', 'cgroup'].map((type) => ({ type })),
      maskedPaths: ['/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/sched_debug', '/sys/firmware', '/proc/scsi'],
      readonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
      seccomp: ociSeccomp(profile, caps, seccompExtra),
    },
  };
  fs.writeFileSync(path.join(dir, 'config.json'), `${JSON.stringify(config, null, 1)}\n`);
  const pidFile = path.join(dir, 'pid');
  // crun refuses a hybrid cgroup layout: in its private mount namespace the
  // v2 mount is gone (the cgroup v2 membership is set from the host below)
  const script = [
    'umount /sys/fs/cgroup/unified 2>/dev/null',
    `mount -t overlay overlay -o lowerdir=${NODE_LAYER}:${BASE},upperdir=${dir}/upper,workdir=${dir}/work ${dir}/rootfs || exit 97`,
    `exec crun run --bundle ${dir} --pid-file ${pidFile} ${id}`,
  ].join('\n');
  const proc = start('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], { timeoutMs: 600000 });
  const c = { name, id, dir, proc, pidFile, cgroup: null };
  containers.set(id, c);
  created.push(id);
  // the host pid of its process 1, once crun wrote it
  for (let i = 0; i < 200 && !fs.existsSync(pidFile) && proc.child.exitCode === null; i++) await sleep(25);
  c.pid = fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : undefined;
  if (cgroup && c.pid) {
    c.cgroup = path.join(CGROUP_PARENT, `libpod-${id}`);
    fs.mkdirSync(c.cgroup, { recursive: true });
    fs.writeFileSync(path.join(c.cgroup, 'cgroup.procs'), String(c.pid));
  }
  return c;
}

/** Stops a container (SIGKILL to its processes through crun) and waits for `crun run` to end. */
async function stopContainer(c) {
  if (c.stopped) return c.proc.exited;
  c.stopped = true;
  if (c.proc.child.exitCode === null) {
    spawnSync('crun', ['kill', '--all', c.id, 'KILL'], { stdio: 'ignore' });
    const r = await Promise.race([c.proc.exited, sleep(10000).then(() => null)]);
    if (!r) c.proc.child.kill('SIGKILL');
  }
  await c.proc.exited;
  spawnSync('crun', ['delete', '--force', c.id], { stdio: 'ignore' });
  if (c.cgroup) for (let i = 0; i < 50; i++) {
    try {
      fs.rmdirSync(c.cgroup);
      break;
    } catch (e) {
      if (e.code === 'ENOENT') break;
      await sleep(20); // EBUSY: its processes are still leaving
    }
  }
  containers.delete(c.id);
  return c.proc.exited;
}

// ---------------------------------------------------------------- the kernel

/** The programs and links the run's processes held (from their fdinfo), checked at the end. */
const held = { prog: new Set(), link: new Set() };

/** Notes the programs and links process `pid` holds now (its /proc/PID/fdinfo: prog_id, link_id). */
function track(pid) {
  let fds = [];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return;
  }
  for (const fd of fds) {
    let info;
    try {
      if (!/^anon_inode:bpf[-_](prog|link)$/.test(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))) continue;
      info = fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
    } catch {
      continue;
    }
    for (const [, kind, id] of info.matchAll(/^(prog|link)_id:\s+(\d+)$/gm)) held[kind].add(Number(id));
  }
}

/**
 * The programs and links the run's processes held that the kernel still
 * has (bpftool), in three looks a second apart (an object is freed a moment
 * after its last fd closes): `['prog 12 (name)', ...]`.
 */
async function leftInKernel() {
  const now = () => {
    const left = [];
    for (const kind of ['prog', 'link']) {
      for (const o of JSON.parse(run('bpftool', ['-j', kind, 'show']) || '[]')) {
        if (held[kind].has(o.id)) left.push(`${kind} ${o.id} (${o.name ?? o.type})`);
      }
    }
    return left;
  };
  let left = now();
  for (let i = 0; i < 2 && left.length; i++) {
    await sleep(1000);
    left = now();
  }
  return left;
}

// ---------------------------------------------------------------- HTTP

function get(port, urlPath, agent = false) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.setTimeout(10000, () => req.destroy(new Error(`GET ${urlPath}: no answer in 10 s`)));
  });
}

/** One metric's value in a Prometheus text exposition. */
function metric(text, name, labels) {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`) || l.startsWith(`${name}{${labels},`));
  return line === undefined ? 0 : Number(line.trim().split(/\s+/).pop());
}

/** The getppid count of a syscalls -j output (its last object with a syscalls list). */
function syscallCount(stdout, name) {
  let found;
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const j = JSON.parse(line);
      if (Array.isArray(j.syscalls)) found = (j.syscalls.find((s) => s.syscall === name) ?? { count: 0 }).count;
    } catch {
      // not JSON
    }
  }
  return found;
}

// ---------------------------------------------------------------- the scenarios

const SERVICE = ['node', '--perf-basic-prof', `${PKG}/examples/self_monitor_service.js`, '--syscalls', '--event-loop'];

/** A process that calls getppid K times (process.ppid) on each line of stdin, prints `done N`, and exits at EOF. */
const GETPPID_JS = `let k = Number(process.argv[1]); process.stdin.on('data', () => { let s = 0; for (let i = 0; i < k; i++) s += process.ppid; console.log('done ' + k); }); console.log('ready');`;

async function serviceScenarios() {
  // 1. the service monitors itself
  const svc = await startContainer('service', SERVICE);
  try {
    const up = await svc.proc.waitFor(/^\{"port":(\d+).*$/m, 30000);
    if (!check('the service starts in a container with --cap-add BPF --cap-add PERFMON (not privileged, seccomp on)', up, up ? `host pid ${svc.pid}` : tail(svc.proc.out.stderr, 30))) return;
    const port = Number(up[1]);
    track(svc.pid);
    const parts = JSON.parse(up[0]).parts;
    check('every part of the monitor attached', parts?.length >= 4, JSON.stringify(parts));
    const status = fs.readFileSync(`/proc/${svc.pid}/status`, 'utf8');
    check('its process has CAP_BPF + CAP_PERFMON, not CAP_SYS_ADMIN, a seccomp filter, its own pid namespace',
      /^Seccomp:\s+2$/m.test(status) && /^NSpid:\s+\d+\s+1$/m.test(status) && (BigInt(`0x${/^CapEff:\s+(\w+)/m.exec(status)[1]}`) & ((1n << 39n) | (1n << 38n) | (1n << 21n))) === ((1n << 39n) | (1n << 38n)),
      status.split('\n').filter((l) => /^(CapEff|Seccomp|NSpid)/.test(l)).join(', '));
    const m0 = await get(port, '/metrics');
    for (let i = 0; i < K; i++) await get(port, '/');
    const m1 = await get(port, '/metrics');
    const accepts = metric(m1, 'node_libbpf_syscalls_total', 'syscall="accept4"') - metric(m0, 'node_libbpf_syscalls_total', 'syscall="accept4"');
    check(`its /metrics counts the K=${K} requests: K + 1 accept4 (the second scrape's own)`, accepts === K + 1, `counted ${accepts}`);

    // 3. from the host, on its host pid
    const sys = tool(['syscalls', '-p', String(svc.pid), '-d', '3', '-j', '-i', '60'], { timeoutMs: 60000 });
    if (await sys.waitFor(/^Tracing /m)) for (let i = 0; i < K; i++) await get(port, '/');
    track(sys.child.pid);
    const s = await sys.exited;
    const n = syscallCount(s.stdout, 'accept4');
    check(`syscalls -p HOSTPID counts the K=${K} requests: K accept4`, s.code === 0 && n === K, s.code === 0 ? `counted ${n}` : `exit ${s.code}: ${tail(s.stderr)}`);

    const KB = 5;
    const loop = tool(['event-loop', '-p', String(svc.pid), '-d', '4', '-j'], { timeoutMs: 60000 });
    if (await loop.waitFor(/^Tracing /m)) for (let i = 0; i < KB; i++) await get(port, '/block?ms=20');
    track(loop.child.pid);
    const l = await loop.exited;
    let long;
    try {
      const hist = JSON.parse(l.stdout.trim().split('\n').pop()).histograms;
      long = (hist.check?.buckets ?? []).filter((b) => b.low >= 16384).reduce((sum, b) => sum + b.count, 0);
    } catch {
      long = undefined;
    }
    check(`event-loop -p HOSTPID: the KB=${KB} blocked requests are KB check phases of 16 ms and more`, l.code === 0 && long === KB, l.code === 0 ? `counted ${long}` : `exit ${l.code}: ${tail(l.stderr)}`);
  } finally {
    await stopContainer(svc);
  }
}

async function refusedScenarios() {
  // 2. without the capabilities; with the profile as shipped
  const bare = await startContainer('no-caps', SERVICE, { caps: PODMAN_CAPS });
  const b = await bare.proc.exited;
  await stopContainer(bare);
  check('without CAP_BPF + CAP_PERFMON: the service exits non-zero', b.code !== 0, `exit ${b.code}`);
  check('  and its stderr has the coded EPERM naming --cap-add BPF --cap-add PERFMON and securityContext',
    /code: 'EPERM'/.test(b.stderr) && /--cap-add BPF --cap-add PERFMON/.test(b.stderr) && /securityContext\.capabilities\.add/.test(b.stderr), tail(b.stderr, 4));
  const strict = await startContainer('shipped-profile', SERVICE, { seccompExtra: [] });
  const p = await strict.proc.exited;
  await stopContainer(strict);
  check("with the caps but Debian 12's containers-common profile as shipped (bpf only with CAP_SYS_ADMIN): the coded EPERM names the seccomp profile",
    p.code !== 0 && /code: 'EPERM'/.test(p.stderr) && /seccomp filter .* refuses bpf\(\)/.test(p.stderr) && /--security-opt seccomp=/.test(p.stderr), `exit ${p.code}: ${tail(p.stderr, 4)}`);
}

async function stackcountScenario() {
  const hot = await startContainer('hot-loop', ['node', `${PKG}/examples/workloads/hot_loop.js`], { env: ['NODE_OPTIONS=--perf-basic-prof'] });
  try {
    await sleep(1500); // its functions compiled, in its perf map
    const mapPath = `/proc/${hot.pid}/root/tmp/perf-1.map`;
    check('the container\'s node writes its perf map as /tmp/perf-1.map (its pid in its namespace)', fs.existsSync(mapPath), mapPath);
    const sc = tool(['stackcount', '--profile', '-p', String(hot.pid), '-d', '3', '-j', '-U'], { timeoutMs: 60000 });
    if (await sc.waitFor(/^Tracing /m)) track(sc.child.pid);
    const r = await sc.exited;
    check('stackcount --profile -p HOSTPID names the JS function hotLoop from the container\'s perf map', r.code === 0 && /hotLoop/.test(r.stdout), r.code === 0 ? tail(r.stdout, 3).slice(0, 400) : `exit ${r.code}: ${tail(r.stderr)}`);
  } finally {
    await stopContainer(hot);
  }
}

/**
 * A flagless node in a container (no perf map, no flag; the host's node,
 * then Node 22, 24 and 26's official binaries): from the host,
 * stackcount --profile -p HOSTPID names its hot function from V8's own data,
 * the node binary read through /proc/HOSTPID/root, its memory through
 * process_vm_readv or /proc/HOSTPID/mem (lib/frames/v8.js): hotLoopNf, with
 * its file (the container's path) and a line of it, in >= 90% of the
 * samples (the V8Worker threads and the tracer's own left out, as
 * __test__/v8_frames.test.js counts them on the host).
 */
async function flaglessScenario() {
  // the image's node (the host's), and the other majors' official binaries (scripts/nodes.js's cache,
  // fetched if missing: on a fresh machine CI runs this before test:node), bind-mounted read-only
  const others = MAJORS.filter((m) => m !== process.versions.node.split('.')[0]).map((major) => ({ major, node: nodeBinary(major, { log: (m) => log(`flagless: ${m}`) }) }));
  /** @type {[string, [string, string][], string][]} */
  const nodes = [['node', [], process.versions.node]];
  for (const o of others) {
    const dir = path.dirname(path.dirname(o.node));
    nodes.push([`/opt/node-${o.major}/bin/node`, [[dir, `/opt/node-${o.major}`], ...libatomic()], path.basename(dir)]);
  }
  for (const [node, binds, version] of nodes) await flaglessNode(node, binds, version);
}

/**
 * Node 26's official binary links libatomic.so.1, which a minimal Debian
 * root lacks (an image would apt-get install libatomic1): the host's (the
 * same Debian release) bind-mounted where the loader looks, when the tree
 * has none.
 */
/** @returns {[string, string][]} */
function libatomic() {
  const dir = `/usr/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu`;
  const lib = path.join(dir, 'libatomic.so.1');
  /** @type {[string, string][]} */
  const binds = fs.existsSync(path.join(BASE, lib)) || !fs.existsSync(lib) ? [] : [[fs.realpathSync(lib), lib]];
  return binds;
}

/** flaglessScenario on one node (`node`: its path in the container, `binds` to put it there). */
async function flaglessNode(node, binds, version) {
  const fixture = `${PKG}/__test__/fixtures/v8_hot.js`;
  const lines = [5, 9]; // hotLoopNf in v8_hot.js
  const hot = await startContainer(`flagless-${version}`, [node, fixture], { binds });
  try {
    // "ready": the optimizing tiers had a second to compile hotLoopNf
    const ready = await hot.proc.waitFor(/^ready$/m, 30000);
    if (!check(`Node ${version}: a flagless node runs v8_hot.js in a container`, ready && hot.pid, ready ? `host pid ${hot.pid}` : tail(hot.proc.out.stderr))) return;
    const map = `/proc/${hot.pid}/root/tmp/perf-1.map`;
    check('  it writes no perf map (no --perf-basic-prof)', !fs.existsSync(map), map);
    const sc = tool(['stackcount', '--profile', '-p', String(hot.pid), '-d', '3', '--folded', '-U'], { timeoutMs: 60000 });
    if (await sc.waitFor(/^Tracing /m)) track(sc.child.pid);
    const r = await sc.exited;
    let samples = 0;
    let named = 0;
    const bad = [];
    for (const line of r.stdout.trim().split('\n')) {
      const m = /^(.*) (\d+)$/.exec(line);
      if (!m || /^(node-)?V8Worker|^node-libbpf/.test(m[1])) continue;
      samples += Number(m[2]);
      const frame = m[1].split(';').find((f) => f.startsWith('hotLoopNf '));
      if (!frame) continue;
      const where = /^hotLoopNf (\S+):(\d+):(\d+)$/.exec(frame);
      if (where && where[1] === fixture && Number(where[2]) >= lines[0] && Number(where[2]) <= lines[1]) named += Number(m[2]);
      else bad.push(frame);
    }
    const pct = samples ? ((100 * named) / samples).toFixed(1) : '0';
    check(`Node ${version}: stackcount --profile -p HOSTPID on the flagless node: hotLoopNf ${fixture}:${lines[0]}-${lines[1]} in >= 90% of its samples`,
      r.code === 0 && samples >= 100 && named >= 0.9 * samples && bad.length === 0,
      r.code === 0 ? `${named} of ${samples} samples (${pct}%)${bad.length ? `; named without its file and line: ${bad.slice(0, 3).join(', ')}` : ''}` : `exit ${r.code}: ${tail(r.stderr)}`);
  } finally {
    await stopContainer(hot);
  }
}

async function cgroupScenario() {
  if (!CGROUP2) {
    check('a cgroup v2 hierarchy (for --cgroup)', false, 'none mounted');
    return;
  }
  const K1 = K + 7;
  const K2 = 2 * K + 3;
  const a = await startContainer('workload-a', ['node', '-e', GETPPID_JS, String(K1)], { cgroup: true });
  const b = await startContainer('workload-b', ['node', '-e', GETPPID_JS, String(K2)], { cgroup: true });
  try {
    const ready = (await a.proc.waitFor(/^ready$/m)) && (await b.proc.waitFor(/^ready$/m));
    if (!check('two containers in two cgroups v2', ready && a.cgroup && b.cgroup, ready ? `${a.cgroup}, ${b.cgroup}` : tail(a.proc.out.stderr + b.proc.out.stderr))) return;
    const ta = tool(['syscalls', '--cgroup', a.cgroup, '-d', '3', '-j', '-i', '60'], { timeoutMs: 60000 });
    const tb = tool(['syscalls', '--cgroup', b.cgroup, '-d', '3', '-j', '-i', '60'], { timeoutMs: 60000 });
    const per = tool(['funccount', 't:syscalls:sys_enter_getppid', '--per-container', '-d', '3', '-j'], { timeoutMs: 60000 });
    const traced = (await ta.waitFor(/^Tracing /m)) && (await tb.waitFor(/^Tracing /m)) && (await per.waitFor(/^Tracing /m));
    if (traced) {
      for (const t of [ta, tb, per]) track(t.child.pid);
      a.proc.child.stdin.write('go\n');
      b.proc.child.stdin.write('go\n');
    }
    const [ra, rb, rp] = [await ta.exited, await tb.exited, await per.exited];
    const na = syscallCount(ra.stdout, 'getppid');
    const nb = syscallCount(rb.stdout, 'getppid');
    check(`syscalls --cgroup A counts A's K1=${K1} getppid calls only`, ra.code === 0 && na === K1, ra.code === 0 ? `counted ${na}` : `exit ${ra.code}: ${tail(ra.stderr)}`);
    check(`syscalls --cgroup B counts B's K2=${K2} getppid calls only`, rb.code === 0 && nb === K2, rb.code === 0 ? `counted ${nb}` : `exit ${rb.code}: ${tail(rb.stderr)}`);
    const rows = rp.stdout.split('\n').filter((line) => line.startsWith('{')).flatMap((line) => {
      try {
        const j = JSON.parse(line);
        return j.type === 'total' && Array.isArray(j.counts) ? j.counts : [];
      } catch {
        return [];
      }
    });
    const count = (c) => rows.filter((r) => r.containerId === c.id || r.cgroup === c.cgroup.slice(CGROUP2.length)).reduce((sum, r) => sum + (r.count ?? 0), 0);
    check(`funccount --per-container: a row for each container, K1 and K2`, rp.code === 0 && count(a) === K1 && count(b) === K2,
      rp.code === 0 ? `A ${count(a)}, B ${count(b)}; ${tail(rp.stdout, 3).slice(0, 300)}` : `exit ${rp.code}: ${tail(rp.stderr)}`);
  } finally {
    await stopContainer(a);
    await stopContainer(b);
  }
}

async function badInputScenarios() {
  // a traced pid that exits: the tool ends by itself, with what it counted or a coded error
  const w = await startContainer('exits', ['node', '-e', GETPPID_JS, String(K)]);
  try {
    await w.proc.waitFor(/^ready$/m);
    const t = tool(['syscalls', '-p', String(w.pid), '-j', '-i', '60'], { timeoutMs: 60000 });
    if (await t.waitFor(/^Tracing /m)) {
      track(t.child.pid);
      w.proc.child.stdin.end('go\n'); // K calls, then EOF: it exits
    }
    const started = Date.now();
    const r = await Promise.race([t.exited, sleep(15000).then(() => null)]);
    if (!r) t.child.kill('SIGTERM');
    const end = r ?? (await t.exited);
    const n = syscallCount(end.stdout, 'getppid');
    check('a traced container process that exits: syscalls -p ends by itself within 15 s', r !== null, r ? `after ${secs(Date.now() - started)}, exit ${r.code}` : 'still tracing: stopped with SIGTERM');
    check('  with its K getppid calls counted, or a coded error', (end.code === 0 && n === K) || /\b(E[A-Z]+|ERR_BPF_[A-Z_]+):/.test(end.stderr), `exit ${end.code}, counted ${n}; ${tail(end.stderr, 2)}`);
  } finally {
    await stopContainer(w);
  }

  // a container stopped while traced by its host pid
  const s = await startContainer('stopped', ['node', '-e', 'setInterval(() => process.ppid, 10)']);
  try {
    await sleep(500);
    const t = tool(['syscalls', '-p', String(s.pid), '-j', '-i', '60'], { timeoutMs: 60000 });
    await t.waitFor(/^Tracing /m);
    track(t.child.pid);
    await sleep(500);
    await stopContainer(s);
    const r = await Promise.race([t.exited, sleep(15000).then(() => null)]);
    if (!r) t.child.kill('SIGTERM');
    const end = r ?? (await t.exited);
    const n = syscallCount(end.stdout, 'getppid');
    check('a container stopped while traced: syscalls -p ends within 15 s, cleanly with its counts or a coded error',
      r !== null && ((end.code === 0 && n > 0) || /\b(E[A-Z]+|ERR_BPF_[A-Z_]+):/.test(end.stderr)), `${r ? `exit ${end.code}` : 'still tracing: stopped with SIGTERM'}, counted ${n}; ${tail(end.stderr, 2)}`);
  } finally {
    await stopContainer(s);
  }

  // a container stopped, and its cgroup removed, while traced by its cgroup: SIGTERM stops the tool cleanly with its counts
  if (CGROUP2) {
    const g = await startContainer('stopped-cgroup', ['node', '-e', 'setInterval(() => process.ppid, 10)'], { cgroup: true });
    try {
      const t = tool(['syscalls', '--cgroup', g.cgroup, '-j', '-i', '60'], { timeoutMs: 60000 });
      if (await t.waitFor(/^Tracing /m)) track(t.child.pid);
      await sleep(500);
      await stopContainer(g);
      const gone = !fs.existsSync(g.cgroup);
      await sleep(500);
      t.child.kill('SIGTERM');
      const end = await t.exited;
      const n = syscallCount(end.stdout, 'getppid');
      check('a container stopped and its cgroup removed while syscalls --cgroup traces it: SIGTERM stops the tool cleanly with its counts',
        gone && end.code === 0 && n > 0, `cgroup removed: ${gone}, exit ${end.code}, counted ${n}; ${tail(end.stderr, 2)}`);
    } finally {
      await stopContainer(g);
    }
  }

  // a cgroup that does not exist
  const r = await tool(['syscalls', '--cgroup', `${CGROUP2 ?? '/sys/fs/cgroup'}/no-such-container`, '-d', '1', '-j'], { timeoutMs: 30000 }).exited;
  // a usage error (exit 2, bcc's convention for a bad argument) or a coded one, naming the path
  check('--cgroup of a path that does not exist: exit non-zero, naming the path (a usage error or a coded one)',
    r.code !== 0 && /no-such-container: no such directory/.test(r.stderr), `exit ${r.code}: ${r.stderr.split('\n')[0]}`);
}

// ---------------------------------------------------------------- main

async function prepare() {
  aptInstall('crun', ['crun'], log);
  aptInstall(SECCOMP_JSON, ['golang-github-containers-common'], log);
  aptInstall('bpftool', ['bpftool'], log);
  fs.mkdirSync(path.dirname(CACHE), { recursive: true, mode: 0o700 });
  fs.mkdirSync(CACHE, { recursive: true, mode: 0o700 });
  fs.chmodSync(CACHE, 0o700);
  const base = await ensureDebianRoot(BASE, { suite: SUITE, log });
  log(base.made ? `debootstrap took ${base.seconds} s` : `cached ${SUITE} tree (made ${base.date})`);
  if (!fs.existsSync(path.join(NODE_LAYER, 'usr', 'local', 'bin', 'node'))) {
    const bin = path.join(`${NODE_LAYER}.partial`, 'usr', 'local', 'bin');
    fs.rmSync(`${NODE_LAYER}.partial`, { recursive: true, force: true });
    fs.mkdirSync(bin, { recursive: true });
    fs.copyFileSync(process.execPath, path.join(bin, 'node'));
    fs.chmodSync(path.join(bin, 'node'), 0o755);
    fs.renameSync(`${NODE_LAYER}.partial`, NODE_LAYER);
  }
  fs.rmSync(RUN, { recursive: true, force: true });
  fs.mkdirSync(RUN, { recursive: true });
  if (CGROUP_PARENT) {
    // an earlier run killed before its cleanup: its empty cgroups
    for (const d of fs.readdirSync(CGROUP2).filter((n) => /^node-libbpf-test-\d+$/.test(n))) {
      const pid = Number(d.split('-').pop());
      if (fs.existsSync(`/proc/${pid}`)) continue;
      const dir = path.join(CGROUP2, d);
      try {
        for (const sub of fs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory())) fs.rmdirSync(path.join(dir, sub.name));
        fs.rmdirSync(dir);
      } catch (e) {
        log(`${dir}: left from an earlier run, not removable (${e.code})`);
      }
    }
    fs.mkdirSync(CGROUP_PARENT, { recursive: true });
  }
  for (const f of ['node-libbpf.linux-x64-gnu.node', 'bpf/x86/monitor.bpf.o']) {
    if (!fs.existsSync(path.join(ROOT, f))) throw new Error(`${f} is missing: npm run build first`);
  }
}

async function cleanup() {
  for (const c of [...containers.values()]) await stopContainer(c);
  if (CGROUP_PARENT) {
    try {
      fs.rmdirSync(CGROUP_PARENT);
    } catch {
      // gone or busy: reported by the check below
    }
  }
  if (!process.env.KEEP) fs.rmSync(RUN, { recursive: true, force: true });
}

async function main() {
  if (os.platform() !== 'linux' || process.getuid() !== 0) {
    console.error('test:containers: needs root on Linux (crun, mounts, cgroups, BPF): run it as root');
    console.log('0 passed, 1 failed');
    process.exitCode = 1;
    return;
  }
  const started = Date.now();
  let before = false;
  onInterrupt(async () => {
    log('interrupted: stopping the containers');
    await cleanup();
  });
  try {
    await prepare();
    before = true;
    /** @type {[string, () => Promise<void>][]} */
    const scenarios = [['service', serviceScenarios], ['refused', refusedScenarios], ['stackcount', stackcountScenario], ['flagless', flaglessScenario], ['cgroups', cgroupScenario], ['bad input', badInputScenarios]];
    const unknown = ONLY.filter((n) => !scenarios.some(([name]) => name === n));
    if (unknown.length) throw new Error(`ONLY=${process.env.ONLY}: no scenario ${unknown.join(', ')} (${scenarios.map(([name]) => name).join(', ')})`);
    for (const [name, fn] of scenarios.filter(([n]) => !ONLY.length || ONLY.includes(n))) {
      try {
        await timed(name, fn);
      } catch (e) {
        check(`${name}: ran to its end`, false, e.stack || String(e));
      }
    }
  } catch (e) {
    check('the run', false, e.stack || String(e));
  } finally {
    await cleanup();
  }
  if (before) {
    await sleep(500);
    const left = await leftInKernel();
    check(`no program or link of the run is left in the kernel (${held.prog.size} programs, ${held.link.size} links seen held)`, left.length === 0 && held.prog.size > 0, left.join(', '));
  }
  const listed = run('crun', ['list', '-q']).split('\n');
  check('no container of the run is left (crun list)', !created.some((id) => listed.includes(id)), created.filter((id) => listed.includes(id)).join(', '));
  log(`all: ${secs(Date.now() - started)}`);
  process.exitCode = summary();
}

main();
