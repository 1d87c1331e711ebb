#!/usr/bin/env node
'use strict';
// npm run test:kernels: the kernel-dependent tests on several kernels.
//
// The host's own kernel is not booted: the tests run natively on it. Every
// other kernel of scripts/kernels/fetch.js (Debian 12's 6.1 LTS, which has
// kprobes and allows fentry) is downloaded as a Debian package, and booted
// under qemu (TCG) with an initramfs that holds node, the addon, the tests
// and their BPF objects; its /init runs the tests and prints the counts.
// One line per kernel:
//   kernel <release>: N passed, M failed, K skipped
// and the exit status is non-zero if a test failed or a VM did not report.
// Cached in .cache/kernels/ (the kernel images, the initramfs, the logs).
// KERNELS=host,debian-6.1 selects kernels; VERBOSE=1 streams each VM's console.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { ROOT, CACHE, TEST_FLAGS, testFiles, leftOut, log, tapSummary, tapFailures, tapSkips } = require('./kernels/common');
const { ensureTools, ensureBuilt, prebuildFixtures } = require('./kernels/deps');
const { selectedKernels, fetchKernel } = require('./kernels/fetch');
const { buildInitramfs } = require('./kernels/initramfs');
const { bootAndTest } = require('./kernels/vm');
const { prepareArm64, qemuArm64Args } = require('./kernels/arm64');

/** A VM gets this long to boot and run every test file. */
const VM_TIMEOUT_MS = Number(process.env.VM_TIMEOUT_S || 900) * 1000;
const LOGS = path.join(CACHE, 'logs');

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

/** The tests, natively on the host's kernel, with the TAP reporter into a log. */
function runNative(logFile) {
  return new Promise((resolve) => {
    const start = Date.now();
    const child = spawn(process.execPath, ['--test', '--test-concurrency=1', ...TEST_FLAGS, '--test-reporter=tap', ...testFiles()], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.stderr.on('data', (d) => (text += d));
    // the same bound as a VM's
    const timer = setTimeout(() => {
      log(`host: no result after ${VM_TIMEOUT_MS / 1000} s: killing node --test (pid ${child.pid})`);
      child.kill('SIGKILL');
    }, VM_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      fs.writeFileSync(logFile, text);
      resolve({ text, code, seconds: (Date.now() - start) / 1000 });
    });
  });
}

const secs = (s) => `${Math.round(s)} s`;

/** `kernel <release>: N passed, M failed, K skipped`, and whether it counts as a pass. */
function line(release, counts, note) {
  const failed = (counts.fail ?? 0) + (counts.cancelled ?? 0);
  const ok = counts.pass !== undefined && failed === 0;
  const text = counts.pass === undefined
    ? `kernel ${release}: no result (${note})`
    : `kernel ${release}: ${counts.pass} passed, ${failed} failed, ${counts.skipped ?? 0} skipped${note ? ` (${note})` : ''}`;
  return { text, ok };
}

/** The failed tests and skip reasons of a TAP log, for the reader. */
function explain(release, tap, logFile) {
  for (const name of tapFailures(tap)) log(`  ${release}: not ok: ${name.trim()}`);
  const reasons = new Map();
  for (const s of tapSkips(tap)) reasons.set(s.reason, (reasons.get(s.reason) || 0) + 1);
  for (const [reason, n] of reasons) log(`  ${release}: skipped ${n}: ${reason}`);
  log(`  ${release}: log: ${path.relative(ROOT, logFile)}`);
}

/**
 * The arm64 row: Debian's arm64 kernel and userland with npm's arm64 node under
 * qemu-system-aarch64 (scripts/kernels/arm64.js), a subset of the suite. Without an arm64 addon
 * the VM still boots and runs node (the smoke line), and the row fails
 * saying how to build the addon.
 */
