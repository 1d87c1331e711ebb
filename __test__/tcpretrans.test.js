'use strict';
// examples/tcpretrans.js: TCP retransmits from the tcp:tcp_retransmit_skb
// tracepoint, on connections between two network namespaces this test makes
// (lib/host/netns.js), whose veth pair drops packets at random (nftables). All
// the traffic stays between those namespaces, a few hundred KiB, seconds.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const { sleep, startExample: startScript, workloadOf } = require('./helpers');
const { createVethPair } = require('../lib/host/netns');

const EXAMPLE = path.join(__dirname, '..', 'examples', 'tcpretrans.js');
const PEER = path.join(__dirname, '..', 'examples', 'workloads', 'tcp_peer.js');
const RUN_TIMEOUT_MS = 60_000;
const PORT = 9000;

function whyskip() {
  if (process.getuid?.() !== 0) return 'tcpretrans.js loads BPF programs and the test makes network namespaces: run the tests as root';
  for (const tool of ['ip', 'nft', 'ss', 'nstat']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `no ${tool} (npm run setup installs nftables; iproute2 has ip, ss and nstat)`;
    }
  }
  try {
    createVethPair('probe').destroy();
  } catch (err) {
    return err.message;
  }
  return false;
}
const skip = whyskip();
if (skip) console.log(`# skipping tcpretrans.test.js: ${skip}`);

/** Starts the example; `ready` resolves once it traces, `stop()` sends SIGTERM and resolves with its output. */
const startExample = (args) => startScript(EXAMPLE, args, RUN_TIMEOUT_MS);

