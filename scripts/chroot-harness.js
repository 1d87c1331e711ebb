'use strict';
// The harness of the package tests that run in a chroot, shared by
// scripts/test-package.js (Debian 11) and scripts/test-package-musl.js (a
// musl root): the checks and their `N passed, N failed` last line (CI reads
// it), the timed phases, commands run to their end, the chroot's mounts, and
// the two halves of a run: the host's (root, then the same script again in a
// private mount namespace) and the namespace's (the run, its clean-up on
// SIGINT/SIGTERM, the summary). The tarballs of $PACK_DIR and the getppid
// target are shared too: both tests install the same tarballs and count the
// same calls. What a test checks stays in its script.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { have } = require('./rootfs');

/**
 * @typedef {{ name: string, ok: boolean, detail: string }} Check
 * @typedef {{ code: number | NodeJS.Signals | null, stdout: string, stderr: string, timedOut: boolean, ms: number }} ExecResult
 * @typedef {object} ExecOptions
 * @property {number} [timeoutMs] killed by pid after it (default 2 min)
 * @property {'pipe' | 'ignore'} [stdin] 'pipe': `input` is written and stdin closed; 'ignore': /dev/null (default: the harness's)
 * @property {string} [input] with stdin 'pipe'
 * @property {NodeJS.ProcessEnv} [env] default: this process's
 * @property {string} [cwd]
 * @property {(stderr: string) => void} [onStderr] sees the stderr so far at each chunk
 * @typedef {{ file: string, manifest: { name: string, version: string, libc?: string[], optionalDependencies?: Record<string, string> } }} Tarball
 * @typedef {{ main: Tarball, platforms: Map<string, Tarball> }} Tarballs
 */

/** `ms` as seconds, for the log: `2.4 s`. @param {number} ms */
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
/** The last `n` lines of a command's output, indented under a check. @param {string} text @param {number} [n] */
const tail = (text, n = 12) => text.trim().split('\n').slice(-n).join('\n    ');
/**
 * What an error printed says (its message lines, not its stack): for a load error several causes deep.
 * @param {string} text
 * @param {number} [n]
 */
const gist = (text, n = 12) =>
  text
    .split('\n')
    .filter((l) => l.trim() && !/^\s+at /.test(l) && !/^\s*[{}\]]+,?\s*$/.test(l))
    .slice(0, n)
    .join('\n    ');

/** The last line of `stdout` as JSON, or undefined. @param {string} stdout @returns {any} */
function lastJson(stdout) {
  try {
    return JSON.parse(stdout.trim().split('\n').pop() || '');
  } catch {
    return undefined;
  }
}

/**
 * Synchronous, for setup steps: stdout, or a thrown Error naming the command and its stderr.
 * @param {string} cmd
 * @param {string[]} args
 * @param {import('node:child_process').SpawnSyncOptions} [opts]
 * @returns {string}
 */
