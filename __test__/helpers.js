'use strict';
// Shared by the tests: paths of the compiled test programs and fixtures,
// waiting for buffered events, and what the kernel holds.
const path = require('node:path');
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');

const root = path.join(__dirname, '..');
const bpf = require('..');
const { bpfArch, objectPath: shippedObject } = require('../lib/core/objects');

/** The compiled test program `__test__/bpf/<name>.bpf.c`, or else the shipped `bpf/<name>.bpf.c` (npm run build:bpf). */
function objectPath(name) {
  const test = path.join(__dirname, 'bpf', bpfArch(), `${name}.bpf.o`);
  return fs.existsSync(test) ? test : shippedObject(name);
}

/**
 * Builds `__test__/fixtures/<name>.c` with gcc, or `<name>.cpp` with g++,
 * with `flags` added (once) and returns the binary.
 */
function buildFixture(name, flags = []) {
  const cpp = fs.existsSync(path.join(__dirname, 'fixtures', `${name}.cpp`));
  const out = path.join(__dirname, '.build', [name, ...flags].join(''));
  const src = path.join(__dirname, 'fixtures', `${name}.${cpp ? 'cpp' : 'c'}`);
  if (!fs.existsSync(out) || fs.statSync(out).mtimeMs < fs.statSync(src).mtimeMs) {
    fs.mkdirSync(path.dirname(out), { recursive: true });
    execFileSync(cpp ? 'g++' : 'gcc', ['-O1', '-g', ...flags, '-o', out, src]);
  }
  return out;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `done()` is true, polling every 10 ms, for at most `ms`. */
async function waitFor(done, ms = 2000) {
  const end = Date.now() + ms;
  while (!done() && Date.now() < end) await sleep(10);
  return done();
}

/** The ids of the BPF programs and links in the kernel (bpftool). */
function kernelIds() {
  const ids = (kind) => JSON.parse(execFileSync('bpftool', ['-j', kind, 'show'], { encoding: 'utf8' }) || '[]').map((x) => x.id);
  return { progs: ids('prog'), links: ids('link'), maps: ids('map') };
}

/** Ids in `after` that were not in `before`. */
function added(before, after) {
  const seen = new Set(before);
  return after.filter((id) => !seen.has(id));
}

/** Asserts that `fn` throws a JS Error with `code`, whose message matches `re`. */
function throwsCode(assert, fn, code, re) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof Error, 'an Error object');
    assert.strictEqual(e.code, code, `code of: ${e.message}`);
    if (re) assert.match(e.message, re);
    return true;
  });
}

/** Two paths in a new directory: one file that exists, one that does not. */
function twoFiles() {
  const os = require('node:os');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-open-'));
  const files = { dir, present: path.join(dir, 'present'), missing: path.join(dir, 'missing') };
  fs.writeFileSync(files.present, 'x');
  return files;
}

/** Opens the existing file `k` times and the missing one `k` times (openat, from this thread). */
function openBoth({ present, missing }, k) {
  const assert = require('node:assert');
  for (let i = 0; i < k; i++) fs.closeSync(fs.openSync(present, 'r'));
  for (let i = 0; i < k; i++) assert.throws(() => fs.openSync(missing, 'r'), { code: 'ENOENT' });
}

/**
 * Starts an example script (`node script ...args`) that prints `Tracing ...`
 * on stderr once attached: `ready` resolves then, `exited` when it ends
 * (with its code, signal, stdout and stderr), `stop()` sends SIGTERM. It is
 * killed after `timeoutMs`.
 */
function startExample(script, args, timeoutMs) {
  const { spawn } = require('node:child_process');
  const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.setEncoding('utf8').on('data', (d) => (out.stdout += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exited = new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, ...out });
    });
  });
  const ready = new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (d) => {
      out.stderr += d;
      if (/^Tracing /m.test(out.stderr)) resolve();
    });
    exited.then(() => reject(new Error(`${path.basename(script)} exited before tracing:\n${out.stderr}`)));
  });
  ready.catch(() => {}); // awaited only by the tests that need it
  return { child, out, ready, exited, stop: () => (child.kill('SIGTERM'), exited) };
}

