'use strict';
// Traces the connections a Node.js process makes: how long each socket and
// connect took, and where it connected to, through a ring buffer. Needs root.
//   node examples/trace_network_latency.js [--pid N] [--duration S] [--json]
const net = require('net');
const path = require('path');
const { formatRet, flagNames } = require('../lib/core/format');
const { traceSyscalls } = require('../lib/tools/trace_syscalls');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');

// enum net_syscall (bpf/net_latency.h): how records name the call
const SYSCALLS = { NET_SOCKET: 'socket', NET_CONNECT: 'connect' };

// <sys/socket.h>
const FAMILIES = { 1: 'AF_UNIX', 2: 'AF_INET', 10: 'AF_INET6', 16: 'AF_NETLINK', 17: 'AF_PACKET' };
const TYPES = { 1: 'SOCK_STREAM', 2: 'SOCK_DGRAM', 3: 'SOCK_RAW', 5: 'SOCK_SEQPACKET' };
const TYPE_FLAGS = { SOCK_NONBLOCK: 0o4000, SOCK_CLOEXEC: 0o2000000 };

/** The destination address of a connect, from the record's `addr` (network byte order). */
function ipAddress(family, addr) {
  if (family === 'AF_INET') return [...addr.v4].join('.');
  if (family !== 'AF_INET6') return undefined;
  // eight groups of four hex digits; SocketAddress prints the short form (::1)
  return new net.SocketAddress({ address: addr.v6.toString('hex').match(/.{4}/g).join(':'), family: 'ipv6' }).address;
}

/** What a struct net_event (bpf/net_latency.h) reports of its call. */
function toEvent(record) {
  const syscall = SYSCALLS[record.syscall];
  const family = FAMILIES[record.family] ?? `family ${record.family}`;
  const type = record.type;
  return {
    syscall,
    pid: record.pid,
    tid: record.tid,
    duration_ns: record.duration_ns,
    ret: record.ret,
    family,
    ...(syscall === 'socket' && {
      type: [TYPES[type & 0xf] ?? `type ${type & 0xf}`, flagNames(type & ~0xf, TYPE_FLAGS, '')].filter(Boolean).join('|'),
      protocol: record.protocol,
    }),
    ...(syscall === 'connect' && { fd: record.fd, addr: ipAddress(family, record.addr), port: record.port }),
    comm: record.comm,
  };
}

/** The text after "connect took 0.015 ms". */
function details(e) {
  const ret = `(ret=${formatRet(e.ret)})`;
  if (e.syscall === 'socket') return `${ret} ${e.family} ${e.type} protocol=${e.protocol}`;
  if (e.addr === undefined) return `${ret} fd=${e.fd} ${e.family}`;
  return `${ret} fd=${e.fd} to ${e.family === 'AF_INET6' ? `[${e.addr}]` : e.addr}:${e.port}`;
}

run(() =>
  traceSyscalls({
    description: 'Prints every socket and connect of a process, with its latency and destination.',
    object: objectPath('net_latency'),
    workload: path.join(__dirname, 'workloads', 'net.js'),
    syscalls: Object.values(SYSCALLS),
    buffer: 'ring',
    type: 'net_event',
    toEvent,
    details,
  }),
);
