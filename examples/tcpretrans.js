'use strict';
// Prints the TCP retransmits of a process's connections (--pid), of every
// connection (--all, as bcc's tcpretrans), or of a workload of its own that
// sends over a lossy link between two network namespaces: addresses, ports
// and the connection's state, from the tcp:tcp_retransmit_skb tracepoint,
// through a ring buffer; a count per connection at the end. Needs root.
//   node examples/tcpretrans.js [--pid N | --all] [--duration S] [--json]
const net = require('net');
const os = require('os');
const path = require('path');
const bpf = require('..');
const { parseArgs } = require('../lib/tools/args');
const { traceTarget, untilStopped, drain } = require('../lib/host/target');
const { socketInodes } = require('../lib/host/procfs');
const { wallClock, formatTime, errnoName } = require('../lib/core/format');
const { run } = require('../lib/tools/run');
const { objectPath } = require('../lib/core/objects');
const { CgroupNames, configureCgroup, containerLabel } = require('../lib/host/cgroup');

// include/net/tcp_states.h
const TCP_STATES = [
  undefined,
  'ESTABLISHED',
  'SYN_SENT',
  'SYN_RECV',
  'FIN_WAIT1',
  'FIN_WAIT2',
  'TIME_WAIT',
  'CLOSE',
  'CLOSE_WAIT',
  'LAST_ACK',
  'LISTEN',
  'CLOSING',
  'NEW_SYN_RECV',
  'BOUND_INACTIVE',
];
const AF_INET = 2;
const AF_INET6 = 10;
const EBUSY = 16;

/** An address of a record (network byte order; AF_INET in the first 4 bytes). IPv4-mapped IPv6 as IPv4. */
function ipAddress(family, bytes) {
  const mapped = family === AF_INET6 && bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (family === AF_INET || mapped) return [...bytes.subarray(mapped ? 12 : 0, mapped ? 16 : 4)].join('.');
  return new net.SocketAddress({ address: bytes.toString('hex').match(/.{4}/g).join(':'), family: 'ipv6' }).address;
}

/** `10.0.0.1:80`, `[fd00::1]:80`. */
const endpoint = (addr, port) => (addr.includes(':') ? `[${addr}]:${port}` : `${addr}:${port}`);

/** What a struct tcpretrans_event (bpf/tcpretrans.h) reports. */
function toEvent(r) {
  return {
    time: wallClock(r.ts_ns),
    family: r.family === AF_INET ? 'AF_INET' : r.family === AF_INET6 ? 'AF_INET6' : `family ${r.family}`,
    laddr: ipAddress(r.family, r.saddr),
    lport: r.sport,
    raddr: ipAddress(r.family, r.daddr),
    rport: r.dport,
    state: TCP_STATES[r.state] ?? `state ${r.state}`,
    segs: r.segs,
    err: r.err,
    netns: r.netns,
    ino: r.ino,
    cgroupId: r.cgroup,
  };
}

/**
 * Whether a retransmit is of a connection of process `pid`: its socket is
 * one of the process's open files, or (closed since, a FIN retransmitted)
 * its connection was.
 */
function ownedBy(pid) {
  let inodes = new Set();
  const connections = new Set();
  return (e) => {
    const conn = `${e.netns} ${endpoint(e.laddr, e.lport)} ${endpoint(e.raddr, e.rport)}`;
    if (e.ino !== 0) {
      if (!inodes.has(e.ino)) inodes = socketInodes(pid);
      if (inodes.has(e.ino)) connections.add(conn);
    }
    return connections.has(conn);
  };
}

function printEvent(opts, e) {
  if (opts.json) {
    const { time, ino, cgroupId, container, ...rest } = e;
    console.log(JSON.stringify({ time: time.toISOString(), ...(opts.perContainer && { cgroupId }), ...rest }));
    return;
  }
  const ip = e.family === 'AF_INET6' ? 6 : 4;
  const notes = [e.segs !== 1 && `${e.segs} segs`, e.err && `failed: ${errnoName(-e.err)}`].filter(Boolean);
  console.log(
    `${formatTime(e.time).padEnd(9)} ${String(ip).padEnd(2)} ${endpoint(e.laddr, e.lport).padEnd(42)} R> ${endpoint(e.raddr, e.rport).padEnd(42)} ${e.state.padEnd(e.container === undefined ? 0 : 11)}${e.container === undefined ? '' : ` ${e.container}`}${notes.length ? ` (${notes.join(', ')})` : ''}`,
  );
}

