'use strict';
/**
 * Go programs, for tracers of the Go runtime (examples/goroutines.js): the
 * names of goroutine states, and building a Go source file with the `go`
 * tool (Debian: golang-go).
 *
 *   const { buildGo, goStateName } = require('node-libbpf/lib/go');
 *   const binary = buildGo('main.go'); // in ~/.cache/node-libbpf/go (root: /var/cache/node-libbpf/go)
 *   goStateName(0x1004); // 'SCAN|WAITING'
 */
const { execFileSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');

/** The goroutine states, `_G*` in Go's runtime/runtime2.go (the values of g.atomicstatus). */
const GO_STATES = {
  0: 'IDLE', // just allocated, not yet initialized
  1: 'RUNNABLE', // on a run queue
  2: 'RUNNING', // running user code, on an M and a P
  3: 'SYSCALL', // in a system call
  4: 'WAITING', // blocked in the runtime (channel, lock, sleep, I/O)
  5: 'MORIBUND_UNUSED',
  6: 'DEAD', // exited (or an unused g, on a free list)
  7: 'ENQUEUE_UNUSED',
  8: 'COPYSTACK', // its stack is being moved
  9: 'PREEMPTED', // stopped itself for a suspendG preemption
};
const G_SCAN = 0x1000; // _Gscan: the GC is scanning the stack

/** The name of a goroutine state: `RUNNABLE`, `SCAN|WAITING`, or the number for an unknown one. */
function goStateName(status) {
  const name = GO_STATES[status & ~G_SCAN] ?? `${status & ~G_SCAN}`;
  return status & G_SCAN ? `SCAN|${name}` : name;
}

function unsafePath(p, why, fix) {
  const err = /** @type {NodeJS.ErrnoException} */ (new Error(`${p} ${why}: node-libbpf runs and writes only what no other user can change; ${fix}`));
  err.code = 'ERR_BPF_UNSAFE_PATH';
  return err;
}

const modeText = (st) => `0${(st.mode & 0o7777).toString(8)}`;

const isUnder = (p, dir) => p === dir || p.startsWith(dir === '/' ? '/' : `${dir}/`);

/**
 * Makes directory `dir` (mode 0700) where it is missing, once what exists of
 * it is checked (no directory is made where another user could change it),
 * then checks it all with `checkPrivateDir(dir, { from })`; returns its
 * real path.
 */
function makePrivateDir(dir, from = dir) {
  let existing = path.resolve(dir);
  while (!fs.existsSync(existing)) existing = path.dirname(existing);
  checkPrivateDir(existing, { from: isUnder(existing, path.resolve(from)) ? from : null });
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return checkPrivateDir(dir, { from });
}

/**
 * Checks that no user but this one (or root) can change what directory
 * `dir` holds: `dir` and every directory from `from` down to it (its
 * private part) are owned by this user (the effective uid) and writable by
 * no group and no other user; each directory above `from` is owned by root
 * or this user, and, if others may write in it, sticky (as /tmp: they
 * cannot rename or remove what is not theirs). Symbolic links are resolved
 * first (each real directory is checked). `from: null`: no private part.
 * Returns `dir`'s real path; throws `ERR_BPF_UNSAFE_PATH` naming the
 * directory and the fix.
 */
function checkPrivateDir(dir, { from = dir } = {}) {
  const uid = process.geteuid();
  const real = fs.realpathSync(dir);
  const realFrom = from === null ? null : fs.realpathSync(from);
  if (realFrom !== null && !isUnder(real, realFrom)) throw new Error(`${dir} is not under ${from}`);
  let p = '/';
  for (const part of ['', ...real.split('/').filter(Boolean)]) {
    p = path.join(p, part);
    const st = fs.lstatSync(p);
    if (!st.isDirectory()) throw unsafePath(p, 'is not a directory', 'remove it');
    const owner = `is owned by uid ${st.uid}, not by this user (uid ${uid})${uid === 0 ? '' : ' or root'}`;
    if (realFrom !== null && isUnder(p, realFrom)) {
      if (st.uid !== uid) throw unsafePath(p, owner, `remove it (it is made again, mode 0700), or chown ${uid} ${p}`);
      if (st.mode & 0o022) throw unsafePath(p, `is writable by others (mode ${modeText(st)})`, `run chmod go-w ${p}`);
    } else {
      if (st.uid !== uid && st.uid !== 0) throw unsafePath(p, owner, `use a directory only you can change`);
      if (st.mode & 0o022 && !(st.mode & 0o1000)) {
        throw unsafePath(p, `is writable by others and not sticky (mode ${modeText(st)})`, `run chmod go-w ${p}, or use another directory`);
      }
    }
  }
  return real;
}

/**
 * The directory `sub` (e.g. `go`) of node-libbpf's cache, made if need be
 * (mode 0700) and checked with `checkPrivateDir` from the cache's root
 * down: `$NODE_LIBBPF_CACHE_DIR` when set, else for root
 * `/var/cache/node-libbpf`, else `$XDG_CACHE_HOME/node-libbpf` or
 * `~/.cache/node-libbpf`. Never the temp dir, where other users may plant
 * files. Returns its real path.
 */
function cacheDir(sub = '') {
  const xdg = process.env.XDG_CACHE_HOME;
  const root =
    process.env.NODE_LIBBPF_CACHE_DIR ||
    (process.geteuid() === 0 ? '/var/cache/node-libbpf' : path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.cache'), 'node-libbpf'));
  makePrivateDir(root);
  return makePrivateDir(path.join(root, sub), root);
}

/** Whether `file` is a regular file of this user that no one else may write (else it is not reused). */
function isOwnFile(file) {
  let st;
  try {
    st = fs.lstatSync(file);
  } catch {
    return false;
  }
  if (st.isFile() && st.uid === process.geteuid() && !(st.mode & 0o022)) return true;
  throw unsafePath(file, `is ${st.isFile() ? `owned by uid ${st.uid} with mode ${modeText(st)}` : 'not a regular file'}, so it is not run`, 'remove it');
}

/**
 * Builds `source` (a main package in one .go file that imports the
 * standard library only: no go.mod needed) with `go build`; returns the
 * binary's path. Without `output`, the binary is in node-libbpf's cache
 * (`cacheDir('go')`), named after the source's name and a hash of its text
 * and `ldflags`, and reused while it is there. With `output`, it is
 * rebuilt unless `output` is newer than `source`; `output`'s directory is
 * made (mode 0700) and must be private (`checkPrivateDir`). A file is
 * reused only if it is this user's and writable by no one else. The build
 * cache (`GOCACHE`, `GOPATH`) is in node-libbpf's cache; `go` runs there,
 * with no go.env, go.work or toolchain download.
 * Throws when Go is not installed (`apt-get install golang-go`), and
 * `ERR_BPF_UNSAFE_PATH` when a directory or file is not private.
 *
 * @param {string} source
 * @param {string} [output]
 * @param {{ ldflags?: string }} [options]
 * @returns {string}
 */
function buildGo(source, output, { ldflags } = {}) {
  const text = fs.readFileSync(source);
  if (output == null) {
    const hash = crypto.createHash('sha256').update(text).update(`\0${ldflags ?? ''}`).digest('hex').slice(0, 16);
    output = path.join(cacheDir('go'), `${path.basename(source, '.go')}-${hash}`);
    if (isOwnFile(output)) return output;
  } else {
    output = path.join(makePrivateDir(path.dirname(output)), path.basename(output));
    if (isOwnFile(output) && fs.statSync(output).mtimeMs >= fs.statSync(source).mtimeMs) return output;
  }
  const work = cacheDir('go-build');
  const env = {
    ...process.env,
    GOCACHE: work,
    GOPATH: cacheDir('gopath'),
    GOENV: 'off',
    GOWORK: 'off',
    GOFLAGS: '',
    GOTOOLCHAIN: 'local',
  };
  const partial = `${output}.partial-${process.pid}`;
  try {
    execFileSync('go', ['build', '-o', partial, ...(ldflags ? [`-ldflags=${ldflags}`] : []), path.resolve(source)], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    fs.rmSync(partial, { force: true });
    if (err.code === 'ENOENT') throw new Error('the go tool is not installed (Debian: apt-get install golang-go, or npm run setup)');
    throw new Error(`go build ${source}: ${err.stderr?.toString().trim() || err.message}`);
  }
  fs.renameSync(partial, output);
  return output;
}

module.exports = { GO_STATES, goStateName, buildGo, cacheDir, checkPrivateDir };
