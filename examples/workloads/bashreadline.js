'use strict';
// Workload of bashreadline.js: an interactive bash on a pseudo-terminal (no
// rc files, no history file) into which a command is typed every 300 ms,
// `echo node-libbpf 1`, `echo node-libbpf 2`, ..., until it is killed or its
// parent goes away. The tracer traces the bash (`pid` in the message).
const { spawnInteractive } = require('../../lib/tools/pty');

const INTERVAL_MS = 300;
const PREFIX = 'echo node-libbpf';

async function main() {
  const shell = await spawnInteractive(['bash', '--norc', '--noprofile', '-i']);
  const exit = () => {
    shell.close();
    process.exit(0);
  };
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, exit);
  process.on('disconnect', exit);
  shell.exited.then(() => process.exit(1));
  let n = 0;
  setInterval(() => shell.type(`${PREFIX} ${++n}`), INTERVAL_MS);
  // tell the tracer what to trace and what it will see
  process.send?.({ pid: shell.pid, commands: `${PREFIX} N`, intervalMs: INTERVAL_MS });
}

main().catch((err) => {
  console.error(`bashreadline workload: ${err.message}`);
  process.exit(1);
});