/** A tcp_peer.js in side `side` of `link`: `line()` resolves with its next line of output, as JSON. */
function startPeer(link, side, args) {
  const child = link.spawn(side, [process.execPath, PEER, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return { child, line: async () => JSON.parse((await lines.next()).value), send: () => child.stdin.write('\n') };
}

/** `TcpRetransSegs` of side `side`'s namespace (its own counters: only this test's traffic). */
function retransSegs(link, side) {
  return Number(/^TcpRetransSegs\s+(\d+)/m.exec(link.exec(side, ['nstat', '-asz', 'TcpRetransSegs']))[1]);
}

/** The total retransmits ss reports for the connection from `local` (`retrans:current/total`). */
function ssRetrans(link, side, local) {
  const out = link.exec(side, ['ss', '-Htin', 'state', 'established']);
  const conn = out.split(/\n(?=\S)/).find((c) => c.includes(` ${local} `));
  assert.ok(conn, `ss shows the connection from ${local}:\n${out}`);
  return Number(/ retrans:\d+\/(\d+)/.exec(conn)?.[1] ?? 0);
}

/** The --json output: one object per retransmit, then the summary. */
function parseJson(stdout) {
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
  const last = lines.pop();
  assert.ok(last.summary, `the last line is the summary: ${JSON.stringify(last)}`);
  return { retransmits: lines, summary: last.summary };
}

const endpoint = (addr, port) => (addr.includes(':') ? `[${addr}]:${port}` : `${addr}:${port}`);

describe('examples/tcpretrans.js', { skip }, () => {
  for (const family of ['IPv4', 'IPv6']) {
    test(`--pid: the retransmits of one ${family} connection over a link dropping 20% of its packets, as the kernel counts them`, async (t) => {
      const link = createVethPair('tcpretrans-test');
      t.after(() => link.destroy());
      const [clientAddr, serverAddr] = family === 'IPv4' ? link.ipv4 : link.ipv6;
      link.dropRandom(1, 20, { dport: PORT });
      const server = startPeer(link, 1, ['server', serverAddr, String(PORT)]);
      await server.line();
      const BYTES = 128 * 1024;
      const client = startPeer(link, 0, ['client', serverAddr, String(PORT), String(BYTES), '1', '--hold']);
      const { pid } = await client.line();

      const run = startExample(['--pid', String(pid), '--json']);
      t.after(() => run.stop());
      await run.ready;
      client.send(); // transfer
      const conn = await client.line();
      assert.equal(conn.bytes, BYTES);
      t.diagnostic(`${BYTES} bytes in ${conn.ms} ms`);
      // while it is open and idle (all acknowledged): what ss and nstat say of it
      const ssTotal = ssRetrans(link, 0, conn.local);
      const segsOpen = retransSegs(link, 0);
      assert.equal(ssTotal, segsOpen, 'ss and nstat agree: one connection in the namespace');
      client.send(); // close
      await sleep(300);
      const { code, signal, stdout, stderr } = await run.stop();
      assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
      assert.match(stderr, new RegExp(`^Tracing pid ${pid} `, 'm'));
      assert.ok(link.dropped(1) > 0, 'nftables dropped packets');

      const { retransmits, summary } = parseJson(stdout);
      assert.ok(retransmits.length >= 1, 'at least one retransmit');
      for (const r of retransmits) {
        assert.equal(`${endpoint(r.laddr, r.lport)} ${endpoint(r.raddr, r.rport)}`, `${conn.local} ${conn.remote}`, 'a retransmit of that connection');
        assert.equal(r.family, family === 'IPv4' ? 'AF_INET' : 'AF_INET6');
        assert.ok(['ESTABLISHED', 'SYN_SENT', 'FIN_WAIT1', 'CLOSING'].includes(r.state), r.state);
        assert.ok(r.segs >= 1 && Number.isInteger(r.err));
      }
      // TcpRetransSegs (and ss) count the segments of each retransmit the
      // kernel tried (not those whose skb was still in the host queue: EBUSY);
      // until the close, all were of the open connection
      const counted = retransmits.filter((r) => r.err !== -16);
      const open = counted.filter((r) => ['ESTABLISHED', 'SYN_SENT'].includes(r.state));
      const segs = (rs) => rs.reduce((n, r) => n + r.segs, 0);
      t.diagnostic(`${retransmits.length} retransmits; ${segs(open)} segments until the close; nstat TcpRetransSegs and ss retrans ${segsOpen}`);
      assert.ok(segs(open) >= 1, 'at least one retransmit');
      assert.equal(segs(open), segsOpen, 'the segments retransmitted, as nstat and ss count them');
      assert.deepEqual(summary, [
        {
          family: retransmits[0].family,
          laddr: clientAddr,
          lport: Number(conn.local.split(':').at(-1)),
          raddr: serverAddr,
          rport: PORT,
          retransmits: counted.length,
          segs: segs(counted),
        },
      ]);
    });
  }

  test('the built-in workload, text output: its client retransmits over IPv4 and IPv6; its namespaces go with it', async () => {
    // 5 s: a transfer over the lossy link can stall in the retransmission timer's backoff for
    // seconds, and the client alternates IPv4 and IPv6 (a 3 s run once saw only one of them)
    const run = startExample(['--demo', '--duration', '5']);
    const { code, signal, stdout, stderr } = await run.exited;
    assert.equal(code, 0, `exit ${signal ?? code}; stderr:\n${stderr}`);
    const workload = workloadOf(stderr);
    assert.ok(workload, stderr);
    const { info } = workload;
    const [header, ...rest] = stdout.split('\n');
    assert.match(header, /^TIME +IP LADDR:LPORT +T> RADDR:RPORT +STATE$/);
    const LINE = /^(\d\d:\d\d:\d\d) +([46]) +(\S+) +R> (\S+) +([A-Z_0-9]+)(?: \((.*)\))?$/;
    const lines = rest.filter((l) => LINE.test(l)).map((l) => LINE.exec(l));
    assert.ok(lines.length >= 2, stdout);
    const local = (ip) => ip === '4' ? info.client[0] : `[${info.client[1]}]`;
    for (const [, , ip, laddr, raddr] of lines) {
      assert.equal(raddr, info.server[ip === '4' ? 0 : 1], 'to the workload server');
      assert.ok(laddr.startsWith(`${local(ip)}:`), `from the workload client: ${laddr}`);
    }
    assert.ok(lines.some((l) => l[2] === '4') && lines.some((l) => l[2] === '6'), `over IPv4 and IPv6:\n${stdout}\n${stderr}`);
    // the summary counts the lines of each connection (but those not even tried: EBUSY)
    const rows = stdout.slice(stdout.indexOf('\nLADDR:LPORT')).trim().split('\n').slice(1).map((l) => l.trim().split(/\s+/));
    assert.ok(rows.length >= 1);
    for (const [laddr, raddr, count] of rows) {
      const of = lines.filter((l) => l[3] === laddr && l[4] === raddr && !l[6]?.includes('failed: EBUSY'));
      assert.equal(Number(count), of.length, `${laddr} -> ${raddr}`);
    }
    await sleep(200);
    const namespaces = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
    for (const ns of info.namespaces) assert.ok(!namespaces.includes(ns), `namespace ${ns} removed`);
  });
});
