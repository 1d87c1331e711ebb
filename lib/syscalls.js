'use strict';
/**
 * Syscall names and numbers of this architecture, and the per-syscall
 * latency histograms that bpf/syscall_hist.bpf.h counts in the kernel
 * (examples/syscall_hist.js, examples/node_syscalls.js), read per interval
 * and in total, printed as bpftrace prints its histograms, or as JSON.
 *
 *   const { syscallName, syscallNumber, SyscallLatency } = require('node-libbpf/lib/syscalls');
 */
const { log2Buckets, linearBuckets, formatHistogram, histogramJSON } = require('./hist');
const { Tally, formatTable } = require('./report');

// x86_64: arch/x86/entry/syscalls/syscall_64.tbl (0-469; 512-547 are x32 only)
const X86_64 = `
  read write open close stat fstat lstat poll lseek mmap mprotect munmap brk rt_sigaction
  rt_sigprocmask rt_sigreturn ioctl pread64 pwrite64 readv writev access pipe select sched_yield
  mremap msync mincore madvise shmget shmat shmctl dup dup2 pause nanosleep getitimer alarm
  setitimer getpid sendfile socket connect accept sendto recvfrom sendmsg recvmsg shutdown bind
  listen getsockname getpeername socketpair setsockopt getsockopt clone fork vfork execve exit
  wait4 kill uname semget semop semctl shmdt msgget msgsnd msgrcv msgctl fcntl flock fsync
  fdatasync truncate ftruncate getdents getcwd chdir fchdir rename mkdir rmdir creat link unlink
  symlink readlink chmod fchmod chown fchown lchown umask gettimeofday getrlimit getrusage sysinfo
  times ptrace getuid syslog getgid setuid setgid geteuid getegid setpgid getppid getpgrp setsid
  setreuid setregid getgroups setgroups setresuid getresuid setresgid getresgid getpgid setfsuid
  setfsgid getsid capget capset rt_sigpending rt_sigtimedwait rt_sigqueueinfo rt_sigsuspend
  sigaltstack utime mknod uselib personality ustat statfs fstatfs sysfs getpriority setpriority
  sched_setparam sched_getparam sched_setscheduler sched_getscheduler sched_get_priority_max
  sched_get_priority_min sched_rr_get_interval mlock munlock mlockall munlockall vhangup
  modify_ldt pivot_root _sysctl prctl arch_prctl adjtimex setrlimit chroot sync acct settimeofday
  mount umount2 swapon swapoff reboot sethostname setdomainname iopl ioperm create_module
  init_module delete_module get_kernel_syms query_module quotactl nfsservctl getpmsg putpmsg
  afs_syscall tuxcall security gettid readahead setxattr lsetxattr fsetxattr getxattr lgetxattr
  fgetxattr listxattr llistxattr flistxattr removexattr lremovexattr fremovexattr tkill time futex
  sched_setaffinity sched_getaffinity set_thread_area io_setup io_destroy io_getevents io_submit
  io_cancel get_thread_area lookup_dcookie epoll_create epoll_ctl_old epoll_wait_old
  remap_file_pages getdents64 set_tid_address restart_syscall semtimedop fadvise64 timer_create
  timer_settime timer_gettime timer_getoverrun timer_delete clock_settime clock_gettime
  clock_getres clock_nanosleep exit_group epoll_wait epoll_ctl tgkill utimes vserver mbind
  set_mempolicy get_mempolicy mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify
  mq_getsetattr kexec_load waitid add_key request_key keyctl ioprio_set ioprio_get inotify_init
  inotify_add_watch inotify_rm_watch migrate_pages openat mkdirat mknodat fchownat futimesat
  newfstatat unlinkat renameat linkat symlinkat readlinkat fchmodat faccessat pselect6 ppoll
  unshare set_robust_list get_robust_list splice tee sync_file_range vmsplice move_pages utimensat
  epoll_pwait signalfd timerfd_create eventfd fallocate timerfd_settime timerfd_gettime accept4
  signalfd4 eventfd2 epoll_create1 dup3 pipe2 inotify_init1 preadv pwritev rt_tgsigqueueinfo
  perf_event_open recvmmsg fanotify_init fanotify_mark prlimit64 name_to_handle_at
  open_by_handle_at clock_adjtime syncfs sendmmsg setns getcpu process_vm_readv process_vm_writev
  kcmp finit_module sched_setattr sched_getattr renameat2 seccomp getrandom memfd_create
  kexec_file_load bpf execveat userfaultfd membarrier mlock2 copy_file_range preadv2 pwritev2
  pkey_mprotect pkey_alloc pkey_free statx io_pgetevents rseq uretprobe uprobe - - - - - - - - - - - - - - - -
  - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -
  - - - - - - - - - - - - - - - - - - - - - - - pidfd_send_signal io_uring_setup io_uring_enter
  io_uring_register open_tree move_mount fsopen fsconfig fsmount fspick pidfd_open clone3
  close_range openat2 pidfd_getfd faccessat2 process_madvise epoll_pwait2 mount_setattr
  quotactl_fd landlock_create_ruleset landlock_add_rule landlock_restrict_self memfd_secret
  process_mrelease futex_waitv set_mempolicy_home_node cachestat fchmodat2 map_shadow_stack
  futex_wake futex_wait futex_requeue statmount listmount lsm_get_self_attr lsm_set_self_attr
  lsm_list_modules mseal setxattrat getxattrat listxattrat removexattrat open_tree_attr
  file_getattr file_setattr
`;

