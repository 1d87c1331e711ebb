//! Why the kernel said no, for the errors a container's settings cause: the
//! capabilities missing, a seccomp profile that blocks bpf(2) or
//! perf_event_open(2), a user namespace (a rootless container), no kernel
//! BTF. Read only on an error's path: /proc/self/status, /proc/self/uid_map,
//! and one probe call of each syscall that the kernel itself always refuses
//! with an error other than EPERM (so an EPERM is the seccomp filter's).
//! A leaf: it depends on no other module of the crate.

use std::path::Path;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The kernel's BTF, which CO-RE objects are relocated against.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// The fix for missing capabilities, in every place they are granted.
pub const CAPS_FIX: &str = "BPF needs root, or the capabilities CAP_BPF + CAP_PERFMON: in a container \
  --cap-add BPF --cap-add PERFMON (docker/podman run; not --privileged), in Kubernetes \
  securityContext.capabilities.add: [\"BPF\", \"PERFMON\"], in a systemd unit AmbientCapabilities=CAP_BPF CAP_PERFMON, \
  by hand setpriv --inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon ...";

/// `CapEff` and `Seccomp` of /proc/self/status (0 when unreadable).
fn status() -> (u64, u32) {
  let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
  let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
  let cap_eff = field("CapEff:").and_then(|h| u64::from_str_radix(h, 16).ok()).unwrap_or(0);
  let seccomp = field("Seccomp:").and_then(|s| s.parse().ok()).unwrap_or(0);
  (cap_eff, seccomp)
}

/// Whether this process is in a user namespace other than the initial one
/// (whose uid_map is the identity over every uid: `0 0 4294967295`).
pub fn in_user_namespace() -> bool {
  match std::fs::read_to_string("/proc/self/uid_map") {
    Ok(map) => map.split_whitespace().collect::<Vec<_>>() != ["0", "0", "4294967295"],
    Err(_) => false,
  }
}

/// Whether a seccomp filter answers `syscall` with EPERM: the probe's
/// arguments are ones the kernel refuses otherwise (EINVAL, EFAULT, E2BIG).
fn seccomp_refuses(syscall: libc::c_long) -> bool {
  // SAFETY: bpf(2) with an unknown command and no attribute, or
  // perf_event_open(2) with a NULL attribute: the kernel reads no memory
  // and creates nothing; an fd returned anyway is closed.
  let ret = unsafe {
    if syscall == libc::SYS_bpf {
      libc::syscall(libc::SYS_bpf, 0x7fff_i32, std::ptr::null_mut::<libc::c_void>(), 0u32)
    } else {
      libc::syscall(libc::SYS_perf_event_open, std::ptr::null_mut::<libc::c_void>(), 0i32, -1i32, -1i32, 0u64)
    }
  };
  let errno = std::io::Error::last_os_error().raw_os_error();
  if ret >= 0 {
    // SAFETY: an fd this call made and nothing else owns.
    unsafe { libc::close(ret as i32) };
    return false;
  }
  errno == Some(libc::EPERM)
}

/// What an EPERM from bpf(2) or perf_event_open(2) means here and how to fix
/// it, or `None` when nothing in this process's settings explains it (root
/// with the capabilities and no filter: the kernel refused the feature).
pub fn permission_denied() -> Option<String> {
  if in_user_namespace() {
    return Some(
      "this process runs in a user namespace (a rootless container, or unshare -U: /proc/self/uid_map is not the \
       initial '0 0 4294967295'), and the kernel allows no BPF there, whatever capabilities the namespace grants; \
       run the container rootful (sudo docker/podman run --cap-add BPF --cap-add PERFMON), or trace it from the host \
       (npx node-libbpf <tool> -p HOSTPID); node-libbpf does not use BPF tokens"
        .to_string(),
    );
  }
  let (cap_eff, seccomp) = status();
  let has = |bit: u32| cap_eff & (1u64 << bit) != 0;
  let missing: Vec<&str> = [(CAP_BPF, "CAP_BPF"), (CAP_PERFMON, "CAP_PERFMON")]
    .iter()
    .filter(|(bit, _)| !has(*bit) && !has(CAP_SYS_ADMIN))
    .map(|(_, name)| *name)
    .collect();
  if !missing.is_empty() {
    let mut why = format!("this process lacks {} (CapEff in /proc/self/status); {CAPS_FIX}", missing.join(" and "));
    if seccomp == 2 {
      why.push_str(
        "; a seccomp filter is on too (Seccomp: 2): docker's default profile allows bpf() and perf_event_open() \
         once those capabilities are added, older podman profiles (containers-common, e.g. Debian 12's) only with \
         CAP_SYS_ADMIN: then also --security-opt seccomp=PROFILE.json",
      );
    }
    return Some(why);
  }
  if seccomp == 2 {
    let blocked: Vec<&str> = [(libc::SYS_bpf, "bpf()"), (libc::SYS_perf_event_open, "perf_event_open()")]
      .iter()
      .filter(|(nr, _)| seccomp_refuses(*nr))
      .map(|(_, name)| *name)
      .collect();
    if !blocked.is_empty() {
      return Some(format!(
        "this process has CAP_BPF + CAP_PERFMON, but a seccomp filter (Seccomp: 2 in /proc/self/status) refuses {}: \
         the container's seccomp profile blocks it (docker's default profile allows bpf() with CAP_BPF and \
         perf_event_open() with CAP_PERFMON; older podman profiles, containers-common as in Debian 12, only with \
         CAP_SYS_ADMIN); give a profile that allows them: --security-opt seccomp=PROFILE.json (docker/podman), \
         in Kubernetes securityContext.seccompProfile (type: Localhost, localhostProfile: PROFILE.json)",
        blocked.join(" and ")
      ));
    }
  }
  None
}

/// The fix when the kernel's BTF is missing (libbpf's ESRCH) or `btf_path`
/// does not exist; `None` when the BTF is there.
pub fn missing_btf(btf_path: Option<&str>) -> Option<String> {
  match btf_path {
    Some(path) if !Path::new(path).exists() => Some(format!(
      "btfPath {path} does not exist: give loadBpfProgram(file, {{ btfPath }}) the path of a BTF file of this kernel \
       (its /sys/kernel/btf/vmlinux, or one from BTFHub for a kernel without CONFIG_DEBUG_INFO_BTF)"
    )),
    None if !Path::new(VMLINUX_BTF).exists() => Some(format!(
      "the kernel's BTF ({VMLINUX_BTF}) is missing, and CO-RE objects need it: in a container, mount it \
       (docker/podman run -v /sys/kernel/btf:/sys/kernel/btf:ro; Kubernetes: a hostPath volume of /sys/kernel/btf); \
       for a kernel built without CONFIG_DEBUG_INFO_BTF, give loadBpfProgram(file, {{ btfPath }}) a BTF file of it (BTFHub)"
    )),
    _ => None,
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn missing_btf_names_the_path_and_btf_path() {
    let m = missing_btf(Some("/nonexistent/vmlinux")).unwrap();
    assert!(m.contains("/nonexistent/vmlinux") && m.contains("btfPath"), "{m}");
    assert!(missing_btf(Some("/proc/self/status")).is_none());
  }

  #[test]
  fn no_filter_means_no_refusal() {
    // the test runner has no seccomp filter: the kernel answers the probes itself
    if status().1 == 0 {
      assert!(!seccomp_refuses(libc::SYS_bpf));
      assert!(!seccomp_refuses(libc::SYS_perf_event_open));
    }
  }
}