/** What an example said about its built-in workload on stderr (lib/host/target.js traceTarget): `workload: pid N script {info}`, or null. */
function workloadOf(stderr) {
  const m = /^workload: pid (\d+) \S+ (\{.*\})$/m.exec(stderr);
  return m && { pid: Number(m[1]), info: JSON.parse(m[2]) };
}

/** Starts __test__/fixtures/getppid_loop for `n` getppid calls; they start on `go()`. */
function getppidLoop(n) {
  const { spawn } = require('node:child_process');
  // a test that fails before go() must not leave the loop waiting (and the
  // test file hanging on it): it is killed after 5 minutes whatever happens
  const child = spawn(buildFixture('getppid_loop'), [String(n)], { stdio: ['pipe', 'pipe', 'inherit'], timeout: 300_000 });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve({ code, nsPerCall: parseFloat(out) })));
  return { child, exited, go: () => child.stdin.end('go\n') };
}

/** stream.bpf.o attached for process `pid`: a record per getppid call, `seq` counting from 0. */
function streamer(pid, { sink = 1, noWakeup = false } = {}) {
  const obj = bpf.loadBpfProgram(objectPath('stream'));
  obj.setGlobalVariable('target_pid', pid);
  obj.setGlobalVariable('sink', sink);
  obj.setGlobalVariable('no_wakeup', noWakeup);
  obj.attachTracepoint('syscalls', 'sys_enter_getppid', 'handle_enter_getppid');
  return obj;
}

/**
 * `cmd` (an argv) run so that it dies with this process, even killed by
 * SIGKILL (setpriv --pdeathsig: a long-lived child, such as a service
 * holding BPF programs, is never orphaned by a killed test runner).
 */
function tiedToThisProcess(cmd) {
  return ['setpriv', '--pdeathsig', 'KILL', ...cmd];
}

/**
 * Runs `cmd args` and hands each line of its stdout to `onLine`; kills it
 * when no line came for `timeoutMs` (a hang). Resolves to { code, signal,
 * hung, stderr }: stderr's start only (a panic's message comes first and can
 * be huge, a whole BTF log).
 * @param {string} cmd
 * @param {string[]} args
 * @param {(line: string) => void} onLine
 * @param {number} timeoutMs
 * @returns {Promise<{ code: number | null, signal: NodeJS.Signals | null, hung: boolean, stderr: string }>}
 */
function runLines(cmd, args, onLine, timeoutMs) {
  const { spawn } = require('node:child_process');
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let rest = '';
    let stderr = '';
    let hung = false;
    let timer;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        hung = true;
        child.kill('SIGKILL');
      }, timeoutMs);
    };
    arm();
    child.stdout.setEncoding('utf8').on('data', (d) => {
      arm();
      const lines = (rest + d).split('\n');
      rest = lines.pop() ?? '';
      lines.forEach(onLine);
    });
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += stderr.length < 4000 ? d.slice(0, 4000) : ''));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (rest) onLine(rest);
      resolve({ code, signal, hung, stderr });
    });
  });
}

/**
 * Runs cases `from` to `to` - 1 in children that say `run ID` before a case
 * and `done ID JSON` after it (fuzz.test.js, parser_fuzz.test.js):
 * `runChild(start, onLine)` starts one for the cases from `start`
 * (runLines). The outcome of each case goes to `results[ID]`; a child that
 * dies or hangs in a case records `died(its runLines result)` for that case,
 * and the next child starts after it. A child that dies between cases is an
 * Error naming `what`.
 * @param {number} from
 * @param {number} to
 * @param {any[]} results
 * @param {(start: number, onLine: (line: string) => void) => ReturnType<typeof runLines>} runChild
 * @param {(r: Awaited<ReturnType<typeof runLines>>) => object} died
 * @param {string} what
 */
