'use strict';
/**
 * Probe specifications, as funccount and stackcount take them, expanded to
 * the probes they match and attached from one BPF program per kind of
 * probe: each attachment's cookie is the probe's index in the list, which
 * the program reads with `bpf_get_attach_cookie(ctx)`.
 *
 *   t:CATEGORY:EVENT  tracepoints, globs in both parts: t:syscalls:sys_enter_*  (or tracepoint:)
 *   u:LIBRARY:FUNC    uprobes on the functions of an ELF file (or uprobe:):
 *                     u:/lib/x86_64-linux-gnu/libc.so.6:pthread_mutex_*; LIBRARY is a
 *                     path, a library of the traced process (c, libc, pthread) or of
 *                     ldconfig, or a program on $PATH
 *   c:FUNC            u:libc:FUNC
 *   k:FUNC            kprobes (or kprobe:), where the kernel has them
 *
 *   const probes = require('node-libbpf/lib/probes');
 *   const list = probes.expand(['t:syscalls:sys_enter_*'], { pid });
 *   probes.attach(obj, list, { tracepoint: 'handle_tracepoint', uprobe: 'handle_uprobe', pid });
 *
 * Globs: `*` any characters, `?` one, `[abc]` one of.
 */
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const native = require('../core/native');
const { syscallNumberOfEvent } = require('./syscalls');

const KINDS = { t: 'tracepoint', tracepoint: 'tracepoint', u: 'uprobe', uprobe: 'uprobe', c: 'uprobe', k: 'kprobe', kprobe: 'kprobe' };

/** A spec as an object: `{ kind, category, pattern }`, `{ kind, library, pattern }` or `{ kind, pattern }`. */
function parseSpec(spec) {
  const [prefix, ...rest] = spec.split(':');
  const kind = KINDS[prefix];
  const fail = (what) => {
    throw Object.assign(new Error(`probe '${spec}': ${what} (t:CATEGORY:EVENT, u:LIBRARY:FUNC, c:FUNC or k:FUNC)`), { code: 'ERR_INVALID_ARG_VALUE' });
  };
  if (!kind) fail(`unknown kind '${prefix}'`);
  if (prefix === 'c') {
    if (rest.length !== 1 || !rest[0]) fail('c: takes one function pattern');
    return { kind, library: 'c', pattern: rest[0], spec };
  }
  if (kind === 'kprobe') {
    if (rest.length !== 1 || !rest[0]) fail('k: takes one function pattern');
    return { kind, pattern: rest[0], spec };
  }
  // a library path may hold ':' only in theory; the function is after the last one
  if (rest.length < 2 || !rest.at(-1) || !rest.slice(0, -1).join(':')) fail(`${prefix}: takes two parts`);
  const first = rest.slice(0, -1).join(':');
  return kind === 'tracepoint' ? { kind, category: first, pattern: rest.at(-1), spec } : { kind, library: first, pattern: rest.at(-1), spec };
}