async function runArm64(k) {
  let prep;
  try {
    prep = prepareArm64();
  } catch (e) {
    log(`arm64: ${e.stack || e.message}`);
    return { text: `kernel ${k.id} (arm64): no result (${e.message.split('\n')[0]})`, ok: false };
  }
  const { kernel, initrd, why, files, node } = prep;
  const logFile = path.join(LOGS, `${k.id}-${kernel.release}.log`);
  log(`booting ${kernel.release} (${kernel.package}) under qemu-system-aarch64 TCG with npm's arm64 node ${node.version}, ${files.length} test files, timeout ${secs(VM_TIMEOUT_MS / 1000)}; console: ${path.relative(ROOT, logFile)}`);
  const vm = await bootAndTest({
    name: `${kernel.release} (arm64)`,
    kernel: kernel.vmlinuz,
    initrd,
    logFile,
    timeoutMs: VM_TIMEOUT_MS,
    qemu: 'qemu-system-aarch64',
    args: qemuArm64Args(kernel.vmlinuz, initrd),
    onLine: (l) => {
      if (process.env.VERBOSE) process.stderr.write(`  [${kernel.release}] ${l}\n`);
    },
  });
  const release = `${vm.result?.release || vm.booted?.release || kernel.release} (arm64)`;
  const l0 = vm.smoke?.loads;
  const loads = l0
    ? `, bpftool loaded ${l0.ok} of ${Number(l0.ok) + Number(l0.failed)} arm64 objects${Number(l0.unknown_to_bpftool) ? ` (${l0.unknown_to_bpftool} more have a SEC() its libbpf does not know)` : ''}`
    : '';
  const smoke = vm.smoke?.node ? `node ${vm.smoke.node} ${vm.smoke.arch}, BTF ${vm.smoke.btf ? 'yes' : 'no'}, bpffs ${vm.smoke.bpffs ? 'yes' : 'no'}${loads}` : 'node did not report';
  for (const m of vm.text.matchAll(/NODE_LIBBPF_LOADFAIL (.*)$/gm)) log(`  ${kernel.release} (arm64): bpftool could not load ${m[1].trim()}`);
  for (const m of vm.text.matchAll(/NODE_LIBBPF_LOADSKIP (.*)$/gm)) log(`  ${kernel.release} (arm64): not loaded by Debian 12's bpftool (libbpf 1.1): ${m[1].trim()}`);
  const boot = vm.booted ? `booted in ${secs(vm.booted.seconds)}, ` : '';
  if (!vm.result) {
    const l = line(release, {}, `${vm.timedOut ? `no result within ${secs(VM_TIMEOUT_MS / 1000)}` : `qemu exited (${vm.exit}) without a result`}${vm.booted ? '' : ', /init did not start'}; log: ${path.relative(ROOT, logFile)}`);
    explain(release, vm.text, logFile);
    return l;
  }
  if (why) {
    log(`  ${release}: ${why}`);
    return { text: `kernel ${release}: no tests run (${why}; the VM ${boot}ran ${smoke}; ${secs(vm.seconds)} in all)`, ok: false };
  }
  const num = (key) => (vm.result[key] === '' || vm.result[key] === undefined ? undefined : Number(vm.result[key]));
  const counts = { pass: num('pass'), fail: num('fail'), cancelled: num('cancelled'), skipped: num('skipped') };
  const l = line(release, counts, `qemu-system-aarch64 TCG: ${boot}${secs(vm.seconds)} in all; ${smoke}`);
  if (vm.result.exit !== '0' && counts.fail === 0) l.ok = false;
  explain(release, vm.text, logFile);
  return l;
}

async function main() {
  const started = Date.now();
  const kernels = selectedKernels();
  ensureTools();
  ensureBuilt();
  const fixtures = prebuildFixtures();
  fs.mkdirSync(LOGS, { recursive: true });
  const lines = [];
  for (const [file, why] of leftOut()) log(`not run here (npm test runs it): ${file}: ${why}`);

  // x86_64 kernels here; other architectures (k.arch) in their own loop below
  const booted = kernels.filter((k) => !k.host && !k.arch);
  const images = booted.map((k) => ({ kernel: k, ...fetchKernel(k) }));
  const modules = images.map((img) => ({ release: img.release, dir: img.modules }));
  const initrd = booted.length ? buildInitramfs({ fixtures, modules }).path : null;

  for (const k of kernels.filter((x) => x.host)) {
    const release = os.release();
    log(`host kernel ${release}: running the tests natively (not booted)`);
    const logFile = path.join(LOGS, `host-${release}.log`);
    const { text, code, seconds } = await runNative(logFile);
    const counts = tapSummary(text);
    const exited = code !== 0 && counts.fail === 0 ? `; node --test exited ${code}` : '';
    const l = line(release, counts, `the host's kernel: run natively, not booted; ${secs(seconds)}${exited}`);
    if (code !== 0) l.ok = false;
    explain(release, text, logFile);
    lines.push(l);
  }

  for (const img of images) {
    const logFile = path.join(LOGS, `${img.kernel.id}-${img.release}.log`);
    log(`booting ${img.release} (${img.package}) under qemu TCG, timeout ${secs(VM_TIMEOUT_MS / 1000)}; console: ${path.relative(ROOT, logFile)}`);
    const vm = await bootAndTest({
      name: img.release,
      kernel: img.vmlinuz,
      initrd,
      logFile,
      timeoutMs: VM_TIMEOUT_MS,
      onLine: (l) => {
        if (process.env.VERBOSE) process.stderr.write(`  [${img.release}] ${l}\n`);
      },
    });
    const release = vm.result?.release || vm.booted?.release || img.release;
    let l;
    if (!vm.result) {
      const lockup = /soft lockup - CPU#\d+ stuck/.test(vm.text || '') ? ' (a soft lockup: the kernel panicked, its backtraces are in the log)' : '';
      const why = (vm.timedOut ? `no result within ${secs(VM_TIMEOUT_MS / 1000)}` : `qemu exited (${vm.exit}) without a result`) + lockup;
      l = line(release, {}, `${why}${vm.booted ? '' : ', /init did not start'}; log: ${path.relative(ROOT, logFile)}`);
    } else {
      const num = (k) => (vm.result[k] === '' || vm.result[k] === undefined ? undefined : Number(vm.result[k]));
      const counts = { pass: num('pass'), fail: num('fail'), cancelled: num('cancelled'), skipped: num('skipped') };
      const exited = vm.result.exit !== '0' ? `, node --test exited ${vm.result.exit}` : '';
      const boot = vm.booted ? `booted in ${secs(vm.booted.seconds)}, ` : '';
      l = line(release, counts, `qemu TCG: ${boot}${secs(vm.seconds)} in all${exited && counts.fail === 0 ? exited : ''}`);
      if (exited) l.ok = false;
    }
    explain(release, vm.text, logFile);
    lines.push(l);
  }

  for (const k of kernels.filter((x) => x.arch === 'arm64')) lines.push(await runArm64(k));

  log(`done in ${secs((Date.now() - started) / 1000)}`);
  for (const l of lines) console.log(l.text);
  process.exitCode = lines.every((l) => l.ok) ? 0 : 1;
}

main().catch((e) => {
  log(e.stack || String(e));
  process.exitCode = 2;
});
