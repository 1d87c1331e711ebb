#!/usr/bin/env node
'use strict';
/**
 * `npm run build:bpf [-- --arch x86|arm64|all] [--no-tests]` (default: all): the project's
 * BPF programs, compiled once into CO-RE objects (lib/core/compile.js):
 *
 *   bpf/<name>.bpf.c        -> bpf/<arch>/<name>.bpf.o        (shipped)
 *   __test__/bpf/<name>.bpf.c -> __test__/bpf/<arch>/<name>.bpf.o (tests only)
 *
 * First it copies libbpf's BPF headers (bpf_helpers.h, bpf_tracing.h, ...)
 * from the sources of the libbpf the addon links (the libbpf-sys crate,
 * found with `cargo metadata`) into include/bpf/, which the package ships
 * for `npx node-libbpf build`. An object is rebuilt when its source, a
 * header beside it, vmlinux.h or libbpf's headers are newer. Needs clang,
 * not the kernel's BTF: vmlinux.h is vendored per architecture (include/x86,
 * include/arm64; scripts/vendor-vmlinux.js made them).
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { compile, INCLUDE } = require('../lib/core/compile');

const ROOT = path.join(__dirname, '..');
const LIBBPF_HEADERS = ['bpf_helpers.h', 'bpf_helper_defs.h', 'bpf_tracing.h', 'bpf_core_read.h', 'bpf_endian.h', 'usdt.bpf.h'];
const ARCHES = ['x86', 'arm64'];

function parseArgs(argv) {
  // both architectures by default: clang cross-compiles BPF for free, and the package ships both
  const opts = { arches: ARCHES, tests: true };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--arch') {
      const a = argv[++i];
      if (a !== 'all' && !ARCHES.includes(a)) throw new Error(`--arch ${a}: expected ${ARCHES.join(', ')} or all`);
      opts.arches = a === 'all' ? ARCHES : [a];
    } else if (argv[i] === '--no-tests') opts.tests = false;
    else throw new Error(`unknown option ${argv[i]}; usage: build-bpf.js [--arch x86|arm64|all] [--no-tests]`);
  }
  return opts;
}

/** libbpf's source directory in the libbpf-sys crate the addon builds with. */
function libbpfSources() {
  const meta = JSON.parse(
    execFileSync('cargo', ['metadata', '--format-version', '1', '--manifest-path', path.join(ROOT, 'Cargo.toml')], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  const sys = meta.packages.find((p) => p.name === 'libbpf-sys');
  if (!sys) throw new Error('cargo metadata lists no libbpf-sys package');
  return path.join(path.dirname(sys.manifest_path), 'libbpf', 'src');
}

function copyLibbpfHeaders() {
  const dest = path.join(INCLUDE, 'bpf');
  if (LIBBPF_HEADERS.every((h) => fs.existsSync(path.join(dest, h)))) return;
  const src = libbpfSources();
  fs.mkdirSync(dest, { recursive: true });
  for (const h of LIBBPF_HEADERS) fs.copyFileSync(path.join(src, h), path.join(dest, h));
  console.log(`build-bpf: libbpf's headers copied from ${src}`);
}

const mtime = (f) => fs.statSync(f).mtimeMs;
const headersIn = (dir) => fs.readdirSync(dir).filter((f) => f.endsWith('.h')).map((f) => path.join(dir, f));

/** The compile jobs whose object is missing or older than what it is built from. */
function staleJobs({ arches, tests }) {
  const dirs = ['bpf', ...(tests ? ['__test__/bpf'] : [])].map((d) => path.join(ROOT, d));
  const jobs = [];
  for (const arch of arches) {
    const shared = [path.join(INCLUDE, arch, 'vmlinux.h'), ...headersIn(path.join(INCLUDE, 'bpf')), ...headersIn(path.join(ROOT, 'bpf'))];
    for (const dir of dirs) {
      const deps = [...shared, ...headersIn(dir)];
      const newest = Math.max(...deps.map(mtime));
      for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.bpf.c'))) {
        const source = path.join(dir, f);
        const output = path.join(dir, arch, f.replace(/\.c$/, '.o'));
        if (fs.existsSync(output) && mtime(output) >= Math.max(newest, mtime(source))) continue;
        jobs.push({ source, output, arch, includes: [path.join(ROOT, 'bpf')] });
      }
    }
  }
  return jobs;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  copyLibbpfHeaders();
  const jobs = staleJobs(opts);
  const t0 = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const job = jobs[next++];
      const { warnings } = await compile(job.source, job);
      if (warnings.trim()) process.stderr.write(warnings);
    }
  };
  await Promise.all(Array.from({ length: Math.min(os.availableParallelism(), jobs.length) }, worker));
  if (jobs.length) console.log(`build-bpf: ${jobs.length} objects for ${opts.arches.join(', ')} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

main().catch((err) => {
  console.error(`build-bpf: ${err.code ? `${err.code}: ` : ''}${err.message}`);
  process.exit(1);
});