// arm64 (and other asm-generic 64-bit architectures): include/uapi/asm-generic/unistd.h (0-469)
const GENERIC = `
  io_setup io_destroy io_submit io_cancel io_getevents setxattr lsetxattr fsetxattr getxattr
  lgetxattr fgetxattr listxattr llistxattr flistxattr removexattr lremovexattr fremovexattr getcwd
  lookup_dcookie eventfd2 epoll_create1 epoll_ctl epoll_pwait dup dup3 fcntl inotify_init1
  inotify_add_watch inotify_rm_watch ioctl ioprio_set ioprio_get flock mknodat mkdirat unlinkat
  symlinkat linkat renameat umount2 mount pivot_root nfsservctl statfs fstatfs truncate ftruncate
  fallocate faccessat chdir fchdir chroot fchmod fchmodat fchownat fchown openat close vhangup
  pipe2 quotactl getdents64 lseek read write readv writev pread64 pwrite64 preadv pwritev sendfile
  pselect6 ppoll signalfd4 vmsplice splice tee readlinkat newfstatat fstat sync fsync fdatasync
  sync_file_range timerfd_create timerfd_settime timerfd_gettime utimensat acct capget capset
  personality exit exit_group waitid set_tid_address unshare futex set_robust_list get_robust_list
  nanosleep getitimer setitimer kexec_load init_module delete_module timer_create timer_gettime
  timer_getoverrun timer_settime timer_delete clock_settime clock_gettime clock_getres
  clock_nanosleep syslog ptrace sched_setparam sched_setscheduler sched_getscheduler
  sched_getparam sched_setaffinity sched_getaffinity sched_yield sched_get_priority_max
  sched_get_priority_min sched_rr_get_interval restart_syscall kill tkill tgkill sigaltstack
  rt_sigsuspend rt_sigaction rt_sigprocmask rt_sigpending rt_sigtimedwait rt_sigqueueinfo
  rt_sigreturn setpriority getpriority reboot setregid setgid setreuid setuid setresuid getresuid
  setresgid getresgid setfsuid setfsgid times setpgid getpgid getsid setsid getgroups setgroups
  uname sethostname setdomainname getrlimit setrlimit getrusage umask prctl getcpu gettimeofday
  settimeofday adjtimex getpid getppid getuid geteuid getgid getegid gettid sysinfo mq_open
  mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr msgget msgctl msgrcv msgsnd
  semget semctl semtimedop semop shmget shmctl shmat shmdt socket socketpair bind listen accept
  connect getsockname getpeername sendto recvfrom setsockopt getsockopt shutdown sendmsg recvmsg
  readahead brk munmap mremap add_key request_key keyctl clone execve mmap fadvise64 swapon
  swapoff mprotect msync mlock munlock mlockall munlockall mincore madvise remap_file_pages mbind
  get_mempolicy set_mempolicy migrate_pages move_pages rt_tgsigqueueinfo perf_event_open accept4
  recvmmsg arch_specific_syscall - - - - - - - - - - - - - - - wait4 prlimit64 fanotify_init
  fanotify_mark - - clock_adjtime syncfs setns sendmmsg process_vm_readv process_vm_writev kcmp
  finit_module sched_setattr sched_getattr renameat2 seccomp getrandom memfd_create bpf execveat
  userfaultfd membarrier mlock2 copy_file_range preadv2 pwritev2 pkey_mprotect pkey_alloc
  pkey_free statx io_pgetevents rseq kexec_file_load - - - - - - - - - - - - - - - - - - - - - - -
  - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -
  - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -
  - - - - - - - - - - pidfd_send_signal io_uring_setup io_uring_enter io_uring_register open_tree
  move_mount fsopen fsconfig fsmount fspick pidfd_open clone3 close_range openat2 pidfd_getfd
  faccessat2 process_madvise epoll_pwait2 mount_setattr quotactl_fd landlock_create_ruleset
  landlock_add_rule landlock_restrict_self memfd_secret process_mrelease futex_waitv
  set_mempolicy_home_node cachestat fchmodat2 - futex_wake futex_wait futex_requeue statmount
  listmount lsm_get_self_attr lsm_set_self_attr lsm_list_modules mseal setxattrat getxattrat
  listxattrat removexattrat open_tree_attr file_getattr file_setattr
`;