/** Retransmits and segments per connection, as the kernel counts them. */
function printSummary(opts, counts) {
  const rows = [...counts.values()];
  if (opts.json) {
    console.log(JSON.stringify({ summary: rows }));
    return;
  }
  const container = (r) => (r.cgroup === undefined ? '' : `  ${containerLabel(r)}`);
  console.log(`\n${'LADDR:LPORT'.padEnd(45)} ${'RADDR:RPORT'.padEnd(45)} ${'RETRANSMITS'.padStart(11)} ${'SEGS'.padStart(6)}${opts.perContainer ? '  CONTAINER' : ''}`);
  for (const r of rows) {
    console.log(`${endpoint(r.laddr, r.lport).padEnd(45)} ${endpoint(r.raddr, r.rport).padEnd(45)} ${String(r.retransmits).padStart(11)} ${String(r.segs).padStart(6)}${container(r)}`);
  }
}

async function main() {
  const opts = parseArgs('Prints the TCP retransmits of the connections of a process: addresses, ports and state.', {
    systemWide: 'every TCP connection',
    perContainer: true,
    pidHelp: 'the connections of process PID (default: every TCP connection, in every network namespace; --demo: a client and a server on a lossy link of their own)',
  });
  const [major, minor] = os.release().split('.').map(Number);
  if ((opts.cgroup || opts.perContainer) && (major < 5 || (major === 5 && minor < 15))) {
    // bpf/filter.bpf.h sock_cgroup(): sk_cgrp_data.cgroup
    throw Object.assign(new Error(`${opts.cgroup ? '--cgroup' : '--per-container'} needs the socket's cgroup, which kernels keep since 5.15 (this one is ${os.release()}); filter by -p PID instead`), { code: 'ENOTSUP' });
  }
  const target = await traceTarget(opts, path.join(__dirname, 'workloads', 'tcpretrans.js'));
  const owned = target.pid === undefined ? () => true : ownedBy(target.pid);
  const counts = new Map();
  let obj, events, stopRefresh;
  try {
    obj = bpf.loadBpfProgram(objectPath('tcpretrans'));
    configureCgroup(obj, opts);
    obj.attachTracepoint('tcp', 'tcp_retransmit_skb', obj.programs.handle_tcp_retransmit_skb);
    if (!opts.json) console.log(`${'TIME'.padEnd(9)} IP ${'LADDR:LPORT'.padEnd(42)} T> ${'RADDR:RPORT'.padEnd(42)} ${opts.perContainer ? 'STATE       CONTAINER' : 'STATE'}`);
    // the socket's cgroup (its creator's), named once per second at most
    const cgroups = new CgroupNames();
    const refresh = setInterval(() => cgroups.refresh(), 1000);
    stopRefresh = () => clearInterval(refresh);
    events = obj.getMap('events').openRingBuffer(
      (record) => {
        const e = toEvent(record);
        if (!owned(e)) return;
        if (opts.perContainer) {
          const row = Object.assign(e, cgroups.get(e.cgroupId));
          e.container = containerLabel(row);
        }
        printEvent(opts, e);
        const key = `${e.netns} ${endpoint(e.laddr, e.lport)} ${endpoint(e.raddr, e.rport)}`;
        const names = opts.perContainer ? { cgroupId: e.cgroupId, cgroup: e.cgroup, ...(e.containerId && { containerId: e.containerId }), ...(e.podUid && { podUid: e.podUid }) } : {};
        if (!counts.has(key)) counts.set(key, { family: e.family, laddr: e.laddr, lport: e.lport, raddr: e.raddr, rport: e.rport, ...names, retransmits: 0, segs: 0 });
        // counted as the kernel counts them (TcpRetransSegs, ss's retrans): all but those
        // not even tried, their skb still in the host queue (EBUSY)
        if (e.err !== -EBUSY) {
          counts.get(key).retransmits++;
          counts.get(key).segs += e.segs;
        }
      },
      { type: 'tcpretrans_event', int64: 'number', lost: (count) => console.error(`lost ${count} records`) },
    );
    await untilStopped(opts, target);
    obj.detachAll();
    await drain([events]);
    printSummary(opts, counts);
  } finally {
    stopRefresh?.();
    events?.close();
    obj?.close();
    target.stop();
  }
}

run(main);
