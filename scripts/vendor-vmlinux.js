#!/usr/bin/env node
'use strict';
// Vendors include/<arch>/vmlinux.h, the kernel types the BPF programs are
// compiled against (CO-RE: they relocate on other kernels at load), as
// libbpf-tools vendors its x86/ and arm64/ ones: `bpftool btf dump file
// <BTF> format c`.
//
//   node scripts/vendor-vmlinux.js --arch x86     # from this machine's /sys/kernel/btf/vmlinux
//   node scripts/vendor-vmlinux.js --arch arm64   # from Debian 12's arm64 kernel (linux-image-6.1.0-N-arm64)
//   node scripts/vendor-vmlinux.js --arch arm64 --btf FILE   # from a BTF file (raw BTF or an ELF with .BTF)
//   node scripts/vendor-vmlinux.js --arch arm64 --image FILE # from an uncompressed arm64 kernel Image
//
// For arm64 the Debian package is downloaded with a private arm64 apt
// (scripts/kernels/debian-arm64.js: the host's apt is not touched), and the
// kernel's BTF is carved out of its Image: the `.BTF` blob that the kernel
// serves as /sys/kernel/btf/vmlinux, found by its header. Nothing is booted.
// Prints where the BTF came from and the header's size.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.resolve(__dirname, '..');

function usage(code) {
  (code ? console.error : console.log)('usage: node scripts/vendor-vmlinux.js --arch x86|arm64 [--btf FILE | --image FILE] [-o OUT]');
  process.exit(code);
}

function parse(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => argv[++i] ?? usage(2);
    if (a === '--arch') opts.arch = value();
    else if (a === '--btf') opts.btf = value();
    else if (a === '--image') opts.image = value();
    else if (a === '-o' || a === '--output') opts.output = value();
    else if (a === '-h' || a === '--help') usage(0);
    else usage(2);
  }
  if (!['x86', 'arm64'].includes(opts.arch)) usage(2);
  return opts;
}

function main() {
  const opts = parse(process.argv.slice(2));
  try {
    execFileSync('bpftool', ['version'], { stdio: 'ignore' });
  } catch {
    throw new Error('bpftool is missing: apt-get install bpftool (Debian 12), or linux-tools-common on Ubuntu');
  }
  const output = path.resolve(opts.output || path.join(ROOT, 'include', opts.arch, 'vmlinux.h'));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'node-libbpf-btf-'));
  try {
    let btf = opts.btf;
    let source = btf;
    if (!btf && opts.arch === 'x86') {
      if (process.arch !== 'x64') throw new Error(`this machine is ${process.arch}: give the x86 BTF with --btf FILE`);
      btf = '/sys/kernel/btf/vmlinux';
      if (!fs.existsSync(btf)) throw new Error(`${btf} is missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF); give one with --btf FILE`);
      source = `${btf} of this machine (${os.release()})`;
    }
    if (!btf) {
      const { fetchArm64Kernel, btfFromImage } = require('./kernels/debian-arm64');
      let image = opts.image;
      source = image;
      if (!image) {
        const k = fetchArm64Kernel();
        image = k.vmlinuz;
        source = `Debian's ${k.package} (${k.release})`;
      }
      btf = path.join(tmp, 'vmlinux.btf');
      fs.writeFileSync(btf, btfFromImage(image));
    }
    const header = execFileSync('bpftool', ['btf', 'dump', 'file', btf, 'format', 'c'], { encoding: 'utf8', maxBuffer: 256 << 20 });
    if (!/struct task_struct \{/.test(header)) throw new Error(`bpftool's dump of ${source} has no struct task_struct: not a kernel's BTF`);
    fs.mkdirSync(path.dirname(output), { recursive: true });
    fs.writeFileSync(`${output}.partial`, header);
    fs.renameSync(`${output}.partial`, output);
    console.log(`${path.relative(process.cwd(), output)}: ${(header.length / 1e6).toFixed(1)} MB, from the BTF of ${source}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

try {
  main();
} catch (e) {
  console.error(`vendor-vmlinux: ${e.message}`);
  process.exitCode = 1;
}