const TABLES = { x64: X86_64, arm64: GENERIC };
const cache = new Map();

/** The syscall names of `arch` (`process.arch`), indexed by number ('' where none). */
function syscallNames(arch = process.arch) {
  if (!cache.has(arch)) {
    const table = TABLES[arch];
    if (!table) throw new Error(`no syscall table for ${arch} (x64 and arm64 only)`);
    cache.set(arch, table.trim().split(/\s+/).map((n) => (n === '-' ? '' : n)));
  }
  return cache.get(arch);
}

/** The name of syscall `nr`: `syscallName(257)` is `openat` on x86_64; `syscall_N` when unknown. */
function syscallName(nr, arch) {
  return syscallNames(arch)[nr] || `syscall_${nr}`;
}

// syscalls whose tracepoints (the kernel's SYSCALL_DEFINE names) are named otherwise
const EVENT_NAMES = { newstat: 'stat', newlstat: 'lstat', newfstat: 'fstat', newuname: 'uname', sendfile64: 'sendfile', umount: 'umount2' };

/**
 * The number of the syscall of the tracepoints `syscalls:sys_enter_<event>`
 * and `sys_exit_<event>` (`newfstat` is `fstat`), or undefined.
 */
function syscallNumberOfEvent(event, arch) {
  return syscallNumber(EVENT_NAMES[event] ?? event, arch);
}

