'use strict';
/**
 * Runs an example tool's `main()` as a command: `tool | head` stops quietly
 * when head closes the pipe (exit code 0), and an error is printed as
 * `tool: CODE: message` (exit code 1). The process then exits as Node.js
 * does, once nothing is left to run: after its workload has exited (a child
 * left to init would linger as a zombie) and its output is written.
 *
 *   const { run } = require('node-libbpf/lib/run');
 *   run(async () => { ... });
 */
const path = require('path');

/** Runs `main()`; `name` (default: the script's file name) prefixes its error. */
function run(main, name = path.basename(require.main?.filename ?? process.argv[1] ?? 'tool', '.js')) {
  // the 'exit' handlers (lib/host/target.js) still stop the workload
  process.stdout.on('error', (err) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(0);
  });
  return Promise.resolve()
    .then(main)
    .catch((err) => {
      console.error(`${name}: ${err.code ? `${err.code}: ` : ''}${err.message}`);
      process.exitCode = 1;
    });
}

module.exports = { run };
