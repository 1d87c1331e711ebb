'use strict';
// What bench/setup.sh installs, found or not (the bench itself installs
// nothing): the C consumer's libbpf-dev, clang and gcc are required; for
// each optional tool, '' when present, else why not, shown in its rows.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { sh } = require('./procs');

const SETUP = 'run `bash bench/setup.sh` (as root)';
const installed = (pkg) => sh('dpkg-query', ['-W', '-f=${Status}', pkg]).out.includes('install ok installed');

/** Throws when what every C row and every build needs is missing. */
function checkRequired() {
  const missing = ['libbpf-dev', 'clang', 'gcc'].filter((p) => !installed(p));
  if (missing.length) throw Object.assign(new Error(`the bench needs ${missing.join(', ')}: ${SETUP}`), { code: 'ERR_BENCH_SETUP' });
}

/** Kernel headers for BCC: the running kernel's, or those bench/setup.sh unpacked. */
function bccKernelSource() {
  const own = `/lib/modules/${os.release()}/build`;
  if (fs.existsSync(path.join(own, 'include'))) return { dir: null, note: `headers of ${os.release()}` };
  const dest = path.join(__dirname, '..', '.build', 'kheaders');
  const merged = path.join(dest, 'src');
  const stamp = path.join(dest, 'version');
  if (fs.existsSync(stamp) && fs.existsSync(path.join(merged, 'include', 'linux', 'kconfig.h'))) {
    return { dir: merged, note: `Debian linux-headers-${fs.readFileSync(stamp, 'utf8').trim()}, unpacked in bench/.build` };
  }
  return { error: `no kernel headers for ${os.release()}: ${SETUP}` };
}

/**
 * The optional tools: { bpftrace, bpftraceVersion, wrk, bcc, bccSource }, each
 * of bpftrace, wrk and bcc '' when usable, else why not.
 */
function optionalTools() {
  const tools = {};
  const notInstalled = (pkg) => (installed(pkg) ? '' : `${pkg} is not installed: ${SETUP}`);
  tools.bpftrace = notInstalled('bpftrace');
  if (!tools.bpftrace) {
    const v = sh('bpftrace', ['--version']);
    if (v.ok) tools.bpftraceVersion = v.out.split('\n').pop().replace(/^bpftrace /, '');
    else tools.bpftrace = `bpftrace does not run: ${v.out.split('\n').pop()}`;
  }
  tools.wrk = notInstalled('wrk');
  tools.bcc = notInstalled('python3-bpfcc');
  if (!tools.bcc) {
    const k = bccKernelSource();
    if (k.error) tools.bcc = k.error;
    else tools.bccSource = k;
  }
  return tools;
}

module.exports = { checkRequired, optionalTools };
