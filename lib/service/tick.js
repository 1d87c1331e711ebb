'use strict';
/**
 * `profile({ clock: 'tick' })` (and `clock: 'auto'`, the default, on
 * x86_64 where it can): CPU samples taken at the kernel's own tick
 * (bpf/profile.bpf.c handle_tick), not at a timer of the profiler's own.
 * The tick is an hrtimer the kernel runs CONFIG_HZ times a second on every
 * busy CPU to account CPU time; a program on its expiry samples the task it
 * interrupted at every tick_every-th tick of a CPU, so the profile adds no
 * interrupt (on a VM a cpu-clock event's interrupt cost the sampled thread
 * ~15 µs, more than the program: docs/performance.md). The frequency is a
 * whole fraction of CONFIG_HZ (99 Hz asked: 83 Hz at HZ=250, 100 Hz at 100,
 * 300 or 1000).
 */
const fs = require('node:fs');
const { codedError } = require('../core/validate');

/**
 * The names the tick's hrtimer function has had: tick_sched_timer until
 * Linux 6.6, tick_nohz_highres_handler in 6.7 and 6.8, tick_nohz_handler
 * from 6.9 (before that, the low-resolution tick's clockevents handler: no
 * hrtimer's function, so never matched). All of them in kernel/time/
 * tick-sched.c, next to one another in /proc/kallsyms.
 */
const TICK_FUNCTIONS = ['tick_sched_timer', 'tick_nohz_highres_handler', 'tick_nohz_handler'];

/** /proc/kallsyms is read this much at a time, and this much past the first tick function found. */
const CHUNK_BYTES = 1 << 16;

/** The values CONFIG_HZ takes: a measured tick is snapped to the nearest. */
const HZ_VALUES = [100, 250, 300, 1000];

/**
 * The kernel stack frames of the tick's interrupt, up to its entry from the
 * interrupted code (x86_64: the local APIC timer's vector; arm64: the EL0 or
 * EL1 IRQ vector); the frames below it are what the tick interrupted.
 */
const INTERRUPT_ENTRY = /^(asm_sysvec_apic_timer_interrupt|asm_sysvec_\w+|asm_common_interrupt|el0t_64_irq|el1h_64_irq|el1t_64_irq)$/;

const NOT_SUPPORTED = (why) => codedError('ERR_BPF_NOT_SUPPORTED', `profile({ clock: 'tick' }): ${why}; use clock 'cpu-clock' (or 'auto', the default: the tick where it can, else cpu-clock)`);

/**
 * The addresses (BigInts) of the functions in /proc/kallsyms that the
 * tick's hrtimer may have (TICK_FUNCTIONS: the program matches any), or
 * throws ERR_BPF_NOT_SUPPORTED saying why: addresses hidden (they need
 * CAP_SYSLOG), none of them (a kernel whose tick is no hrtimer), or CPUs
 * whose tick stops while one task runs (nohz_full). The file (~5 MB, ~50
 * ms to read whole here) is read in chunks up to a little past the first
 * one found (~10 ms).
 */
function tickFunctions({ kallsyms = '/proc/kallsyms', nohzFull = '/sys/devices/system/cpu/nohz_full' } = {}) {
  let full = '';
  try {
    full = fs.readFileSync(nohzFull, 'utf8').trim();
  } catch {
    // (no file: a kernel without NO_HZ_FULL)
  }
  if (full && full !== '(null)') throw NOT_SUPPORTED(`CPUs ${full} are nohz_full (their tick stops while one task runs: its samples would be missing)`);
  let fd;
  try {
    fd = fs.openSync(kallsyms, 'r');
  } catch (err) {
    throw NOT_SUPPORTED(`${kallsyms} is not readable (${err.code})`);
  }
  const found = new Map(); // name -> address
  try {
    const chunk = Buffer.alloc(CHUNK_BYTES);
    let rest = '';
    let after = -1; // bytes read since the first one found
    for (let n; after < CHUNK_BYTES && (n = fs.readSync(fd, chunk, 0, CHUNK_BYTES, null)) > 0; ) {
      const lines = (rest + chunk.toString('latin1', 0, n)).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        const [address, type, name] = line.split(' ');
        if ((type === 't' || type === 'T') && TICK_FUNCTIONS.includes(name)) found.set(name, BigInt(`0x${address}`));
      }
      if (found.size) after += n;
    }
  } catch (err) {
    throw NOT_SUPPORTED(`${kallsyms} could not be read (${err.code})`);
  } finally {
    fs.closeSync(fd);
  }
  if (!found.size) throw NOT_SUPPORTED(`no ${TICK_FUNCTIONS.join(', ')} in ${kallsyms} (a kernel whose tick is no hrtimer: built without high-resolution timers?)`);
  const addresses = [...found.values()];
  if (addresses.some((a) => a === 0n)) throw NOT_SUPPORTED(`${kallsyms} shows no addresses to this process (they need CAP_SYSLOG, or kernel.kptr_restrict 0)`);
  return addresses;
}

/**
 * The sampling period of a tick window, from what the program saw
 * (`tickNs`: the shortest gap between two ticks of a CPU; `every`: ticks a
 * sample stands for; 0 when no tick came): `{ periodNs, frequency, hz }`,
 * the tick snapped to the nearest CONFIG_HZ value. `askedNs`: the period
 * asked for, when no tick came.
 */
function tickPeriod(tickNs, every, askedNs) {
  if (!tickNs || !every) return { periodNs: askedNs, frequency: 1e9 / askedNs, hz: 0 };
  const measured = 1e9 / tickNs;
  const hz = HZ_VALUES.reduce((best, h) => (Math.abs(h - measured) < Math.abs(best - measured) ? h : best));
  const periodNs = Math.round((every * 1e9) / hz);
  return { periodNs, frequency: hz / every, hz };
}

/** A tick sample's kernel stack (addresses, innermost first; `names`: address -> name) without the tick's interrupt: what it interrupted, or nothing (user space). */
function interrupted(kernel, names) {
  for (let i = kernel.length - 1; i >= 0; i--) {
    if (INTERRUPT_ENTRY.test(names.get(kernel[i]) ?? '')) return kernel.slice(i + 1);
  }
  return kernel;
}

module.exports = { tickFunctions, tickPeriod, interrupted, INTERRUPT_ENTRY, TICK_FUNCTIONS };
