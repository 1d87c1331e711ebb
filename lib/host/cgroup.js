'use strict';
/**
 * Cgroups (v2) of the tools' `--cgroup PATH` and `--per-container`: the id
 * of a cgroup (the inode of its directory, what `bpf_get_current_cgroup_id()`
 * returns), its path, and the container a path names.
 *
 *   const { resolveCgroup, CgroupNames, parseContainer } = require('node-libbpf/lib/cgroup');
 */
const fs = require('fs');
const path = require('path');

const CGROUP2_SUPER_MAGIC = 0x63677270;

/**
 * Where the cgroup v2 hierarchy is mounted (from `/proc/self/mounts`):
 * `/sys/fs/cgroup` on a v2 host, `/sys/fs/cgroup/unified` on a hybrid one;
 * undefined when there is none.
 */
function cgroupV2Root(mounts = fs.readFileSync('/proc/self/mounts', 'utf8')) {
  const roots = mounts
    .split('\n')
    .map((line) => line.split(' '))
    .filter((f) => f[2] === 'cgroup2')
    .map((f) => f[1].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))));
  return roots.includes('/sys/fs/cgroup') ? '/sys/fs/cgroup' : roots[0];
}

function invalid(message) {
  return Object.assign(new Error(message), { code: 'ERR_BPF_INVALID_VALUE' });
}

/**
 * The cgroup v2 directory `p` (absolute, or relative to the v2 mount:
 * `system.slice/docker-ID.scope`): `{ id, path, level }`, `id` the
 * cgroup's id (a BigInt: the directory's inode), `path` relative to the v2
 * root (`/` for the root), `level` its depth (0: the root). Throws
 * ERR_BPF_INVALID_VALUE naming `p` when it is no cgroup v2 directory.
 *
 * @param {string} p
 * @param {string | null} [root] the v2 mount (default: `cgroupV2Root()`)
 */
function resolveCgroup(p, root = cgroupV2Root()) {
  if (!root) throw invalid(`cgroup ${p}: this system has no cgroup v2 hierarchy mounted (mount -t cgroup2 none /sys/fs/cgroup)`);
  const candidates = path.isAbsolute(p) ? [p, path.join(root, p)] : [path.join(root, p), path.resolve(p)];
  const existing = candidates.filter((c) => fs.existsSync(c)).map((c) => fs.realpathSync(c));
  if (!existing.length) throw invalid(`cgroup ${p}: no such directory (give a cgroup v2 directory, absolute or relative to ${root}; systemd-cgls lists them)`);
  const real = existing.find((c) => fs.statSync(c).isDirectory() && fs.statfsSync(c).type === CGROUP2_SUPER_MAGIC);
  if (!real) throw invalid(`cgroup ${p}: ${existing[0]} is not a cgroup v2 directory (give one under ${root}, the cgroup v2 mount)`);
  const st = fs.statSync(real, { bigint: true });
  const rel = path.relative(fs.realpathSync(root), real);
  return { id: st.ino, path: `/${rel}`, level: rel ? rel.split('/').length : 0 };
}

const HEX64 = '[0-9a-f]{64}';
/** The container id in one path component, by runtime (the id is the first group). */
const CONTAINER_PATTERNS = [
  new RegExp(`^(?:docker|cri-containerd|crio|libpod)-(${HEX64})\\.scope$`), // systemd driver
  new RegExp(`^libpod-(${HEX64})$`), // podman, cgroupfs driver
  new RegExp(`^(${HEX64})$`), // /docker/ID, /kubepods/.../podUID/ID (cgroupfs driver)
];

/**
 * The container of cgroup path `p`: `{ containerId, podUid }` (each
 * undefined when the path names none), from the path shapes of docker,
 * containerd (cri), cri-o, podman and the kubelet (systemd or cgroupfs
 * driver). The innermost container scope wins; conmon's scopes
 * (`libpod-conmon-ID.scope`, `crio-conmon-ID.scope`) are no container.
 *
 * @param {string} p
 * @returns {{ containerId?: string, podUid?: string }}
 */
function parseContainer(p) {
  let containerId, podUid;
  for (const part of p.split('/')) {
    for (const re of CONTAINER_PATTERNS) {
      const m = re.exec(part);
      if (m) {
        containerId = m[1];
        break;
      }
    }
    // kubepods-burstable-pod<uid, _ for ->.slice (systemd), pod<uid> (cgroupfs)
    const pod = /^(?:kubepods(?:-[a-z]+)?-)?pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?$/.exec(part);
    if (pod) podUid = pod[1].replace(/_/g, '-');
  }
  return { containerId, podUid };
}

