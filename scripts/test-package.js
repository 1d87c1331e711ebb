#!/usr/bin/env node
'use strict';
// npm run test:package: the package as a user gets it, on a machine that has
// only Node.js. A Debian 11 (bullseye, glibc 2.31) root filesystem made with
// debootstrap (minbase: no Rust, no clang, no libelf, no compiler), the
// host's node and npm copied in, and then, in a chroot:
//
//   1. npm install of the tarballs of $PACK_DIR (default dist/, made by
//      `npm run pack:all` when missing) into a fresh app, with no registry:
//      the app depends on the main tarball, and npm "overrides" point each
//      platform package of its optionalDependencies at its own tarball, so
//      npm resolves every package from the folder (--offline, and a registry
//      address where nothing listens, so a fetch would fail at once);
//   2. `npx node-libbpf syscalls -p PID -d 2 -j` on a process of the test's
//      own, which calls getppid K times once tracing has started (Node's
//      process.ppid getter is one getppid(2) each): the JSON must count K;
//   3. `apt-get install clang` (bullseye's clang 11), `npx node-libbpf build`
//      of a tracepoint counter written here, then the library loads it and
//      counts K getppid calls of its own process, exactly.
//
// Each phase is timed; the last line is `N passed, N failed`, and the exit
// status is non-zero if a check failed. Everything runs in a private mount
// namespace (unshare -m): the chroot's mounts (an overlay over the cached
// tree, proc, sysfs, tracefs, bpffs, /dev) are unmounted at the end, and the
// kernel drops them with the namespace even if this script is killed. The
// processes started in the chroot are killed by pid at the end.
//
// Cache (gitignored): .cache/package/bullseye/ (the pristine debootstrap
// tree, made once: delete it to make it anew), .cache/package/apt/ (the .debs
// apt-get downloads in the chroot), .cache/package/run/ (this run's overlay,
// removed at the end; KEEP=1 keeps it).
// Knobs: PACK_DIR, K (default 1000), KEEP=1, VERBOSE=1 (the commands' output).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { ensureDebianRoot, have } = require('./rootfs');

const ROOT = path.resolve(__dirname, '..');
const CACHE = path.join(ROOT, '.cache', 'package');
const BASE = path.join(CACHE, 'bullseye');
const BASE_INFO = `${BASE}.json`;
const RUN = path.join(CACHE, 'run');
const CHROOT = path.join(RUN, 'root');
const APT_CACHE = path.join(CACHE, 'apt');
const PACK_DIR = path.resolve(ROOT, process.env.PACK_DIR || 'dist');
const K = Number(process.env.K || 1000);
const SUITE = 'bullseye';
const VERBOSE = !!process.env.VERBOSE;
const IN_NS = process.env.NODE_LIBBPF_PACKAGE_NS === '1';

const log = (msg) => process.stderr.write(`test:package: ${msg}\n`);
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** The checks, in order: `{ name, ok, detail }`. */
const checks = [];
function check(name, ok, detail = '') {
  checks.push({ name, ok: !!ok, detail });
  log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
  return !!ok;
}
/** The phases' times: `[name, ms]`. */
const times = [];
async function timed(name, fn) {
  const start = Date.now();
  try {
    return await fn();
  } finally {
    times.push([name, Date.now() - start]);
    log(`${name}: ${secs(Date.now() - start)}`);
  }
}

/**
 * Runs `cmd args` to its end (killed by pid after `timeoutMs`): `{ code, stdout, stderr, ms }`.
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ timeoutMs?: number, input?: string, env?: NodeJS.ProcessEnv, cwd?: string, onStderr?: (stderr: string) => void }} [options] `onStderr` sees the stderr so far at each chunk
 */
function exec(cmd, args, { timeoutMs = 120000, input, env, cwd, onStderr } = {}) {
  return new Promise((resolve) => {
    const start = Date.now();
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: env || process.env, cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      if (VERBOSE) process.stderr.write(d);
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      if (VERBOSE) process.stderr.write(d);
      if (onStderr) onStderr(stderr);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      log(`${cmd} ${args.join(' ')}: still running after ${secs(timeoutMs)}: killing pid ${child.pid}`);
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (e) => {
      stderr += String(e.message);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, stdout, stderr, timedOut, ms: Date.now() - start });
    });
    child.stdin.end(input ?? '');
  });
}