function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${String(r.stderr || '').trim().slice(-2000)}`);
  return String(r.stdout);
}

// ---------------------------------------------------------------- the tarballs

/**
 * `package/package.json` of a tarball.
 * @param {string} tgz
 * @returns {Tarball['manifest']}
 */
function manifestOf(tgz) {
  return JSON.parse(run('tar', ['-xzOf', tgz, 'package/package.json']));
}

/** node-libbpf-<version>.tgz, not a platform package's. @param {string} f */
const isMainTarball = (f) => /^node-libbpf-\d[^/]*\.tgz$/.test(f);

/** The .tgz files of `dir` (none when it is missing). @param {string} dir @returns {string[]} */
const tgzIn = (dir) => (fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.tgz')) : []);

/**
 * The tarballs of `dir`: the one main tarball, and the platform packages by name.
 * @param {string} dir
 * @param {string} hint what to do when there is not exactly one main tarball (after the error's colon)
 * @returns {Tarballs}
 */
function tarballsIn(dir, hint) {
  const files = tgzIn(dir);
  const mains = files.filter(isMainTarball);
  if (mains.length !== 1) throw new Error(`${dir} holds ${mains.length} main tarballs (${mains.join(', ') || 'node-libbpf-<version>.tgz'}): ${hint}`);
  const main = { file: path.join(dir, mains[0]), manifest: manifestOf(path.join(dir, mains[0])) };
  /** @type {Map<string, Tarball>} */
  const platforms = new Map();
  for (const f of files.filter((x) => !isMainTarball(x))) {
    const manifest = manifestOf(path.join(dir, f));
    platforms.set(manifest.name, { file: path.join(dir, f), manifest });
  }
  return { main, platforms };
}

/**
 * An app's package.json that installs the tarballs with no registry: it
 * depends on the main tarball, and npm "overrides" point each platform
 * package the main one names at its own tarball, as `file:<dir>/<name>.tgz`.
 * @param {Tarballs} packs
 * @param {string} name the app's name
 * @param {string} dir where the app's npm finds the tarballs
 */
function appManifest({ main, platforms }, name, dir) {
  /** @type {Record<string, string>} */
  const overrides = {};
  for (const n of Object.keys(main.manifest.optionalDependencies || {})) {
    const p = platforms.get(n);
    if (p) overrides[n] = `file:${dir}/${path.basename(p.file)}`;
  }
  return { name, version: '1.0.0', private: true, dependencies: { 'node-libbpf': `file:${dir}/${path.basename(main.file)}` }, overrides };
}

// ---------------------------------------------------------------- the getppid target

/** A process that calls getppid K times (process.ppid) when it reads a line, then waits for stdin to close. */
const TARGET_JS = `'use strict';
const k = Number(process.argv[2]);
process.stdin.once('data', () => {
  let sum = 0;
  for (let i = 0; i < k; i++) sum += process.ppid; // one getppid(2) each
  process.stdout.write(\`done \${sum > 0}\\n\`);
});
`;

/**
 * The getppid count of `node-libbpf syscalls -j` output (the last JSON object with a syscalls list).
 * @param {string} stdout
 * @returns {number | undefined}
 */
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

// ---------------------------------------------------------------- the harness

/**
 * The checks of a test run, whatever it runs in (a chroot, containers): its
 * log (each line prefixed `name`), `check`, the timed phases, the summary
 * (the last line `N passed, N failed`, which CI reads) and the interrupt:
 * SIGINT or SIGTERM cleans up what the run started and counts the run as one
 * more failure (exit 130). chrootHarness builds on it; scripts/test-containers.js
 * uses it alone.
 * @param {{ name: string }} options
 */
function checkHarness({ name }) {
  /** @param {string} msg */
  const log = (msg) => process.stderr.write(`${name}: ${msg}\n`);

  /** The checks, in order. @type {Check[]} */
  const checks = [];
  /**
   * Records a check and logs it (`ok` or `FAIL`, with `detail`): returns `ok` as a boolean.
   * @param {string} what
   * @param {unknown} ok
   */
  function check(what, ok, detail = '') {
    checks.push({ name: what, ok: !!ok, detail });
    log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
    return !!ok;
  }

  /** The phases' times, for the summary. @type {[string, number][]} */
  const times = [];
  /** @param {string} what @param {number} ms */
  const addTime = (what, ms) => times.push([what, ms]);
  /**
   * `fn`, timed (logged now, and listed in the summary).
   * @template T
   * @param {string} what
   * @param {() => T | Promise<T>} fn
   * @returns {Promise<T>}
   */
  async function timed(what, fn) {
    const start = Date.now();
    try {
      return await fn();
    } finally {
      addTime(what, Date.now() - start);
      log(`${what}: ${secs(Date.now() - start)}`);
    }
  }

  /** The times, the failed checks, and the last line, `N passed, N failed`: returns the exit status. */
  function summary() {
    log('times:');
    for (const [what, ms] of times) log(`  ${what}: ${secs(ms)}`);
    const failed = checks.filter((c) => !c.ok);
    for (const c of failed) log(`failed: ${c.name}`);
    console.log(`${checks.length - failed.length} passed, ${failed.length} failed`);
    return failed.length === 0 && checks.length > 0 ? 0 : 1;
  }

  /**
   * From now on, SIGINT or SIGTERM runs `cleanUp` (awaited), prints the
   * counts with the run as one more failure and exits 130. Returns whether
   * that happened (the run's own clean-up then has nothing left to do).
   * @param {() => void | Promise<void>} cleanUp
   * @returns {() => boolean}
   */
  function onInterrupt(cleanUp) {
    let interrupted = false;
    const onSignal = async () => {
      interrupted = true;
      await cleanUp();
      console.log(`${checks.filter((c) => c.ok).length} passed, ${checks.filter((c) => !c.ok).length + 1} failed`);
      process.exit(130);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    return () => interrupted;
  }

  return { log, check, checks, addTime, timed, summary, onInterrupt };
}

/**
 * The harness of one test: its log prefix is `name`, its chroot `chroot`,
 * inside `runDir` (this run's overlay: removed at the end unless KEEP is set).
 * @param {{ name: string, chroot: string, runDir: string, verbose?: boolean, stdin?: 'pipe' | 'ignore' }} options `stdin`: exec's default
 */
function chrootHarness({ name, chroot, runDir, verbose = false, stdin: defaultStdin = 'pipe' }) {
  const { log, check, addTime, timed, summary, onInterrupt } = checkHarness({ name });

  /** exec's children while they run: an interrupt kills them (one outside the chroot, e.g. qemu, would outlive the run). */
  const children = new Set();
  /**
   * Runs `cmd args` to its end (killed by pid after `timeoutMs`).
   * @param {string} cmd
   * @param {string[]} args
   * @param {ExecOptions} [options]
   * @returns {Promise<ExecResult>}
   */
  function exec(cmd, args, { timeoutMs = 120000, stdin = defaultStdin, input, env, cwd, onStderr } = {}) {
    return new Promise((resolve) => {
      const start = Date.now();
      const child = spawn(cmd, args, { stdio: [stdin, 'pipe', 'pipe'], env: env || process.env, cwd });
      children.add(child);
      let stdout = '';
      let stderr = '';
      child.stdout?.on('data', (d) => {
        stdout += d;
        if (verbose) process.stderr.write(d);
      });
      child.stderr?.on('data', (d) => {
        stderr += d;
        if (verbose) process.stderr.write(d);
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
        children.delete(child);
        resolve({ code: code ?? signal, stdout, stderr, timedOut, ms: Date.now() - start });
      });
      child.stdin?.end(input ?? '');
    });
  }

  /**
   * Starts `node /app/target.js k` in the chroot (TARGET_JS, written there:
   * it calls getppid `k` times when told), runs `tool(pid, onStderr)` on it,
   * and tells the target to go when the tool's stderr has its "Tracing" line.
   * The target is killed at the end.
   * @param {{ chrootBin: string, node: string, env: NodeJS.ProcessEnv, k: number }} target how to start it
   * @param {(pid: number, onStderr: (stderr: string) => void) => Promise<ExecResult>} tool runs the tool, passing `onStderr` to exec
   * @returns {Promise<{ r: ExecResult, sent: boolean, tracingAt: number | undefined, targetOut: string }>} `tracingAt`: ms from the tool's start to its "Tracing" line
   */
  async function traceTarget({ chrootBin, node, env, k }, tool) {
    fs.writeFileSync(path.join(chroot, 'app', 'target.js'), TARGET_JS);
    const target = spawn(chrootBin, [chroot, node, '/app/target.js', String(k)], { stdio: ['pipe', 'pipe', 'pipe'], env });
    let targetOut = '';
    target.stdout.on('data', (d) => (targetOut += d));
    target.stderr.on('data', (d) => (targetOut += d));
    try {
      // `chroot` execs node: the pid is node's, in the host's (and the chroot's) pid namespace
      let sent = false;
      /** @type {number | undefined} */
      let tracingAt;
      const start = Date.now();
      const r = await tool(/** @type {number} */ (target.pid), (err) => {
        if (!sent && /^Tracing /m.test(err)) {
          sent = true;
          tracingAt = Date.now() - start;
          target.stdin.write('go\n');
        }
      });
      return { r, sent, tracingAt, targetOut };
    } finally {
      target.stdin.end();
      target.kill('SIGKILL');
    }
  }

  /** Mounts done in the namespace, newest last (unmounted in reverse). @type {string[]} */
  const mounts = [];
  /**
   * `mount args target`, `target` made first; unmounted by unmountAll.
   * @param {string[]} args
   * @param {string} target
   */
  function mount(args, target) {
    fs.mkdirSync(target, { recursive: true });
    run('mount', [...args, target]);
    mounts.push(target);
  }
  /** Unmounts everything this run mounted (newest first; lazily if busy). */
  function unmountAll() {
    while (mounts.length) {
      const target = /** @type {string} */ (mounts.pop());
      if (spawnSync('umount', [target]).status !== 0) spawnSync('umount', ['-l', target]);
    }
  }

  /**
   * This run's root, made anew: an overlay over the pristine tree `base` (or
   * a copy, without overlayfs), with /dev, proc, sysfs, tracefs and bpffs mounted.
   * @param {string} base
   */
  function mountChroot(base) {
    fs.rmSync(runDir, { recursive: true, force: true });
    for (const d of ['upper', 'work', 'root']) fs.mkdirSync(path.join(runDir, d), { recursive: true });
    try {
      mount(['-t', 'overlay', 'overlay', '-o', `lowerdir=${base},upperdir=${path.join(runDir, 'upper')},workdir=${path.join(runDir, 'work')}`], chroot);
    } catch (e) {
      log(`no overlayfs (${e.message.split('\n')[0]}): copying the tree instead`);
      run('cp', ['-a', `${base}/.`, chroot]);
    }
    mount(['--bind', '/dev'], path.join(chroot, 'dev'));
    mount(['-t', 'proc', 'proc'], path.join(chroot, 'proc'));
    mount(['-t', 'sysfs', 'sysfs'], path.join(chroot, 'sys'));
    mount(['-t', 'tracefs', 'tracefs'], path.join(chroot, 'sys', 'kernel', 'tracing'));
    mount(['-t', 'bpf', 'bpf'], path.join(chroot, 'sys', 'fs', 'bpf'));
  }

  /** Kills, by pid, the processes whose root is the chroot (started by this run). */
  function killChrootProcesses() {
    const real = fs.existsSync(chroot) ? fs.realpathSync(chroot) : chroot;
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

  /** The end of a run: its processes killed, its mounts unmounted, its overlay removed (KEEP=1 keeps it). */
  function cleanUp() {
    killChrootProcesses();
    unmountAll();
    // retried: a process killed a moment ago may still be finishing a write there (ENOTEMPTY)
    if (!process.env.KEEP) fs.rmSync(runDir, { recursive: true, force: true, maxRetries: 3 });
  }

  /**
   * Inside the namespace: `inNamespace`, then the clean-up and the summary.
   * SIGINT or SIGTERM cleans up at once and counts the run as one more failure (exit 130).
   * @param {() => Promise<void>} inNamespace
   */
  async function namespaceMain(inNamespace) {
    const interrupted = onInterrupt(() => {
      log('interrupted: killing the chroot\'s processes, unmounting');
      for (const child of children) child.kill('SIGKILL');
      cleanUp();
    });
    try {
      await inNamespace();
    } catch (e) {
      check('the run', false, e.stack || String(e));
    } finally {
      if (!interrupted()) cleanUp();
    }
    process.exitCode = summary();
  }

  /**
   * On the host: checks root, then runs `script` again in a private mount
   * namespace (unshare -m, NODE_LIBBPF_PACKAGE_NS=1), passing SIGINT and SIGTERM on.
   * @param {string} script
   * @param {string} needs what root is needed for, in the refusal
   */
  function hostMain(script, needs) {
    if (os.platform() !== 'linux' || process.getuid() !== 0) {
      console.error(`${name}: needs root on Linux (${needs}): run it as root`);
      console.log('0 passed, 1 failed');
      process.exitCode = 1;
      return;
    }
    if (!have('unshare')) throw new Error('unshare (util-linux) is missing: apt-get install util-linux');
    const child = spawn('unshare', ['--mount', '--propagation', 'private', process.execPath, script], {
      stdio: 'inherit',
      env: { ...process.env, NODE_LIBBPF_PACKAGE_NS: '1' },
    });
    for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.on(signal, () => child.kill(signal));
    child.on('close', (code, signal) => {
      // the namespace's mounts went with it; the overlay's upper layer is a plain directory
      process.exitCode = code ?? (signal ? 1 : 0);
    });
  }

  /**
   * The script's entry: on the host, hostMain; in the namespace it made, `inNamespace` (namespaceMain).
   * @param {{ script: string, needs: string, inNamespace: () => Promise<void> }} options `script`: the caller's __filename
   */
  function main({ script, needs, inNamespace }) {
    if (process.env.NODE_LIBBPF_PACKAGE_NS === '1') return namespaceMain(inNamespace);
    return hostMain(script, needs);
  }

  return { log, check, addTime, timed, exec, traceTarget, mount, unmountAll, mountChroot, killChrootProcesses, summary, main };
}

module.exports = { checkHarness, chrootHarness, secs, tail, gist, lastJson, run, manifestOf, isMainTarball, tgzIn, tarballsIn, appManifest, TARGET_JS, getppidCount };
