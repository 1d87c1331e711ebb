#!/usr/bin/env node
'use strict';
// npx node-libbpf types <prog.bpf.o> [-o out.d.ts]: TypeScript declarations
// for a BPF object (see lib/typegen.js).
const fs = require('fs');

const usage = 'usage: node-libbpf types <prog.bpf.o> [-o out.d.ts]';

function main(argv) {
  const [command, file, ...rest] = argv;
  if (command !== 'types' || !file) {
    console.error(usage);
    return 2;
  }
  const outIndex = rest.indexOf('-o');
  const out = outIndex >= 0 ? rest[outIndex + 1] : undefined;
  let text;
  try {
    text = require('./typegen').generate(file);
  } catch (e) {
    console.error(`node-libbpf types: ${e.message}`);
    return 1;
  }
  if (out) fs.writeFileSync(out, text);
  else process.stdout.write(text);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