/** Synchronous, for setup steps: stdout, or a thrown Error naming the command and its stderr. */
function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${(r.stderr || '').trim().slice(-2000)}`);
  return r.stdout;
}

/** A clean environment for commands in the chroot (not the host's npm or cargo settings). */
const CHROOT_ENV = {
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: '/root',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
  DEBIAN_FRONTEND: 'noninteractive',
  npm_config_update_notifier: 'false',
};

/** `sh -c script` in the chroot, in /app. */
function inChroot(script, opts = {}) {
  return exec('chroot', [CHROOT, '/bin/sh', '-c', `cd /app 2>/dev/null; ${script}`], { env: CHROOT_ENV, ...opts });
}

// ---------------------------------------------------------------- the tarballs

/** `package/package.json` of a tarball. */
function manifestOf(tgz) {
  return JSON.parse(run('tar', ['-xzOf', tgz, 'package/package.json']));
}

/**
 * The tarballs of $PACK_DIR: `{ main: { file, manifest }, platforms: Map(name -> { file, manifest }) }`.
 * Runs `npm run pack:all` first when the folder has no main tarball.
 */
function tarballs() {
  const list = () => (fs.existsSync(PACK_DIR) ? fs.readdirSync(PACK_DIR).filter((f) => f.endsWith('.tgz')) : []);
  const isMain = (f) => /^node-libbpf-\d[^/]*\.tgz$/.test(f);
  if (!list().some(isMain)) {
    const scripts = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts || {};
    if (process.env.PACK_DIR || !scripts['pack:all']) {
      throw new Error(`no node-libbpf-<version>.tgz in ${PACK_DIR}: run npm run pack:all (it writes every tarball into dist/), or set PACK_DIR to a folder of tarballs`);
    }
    log(`no tarballs in ${path.relative(ROOT, PACK_DIR)}/: npm run pack:all`);
    const r = spawnSync('npm', ['run', 'pack:all'], { cwd: ROOT, stdio: ['ignore', 2, 2] });
    if (r.status !== 0) throw new Error(`npm run pack:all exited ${r.status}`);
  }
  const files = list();
  const mains = files.filter(isMain);
  if (mains.length !== 1) throw new Error(`${PACK_DIR} holds ${mains.length} main tarballs (${mains.join(', ')}): keep one version there`);
  const main = { file: path.join(PACK_DIR, mains[0]), manifest: manifestOf(path.join(PACK_DIR, mains[0])) };
  const platforms = new Map();
  for (const f of files.filter((x) => !isMain(x))) {
    const manifest = manifestOf(path.join(PACK_DIR, f));
    platforms.set(manifest.name, { file: path.join(PACK_DIR, f), manifest });
  }
  return { main, platforms };
}

// ---------------------------------------------------------------- the root filesystem

/** The pristine bullseye tree (scripts/rootfs.js), made with debootstrap when missing: `{ seconds, made }`. */
function ensureBase() {
  return ensureDebianRoot(BASE, { suite: SUITE, log });
}

/** Mounts done in the namespace, newest last (unmounted in reverse). */
const mounts = [];
function mount(args, target) {
  fs.mkdirSync(target, { recursive: true });
  run('mount', [...args, target]);
  mounts.push(target);
}

/** This run's root: an overlay over the pristine tree (or a copy, without overlayfs), with what a chroot needs mounted. */
function prepareChroot() {
  fs.rmSync(RUN, { recursive: true, force: true });
  for (const d of ['upper', 'work', 'root']) fs.mkdirSync(path.join(RUN, d), { recursive: true });
  try {
    mount(['-t', 'overlay', 'overlay', '-o', `lowerdir=${BASE},upperdir=${path.join(RUN, 'upper')},workdir=${path.join(RUN, 'work')}`], CHROOT);
  } catch (e) {
    log(`no overlayfs (${e.message.split('\n')[0]}): copying the tree instead`);
    run('cp', ['-a', `${BASE}/.`, CHROOT]);
  }
  mount(['--bind', '/dev'], path.join(CHROOT, 'dev'));
  mount(['-t', 'proc', 'proc'], path.join(CHROOT, 'proc'));
  mount(['-t', 'sysfs', 'sysfs'], path.join(CHROOT, 'sys'));
  mount(['-t', 'tracefs', 'tracefs'], path.join(CHROOT, 'sys', 'kernel', 'tracing'));
  mount(['-t', 'bpf', 'bpf'], path.join(CHROOT, 'sys', 'fs', 'bpf'));
  // apt's downloads are kept between runs (clang and its libraries: ~40 MB)
  fs.mkdirSync(path.join(APT_CACHE, 'partial'), { recursive: true });
  mount(['--bind', APT_CACHE], path.join(CHROOT, 'var', 'cache', 'apt', 'archives'));
  fs.copyFileSync('/etc/resolv.conf', path.join(CHROOT, 'etc', 'resolv.conf'));
}

/** The host's node (process.execPath) and npm, into /usr/local. */
function copyNode() {
  const bin = path.join(CHROOT, 'usr', 'local', 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.copyFileSync(process.execPath, path.join(bin, 'node'));
  fs.chmodSync(path.join(bin, 'node'), 0o755);
  const npmCli = ['/usr/lib/node_modules/npm', path.join(path.dirname(process.execPath), '..', 'lib', 'node_modules', 'npm')].find((d) =>
    fs.existsSync(path.join(d, 'bin', 'npm-cli.js')),
  );
  if (!npmCli) throw new Error(`npm was not found beside ${process.execPath} (lib/node_modules/npm): install npm`);
  const dest = path.join(CHROOT, 'usr', 'local', 'lib', 'node_modules', 'npm');
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  run('cp', ['-a', npmCli, dest]);
  fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(bin, 'npm'));
  fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(bin, 'npx'));
}

/** Unmounts everything this run mounted (newest first; lazily if busy). */
function unmountAll() {
  while (mounts.length) {
    const target = mounts.pop();
    const r = spawnSync('umount', [target], { encoding: 'utf8' });
    if (r.status !== 0) spawnSync('umount', ['-l', target]);
  }
}

/** The pids of processes whose root is the chroot (started by this run), killed by pid. */
function killChrootProcesses() {
  const real = fs.existsSync(CHROOT) ? fs.realpathSync(CHROOT) : CHROOT;
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let root;
    try {
      root = fs.readlinkSync(`/proc/${pid}/root`);
    } catch {
      continue;
    }
    if (root === real || root.startsWith(`${real}/`)) {
      log(`killing pid ${pid} (left in the chroot)`);
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

// ---------------------------------------------------------------- the app

/** The app's package.json: the main tarball, and each platform package it names pointed at its tarball. */
function appManifest({ main, platforms }) {
  const overrides = {};
  for (const name of Object.keys(main.manifest.optionalDependencies || {})) {
    if (platforms.has(name)) overrides[name] = `file:/pkgs/${path.basename(platforms.get(name).file)}`;
  }
  return {
    name: 'node-libbpf-package-test',
    version: '1.0.0',
    private: true,
    dependencies: { 'node-libbpf': `file:/pkgs/${path.basename(main.file)}` },
    overrides,
  };
}

/** A process that calls getppid K times (process.ppid) when it reads a line, then waits for stdin to close. */
const TARGET_JS = `'use strict';
const k = Number(process.argv[2]);
process.stdin.once('data', () => {
  let sum = 0;
  for (let i = 0; i < k; i++) sum += process.ppid; // one getppid(2) each
  process.stdout.write(\`done \${sum > 0}\\n\`);
});
`;

/** The program a user writes and builds with \`npx node-libbpf build\`: counts a process's getppid calls. */
const COUNTER_C = `// SPDX-License-Identifier: GPL-2.0
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

const volatile __u32 target_tgid = 0;
__u64 count = 0;

SEC("tp/syscalls/sys_enter_getppid")
int handle_enter_getppid(void *ctx)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	__sync_fetch_and_add(&count, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
`;

/** Loads the built counter, attaches it, makes K getppid calls, prints the count as JSON. */
const COUNTER_JS = `'use strict';
const bpf = require('node-libbpf');
const k = Number(process.argv[2]);
const obj = bpf.loadBpfProgram('/app/counter.bpf.o');
obj.setGlobalVariable('target_tgid', process.pid);
obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_enter_getppid');
let sum = 0;
for (let i = 0; i < k; i++) sum += process.ppid; // one getppid(2) each
const count = obj.getGlobalVariable('count');
obj.close();
console.log(JSON.stringify({ count: Number(count), sum: sum > 0 }));
`;

/** The getppid count of `npx node-libbpf syscalls -j` output (the last JSON object with a syscalls list). */
function getppidCount(stdout) {
  let found;
  for (const line of stdout.split('\n')) {
    if (!line.trim().startsWith('{')) continue;
    let j;
    try {
      j = JSON.parse(line);
    } catch {
      continue;
    }
    if (Array.isArray(j.syscalls)) found = (j.syscalls.find((s) => s.syscall === 'getppid') || { count: 0 }).count;
  }
  return found;
}

const tail = (text, n = 12) => text.trim().split('\n').slice(-n).join('\n    ');
/** What an error printed says (its message lines, not its stack): for a load error several causes deep. */
const gist = (text, n = 12) =>
  text
    .split('\n')
    .filter((l) => l.trim() && !/^\s+at /.test(l) && !/^\s*[{}\]]+,?\s*$/.test(l))
    .slice(0, n)
    .join('\n    ');

/** Step 2: the syscalls tool on a process of the test's own. */
async function syscallsStep() {
  fs.writeFileSync(path.join(CHROOT, 'app', 'target.js'), TARGET_JS);
  const target = spawn('chroot', [CHROOT, '/usr/local/bin/node', '/app/target.js', String(K)], { stdio: ['pipe', 'pipe', 'pipe'], env: CHROOT_ENV });
  let targetOut = '';
  target.stdout.on('data', (d) => (targetOut += d));
  target.stderr.on('data', (d) => (targetOut += d));
  try {
    // `chroot` execs node: the pid is node's, in the host's (and the chroot's) pid namespace
    let sent = false;
    let tracingAt;
    const start = Date.now();
    const r = await exec('chroot', [CHROOT, '/bin/sh', '-c', `cd /app && exec npx --no-install node-libbpf syscalls -p ${target.pid} -d 2 -j`], {
      env: CHROOT_ENV,
      timeoutMs: 120000,
      onStderr: (err) => {
        if (!sent && /^Tracing /m.test(err)) {
          sent = true;
          tracingAt = Date.now() - start;
          target.stdin.write('go\n');
        }
      },
    });
    times.push(['first npx node-libbpf syscalls -p PID -d 2 -j (to its exit)', r.ms]);
    if (tracingAt !== undefined) times.push(['  of which: to its "Tracing" line (start-up, load and attach)', tracingAt]);
    log(`npx node-libbpf syscalls: exit ${r.code} after ${secs(r.ms)}${tracingAt !== undefined ? `, tracing after ${secs(tracingAt)}` : ''}`);
    if (!check('npx node-libbpf syscalls -p PID -d 2 -j exits 0', r.code === 0, r.code === 0 ? '' : `exit ${r.code}:\n    ${tail(r.stderr)}`)) return;
    check('it printed a "Tracing ..." line on stderr before counting', sent, sent ? '' : tail(r.stderr));
    const count = getppidCount(r.stdout);
    check(`its JSON counts the K=${K} getppid calls of the target process`, count === K, `counted ${count}${count === undefined ? ` (no JSON with a syscalls list in: ${r.stdout.slice(0, 300)})` : ''}`);
    check('the target made its calls while traced', /done true/.test(targetOut), tail(targetOut, 3));
  } finally {
    target.stdin.end();
    target.kill('SIGKILL');
  }
}

/** Step 3: clang from bullseye, `npx node-libbpf build`, the library loads the object and counts. */
async function buildStep() {
  const apt = await timed('apt-get update && apt-get install clang (in the chroot)', () =>
    inChroot('apt-get update -qq && apt-get install -y -qq --no-install-recommends clang', { timeoutMs: 600000 }),
  );
  if (!check('apt-get install clang in the chroot', apt.code === 0, apt.code === 0 ? '' : tail(apt.stderr))) return;
  const v = await inChroot('clang --version | head -n 1');
  log(`clang in the chroot: ${v.stdout.trim()}`);
  fs.writeFileSync(path.join(CHROOT, 'app', 'counter.bpf.c'), COUNTER_C);
  fs.writeFileSync(path.join(CHROOT, 'app', 'counter.js'), COUNTER_JS);
  const b = await timed('npx node-libbpf build counter.bpf.c -o counter.bpf.o', () =>
    inChroot('npx --no-install node-libbpf build counter.bpf.c -o counter.bpf.o', { timeoutMs: 120000 }),
  );
  const built = b.code === 0 && fs.existsSync(path.join(CHROOT, 'app', 'counter.bpf.o'));
  if (!check(`npx node-libbpf build compiles a tracepoint counter with ${v.stdout.trim() || 'clang'}`, built, built ? '' : `exit ${b.code}:\n    ${tail(b.stderr + b.stdout)}`)) return;
  const c = await inChroot(`node counter.js ${K}`, { timeoutMs: 60000 });
  let out;
  try {
    out = JSON.parse(c.stdout.trim().split('\n').pop());
  } catch {
    out = undefined;
  }
  check(`the library loads it and it counts the K=${K} getppid calls exactly`, c.code === 0 && out?.count === K, out ? `counted ${out.count}` : `exit ${c.code}:\n    ${tail(c.stderr + c.stdout)}`);
}

/** Everything in the chroot; runs inside the private mount namespace. */
async function inNamespace() {
  const started = Date.now();
  let packs;
  try {
    packs = tarballs();
  } catch (e) {
    check('the tarballs', false, e.message);
    return;
  }
  const { main, platforms } = packs;
  log(`tarballs in ${path.relative(ROOT, PACK_DIR) || '.'}/: ${[main.file, ...[...platforms.values()].map((p) => p.file)].map((f) => `${path.basename(f)} (${(fs.statSync(f).size / 1e6).toFixed(2)} MB)`).join(', ')}`);
  // every platform package the main package names is there, at the version it names
  const optional = main.manifest.optionalDependencies || {};
  const own = `node-libbpf-linux-${process.arch}-gnu`;
  for (const [name, range] of Object.entries(optional)) {
    const p = platforms.get(name);
    check(`${name}@${range} (optionalDependency) is in the folder`, p && p.manifest.version === range, p ? `the tarball is ${p.manifest.version}` : 'no tarball');
  }
  check(`the main package names ${own} as an optionalDependency`, Object.hasOwn(optional, own), Object.keys(optional).join(', ') || 'it has no optionalDependencies');

  const cached = fs.existsSync(BASE_INFO);
  const base = await timed(cached ? `root filesystem (the cached ${SUITE} tree)` : `root filesystem (debootstrap --variant=minbase ${SUITE})`, ensureBase);
  log(base.made ? `debootstrap took ${base.seconds} s` : `cached ${SUITE} tree (made ${base.date} in ${base.seconds} s)`);
  await timed('chroot set up (overlay, mounts, node and npm copied)', async () => {
    prepareChroot();
    copyNode();
    fs.mkdirSync(path.join(CHROOT, 'pkgs'), { recursive: true });
    for (const f of [main.file, ...[...platforms.values()].map((p) => p.file)]) fs.copyFileSync(f, path.join(CHROOT, 'pkgs', path.basename(f)));
    fs.mkdirSync(path.join(CHROOT, 'app'), { recursive: true });
  });

  // the machine: glibc 2.31, no compiler, no libelf; the node binary runs there
  const facts = await inChroot(
    'ldd --version | head -n 1; for c in clang gcc cc rustc cargo bpftool; do command -v $c; done; ls /usr/lib/x86_64-linux-gnu/libelf* /lib/x86_64-linux-gnu/libelf* 2>/dev/null; echo end',
  );
  const glibc = /(\d+\.\d+)\s*$/m.exec(facts.stdout.split('\n')[0] || '')?.[1];
  check('the chroot has glibc 2.31 (Debian 11)', glibc === '2.31', `ldd --version: ${facts.stdout.split('\n')[0]}`);
  const extra = facts.stdout.split('\n').slice(1).filter((l) => l && l !== 'end');
  check('the chroot has no clang, gcc, rustc, cargo, bpftool or libelf', extra.length === 0, extra.join(', '));
  const ldd = await inChroot('ldd /usr/local/bin/node; node --version');
  const nodeVersion = /^v(\d+)\./m.exec(ldd.stdout);
  check(`the host's node (${process.version}) runs on glibc 2.31 (ldd finds every library and version)`, ldd.code === 0 && !/not found/.test(ldd.stdout + ldd.stderr) && nodeVersion && Number(nodeVersion[1]) >= 18, tail(ldd.stdout + ldd.stderr, 4));

  // 1. npm install, no registry
  fs.writeFileSync(path.join(CHROOT, 'app', 'package.json'), `${JSON.stringify(appManifest(packs), null, 2)}\n`);
  const install = await timed('npm install (from the tarballs, no registry)', () =>
    inChroot('npm install --offline --registry=http://127.0.0.1:9/ --no-audit --no-fund --loglevel=warn', { timeoutMs: 300000 }),
  );
  if (!check('npm install of the tarballs, offline', install.code === 0, install.code === 0 ? '' : tail(install.stderr))) return;
  const installed = fs.existsSync(path.join(CHROOT, 'app', 'node_modules', own, 'package.json'));
  check(`npm installed ${own} from its tarball`, installed, installed ? '' : `node_modules has: ${fs.readdirSync(path.join(CHROOT, 'app', 'node_modules')).join(', ')}`);
  const other = [...platforms.keys()].filter((n) => n !== own && fs.existsSync(path.join(CHROOT, 'app', 'node_modules', n)));
  check('and no other platform package', other.length === 0, other.join(', '));
  const du = await inChroot('du -sk node_modules | cut -f1');
  log(`node_modules: ${(Number(du.stdout.trim()) / 1024).toFixed(1)} MB`);
  const load = await inChroot(`node -e "const b = require('node-libbpf'); console.log(typeof b.loadBpfProgram)"`);
  if (!check("require('node-libbpf') loads the prebuilt addon", load.stdout.trim() === 'function', load.stdout.trim() === 'function' ? '' : gist(load.stderr + load.stdout, 15))) {
    log('(the steps that use the addon run anyway, to report every failure)');
  }

  // 2. the syscalls tool on a process of our own
  await syscallsStep();
  // 3. clang, the build command, the library loading the result
  await buildStep();
  times.push(['all (this run)', Date.now() - started]);
}

function summary() {
  log('times:');
  for (const [name, ms] of times) log(`  ${name}: ${secs(ms)}`);
  const failed = checks.filter((c) => !c.ok);
  for (const c of failed) log(`failed: ${c.name}`);
  console.log(`${checks.length - failed.length} passed, ${failed.length} failed`);
  return failed.length === 0 && checks.length > 0 ? 0 : 1;
}

async function namespaceMain() {
  let stop = false;
  const onSignal = () => {
    stop = true;
    log('interrupted: killing the chroot\'s processes, unmounting');
    killChrootProcesses();
    unmountAll();
    if (!process.env.KEEP) fs.rmSync(RUN, { recursive: true, force: true });
    console.log(`${checks.filter((c) => c.ok).length} passed, ${checks.filter((c) => !c.ok).length + 1} failed`);
    process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await inNamespace();
  } catch (e) {
    check('the run', false, e.stack || String(e));
  } finally {
    if (!stop) {
      killChrootProcesses();
      unmountAll();
      if (!process.env.KEEP) fs.rmSync(RUN, { recursive: true, force: true });
    }
  }
  process.exitCode = summary();
}

/** Outside: checks root, then runs this script again in a private mount namespace. */
function hostMain() {
  if (os.platform() !== 'linux' || process.getuid() !== 0) {
    console.error('test:package: needs root on Linux (debootstrap, chroot, mounts, BPF): run it as root');
    console.log('0 passed, 1 failed');
    process.exitCode = 1;
    return;
  }
  if (!have('unshare')) throw new Error('unshare (util-linux) is missing: apt-get install util-linux');
  const child = spawn('unshare', ['--mount', '--propagation', 'private', process.execPath, __filename], {
    stdio: 'inherit',
    env: { ...process.env, NODE_LIBBPF_PACKAGE_NS: '1' },
  });
  for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.on(signal, () => child.kill(signal));
  child.on('close', (code, signal) => {
    // the namespace's mounts went with it; the overlay's upper layer is a plain directory
    process.exitCode = code ?? (signal ? 1 : 0);
  });
}

if (IN_NS) namespaceMain();
else hostMain();
