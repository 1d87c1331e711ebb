//! Names of syscalls and errnos, from the tables of the `syscalls` crate
//! (arch/x86/entry/syscalls/syscall_64.tbl, the asm-generic unistd.h that
//! arm64 uses, and the errnos of asm-generic/errno*.h and
//! include/linux/errno.h), so that no table is written by hand here.

use std::sync::OnceLock;

use napi_derive::napi;
use syscalls::Errno;

use crate::error::{err, guard, BpfResult, Code, Result};

/// The architecture this addon runs on, by the names `syscallNames` takes.
const NATIVE_ARCH: &str = if cfg!(target_arch = "aarch64") { "arm64" } else { "x86_64" };

/// The names of the syscalls of `arch` (`x86_64` or `arm64`; default: the
/// architecture this runs on), indexed by syscall number, '' where no
/// syscall has the number: `syscallNames('x86_64')[257]` is `openat`.
/// x86_64's x32 syscalls (512 and up) are not in it.
#[napi(ts_args_type = "arch?: 'x86_64' | 'arm64'")]
pub fn syscall_names(arch: Option<String>) -> Result<Vec<&'static str>> {
  guard(|| Ok(syscall_table(arch.as_deref().unwrap_or(NATIVE_ARCH))?.to_vec()))
}

/// The name of an errno, kernel-internal ones included (`ERESTARTSYS`,
/// which a syscall's exit tracepoint can see): `errnoName(115)` and
/// `errnoName(-115)` are `EINPROGRESS`; null when it has none.
#[napi]
pub fn errno_name(errno: i64) -> Result<Option<&'static str>> {
  guard(|| Ok(name_of_errno(errno)))
}

fn name_of_errno(errno: i64) -> Option<&'static str> {
  let errno = i32::try_from(errno.unsigned_abs()).ok()?;
  Errno::new(errno).name()
}

fn syscall_table(arch: &str) -> BpfResult<&'static [&'static str]> {
  use syscalls::{aarch64, x86_64};
  static X86_64: OnceLock<Vec<&'static str>> = OnceLock::new();
  static ARM64: OnceLock<Vec<&'static str>> = OnceLock::new();
  // by number: Sysno::iter() stops before the last syscall (syscalls 0.8.1)
  match arch {
    "x86_64" => Ok(X86_64.get_or_init(|| {
      let (first, last) = (x86_64::Sysno::first().id(), x86_64::Sysno::last().id());
      table((first..=last).filter_map(|nr| x86_64::Sysno::new(nr as usize)).map(|s| (s.id(), s.name())))
    })),
    "arm64" => Ok(ARM64.get_or_init(|| {
      let (first, last) = (aarch64::Sysno::first().id(), aarch64::Sysno::last().id());
      let mut names = table((first..=last).filter_map(|nr| aarch64::Sysno::new(nr as usize)).map(|s| (s.id(), s.name())));
      fix_arm64(&mut names);
      names
    })),
    _ => err(Code::InvalidValue, format!("no syscall table for architecture '{arch}' (x86_64 or arm64)")),
  }
}

/// Where the crate's aarch64 table (made from include/uapi/asm-generic/
/// unistd.h for any word size) differs from what a 64-bit arm64 kernel has.
fn fix_arm64(names: &mut [&'static str]) {
  // __NR3264_fstatat is sys_newfstatat on 64-bit (tracepoint sys_enter_newfstatat)
  if names.get(79) == Some(&"fstatat") {
    names[79] = "newfstatat";
  }
  // 403..=423, the *_time64 syscalls, exist on 32-bit architectures only
  for name in names.iter_mut().take(424).skip(403) {
    if name.ends_with("time64") {
      *name = "";
    }
  }
}

/// Names indexed by number, '' in the gaps.
fn table(syscalls: impl Iterator<Item = (i32, &'static str)>) -> Vec<&'static str> {
  let mut names = Vec::new();
  for (nr, name) in syscalls {
    let nr = nr as usize;
    if names.len() <= nr {
      names.resize(nr + 1, "");
    }
    names[nr] = name;
  }
  names
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn tables_are_indexed_by_number() {
    let x86 = syscall_table("x86_64").unwrap();
    assert_eq!((x86[0], x86[2], x86[257], x86[435]), ("read", "open", "openat", "clone3"));
    assert_eq!(x86[400], "", "337..423 is a gap");
    let arm = syscall_table("arm64").unwrap();
    assert_eq!((arm[56], arm[63], arm[264], arm[265]), ("openat", "read", "name_to_handle_at", "open_by_handle_at"));
    assert!(!arm.contains(&"open"), "arm64 has only openat");
    assert_eq!(arm[79], "newfstatat");
    assert!(arm[403..=423].iter().all(|name| name.is_empty()), "no 32-bit time64 syscalls");
    assert_eq!(arm[453], "map_shadow_stack", "arm64 has it since 6.13 (GCS)");
    // the last syscall of each table is in it
    assert_eq!((x86.len(), x86[469]), (470, "file_setattr"));
    assert_eq!((arm.len(), arm[469]), (470, "file_setattr"));
    assert_eq!(syscall_table("mips").unwrap_err().code, Code::InvalidValue);
  }

  #[test]
  fn every_errno_has_a_name_but_the_two_gaps() {
    // asm-generic/errno.h skips 41 and 58 (EWOULDBLOCK is EAGAIN, EDEADLOCK is EDEADLK)
    let unnamed: Vec<i64> = (1..=133).filter(|&n| name_of_errno(n).is_none()).collect();
    assert_eq!(unnamed, [41, 58]);
    assert_eq!(name_of_errno(115), Some("EINPROGRESS"));
    assert_eq!(name_of_errno(-2), Some("ENOENT"));
    assert_eq!(name_of_errno(0), None);
    assert_eq!(name_of_errno(4096), None);
    assert_eq!(name_of_errno(i64::MIN), None);
  }

  #[test]
  fn kernel_internal_errnos_have_their_names() {
    // include/linux/errno.h ("should never be seen by user programs"; 520 is unused)
    let internal = [
      (512, "ERESTARTSYS"),
      (513, "ERESTARTNOINTR"),
      (514, "ERESTARTNOHAND"),
      (515, "ENOIOCTLCMD"),
      (516, "ERESTART_RESTARTBLOCK"),
      (517, "EPROBE_DEFER"),
      (518, "EOPENSTALE"),
      (519, "ENOPARAM"),
      (521, "EBADHANDLE"),
      (522, "ENOTSYNC"),
      (523, "EBADCOOKIE"),
      (524, "ENOTSUPP"),
      (525, "ETOOSMALL"),
      (526, "ESERVERFAULT"),
      (527, "EBADTYPE"),
      (528, "EJUKEBOX"),
      (529, "EIOCBQUEUED"),
      (530, "ERECALLCONFLICT"),
      (531, "ENOGRACE"),
    ];
    for (errno, name) in internal {
      assert_eq!(name_of_errno(-errno), Some(name));
    }
  }
}