/** The number of syscall `name` (`openat`, or `syscall_N`), or undefined when this architecture has none. */
function syscallNumber(name, arch) {
  const nr = syscallNames(arch).indexOf(name);
  if (nr >= 0) return nr;
  const m = /^syscall_(\d+)$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

const UNITS = { ns: 1, us: 1000, ms: 1_000_000 };
// SYSCALL_HIST_SLOTS of bpf/syscall_hist.h: the 65 log2 slots, or linear steps and the two open ends
const HIST_SLOTS = 66;
const MAX_LINEAR_STEPS = HIST_SLOTS - 2;
const TITLES = { ns: '@nsecs', us: '@usecs', ms: '@msecs' };

/**
 * The latencies counted by a loaded object that includes
 * bpf/syscall_hist.bpf.h (map `syscalls`: one `struct syscall_counts` per
 * syscall number, counting up from load). `configure(obj)` before load sets
 * its globals; `collect()` moves what the kernel counted since the last
 * `collect()` into the current interval and the totals (the difference of
 * two reads: nothing is counted twice or missed); `interval()` and
 * `totals()` give one row per syscall: `{ syscall, nr, count, total_ns,
 * errors, slots }`. A call that ends while the map is read may be in the
 * count of one interval and in the histogram of the next. Detach the
 * programs before the last `collect()` for exact totals.
 */
class SyscallLatency {
  /**
   * `unit`: `ns`, `us` (default) or `ms`; `linear`: `{ min, max, step }` in
   * that unit, for lhist-like slots instead of log2; `syscalls`: only these
   * names (default: every syscall).
   */
  constructor({ unit = 'us', linear, syscalls } = {}) {
    if (!UNITS[unit]) throw new Error(`unknown unit ${unit}: ns, us or ms`);
    const steps = linear && Math.floor((linear.max - linear.min) / linear.step);
    if (steps > MAX_LINEAR_STEPS) {
      throw new Error(`linear slots ${linear.min},${linear.max},${linear.step} make ${steps} steps; at most ${MAX_LINEAR_STEPS} (a larger STEP or a narrower MIN..MAX)`);
    }
    this.unit = unit;
    this.linear = linear;
    this.syscalls = syscalls?.map((name) => {
      const nr = syscallNumber(name);
      if (nr === undefined) throw new Error(`unknown syscall ${name} on ${process.arch}`);
      return nr;
    });
    this.tally = new Tally();
    this.seen = new Map(); // syscall number -> its counts at the last collect()
  }

  /** Sets the object's globals (before it is loaded). */
  configure(obj, pid) {
    obj.setGlobalVariable('target_pid', pid ?? 0);
    obj.setGlobalVariable('unit_ns', UNITS[this.unit]);
    if (this.linear) {
      obj.setGlobalVariable('linear', true);
      obj.setGlobalVariable('linear_min', this.linear.min);
      obj.setGlobalVariable('linear_max', this.linear.max);
      obj.setGlobalVariable('linear_step', this.linear.step);
    }
    if (this.syscalls) obj.setGlobalVariable('filter_syscalls', true);
    this.obj = obj;
  }

  /** After load: the syscalls to trace, when only some are. */
  start() {
    if (!this.syscalls) return;
    const traced = this.obj.getMap('traced_syscalls');
    for (const nr of this.syscalls) traced.set(nr, 1);
  }

  /** Moves what the kernel counted since the last call into the current interval and the totals. */
  collect() {
    for (const [nr, now] of this.obj.getMap('syscalls', { int64: 'number' }).entries()) {
      const before = this.seen.get(nr);
      const count = now.count - (before?.count ?? 0);
      if (count === 0) continue;
      this.seen.set(nr, now);
      this.tally.add(nr, { syscall: syscallName(nr), nr }, {
        count,
        total_ns: now.total_ns - (before?.total_ns ?? 0),
        errors: now.errors - (before?.errors ?? 0),
        slots: trimSlots(now.slots.map((c, i) => c - (before?.slots[i] ?? 0))),
      });
    }
  }

  /** The rows counted since the last `interval()`, by count (most first). */
  interval() {
    return sortRows(this.tally.takeInterval());
  }

  /** The rows of the whole run, by count. */
  totals() {
    return sortRows(this.tally.totals());
  }

  /** The buckets of a row's histogram (`[{ low, high, count }]`, in the unit). */
  buckets(row) {
    return this.linear ? linearBuckets(row.slots ?? [], this.linear) : log2Buckets(row.slots ?? []);
  }

  /** The JSON form of rows: `{ syscall, count, total_ns, avg_ns, errors, unit, buckets }` each. */
  toJSON(rows) {
    return rows.map((r) => ({
      syscall: r.syscall,
      count: r.count ?? 0,
      total_ns: r.total_ns ?? 0,
      avg_ns: r.count ? Math.round(r.total_ns / r.count) : null,
      errors: r.errors ?? 0,
      unit: this.unit,
      ...histogramJSON(this.buckets(r)),
    }));
  }

  /** A table of rows: count, total and average time, errors. */
  formatTable(rows) {
    return formatTable(
      [
        { title: 'SYSCALL', value: (r) => r.syscall, left: true },
        { title: 'COUNT', value: (r) => r.count ?? 0 },
        { title: 'ERRORS', value: (r) => r.errors ?? 0 },
        { title: 'TOTAL ms', value: (r) => ((r.total_ns ?? 0) / 1e6).toFixed(3) },
        { title: 'AVG µs', value: (r) => (r.count ? (r.total_ns / r.count / 1e3).toFixed(1) : '-') },
      ],
      rows,
    );
  }

  /** A row's histogram as bpftrace prints `@usecs[openat]: hist(...)`. */
  formatHistogram(row) {
    return formatHistogram(this.buckets(row), { title: `${TITLES[this.unit]}[${row.syscall}]` });
  }
}

/** Slots without their trailing zeros. */
function trimSlots(slots) {
  let n = slots.length;
  while (n > 0 && slots[n - 1] === 0) n--;
  return slots.slice(0, n);
}

function sortRows(rows) {
  return rows.sort((a, b) => (b.count ?? 0) - (a.count ?? 0) || (b.total_ns ?? 0) - (a.total_ns ?? 0) || a.nr - b.nr);
}

module.exports = { syscallNames, syscallName, syscallNumber, syscallNumberOfEvent, SyscallLatency, UNITS };