async function runCases(from, to, results, runChild, died, what) {
  let start = from;
  while (start < to) {
    let running = -1;
    const r = await runChild(start, (line) => {
      const m = /^(run|done) (\d+)(?: (.*))?$/.exec(line);
      if (!m) return;
      const id = Number(m[2]);
      if (m[1] === 'run') running = id;
      else {
        results[id] = { outcome: JSON.parse(m[3]) };
        running = -1;
      }
    });
    if (running >= 0) {
      // the case in flight when the child died or stopped answering
      results[running] = died(r);
      start = running + 1;
    } else if (r.code !== 0 || r.signal) {
      throw new Error(`${what} died between cases (code ${r.code}, signal ${r.signal}): ${r.stderr}`);
    } else {
      start = to;
    }
  }
}

/** mulberry32: a small seeded PRNG, floats in [0, 1). */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The ids of the BPF objects of `kind` (`bpf-prog`, `bpf-map`, `bpf_link`) this process holds (its fds): other processes' do not count. */
function ownIds(kind) {
  return fs.readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) !== `anon_inode:${kind}`) return [];
      const m = /(?:prog_id|link_id|map_id):\s*(\d+)/.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
      return m ? [Number(m[1])] : [];
    } catch {
      return []; // closed meanwhile
    }
  });
}

/**
 * The argv prefix that runs a command as nobody with CAP_BPF + CAP_PERFMON
 * only (inheritable and ambient: kept across exec; no CAP_SYS_PTRACE, no
 * root): the least privilege a self-profiling service runs with.
 */
const AS_NOBODY = ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', '--inh-caps=+bpf,+perfmon', '--ambient-caps=+bpf,+perfmon'];

/** The argv prefix that runs a command as pid 1 of a new PID namespace with its own /proc (--kill-child: the namespace's processes end with unshare). */
const UNSHARE_PID = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'];

/**
 * Before 5.11 the kernel charges BPF memory to RLIMIT_MEMLOCK, which nobody
 * cannot raise: root raises it first (as LimitMEMLOCK=infinity would); [] on
 * later kernels.
 */
function memlockPrefix() {
  const [major, minor] = require('node:os').release().split('.').map(Number);
  return major < 5 || (major === 5 && minor < 11) ? ['prlimit', '--memlock=unlimited'] : [];
}

/** Why nobody (AS_NOBODY) cannot load the package from this work tree here (a property of the machine), or false. */
function nobodyCannotRun() {
  if (process.getuid?.() !== 0) return 'running as nobody needs root: run the tests as root';
  const { spawnSync } = require('node:child_process');
  const r = spawnSync(AS_NOBODY[0], [...AS_NOBODY.slice(1), process.execPath, '-e', `require(${JSON.stringify(root)})`], { encoding: 'utf8' });
  return r.status === 0 ? false : `nobody cannot load the package from ${root} (${r.stderr.split('\n').find((l) => l.includes('Error')) ?? r.status})`;
}

/** Why UNSHARE_PID cannot run here (a property of the machine), or false. */
function pidNamespaceCannotRun() {
  if (process.getuid?.() !== 0) return 'pid namespaces need root: run the tests as root';
  const { spawnSync } = require('node:child_process');
  const r = spawnSync(UNSHARE_PID[0], [...UNSHARE_PID.slice(1), 'true'], { encoding: 'utf8' });
  return r.status === 0 ? false : `unshare --pid cannot run here: ${r.stderr.trim()}`;
}

module.exports = { bpf, AS_NOBODY, UNSHARE_PID, memlockPrefix, nobodyCannotRun, pidNamespaceCannotRun, ownIds, tiedToThisProcess, runLines, runCases, prng, root, objectPath, getppidLoop, streamer, buildFixture, sleep, waitFor, kernelIds, added, throwsCode, startExample, workloadOf, twoFiles, openBoth };