/** A glob as an anchored RegExp. */
function globRegExp(glob) {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '[' && glob.indexOf(']', i + 2) > 0) {
      const end = glob.indexOf(']', i + 2);
      re += `[${glob.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`;
      i = end;
    } else re += c.replace(/[.+^${}()|\\\]]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * The tracefs root (`/sys/kernel/tracing`, or `/sys/kernel/debug/tracing`),
 * as the addon finds it: never mounted here (ERR_BPF_TRACEFS, naming the
 * mount command, when tracefs is not mounted; EPERM when it is root's).
 */
function tracefsRoot() {
  return native.tracefsRoot();
}

/** The tracepoints `{ category, name }` whose category and name match the globs, sorted. */
function listTracepoints(categoryGlob, nameGlob) {
  const events = path.join(tracefsRoot(), 'events');
  const [catRe, nameRe] = [globRegExp(categoryGlob), globRegExp(nameGlob)];
  const out = [];
  for (const category of fs.readdirSync(events).sort()) {
    if (!catRe.test(category) || !isDir(path.join(events, category))) continue;
    for (const name of fs.readdirSync(path.join(events, category)).sort()) {
      if (nameRe.test(name) && fs.existsSync(path.join(events, category, name, 'id'))) out.push({ category, name });
    }
  }
  return out;
}

function isDir(p) {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The ELF file `library` names: a path; else a library mapped by process
 * `pid` (`c`, `libc`, `libc.so.6`, `pthread`), through its root
 * (`/proc/PID/root/...`: the file it maps, also in a container); else one
 * `ldconfig -p` knows; else a program on $PATH.
 */
function resolveLibrary(library, pid) {
  if (library.includes('/')) {
    if (!fs.existsSync(library)) throw Object.assign(new Error(`${library} does not exist`), { code: 'ENOENT' });
    return library;
  }
  const base = library.replace(/^lib/, '').replace(/\.so.*$/, '');
  const isIt = (file) => new RegExp(`^lib${base.replace(/[.+]/g, '\\$&')}(-[\\d.]+)?\\.so(\\.|$)`).test(path.basename(file)) || path.basename(file) === library;
  if (pid) {
    try {
      const mapped = fs
        .readFileSync(`/proc/${pid}/maps`, 'utf8')
        .split('\n')
        .map((line) => line.split(/\s+/).slice(5).join(' '))
        .find((file) => file.startsWith('/') && isIt(file));
      // as the process sees it: in another mount namespace (a container) its paths are under its root
      if (mapped) return `/proc/${pid}/root${mapped}`;
    } catch {
      // the process is gone: look further
    }
  }
  try {
    const ldconfig = execFileSync('ldconfig', ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const arch = process.arch === 'x64' ? 'x86-64' : process.arch === 'arm64' ? 'AArch64' : '';
    const lines = ldconfig.split('\n').filter((l) => l.includes('=>') && isIt(l.split('=>')[0].trim().split(' ')[0]));
    const line = lines.find((l) => l.includes(arch)) ?? lines[0];
    if (line) return line.split('=>')[1].trim();
  } catch {
    // no ldconfig
  }
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const file = path.join(dir, library);
    if (dir && fs.existsSync(file)) return file;
  }
  throw Object.assign(new Error(`no library or program '${library}': give its path`), { code: 'ENOENT' });
}

/**
 * The functions of an ELF file matching a glob, one per address (aliases
 * such as `pthread_mutex_consistent_np` and `pthread_mutex_consistent` are
 * one function: the name without leading underscores, else the shortest,
 * is kept), sorted by name: `[{ name, offset }]`.
 */
function listFunctions(binary, glob, bpf = native) {
  const re = globRegExp(glob);
  const byOffset = new Map();
  const rank = (name) => [name.startsWith('_') ? 1 : 0, name.length, name];
  for (const s of bpf.elfSymbols(binary)) {
    if (s.fileOffset === undefined || !re.test(s.name)) continue;
    const offset = Number(s.fileOffset);
    const kept = byOffset.get(offset);
    if (!kept || compare(rank(s.name), rank(kept)) < 0) byOffset.set(offset, s.name);
  }
  return [...byOffset].map(([offset, name]) => ({ name, offset })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function compare(a, b) {
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

/** The kernel functions matching a glob that kprobes can attach to (available_filter_functions). */
function listKernelFunctions(glob, bpf = native) {
  if (!bpf.features().kprobes) {
    throw Object.assign(new Error(`kprobes are not available on this kernel (built without CONFIG_KPROBES): use tracepoints (t:CATEGORY:EVENT) instead`), {
      code: 'ENOTSUP',
    });
  }
  const re = globRegExp(glob);
  const names = fs
    .readFileSync(path.join(tracefsRoot(), 'available_filter_functions'), 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[0])
    .filter((name) => name && re.test(name));
  return [...new Set(names)].sort();
}

/**
 * The probes that specs match, in order, each once: `[{ kind, label,
 * category, name }]` (tracepoints), `[{ kind, label, binary, name, offset
 * }]` (uprobes), `[{ kind, label, name }]` (kprobes). `pid`: the traced
 * process, whose libraries `u:c:...` means. A spec that matches nothing
 * is an error.
 * @param {string[]} specs
 * @param {{ pid?: number, bpf?: typeof native }} [options] `bpf`: the addon (tests pass another)
 */
function expand(specs, { pid, bpf = native } = {}) {
  const probes = [];
  const seen = new Set();
  for (const spec of specs) {
    const p = parseSpec(spec);
    /** @type {{ kind: string, label: string, name: string, category?: string, binary?: string, offset?: number }[]} */
    let found;
    if (p.kind === 'tracepoint') {
      found = listTracepoints(p.category, p.pattern).map((t) => ({ kind: 'tracepoint', label: `${t.category}:${t.name}`, ...t }));
    } else if (p.kind === 'uprobe') {
      const binary = resolveLibrary(p.library, pid);
      found = listFunctions(binary, p.pattern, bpf).map((f) => ({ kind: 'uprobe', label: `${path.basename(binary)}:${f.name}`, binary, ...f }));
    } else {
      found = listKernelFunctions(p.pattern, bpf).map((name) => ({ kind: 'kprobe', label: name, name }));
    }
    if (found.length === 0) throw Object.assign(new Error(`probe '${spec}' matches nothing`), { code: 'ERR_BPF_UNKNOWN_NAME' });
    for (const probe of found) {
      const key = `${probe.kind} ${probe.binary ?? ''} ${probe.offset ?? probe.label}`;
      if (!seen.has(key)) {
        seen.add(key);
        probes.push(probe);
      }
    }
  }
  return probes;
}

/**
 * Attaches every probe of `probes` with the cookie of its index: tracepoints
 * to `programs.tracepoint` (a `SEC("tp")` program), uprobes and kprobes to
 * `programs.uprobe` (`SEC("uprobe")`); uprobes only in process `pid` when
 * it is given.
 *
 * `programs.syscalls`: `{ enter, exit, enterMap, exitMap }` counts the
 * `syscalls:sys_enter_X`/`sys_exit_X` tracepoints from the raw tracepoints
 * sys_enter and sys_exit instead (two `SEC("raw_tp/...")` programs; the
 * array maps are set to index + 1 at each syscall's number). The kernel
 * takes ~50 ms or more to close each tracepoint perf event (a grace period,
 * under a global mutex), so 360 `syscalls:*` tracepoints would take half
 * a minute to detach; two raw tracepoints take nothing.
 *
 * Kernels without attach cookies (before 5.15; `bpf.features().attachCookie`)
 * attach without them; with `perProbeWithoutCookies` (an object that counts
 * by probe), probe i attaches there to the program `${tracepoint}_${i}` or
 * `${uprobe}_${i}` (made loadable here, before load), its index built in.
 *
 * Returns `{ links, failed, perfEvents }`: `failed` lists `{ probe, error }`
 * for the probes that could not attach (it throws when none could);
 * `perfEvents` is how many perf events the links hold (slow to close).
 * @param {any} obj a BpfObject (loadBpfProgram), with the programs named below
 * @param {ReturnType<typeof expand>} probes
 * @param {{ tracepoint?: string, uprobe?: string, syscalls?: { enter: string, exit: string, enterMap: string, exitMap: string }, pid?: number, perProbeWithoutCookies?: boolean }} [options]
 */
function attach(obj, probes, { tracepoint, uprobe, syscalls, pid, perProbeWithoutCookies } = {}) {
  const links = [];
  const failed = [];
  const raw = { enter: [], exit: [] };
  const cookies = native.features().attachCookie;
  // before 5.15 (no attach cookies), for an object that counts by probe
  // (perProbeWithoutCookies): probe i attaches to program `${program}_${i}`
  // (SEC("?..."), loaded only when used), its index built in
  const perProbe = !cookies && Boolean(perProbeWithoutCookies);
  const program = (probe) => (probe.kind === 'tracepoint' ? tracepoint : uprobe);
  const slot = (probe, i) => (perProbe ? `${program(probe)}_${i}` : program(probe));
  if (perProbe) {
    probes.forEach((probe, i) => {
      if (obj.programs[slot(probe, i)]) obj.programs[slot(probe, i)].autoload = true;
    });
  }
  probes.forEach((probe, i) => {
    const cookie = cookies ? BigInt(i) : 0n;
    try {
      if (probe.kind === 'tracepoint') {
        const m = probe.category === 'syscalls' && /^sys_(enter|exit)_(\w+)$/.exec(probe.name);
        const nr = m ? syscallNumberOfEvent(m[2]) : undefined;
        if (syscalls && nr !== undefined) {
          raw[m[1]].push([nr, i]);
          return;
        }
        if (!tracepoint) throw new Error('no program for tracepoints');
        if (!obj.programs[slot(probe, i)]) throw noSlot(obj, tracepoint, i);
        links.push(obj.attachTracepoint(probe.category, probe.name, slot(probe, i), { cookie }));
      } else {
        if (!uprobe) throw new Error(`no program for ${probe.kind}s`);
        if (!obj.programs[slot(probe, i)]) throw noSlot(obj, uprobe, i);
        if (probe.kind === 'uprobe') links.push(obj.attachUprobe(probe.binary, probe.offset, slot(probe, i), { cookie, ...(pid && { pid }) }));
        else links.push(obj.attachKprobe(probe.name, slot(probe, i), { cookie }));
      }
    } catch (error) {
      failed.push({ probe, error });
    }
  });
  for (const dir of ['enter', 'exit']) {
    if (raw[dir].length === 0) continue;
    const map = obj.getMap(syscalls[`${dir}Map`]);
    for (const [nr, i] of raw[dir]) map.set(nr, i + 1);
    links.push(obj.attachRawTracepoint(`sys_${dir}`, syscalls[dir]));
  }
  if (failed.length === probes.length) throw failed[0].error;
  return { links, failed, perfEvents: links.length - Number(raw.enter.length > 0) - Number(raw.exit.length > 0) };
}

/** The error of a probe past the last program of its kind on a kernel without attach cookies. */
function noSlot(obj, program, i) {
  const slots = Object.keys(obj.programs).filter((n) => n.startsWith(`${program}_`)).length;
  return Object.assign(
    new Error(
      `this kernel has no attach cookies (bpf_get_attach_cookie, Linux 5.15+), so each probe needs a program of its own, and the object has ${slots} (${program}_N): probe ${i + 1} is not counted; match fewer`,
    ),
    { code: 'ENOTSUP' },
  );
}

/**
 * How to probe one of a few kernel functions that do one job under
 * different names across kernel versions (newest first), chosen per
 * function as libbpf-tools does: the first function that an fentry program
 * can attach to (`bpf.fentryCanAttach`; not with `kprobes`), or that a
 * kprobe can (`bpf.kprobeExists`). `{ kind: 'fentry' | 'kprobe', func }`,
 * or undefined when none can. Then, before load, retarget the fentry
 * program (`prog.setAttachTarget(func)`) or attach the kprobe program to
 * `func` (`obj.attachKprobe(func, prog)`). `bpf`: the addon.
 * @param {string[]} functions
 * @param {{ kprobes?: boolean, bpf?: { fentryCanAttach(func: string): boolean, kprobeExists(func: string): boolean } }} [options]
 * @returns {{ kind: 'fentry' | 'kprobe', func: string } | undefined}
 */
function chooseKernelProbe(functions, { kprobes = false, bpf = native } = {}) {
  for (const func of functions) {
    if (!kprobes && bpf.fentryCanAttach(func)) return { kind: 'fentry', func };
    if (bpf.kprobeExists(func)) return { kind: 'kprobe', func };
  }
  return undefined;
}

module.exports = { parseSpec, globRegExp, tracefsRoot, listTracepoints, resolveLibrary, listFunctions, listKernelFunctions, expand, attach, chooseKernelProbe };
