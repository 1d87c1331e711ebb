#!/usr/bin/python3
"""The benchmark's BCC consumer: the same record as __test__/bpf/stream.bpf.c
(the benchmark's program), written by a BCC program (compiled by BCC at
start, with the kernel headers that bench/setup.sh unpacks and the bench
passes in BCC_KERNEL_SOURCE), read by Python.

  bcc_consumer.py perf|ring PID N

Prints "ready" once attached; after SIGUSR1 drains until received + lost == N
or nothing came for 500 ms, then prints one JSON line (as bench/consumer.c;
cpu_s from getrusage(RUSAGE_SELF): every thread of the process).
"""
import ctypes as ct
import json
import os
import resource
import signal
import sys
import time

from bcc import BPF

mode, pid, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ring = mode == "ring"

TEXT = r"""
struct event {
    u32 pid;
    u32 tid;
    u64 ts;
    u64 seq;
};
BPF_ARRAY(stats, u64, 3); /* seq, ring_full, perf_errors */
#if RING
BPF_RINGBUF_OUTPUT(events, 2048); /* 8 MiB, as bench/.build/stream.bpf.o */
#else
BPF_PERF_OUTPUT(events);
#endif

TRACEPOINT_PROBE(syscalls, sys_enter_getppid)
{
    u64 id = bpf_get_current_pid_tgid();
    struct event rec = {};
    int k0 = 0, k1 = 1, k2 = 2;
    u64 *seq, *err;

    if ((id >> 32) != TARGET_PID)
        return 0;
    seq = stats.lookup(&k0);
    if (!seq)
        return 0;
    rec.pid = id >> 32;
    rec.tid = (u32)id;
    rec.ts = bpf_ktime_get_ns();
    rec.seq = __sync_fetch_and_add(seq, 1);
#if RING
    if (events.ringbuf_output(&rec, sizeof(rec), 0)) {
        err = stats.lookup(&k1);
        if (err)
            __sync_fetch_and_add(err, 1);
    }
#else
    if (events.perf_submit(args, &rec, sizeof(rec))) {
        err = stats.lookup(&k2);
        if (err)
            __sync_fetch_and_add(err, 1);
    }
#endif
    return 0;
}
"""

b = BPF(text=TEXT, cflags=["-DRING=%d" % ring, "-DTARGET_PID=%d" % pid])
seen = bytearray(n)
state = {"received": 0, "unique": 0, "first_ts": 0, "last_ns": 0, "lost": 0, "finishing": False}
events = b["events"]


def on_event(*args):
    # perf: (cpu, data, size); ring: (ctx, data, size)
    e = events.event(args[1])
    if state["received"] == 0:
        state["first_ts"] = e.ts
    state["received"] += 1
    s = e.seq
    if s < n and not seen[s]:
        seen[s] = 1
        state["unique"] += 1


def on_lost(count):
    state["lost"] += count


if ring:
    events.open_ring_buffer(on_event)
    poll = lambda: b.ring_buffer_poll(100)
else:
    events.open_perf_buffer(on_event, page_cnt=64, lost_cb=on_lost)
    poll = lambda: b.perf_buffer_poll(100)


def finish(*_):
    state["finishing"] = True


signal.signal(signal.SIGUSR1, finish)
def cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


cpu_at_ready = cpu_seconds()
print("ready", flush=True)


def lost_now():
    if ring:
        return b["stats"][ct.c_int(1)].value
    return state["lost"]


last_seen, quiet_since = 0, 0.0
while True:
    poll()
    if state["received"] != last_seen:
        last_seen = state["received"]
        state["last_ns"] = time.monotonic_ns()
        quiet_since = time.monotonic()
    if state["finishing"]:
        if state["received"] + lost_now() >= n:
            break
        if not quiet_since:
            quiet_since = time.monotonic()
        if time.monotonic() - quiet_since > 0.5:
            break

print(json.dumps({
    "received": state["received"],
    "lost": lost_now(),
    "missing": n - state["unique"],
    "first_ts": state["first_ts"],
    "last_ns": state["last_ns"],
    "cpu_s": round(cpu_seconds() - cpu_at_ready, 6),
}), flush=True)
os._exit(0)  # skips BCC's table destructors, which raise at interpreter exit
