'use strict';
/**
 * An interactive shell on a pseudo-terminal, for tracing what is typed into
 * it (examples/bashreadline.js and its workload, its test). Node.js has no
 * pty of its own: `script` (util-linux) allocates one, runs the shell on it
 * and relays its stdin and stdout.
 *
 *   const { spawnInteractive } = require('node-libbpf/lib/pty');
 *   const shell = await spawnInteractive(['bash', '--norc', '--noprofile', '-i']);
 *   shell.type('echo hello');   // as if typed, then Enter
 *   shell.close();
 */
const { spawn } = require('child_process');
const fs = require('fs');

/** `it's` -> `'it'\''s'`, for `script -c`. */
function shellQuote(arg) {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The pids of the children of `pid`. */
function childrenOf(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function commOf(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/**
 * Starts `argv` on a new pseudo-terminal; resolves once it runs, with
 * `pid` (the shell's), `type(line)`, `output()` (what the terminal showed
 * so far, its last 64 KiB), `exited` (resolves when `script` exits) and
 * `close()` (kills the shell; `script` then exits). `env`: the
 * shell's environment (default: this one, without a history file, so that
 * nothing typed is saved).
 */
async function spawnInteractive(argv, { env = { ...process.env, HISTFILE: '' }, timeoutMs = 5000 } = {}) {
  const command = `exec ${argv.map(shellQuote).join(' ')}`;
  const script = spawn('script', ['--quiet', '--flush', '--return', '--command', command, '/dev/null'], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...env, SHELL: '/bin/sh' },
  });
  let output = '';
  // what the terminal showed, its last 64 KiB
  script.stdout.setEncoding('utf8').on('data', (d) => (output = (output + d).slice(-65536)));
  const exited = new Promise((resolve) => script.once('exit', (code, signal) => resolve(signal ?? code)));
  script.stdin.on('error', () => {}); // the shell went away: nothing to type into
  const exe = argv[0].split('/').pop();
  const end = Date.now() + timeoutMs;
  let pid;
  // script forks /bin/sh -c 'exec ARGV': the shell is its child once that exec is done
  while (pid === undefined) {
    pid = childrenOf(script.pid).find((child) => commOf(child) === exe.slice(0, 15));
    if (pid !== undefined) break;
    if (script.exitCode !== null || script.signalCode !== null || Date.now() > end) {
      script.kill();
      throw new Error(`script -c '${command}' did not start ${exe}: ${script.exitCode ?? script.signalCode ?? 'timeout'}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return {
    pid,
    script,
    exited,
    type: (line) => script.stdin.write(`${line}\n`),
    output: () => output,
    close() {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
      script.stdin.destroy();
      return exited;
    },
  };
}

module.exports = { spawnInteractive, shellQuote };