/**
 * Names cgroup ids: `get(id)` -> `{ cgroupId, cgroup, containerId?, podUid? }`,
 * `cgroup` the path relative to the v2 root, or 'unknown (cgroup gone)' for
 * an id no directory has. It walks the v2 hierarchy (a stat per directory)
 * at most once per `refresh()` (call it once per interval), and only when
 * asked an id it has not seen; names it found stay known.
 */
class CgroupNames {
  constructor(root = cgroupV2Root()) {
    this.root = root;
    this.paths = new Map(); // id (string) -> path
    this.walked = false;
  }

  /** Allows one more walk: call it once per interval. */
  refresh() {
    this.walked = false;
  }

  /** Walks the hierarchy now (`get` does when it must). */
  walk() {
    this.walked = true;
    if (!this.root) return;
    const visit = (dir, rel) => {
      let st, entries;
      try {
        st = fs.statSync(dir, { bigint: true });
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch {
        return; // removed meanwhile
      }
      this.paths.set(String(st.ino), rel || '/');
      for (const e of entries) if (e.isDirectory()) visit(path.join(dir, e.name), `${rel}/${e.name}`);
    };
    visit(this.root, '');
  }

  /**
   * The names of cgroup `id`.
   *
   * @param {number | bigint} id
   * @returns {{ cgroupId: number, cgroup: string, containerId?: string, podUid?: string }}
   */
  get(id) {
    const key = String(id);
    if (!this.paths.has(key) && !this.walked) this.walk();
    const cgroup = this.paths.get(key);
    if (cgroup === undefined) return { cgroupId: Number(id), cgroup: 'unknown (cgroup gone)' };
    const { containerId, podUid } = parseContainer(cgroup);
    return { cgroupId: Number(id), cgroup, ...(containerId && { containerId }), ...(podUid && { podUid }) };
  }
}

/**
 * The CONTAINER column of a row of `CgroupNames.get`: the short (12-character) container id, else the cgroup path.
 *
 * @param {{ cgroup: string, containerId?: string }} row
 */
function containerLabel(row) {
  return row.containerId ? row.containerId.slice(0, 12) : row.cgroup;
}

// bpf/filter.bpf.h's walk up a thread's cgroups (kernels before 6.4) reads
// the kernel's structs at these offsets, given before load: [global, struct,
// member]. No CO-RE relocation: an object that needs no other loads without
// libbpf parsing the kernel's BTF (about 15 ms of a 20 ms load).
const CGROUP_OFFSETS = [
  ['cgroup_off_task_cgroups', 'task_struct', 'cgroups'],
  ['cgroup_off_css_set_dfl', 'css_set', 'dfl_cgrp'],
  ['cgroup_off_level', 'cgroup', 'level'],
  ['cgroup_off_parent', 'cgroup', 'self.parent'],
  ['cgroup_off_css_cgroup', 'cgroup_subsys_state', 'cgroup'],
  ['cgroup_off_kn', 'cgroup', 'kn'],
  ['cgroup_off_kn_id', 'kernfs_node', 'id'],
];
/** @type {Map<string, number>} the offsets of this kernel, read once */
const kernelOffsets = new Map();
function kernelOffset(type, member) {
  const key = `${type}.${member}`;
  let offset = kernelOffsets.get(key);
  if (offset === undefined) {
    offset = require('../core/native').kernelFieldOffset(`struct ${type}`, member);
    kernelOffsets.set(key, offset);
  }
  return offset;
}

/**
 * Sets, before load, the globals of bpf/filter.bpf.h from the tool's
 * options: `opts.cgroup` (from `--cgroup`, `resolveCgroup`) and
 * `opts.perContainer`. With a cgroup, also the offsets of the kernel's
 * structs that the walk up a thread's cgroups reads (from the kernel's
 * BTF, once per process), for the objects that have them.
 *
 * @param {{ setGlobalVariable(name: string, value: any): void, globals: { name: string }[] }} obj
 * @param {{ cgroup?: { id: bigint, level: number }, perContainer?: boolean }} opts
 */
function configureCgroup(obj, opts) {
  if (opts.cgroup) {
    obj.setGlobalVariable('target_cgroup', opts.cgroup.id);
    obj.setGlobalVariable('target_cgroup_level', opts.cgroup.level);
    const has = new Set(obj.globals.map((g) => g.name));
    for (const [name, type, member] of CGROUP_OFFSETS) {
      if (has.has(name)) obj.setGlobalVariable(name, kernelOffset(type, member));
    }
  }
  if (opts.perContainer) obj.setGlobalVariable('per_container', true);
}

/** The CONTAINER column of a table of `formatTable` (lib/tools/report.js). */
const CONTAINER_COLUMN = { title: 'CONTAINER', value: containerLabel, left: true };

module.exports = { cgroupV2Root, resolveCgroup, parseContainer, CgroupNames, containerLabel, configureCgroup, CONTAINER_COLUMN };
