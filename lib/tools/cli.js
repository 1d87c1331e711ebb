#!/usr/bin/env node
'use strict';
/**
 * `npx node-libbpf <command>`: the package's command line.
 *
 *   node-libbpf build prog.bpf.c [-o prog.bpf.o] [--arch x86|arm64]   compile a BPF program (lib/core/compile.js)
 *   node-libbpf types prog.bpf.o [-o prog.d.ts]                        TypeScript declarations (lib/core/typegen.js)
 *   node-libbpf <tool> [-p PID] [-d S] [-i S] [-j] [--demo] ...         a tool of examples/
 */
const fs = require('node:fs');
const { parseArgs } = require('node:util');

/** The tools, by command name: their script in examples/ (required to run it) and what it shows. */
const TOOLS = {
  syscalls: [() => require('../../examples/node_syscalls'), 'syscall latency histograms, files opened, endpoints connected (of a process or of all)'],
  syscall_hist: [() => require('../../examples/syscall_hist'), 'a latency histogram per syscall, bpftrace-style'],
  funccount: [() => require('../../examples/funccount'), 'counts of tracepoints and functions matched by wildcards (bcc funccount)'],
  stackcount: [() => require('../../examples/stackcount'), 'stacks counted in the kernel, symbolized, folded or as a flame graph (bcc stackcount)'],
  tcpretrans: [() => require('../../examples/tcpretrans'), 'TCP retransmits with addresses, ports and state (bcc tcpretrans)'],
  bashreadline: [() => require('../../examples/bashreadline'), 'command lines typed into bash (bcc bashreadline)'],
  goroutines: [() => require('../../examples/goroutines'), 'goroutine state changes of a Go program'],
  'event-loop': [() => require('../../examples/trace_event_loop'), 'the libuv event-loop phases of a Node.js process, with histograms'],
  'file-io': [() => require('../../examples/trace_file_io'), 'openat/read/write/close with latencies and file names'],
  'net-latency': [() => require('../../examples/trace_network_latency'), 'socket/connect with latencies and destinations'],
  cachestat: [() => require('../../examples/cachestat'), 'page-cache hits, misses, dirtied pages and hit ratio (bcc cachestat; kprobes or fentry)'],
  'mem-latency': [() => require('../../examples/trace_mem_latency'), 'mmap/munmap/madvise with addresses, lengths and flags'],
};

const USAGE = `usage: node-libbpf <command> [options]     (node-libbpf <command> --help for its options)

Compile and inspect:
  build PROG.bpf.c [-o PROG.bpf.o] [--arch x86|arm64] [-I DIR]... [--clang PATH]
                       compile a BPF program against node-libbpf's vmlinux.h and libbpf's headers
  types PROG.bpf.o [-o PROG.d.ts]
                       TypeScript declarations of an object's maps, globals, programs and records

Tools (as root, or with CAP_BPF + CAP_PERFMON); common options: -p PID, -d SECONDS, -i SECONDS, -j (JSON), --demo:
${Object.entries(TOOLS)
  .map(([name, [, what]]) => `  ${name.padEnd(18)} ${what}`)
  .join('\n')}`;

function fail(message, code = 2) {
  console.error(`node-libbpf: ${message}`);
  process.exitCode = code;
}

async function build(argv) {
  const usage = 'usage: node-libbpf build PROG.bpf.c [-o PROG.bpf.o] [--arch x86|arm64] [-I DIR]... [--clang PATH]';
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        output: { type: 'string', short: 'o' },
        arch: { type: 'string' },
        include: { type: 'string', short: 'I', multiple: true },
        clang: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    return fail(`build: ${err.message}\n${usage}`);
  }
  const { values, positionals } = parsed;
  if (values.help) return console.log(`${usage}\n\nCompiles a BPF C program into a CO-RE object (clang -g -O2 -target bpf), with\nvmlinux.h for the architecture (default: this machine's) and libbpf's\nbpf_helpers.h, bpf_tracing.h, bpf_core_read.h, bpf_endian.h and usdt.bpf.h.`);
  if (positionals.length !== 1) return fail(`build: one source file, please\n${usage}`);
  const { compile } = require('../core/compile');
  try {
    const { output, warnings } = await compile(positionals[0], { output: values.output, arch: values.arch, includes: values.include, clang: values.clang });
    if (warnings.trim()) process.stderr.write(warnings);
    console.error(`wrote ${output}`);
  } catch (err) {
    fail(`${err.code ? `${err.code}: ` : ''}${err.message}`, 1);
  }
}

function types(argv) {
  const [file, ...rest] = argv;
  if (!file || file === '--help' || file === '-h') {
    console.log('usage: node-libbpf types PROG.bpf.o [-o PROG.d.ts]');
    if (!file) process.exitCode = 2;
    return;
  }
  const outIndex = rest.indexOf('-o');
  const out = outIndex >= 0 ? rest[outIndex + 1] : undefined;
  let text;
  try {
    text = require('../core/typegen').generate(file);
  } catch (e) {
    return fail(`types: ${e.message}`, 1);
  }
  if (out) fs.writeFileSync(out, text);
  else process.stdout.write(text);
}

/** @param {string[]} argv the command and its arguments */
function main([command, ...rest]) {
  if (command === undefined) return fail(`a command, please\n\n${USAGE}`);
  if (command === '--help' || command === '-h' || command === 'help') return console.log(USAGE);
  if (command === '--version' || command === '-v') return console.log(require('../../package.json').version);
  if (command === 'build') return build(rest);
  if (command === 'types') return types(rest);
  const tool = TOOLS[command] ?? TOOLS[command.replace(/_/g, '-')] ?? TOOLS[command.replace(/-/g, '_')];
  if (!tool) return fail(`no command '${command}'\n\n${USAGE}`);
  // the tool parses process.argv as if it were run itself; its usage names it `node-libbpf <tool>`
  process.argv = [process.argv[0], `node-libbpf ${command}`, ...rest];
  tool[0]();
}

main(process.argv.slice(2));
