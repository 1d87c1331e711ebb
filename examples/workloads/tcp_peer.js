'use strict';
// The two ends of a TCP transfer, for tcpretrans.js's workload and test (run
// in network namespaces of their own, lib/host/netns.js):
//   node tcp_peer.js server HOST PORT
//     accepts connections; each sends "<n>\n" and n bytes, and gets
//     "ok <n>\n" once they have all arrived
//   node tcp_peer.js client HOST[,HOST...] PORT BYTES [COUNT] [--gap MS] [--hold]
//     makes COUNT such transfers of BYTES (default: until killed), one
//     after the other, to each HOST in turn, MS apart; prints {"local",
//     "remote", "bytes", "ms"} for each. --hold: waits for a line on stdin
//     before each transfer, and keeps the connection open once the server
//     has acknowledged it until the next line (to look at it with ss)
// Each prints {"ready": ...} first; both exit when their stdin closes.
const net = require('net');
const readline = require('readline');

const { values, positionals } = require('util').parseArgs({
  allowPositionals: true,
  options: { hold: { type: 'boolean', default: false }, gap: { type: 'string', default: '0' } },
});
const [mode, hosts, port, ...rest] = positionals;
const [bytes, count = Infinity] = rest.map(Number);
const [hold, gapMs] = [values.hold, Number(values.gap)];
const lines = readline.createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once('line', resolve));
lines.on('close', () => process.exit(0));
const print = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const endpoint = (addr, port) => (net.isIPv6(addr) ? `[${addr}]:${port}` : `${addr}:${port}`);

function server() {
  const srv = net.createServer((sock) => {
    let header = '';
    let expected;
    let got = 0;
    sock.on('data', (chunk) => {
      if (expected === undefined) {
        header += chunk.toString('latin1');
        const nl = header.indexOf('\n');
        if (nl < 0) return;
        expected = Number(header.slice(0, nl));
        got = header.length - nl - 1;
      } else {
        got += chunk.length;
      }
      if (got === expected) sock.write(`ok ${got}\n`);
    });
    sock.on('end', () => sock.end());
    sock.on('error', () => {});
  });
  srv.listen(Number(port), hosts, () => print({ ready: 'server', address: endpoint(hosts, /** @type {import('net').AddressInfo} */ (srv.address()).port) }));
}

async function transfer(host) {
  if (hold) await nextLine();
  const start = Date.now();
  const sock = net.connect({ host, port: Number(port) });
  await new Promise((resolve, reject) => sock.once('connect', resolve).once('error', reject));
  sock.setNoDelay(true);
  const acked = new Promise((resolve, reject) => {
    let reply = '';
    sock.on('data', (d) => {
      reply += d;
      if (reply.endsWith('\n')) resolve(reply.trim());
    });
    sock.once('error', reject);
    sock.once('end', () => reject(new Error(`connection closed: ${JSON.stringify(reply)}`)));
  });
  sock.write(`${bytes}\n`);
  const chunk = Buffer.alloc(16384, 'x');
  for (let left = bytes; left > 0; left -= chunk.length) {
    if (!sock.write(left >= chunk.length ? chunk : chunk.subarray(0, left))) await new Promise((resolve) => sock.once('drain', resolve));
  }
  const reply = await acked;
  if (reply !== `ok ${bytes}`) throw new Error(`the server says ${JSON.stringify(reply)}`);
  print({ local: endpoint(sock.localAddress, sock.localPort), remote: endpoint(sock.remoteAddress, sock.remotePort), bytes, ms: Date.now() - start });
  if (hold) await nextLine();
  await /** @type {Promise<void>} */ (new Promise((resolve) => sock.end(resolve)));
  sock.destroy();
}

async function client() {
  print({ ready: 'client', pid: process.pid });
  const targets = hosts.split(',');
  for (let i = 0; i < count; i++) {
    if (i > 0 && gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    await transfer(targets[i % targets.length]);
  }
  process.exit(0);
}

if (mode === 'server') server();
else if (mode === 'client') {
  client().catch((err) => {
    console.error(`tcp_peer client: ${err.message}`);
    process.exit(1);
  });
} else {
  console.error('usage: node tcp_peer.js server HOST PORT | client HOST[,HOST...] PORT BYTES [COUNT] [--gap MS] [--hold]');
  process.exit(2);
}
