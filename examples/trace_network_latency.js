'use strict';
// Traces the connections a Node.js process makes: how long each socket and
// connect took, and where it connected to, through a ring buffer. Needs root.
//   node examples/trace_network_latency.js [--pid N] [--duration S] [--json]
const net = require('net');
const path = require('path');
const bpf = require(path.join(__dirname, '..'));
const tools = require(path.join(__dirname, '..', 'lib', 'tools'));

// enum net_syscall in bpf/net_latency.h
const SYSCALLS = ['socket', 'connect'];

// <sys/socket.h>
const FAMILIES = { 1: 'AF_UNIX', 2: 'AF_INET', 10: 'AF_INET6', 16: 'AF_NETLINK', 17: 'AF_PACKET' };
const TYPES = { 1: 'SOCK_STREAM', 2: 'SOCK_DGRAM', 3: 'SOCK_RAW', 5: 'SOCK_SEQPACKET' };
const TYPE_FLAGS = { SOCK_NONBLOCK: 0o4000, SOCK_CLOEXEC: 0o2000000 };

/** The destination address: bytes in network order, as the sockaddr held them. */
function ipAddress(family, bytes) {
  if (family === 'AF_INET') return [...bytes.subarray(0, 4)].join('.');
  if (family !== 'AF_INET6') return undefined;
  const groups = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  // SocketAddress prints it in its short form (::1)
  return new net.SocketAddress({ address: groups.join(':'), family: 'ipv6' }).address;
}

/** struct net_event (bpf/net_latency.h) from the record's bytes. */
function decode(data) {
  const syscall = SYSCALLS[data.readUInt32LE(0)];
  const family = FAMILIES[data.readUInt32LE(32)] ?? `family ${data.readUInt32LE(32)}`;
  const type = data.readUInt32LE(36);
  return {
    syscall,
    pid: data.readUInt32LE(4),
    tid: data.readUInt32LE(8),
    duration_ns: Number(data.readBigUInt64LE(16)),
    ret: Number(data.readBigInt64LE(24)),
    family,
    ...(syscall === 'socket' && {
      type: [TYPES[type & 0xf] ?? `type ${type & 0xf}`, tools.flagNames(type & ~0xf, TYPE_FLAGS, '')].filter(Boolean).join('|'),
      protocol: data.readUInt32LE(40),
    }),
    ...(syscall === 'connect' && {
      fd: data.readInt32LE(12),
      addr: ipAddress(family, data.subarray(48, 64)),
      port: data.readUInt16BE(44), // network byte order
    }),
    comm: tools.cString(data, 64, 16),
  };
}

/** The text after "connect took 0.015 ms". */
function details(e) {
  const ret = `(ret=${tools.formatRet(e.ret)})`;
  if (e.syscall === 'socket') return `${ret} ${e.family} ${e.type} protocol=${e.protocol}`;
  if (e.addr === undefined) return `${ret} fd=${e.fd} ${e.family}`;
  return `${ret} fd=${e.fd} to ${e.family === 'AF_INET6' ? `[${e.addr}]` : e.addr}:${e.port}`;
}

async function main() {
  const opts = tools.parseArgs('Prints every socket and connect of a process, with its latency and destination.');
  const target = await tools.traceTarget(opts, path.join(__dirname, 'workloads', 'net.js'));
  const summary = new tools.LatencySummary(SYSCALLS);
  let obj, events;
  try {
    obj = bpf.loadBpfProgram(path.join(__dirname, '..', 'bpf', '.output', 'net_latency.bpf.o'));
    obj.setGlobalVariable('target_pid', target.pid);
    for (const name of SYSCALLS) {
      obj.attachTracepoint('syscalls', `sys_enter_${name}`, obj.programs[`handle_enter_${name}`]);
      obj.attachTracepoint('syscalls', `sys_exit_${name}`, obj.programs[`handle_exit_${name}`]);
    }
    events = obj.getMap('events').openRingBuffer(
      (data) => {
        const event = decode(data);
        summary.add(event.syscall, event.duration_ns);
        tools.printEvent(opts, event, details);
      },
      { lost: (count) => console.error(`lost ${count} records`) },
    );
    await tools.untilStopped(opts, target);
  } finally {
    events?.close();
    obj?.close();
    target.stop();
  }
  summary.print(opts);
}

main().catch((err) => {
  console.error(`trace_network_latency: ${err.code ? `${err.code}: ` : ''}${err.message}`);
  process.exitCode = 1;
});
