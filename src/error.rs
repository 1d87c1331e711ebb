//! One error type for the whole addon, converted to a JavaScript `Error` at
//! the binding boundary only. Every variant has a stable `code` (the JS
//! `error.code`) and a message that names the object and the fix.

use std::fmt::Display;

use napi::Status;

/// The stable codes, documented in docs/api.md (Errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
  /// A file (object, binary) does not exist.
  NotFound,
  /// The kernel lacks the feature (kprobes, fentry, ...).
  NotSupported,
  /// Not allowed (not root, no CAP_BPF/CAP_PERFMON).
  Permission,
  /// Not a BPF ELF object, or a truncated one.
  InvalidObject,
  /// The kernel (verifier) refused to load the object.
  Load,
  /// A program, map, global, tracepoint or symbol name that does not exist.
  UnknownName,
  /// A value of the wrong type, size or range.
  InvalidValue,
  /// A `.rodata` global set after load.
  ReadOnly,
  /// The object (or the link/buffer) was closed.
  Closed,
  /// Attaching failed for another reason.
  Attach,
  /// A map operation failed.
  Map,
  /// tracefs is not mounted and could not be mounted.
  Tracefs,
  /// A buffer could not be opened or polled.
  Buffer,
  /// A wrong argument type from JavaScript.
  InvalidArg,
  /// A call on an object made from inside another call on the same object
  /// (a getter or Proxy trap of a value passed to the first).
  Reentrant,
  /// A bug in node-libbpf (a Rust panic, caught): please report it.
  Internal,
}

impl Code {
  pub fn as_str(self) -> &'static str {
    match self {
      Code::NotFound => "ENOENT",
      Code::NotSupported => "ENOTSUP",
      Code::Permission => "EPERM",
      Code::InvalidObject => "ERR_BPF_INVALID_OBJECT",
      Code::Load => "ERR_BPF_LOAD",
      Code::UnknownName => "ERR_BPF_UNKNOWN_NAME",
      Code::InvalidValue => "ERR_BPF_INVALID_VALUE",
      Code::ReadOnly => "ERR_BPF_READ_ONLY",
      Code::Closed => "ERR_BPF_CLOSED",
      Code::Attach => "ERR_BPF_ATTACH",
      Code::Map => "ERR_BPF_MAP",
      Code::Tracefs => "ERR_BPF_TRACEFS",
      Code::Buffer => "ERR_BPF_BUFFER",
      Code::InvalidArg => "ERR_INVALID_ARG_TYPE",
      Code::Reentrant => "ERR_BPF_REENTRANT",
      Code::Internal => "ERR_BPF_INTERNAL",
    }
  }
}

/// An error of the addon: a code and a full message.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct BpfError {
  pub code: Code,
  pub message: String,
  /// The errno the kernel or libbpf gave, if any, as a number.
  pub errno: Option<i32>,
}

pub type BpfResult<T> = std::result::Result<T, BpfError>;

/// What `#[napi]` functions return: the JS error's `code` is the string.
/// (Named `Result` because napi-derive recognizes fallible exports by it.)
pub type Result<T> = napi::Result<T, String>;

impl BpfError {
  pub fn new(code: Code, message: impl Into<String>) -> Self {
    BpfError { code, message: message.into(), errno: None }
  }

  /// An error from libbpf (through libbpf-rs): the code follows the errno.
  pub fn libbpf(code: Code, what: impl Display, err: &libbpf_rs::Error) -> Self {
    let errno = errno_of(err);
    // EACCES is also the verifier's "no": only EPERM means privileges, when
    // this process's settings explain it (capabilities, seccomp, user namespace)
    let denied = if errno == Some(libc::EPERM) { crate::privileges::permission_denied() } else { None };
    let code = match errno {
      Some(libc::ENOENT) if code == Code::NotFound => Code::NotFound,
      Some(libc::EPERM) if denied.is_some() || !is_root() => Code::Permission,
      Some(libc::EOPNOTSUPP) => Code::NotSupported,
      _ => code,
    };
    let mut message = format!("{what}: {}", describe(err));
    if code == Code::Permission {
      message.push_str(&format!(" ({})", denied.as_deref().unwrap_or(crate::privileges::CAPS_FIX)));
    }
    BpfError { code, message, errno }
  }
}

impl From<BpfError> for napi::Error<String> {
  fn from(e: BpfError) -> Self {
    napi::Error::new(e.code.as_str().to_string(), e.message)
  }
}

impl From<napi::Error> for BpfError {
  fn from(e: napi::Error) -> Self {
    let code = match e.status {
      Status::InvalidArg
      | Status::ObjectExpected
      | Status::StringExpected
      | Status::NumberExpected
      | Status::FunctionExpected
      | Status::ArrayExpected
      | Status::BigintExpected => Code::InvalidArg,
      _ => Code::InvalidValue,
    };
    BpfError { code, message: e.reason.clone(), errno: None }
  }
}

