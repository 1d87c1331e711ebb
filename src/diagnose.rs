//! Errors of opening and loading an object, made from libbpf's log: which
//! program the verifier refused and why, and a file that is not an ELF
//! object at all or a malformed one (src/elf_check.rs). No N-API here
//! (src/object.rs and src/state.rs call these); why the kernel said no to
//! this process is src/privileges.rs.

use std::path::Path;

use crate::{
  elf_check,
  error::{err, BpfError, BpfResult, Code},
  libbpf_log,
};

/// The error of a failed load: the program libbpf names in its log, its
/// section, and the log's tail (`programs`: (name, section) of each).
pub(crate) fn load_error(source: &str, programs: &[(String, String)], e: &libbpf_rs::Error) -> BpfError {
  let log = libbpf_log::tail(40);
  let failed_prog = log.iter().find_map(|l| l.split("prog '").nth(1).and_then(|r| r.split('\'').next())).map(str::to_string);
  let section = |name: &str| programs.iter().find(|(n, _)| n == name).map(|(_, s)| s.clone()).unwrap_or_default();
  if crate::error::errno_of(e) == Some(libc::ESRCH) && log.iter().any(|l| l.contains("kernel BTF is missing")) {
    if let Some(fix) = crate::privileges::missing_btf(None) {
      return BpfError::new(Code::NotFound, format!("loading {source} into the kernel failed: {fix}"));
    }
  }
  let mut error = BpfError::libbpf(Code::Load, format!("loading {source} into the kernel failed"), e);
  if let Some(prog) = &failed_prog {
    let sec = section(prog);
    let kind = sec.split('/').next().unwrap_or("");
    if matches!(kind, "fentry" | "fexit" | "fmod_ret" | "fentry.s" | "fexit.s") && error.errno == Some(libc::EPERM) {
      return BpfError::new(
        Code::NotSupported,
        format!(
          "{}: this kernel refuses {kind} programs at load time (EPERM), so program '{prog}' (SEC(\"{sec}\")) cannot load; \
           use a tracepoint (SEC(\"tp/...\")), raw tracepoint (SEC(\"raw_tp/...\")) or SEC(\"tp_btf/...\") program instead, \
           or a kernel that allows fentry/fexit (see bpf.features())",
          source
        ),
      );
    }
  }
  if error.code == Code::Permission {
    return error;
  }
  error.code = Code::Load;
  if let Some(prog) = failed_prog {
    error.message.push_str(&format!(" (program '{prog}', SEC(\"{}\"))", section(&prog)));
  }
  let log: Vec<_> = log.into_iter().filter(|l| !l.trim().is_empty()).collect();
  if !log.is_empty() {
    error.message.push_str("\nlibbpf said:\n");
    error.message.push_str(&log.join("\n"));
  }
  error
}

/// The error of an object libbpf could not open (`label`: its file name),
/// with the tail of libbpf's log and how to build one.
pub(crate) fn open_error(label: &str, e: &libbpf_rs::Error) -> BpfError {
  let mut error = BpfError::libbpf(Code::InvalidObject, format!("{label} is not a valid BPF object"), e);
  error.code = Code::InvalidObject;
  let log = libbpf_log::tail(5);
  if !log.is_empty() {
    error.message.push_str(&format!(" (libbpf: {})", log.join(" ").trim()));
  }
  error.message.push_str("; compile it with: npx node-libbpf build prog.bpf.c -o prog.bpf.o");
  error
}

/// Files larger than this are refused before they are read (a BPF object is
/// kilobytes; a sparse file can claim terabytes).
const MAX_OBJECT: u64 = 1 << 30;

/// The object file must exist, be a regular file and pass the ELF check
/// (libbpf's own error for a C source is obscure, and it trusts the ELF
/// structure: see src/elf_check.rs).
pub(crate) fn check_elf_file(path: &str) -> BpfResult<()> {
  use std::{io::Read, os::unix::fs::OpenOptionsExt};
  let unreadable = |e: std::io::Error| BpfError::new(Code::InvalidObject, format!("cannot read BPF object {path}: {e}"));
  // (O_NONBLOCK: a FIFO's open would wait for a writer)
  let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(|e| match e.kind() {
    std::io::ErrorKind::NotFound => {
      BpfError::new(Code::NotFound, format!("BPF object {path} does not exist (did `npm run build` compile it?)"))
    }
    _ => unreadable(e),
  })?;
  let meta = file.metadata().map_err(unreadable)?;
  if !meta.is_file() {
    return err(Code::InvalidObject, format!("BPF object {path} is not a regular file"));
  }
  if meta.len() > MAX_OBJECT {
    return err(
      Code::InvalidObject,
      format!("BPF object {path} is {} bytes, more than the {} MiB read at most", meta.len(), MAX_OBJECT >> 20),
    );
  }
  let mut bytes = Vec::with_capacity(meta.len() as usize);
  file.take(MAX_OBJECT).read_to_end(&mut bytes).map_err(unreadable)?;
  check_elf_bytes(path, &bytes)
}

/// The ELF check of an object's bytes (`label`: its file name, or
/// `<buffer>` as libbpf's errors name a Buffer).
pub(crate) fn check_elf_bytes(label: &str, bytes: &[u8]) -> BpfResult<()> {
  if bytes.len() < 4 || &bytes[..4] != b"\x7fELF" {
    let what = if Path::new(label).extension().is_some_and(|e| e == "c") { " (a C source?)" } else { "" };
    let name = if label == "<buffer>" { "the Buffer" } else { label };
    return err(
      Code::InvalidObject,
      format!("{name} is not an ELF file{what}; compile the BPF program first: npx node-libbpf build prog.bpf.c -o prog.bpf.o"),
    );
  }
  elf_check::check(bytes).or_else(|problem| {
    err(
      Code::InvalidObject,
      format!("{label} is not a valid BPF object: {problem}; recompile it: npx node-libbpf build prog.bpf.c -o prog.bpf.o"),
    )
  })
}
