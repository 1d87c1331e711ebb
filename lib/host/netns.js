'use strict';
/**
 * Two network namespaces joined by a veth pair, with addresses of a private
 * range that exist only inside them: a network path of its own, that no
 * other traffic takes, for tests and workloads (examples/tcpretrans.js).
 * nftables drops packets on it at random (the kernel may lack netem). Root
 * only; needs `ip` (iproute2) and, to drop packets, `nft` (nftables).
 *
 *   const { createVethPair } = require('node-libbpf/lib/netns');
 *   const link = createVethPair('demo');
 *   link.dropRandom(1, 30, { dport: 8080 }); // side 1 drops 30% of what it receives on port 8080
 *   const server = link.spawn(1, ['node', 'server.js']);
 *   ...
 *   link.destroy();  // also on exit
 */
const { execFileSync, spawn } = require('child_process');
const util = require('util');

/** The addresses of the two ends: side 0 and side 1. */
const IPV4 = ['10.200.0.1', '10.200.0.2'];
const IPV6 = ['fd00:6e6c:6270::1', 'fd00:6e6c:6270::2'];

let created = 0;
const live = new Set();
process.on('exit', () => {
  for (const link of live) link.destroy();
});

/** Throws ERR_BPF_INVALID_VALUE unless `value` is an integer from `min` to `max`. */
function checkInteger(name, value, min, max) {
  if (Number.isInteger(value) && value >= min && value <= max) return;
  const err = /** @type {NodeJS.ErrnoException} */ (new Error(`dropRandom: ${name} ${util.inspect(value)} is not an integer from ${min} to ${max}: pass a number in that range`));
  err.code = 'ERR_BPF_INVALID_VALUE';
  throw err;
}

function run(argv) {
  return execFileSync(argv[0], argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Creates namespaces `nlbpf-<tag>-<pid>-<n>-a` and `-b`, a veth pair
 * between them (`veth-a`, `veth-b`) with IPv4 `10.200.0.1/24` and `.2`, and
 * IPv6 `fd00:6e6c:6270::1/64` and `::2`; `lo` is up in both.
 */
function createVethPair(tag) {
  const base = `nlbpf-${tag}-${process.pid}-${++created}`;
  const names = [`${base}-a`, `${base}-b`];
  const devices = ['veth-a', 'veth-b'];
  const children = new Set();
  const link = {
    names,
    devices,
    ipv4: IPV4,
    ipv6: IPV6,

    /** Runs `argv` in side `side`'s namespace to its end; its stdout. */
    exec(side, argv) {
      return run(['ip', 'netns', 'exec', names[side], ...argv]);
    },

    /** Starts `argv` in side `side`'s namespace (`ip netns exec` execs it: the child's pid is the program's). */
    spawn(side, argv, options = {}) {
      const child = spawn('ip', ['netns', 'exec', names[side], ...argv], options);
      children.add(child);
      child.once('exit', () => children.delete(child));
      return child;
    },

    /**
     * Drops `percent`% (an integer, 0-100) of the TCP packets that side `side` receives, at
     * random (nftables, in that namespace): those to `dport` when given,
     * and by default only those without SYN, FIN or RST (the connection is
     * set up and torn down without loss, its data and acks are not). As a
     * wire drops segments, not the 64 KiB GSO packets that cross a veth
     * pair whole, segmentation offload is turned off on both ends.
     * @param {number} side 0 or 1
     * @param {number} percent
     * @param {{ dport?: number, all?: boolean }} [options] `all`: SYN, FIN and RST too
     */
    dropRandom(side, percent, { dport, all = false } = {}) {
      // the numbers go into nft's rule text: nothing else may
      checkInteger('side', side, 0, 1);
      checkInteger('percent', percent, 0, 100);
      if (dport !== undefined) checkInteger('dport', dport, 1, 65535);
      for (const s of [0, 1]) run(['ip', '-n', names[s], 'link', 'set', devices[s], 'gso_max_segs', '1']);
      const match = [dport !== undefined && `tcp dport ${dport}`, !all && 'tcp flags & (syn | fin | rst) == 0'].filter(Boolean).join(' ');
      const rules = `table inet nlbpf_loss {
  chain input {
    type filter hook input priority 0; policy accept;
    meta l4proto tcp ${match} numgen random mod 100 < ${percent} counter drop
  }
}
`;
      execFileSync('ip', ['netns', 'exec', names[side], 'nft', '-f', '-'], { input: rules, stdio: ['pipe', 'pipe', 'pipe'] });
    },

    /** How many packets the dropRandom rule of side `side` dropped. */
    dropped(side) {
      const m = /counter packets (\d+)/.exec(link.exec(side, ['nft', 'list', 'table', 'inet', 'nlbpf_loss']));
      return m ? Number(m[1]) : 0;
    },

    /** Kills what was started in the namespaces and deletes them (and so the veth pair). Idempotent. */
    destroy() {
      for (const child of children) child.kill('SIGKILL');
      for (const name of names) {
        // processes still in it (started by others) would keep it alive: kill them too
        try {
          for (const pid of run(['ip', 'netns', 'pids', name]).split(/\s+/).filter(Boolean)) {
            try {
              process.kill(Number(pid), 'SIGKILL');
            } catch {}
          }
          run(['ip', 'netns', 'del', name]);
        } catch {}
      }
      live.delete(link);
    },
  };
  live.add(link);
  try {
    for (const name of names) run(['ip', 'netns', 'add', name]);
    run(['ip', '-n', names[0], 'link', 'add', devices[0], 'type', 'veth', 'peer', 'name', devices[1], 'netns', names[1]]);
    for (const side of [0, 1]) {
      const [ns, dev] = [names[side], devices[side]];
      run(['ip', '-n', ns, 'addr', 'add', `${IPV4[side]}/24`, 'dev', dev]);
      run(['ip', '-n', ns, '-6', 'addr', 'add', `${IPV6[side]}/64`, 'dev', dev, 'nodad']);
      run(['ip', '-n', ns, 'link', 'set', dev, 'up']);
      run(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    }
  } catch (err) {
    link.destroy();
    throw new Error(`creating network namespaces ${names.join(', ')}: ${err.stderr?.toString().trim() || err.message}`);
  }
  return link;
}

module.exports = { createVethPair, IPV4, IPV6 };