fn is_root() -> bool {
  // SAFETY: geteuid has no preconditions.
  unsafe { libc::geteuid() == 0 }
}

/// The errno at the root of a libbpf-rs error, if any. libbpf-rs 0.27 keeps
/// the `io::Error` private and shows the number only as text (`... (os
/// error 2)`), or coarsely through `kind()` (EPERM and EACCES are both
/// PermissionDenied): this reads it once, at the boundary, and
/// `BpfError::libbpf` keeps it as a number (`BpfError::errno`).
pub fn errno_of(err: &libbpf_rs::Error) -> Option<i32> {
  let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
  let mut errno = None;
  while let Some(e) = source {
    let text = e.to_string();
    if let Some(rest) = text.rsplit("(os error ").next().filter(|_| text.contains("(os error ")) {
      errno = rest.trim_end_matches(')').parse().ok().or(errno);
    }
    source = e.source();
  }
  errno
}

/// libbpf-rs's message chain, innermost last, without repeating itself.
fn describe(err: &libbpf_rs::Error) -> String {
  let mut parts: Vec<String> = Vec::new();
  let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
  while let Some(e) = source {
    let s = e.to_string();
    if !parts.iter().any(|p| p.contains(&s)) {
      parts.push(s);
    }
    source = e.source();
  }
  parts.join(": ")
}

/// Runs the body of an exported call. A Rust panic in it becomes an
/// ERR_BPF_INTERNAL error instead of aborting the process (a panic must never
/// unwind into napi).
pub fn guard<T>(body: impl FnOnce() -> BpfResult<T>) -> Result<T> {
  catch(body).map_err(Into::into)
}

/// `body`'s result, or its panic as an ERR_BPF_INTERNAL error.
fn catch<T>(body: impl FnOnce() -> BpfResult<T>) -> BpfResult<T> {
  std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or_else(|payload| Err(BpfError::internal(&*payload)))
}

impl BpfError {
  /// The error for a caught panic, with its message.
  pub fn internal(payload: &(dyn std::any::Any + Send)) -> Self {
    let what = payload
      .downcast_ref::<&str>()
      .map(|s| s.to_string())
      .or_else(|| payload.downcast_ref::<String>().cloned())
      .unwrap_or_else(|| "a panic".to_string());
    BpfError::new(
      Code::Internal,
      format!("internal error in node-libbpf ({what}); this is a bug: please report it with the steps that led here"),
    )
  }
}

/// Shorthand for an error with a code.
pub fn err<T>(code: Code, message: impl Into<String>) -> BpfResult<T> {
  Err(BpfError::new(code, message))
}

/// Panics inside `guard`: lets the test suite check that a Rust panic
/// reaches JavaScript as an ERR_BPF_INTERNAL error, not as an abort.
#[napi_derive::napi(js_name = "__panicForTests")]
pub fn panic_for_tests() -> Result<()> {
  guard(|| panic!("a deliberate panic, for the tests"))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn errno_is_found_at_the_root_of_a_libbpf_error() {
    let e = libbpf_rs::Error::from(std::io::Error::from_raw_os_error(libc::ENOENT));
    assert_eq!(errno_of(&e), Some(libc::ENOENT));
    let plain = libbpf_rs::Error::from(std::io::Error::other("no errno here"));
    assert_eq!(errno_of(&plain), None);
  }

  #[test]
  fn a_libbpf_error_keeps_its_errno_as_a_number() {
    let e = BpfError::libbpf(Code::Map, "map 'counts'", &libbpf_rs::Error::from_raw_os_error(libc::E2BIG));
    assert_eq!(e.errno, Some(libc::E2BIG));
    assert_eq!(BpfError::new(Code::Map, "no errno").errno, None);
  }

  #[test]
  fn a_panic_is_an_internal_error() {
    let e = catch(|| -> BpfResult<()> { panic!("boom {}", 1) }).unwrap_err();
    assert_eq!(e.code, Code::Internal);
    assert!(e.message.contains("boom 1") && e.message.contains("please report it"), "{}", e.message);
    assert_eq!(catch(|| Ok(5)).unwrap(), 5);
  }

  #[test]
  fn codes_are_stable_strings() {
    assert_eq!(Code::Internal.as_str(), "ERR_BPF_INTERNAL");
    assert_eq!(Code::Reentrant.as_str(), "ERR_BPF_REENTRANT");
    assert_eq!(Code::NotSupported.as_str(), "ENOTSUP");
  }
}
