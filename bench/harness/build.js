'use strict';
// Builds what the bench runs, into bench/.build/ (gitignored), each only
// when older than its sources: the addon (npm run build, if missing), the
// BPF objects and the C programs.
//   stream.bpf.o    __test__/bpf/stream.bpf.c, the tests' program, with an
//                   8 MiB ring buffer (the tests' build has 4 MiB)
//   syscalls.bpf.o  bench/syscalls.bpf.c (the HTTP row's stream tracer)
//   switch_costs.bpf.o  bench/switch_costs.bpf.c (profile_costs.js's switches row)
//   loadgen, canary, consumer, pingpong (bench/*.c; consumer links libbpf)
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { sh } = require('./procs');
const { clangArgs, INCLUDE } = require('../../lib/core/compile');

const root = path.join(__dirname, '..', '..');
const bench = path.join(__dirname, '..');
const BUILD = path.join(bench, '.build');
const STREAM_SRC = path.join(root, '__test__', 'bpf');
const RING_BYTES = 8 * 1024 * 1024;

/** bench/.build/<name>. */
const built = (name) => path.join(BUILD, name);

const newer = (out, ...srcs) => !fs.existsSync(out) || srcs.some((s) => fs.statSync(s).mtimeMs > fs.statSync(out).mtimeMs);
function compile(out, srcs, cmd, argv) {
  if (!newer(out, ...srcs)) return;
  const r = sh(cmd, argv);
  if (!r.ok) throw new Error(`${cmd} ${argv.join(' ')}:\n${r.out}`);
}

/** Builds the addon when it or vmlinux.h is missing, then everything in bench/.build. */
function buildAll() {
  if (!fs.existsSync(path.join(INCLUDE, 'bpf', 'bpf_helpers.h')) || !fs.readdirSync(root).some((f) => f.endsWith('.node'))) {
    console.error('bench: npm run build');
    const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('npm run build failed');
  }
  fs.mkdirSync(BUILD, { recursive: true });
  const stream = path.join(STREAM_SRC, 'stream.bpf.c');
  compile(built('stream.bpf.o'), [stream, path.join(STREAM_SRC, 'stream.h'), __filename], 'clang',
    clangArgs(stream, built('stream.bpf.o'), { defines: [`STREAM_RING_BYTES=${RING_BYTES}`] }));
  const syscalls = path.join(bench, 'syscalls.bpf.c');
  compile(built('syscalls.bpf.o'), [syscalls, path.join(bench, 'syscalls.h')], 'clang', clangArgs(syscalls, built('syscalls.bpf.o')));
  const switches = path.join(bench, 'switch_costs.bpf.c');
  compile(built('switch_costs.bpf.o'), [switches], 'clang', clangArgs(switches, built('switch_costs.bpf.o')));
  for (const [name, libs] of [['loadgen', []], ['canary', []], ['consumer', ['-lbpf']], ['pingpong', []]]) {
    const src = path.join(bench, `${name}.c`);
    compile(built(name), [src, path.join(STREAM_SRC, 'stream.h')], 'gcc', ['-O2', '-Wall', '-I', STREAM_SRC, '-o', built(name), src, ...libs]);
  }
}

module.exports = { buildAll, built, BUILD, RING_BYTES, root };
