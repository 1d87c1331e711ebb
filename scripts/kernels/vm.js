'use strict';
// Boots a kernel with the test initramfs under qemu (TCG: KVM does not work
// for stock kernels on this kind of VM), streams the serial console to a
// log, and reads the NODE_LIBBPF_RESULT line /init prints.
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const { log } = require('./common');

/** qemu's arguments for `kernel` and `initrd`. */
function qemuArgs(kernel, initrd) {
  return [
    // one host thread runs both vCPUs in turn: with a thread per vCPU, a CPU
    // entering a syscall while the other patched the syscall tracepoint's
    // static key spun there (6.1: soft lockup at syscall_trace_enter's
    // jump label, twice in a row), which the guest never does on hardware
    '-accel', 'tcg,thread=single',
    '-cpu', 'max',
    '-m', '2G',
    '-smp', '2',
    '-nographic',
    '-no-reboot',
    '-nic', 'none',
    '-kernel', kernel,
    '-initrd', initrd,
    // softlockup_panic: a CPU stuck in the kernel for 2 minutes
    // (watchdog_thresh=60: twice that) ends the VM (panic=-1 reboots,
    // -no-reboot exits) instead of spinning until VM_TIMEOUT_S; loglevel=5
    // puts the backtraces on the console, in the log. The default threshold
    // (20 s) also fires when the host merely starves a vCPU of time (TCG on
    // a busy host), which is no hang.
    '-append', 'console=ttyS0 quiet loglevel=5 panic=-1 softlockup_panic=1 watchdog_thresh=60 random.trust_cpu=on',
  ];
}

/** `key=value` pairs of a result line. */
function fields(line) {
  return Object.fromEntries([...line.matchAll(/(\w+)=(\S*)/g)].map((m) => [m[1], m[2]]));
}

/**
 * Boots, waits for the result or `timeoutMs` (then kills qemu), and
 * resolves `{ result, booted, smoke, log, seconds, timedOut, exit }`.
 * `onLine` sees every console line. `qemu` and `args` boot another
 * architecture (arm64.js: qemu-system-aarch64).
 * @param {{ name: string, kernel: string, initrd: string, logFile: string, timeoutMs: number, onLine?: (line: string) => void, qemu?: string, args?: string[] }} options
 */
function bootAndTest({ name, kernel, initrd, logFile, timeoutMs, onLine = () => {}, qemu: qemuBin = 'qemu-system-x86_64', args }) {
  return new Promise((resolve, reject) => {
    const start = Date.now();
    const out = fs.createWriteStream(logFile);
    const qemu = spawn(qemuBin, args || qemuArgs(kernel, initrd), { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    let pending = '';
    let result;
    let booted;
    let smoke;
    let timedOut = false;
    const onData = (chunk) => {
      const s = chunk.toString('utf8').replace(/\r/g, '');
      out.write(s);
      text += s;
      pending += s;
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const line of lines) {
        // (SeaBIOS leaves terminal escapes at the start of the first line)
        const m = /NODE_LIBBPF_(BOOTED|RESULT) (.*)$/.exec(line);
        if (m?.[1] === 'BOOTED') booted = { ...fields(m[2]), seconds: (Date.now() - start) / 1000 };
        if (m?.[1] === 'RESULT') result = fields(m[2]);
        const loads = /NODE_LIBBPF_LOADS (.*)$/.exec(line);
        if (loads) smoke = { ...smoke, loads: fields(loads[1]) };
        const s = /NODE_LIBBPF_SMOKE (\{.*\})$/.exec(line);
        if (s) {
          try {
            smoke = { ...smoke, ...JSON.parse(s[1]) };
          } catch {
            smoke = { error: s[1] };
          }
        }
        onLine(line);
      }
    };
    qemu.stdout.on('data', onData);
    qemu.stderr.on('data', onData);
    const timer = setTimeout(() => {
      timedOut = true;
      log(`${name}: no result after ${timeoutMs / 1000} s: killing qemu (pid ${qemu.pid})`);
      qemu.kill('SIGKILL');
    }, timeoutMs);
    // a Ctrl+C of the script must not leave qemu running
    const killOnExit = () => qemu.kill('SIGKILL');
    process.once('exit', killOnExit);
    qemu.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    qemu.on('close', (code, signal) => {
      clearTimeout(timer);
      process.removeListener('exit', killOnExit);
      out.end();
      resolve({ result, booted, smoke, text, seconds: (Date.now() - start) / 1000, timedOut, exit: signal || code });
    });
  });
}

module.exports = { bootAndTest, qemuArgs };
