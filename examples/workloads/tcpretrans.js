'use strict';
// Workload of tcpretrans.js: a TCP server and a client in two network
// namespaces of their own, joined by a veth pair that drops 20% of the
// data and ack packets the server receives (lib/host/netns.js: nftables). The
// client sends 64 KiB to the server every 100 ms, over IPv4 and IPv6 in
// turn, and so retransmits. The tracer traces the client (`pid` in the
// message). The namespaces go when this process exits; it stops on its own
// after 3000 transfers.
const path = require('path');
const readline = require('readline');
const { createVethPair } = require('../../lib/host/netns');

const PORT = 8080;
const BYTES = 64 * 1024;
const LOSS_PERCENT = 20;
const PEER = path.join(__dirname, 'tcp_peer.js');

/** The first line a peer prints, as JSON. */
function firstLine(child) {
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', (l) => resolve(JSON.parse(l)));
    child.once('exit', (code) => reject(new Error(`tcp_peer.js exited (${code})`)));
  });
}

async function main() {
  const link = createVethPair('tcpretrans');
  const exit = (code) => {
    link.destroy();
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => exit(0));
  process.on('disconnect', () => exit(0));
  link.dropRandom(1, LOSS_PERCENT, { dport: PORT });
  const server = link.spawn(1, [process.execPath, PEER, 'server', '::', String(PORT)], { stdio: ['pipe', 'pipe', 'inherit'] });
  await firstLine(server);
  const hosts = `${link.ipv4[1]},${link.ipv6[1]}`;
  const client = link.spawn(0, [process.execPath, PEER, 'client', hosts, String(PORT), String(BYTES), '3000', '--gap', '100'], { stdio: ['pipe', 'pipe', 'inherit'] });
  await firstLine(client);
  client.stdout.resume(); // one line per transfer: not needed
  client.once('exit', (code) => exit(code ?? 1));
  // tell the tracer what to trace and what it will see
  process.send?.({ pid: client.pid, server: [`${link.ipv4[1]}:${PORT}`, `[${link.ipv6[1]}]:${PORT}`], client: [link.ipv4[0], link.ipv6[0]], bytes: BYTES, lossPercent: LOSS_PERCENT, namespaces: link.names });
}

main().catch((err) => {
  console.error(`tcpretrans workload: ${err.message}`);
  process.exit(1);
});
