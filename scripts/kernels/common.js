'use strict';
// Shared by scripts/test-kernels.js and its helpers: paths, the list of test
// files, running commands, reading node's TAP output.
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..', '..');
/** Downloaded kernels, the initramfs and the logs (gitignored). */
const CACHE = path.join(ROOT, '.cache', 'kernels');

/**
 * Test files that load nothing into the kernel: not run by test:kernels
 * (`npm test` runs them), with the reason printed.
 */
const NOT_KERNEL = {
  'typegen.test.js': 'type-checks generated TypeScript declarations with tsc (node_modules/typescript); loads nothing into the kernel',
  'codec.test.js': 'the codec on its own, in JavaScript: loads nothing into the kernel',
  'dispatch.test.js': 'the dispatcher on its own, in JavaScript: loads nothing into the kernel',
  'codec_fuzz.test.js': 'random layouts into the codec, in JavaScript: loads nothing into the kernel',
  'package.test.js': "the package's surface (exports map, npm pack, npx node-libbpf build with clang, the commands): the VM has neither npm nor clang; the tracing it does runs in the other files",
  'fuzz.test.js': "5,000 mutated objects against libbpf's parser (user space; under TCG it would take most of the VM's time)",
};

/**
 * The test files that depend on the kernel, run in each VM and natively on
 * the host: every file of __test__/ but NOT_KERNEL's. They load BPF programs
 * into the running kernel (even errors.test.js, whose kprobe and fentry
 * tests depend on what the kernel has); a new file runs unless listed
 * there. $TEST_FILES (space or comma separated, relative to the
 * repository) narrows it, for debugging.
 */
function testFiles() {
  if (process.env.TEST_FILES) return process.env.TEST_FILES.split(/[\s,]+/).filter(Boolean);
  return fs
    .readdirSync(path.join(ROOT, '__test__'))
    .filter((f) => f.endsWith('.test.js') && !NOT_KERNEL[f])
    .sort()
    .map((f) => `__test__/${f}`);
}

/** The test files left out, with why: `[file, reason]`. */
function leftOut() {
  if (process.env.TEST_FILES) return [];
  return fs
    .readdirSync(path.join(ROOT, '__test__'))
    .filter((f) => NOT_KERNEL[f])
    .map((f) => [`__test__/${f}`, NOT_KERNEL[f]]);
}

/**
 * node --test flags of both runs: a test file that hangs is cancelled after
 * FILE_TIMEOUT_S (node 20 applies --test-timeout to each file's process),
 * and one whose tests are done exits even if it left a child process
 * behind (--test-force-exit), so the other files still run.
 */
const FILE_TIMEOUT_S = Number(process.env.FILE_TIMEOUT_S || 150);
const TEST_FLAGS = ['--test-force-exit', `--test-timeout=${FILE_TIMEOUT_S * 1000}`];

function log(msg) {
  process.stderr.write(`test:kernels: ${msg}\n`);
}

/** Runs a command, returns its stdout (throws with its stderr on failure). */
function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 << 20, ...opts });
}

/** Whether `cmd` is on $PATH. */
function have(cmd) {
  return (process.env.PATH || '/usr/sbin:/usr/bin:/sbin:/bin').split(':').some((dir) => {
    try {
      fs.accessSync(path.join(dir, cmd), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The counts of node's TAP summary (`# pass N`, ...): the last of each. */
function tapSummary(text) {
  const count = (key) => {
    const all = [...text.matchAll(new RegExp(`^# ${key} (\\d+)$`, 'gm'))];
    return all.length ? Number(all[all.length - 1][1]) : undefined;
  };
  return { pass: count('pass'), fail: count('fail'), cancelled: count('cancelled'), skipped: count('skipped'), todo: count('todo') };
}

/** The names of the tests that failed (`not ok N - name`, at any depth). */
function tapFailures(text) {
  return [...text.matchAll(/^(\s*)not ok \d+ - (.*?)(?: # .*)?$/gm)].map((m) => `${m[1]}${m[2]}`);
}

/** The skip reasons (`ok N - name # SKIP reason`). */
function tapSkips(text) {
  return [...text.matchAll(/^\s*ok \d+ - (.*?) # SKIP ?(.*)$/gm)].map((m) => ({ name: m[1], reason: m[2] }));
}

module.exports = { ROOT, CACHE, TEST_FLAGS, testFiles, leftOut, log, run, have, tapSummary, tapFailures, tapSkips };
