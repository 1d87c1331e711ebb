//! BPF iterators (`SEC("iter/<target>")`, Linux 5.8+): attach the program,
//! read what it writes (`bpf_seq_write`, `BPF_SEQ_PRINTF`) to the end, and
//! detach, in one call. The program runs in the reader's context: the
//! calling thread is `current`.

use std::io::Read;

use libbpf_rs::{IterOpts, ProgramType};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

use crate::{
  error::{err, guard, BpfError, BpfResult, Code, Result},
  object::{program_name, ObjectHandle, ProgramArg},
};

/// The default of `maxBytes`: 64 MiB.
const DEFAULT_MAX_BYTES: u32 = 64 << 20;

/// Options of `readIterator`.
#[napi(object)]
#[derive(Default)]
pub struct IteratorOptions {
  /// At most this many bytes (default 64 MiB): an iterator that writes
  /// more is an ERR_BPF_INVALID_VALUE error, not an endless read.
  pub max_bytes: Option<u32>,
}

#[napi]
impl ObjectHandle {
  /// Runs a `SEC("iter/<target>")` program (task, task_file, tcp, udp,
  /// bpf_map, ...: the targets that need no map or cgroup) once over what it
  /// iterates and returns what it wrote. The program runs in this thread's
  /// context (`bpf_get_current_task()` is the caller). Linux 5.8+.
  #[napi]
  pub fn read_iterator(
    &self,
    #[napi(ts_arg_type = "BpfProgram | string")] prog: ProgramArg<'_>,
    options: Option<IteratorOptions>,
  ) -> Result<Buffer> {
    guard(|| {
      let max = options.unwrap_or_default().max_bytes.unwrap_or(DEFAULT_MAX_BYTES) as usize;
      if max == 0 {
        return err(Code::InvalidValue, "readIterator(): maxBytes must be at least 1");
      }
      read(self, &prog, max).map(Buffer::from)
    })
  }
}

fn read(handle: &ObjectHandle, prog: &ProgramArg<'_>, max: usize) -> BpfResult<Vec<u8>> {
  let name = program_name(&handle.state, prog)?;
  let mut state = handle.state()?;
  let program = state.program(&name)?;
  let section = program.section().to_string_lossy().into_owned();
  if program.prog_type() != ProgramType::Tracing || !section.starts_with("iter") {
    return err(
      Code::InvalidArg,
      format!("program '{name}' is a SEC(\"{section}\") program; readIterator() needs a SEC(\"iter/<target>\") program (e.g. iter/task)"),
    );
  }
  let link = program
    .attach_iter_with_opts(IterOpts::None)
    .map_err(|e| BpfError::libbpf(Code::Attach, format!("attaching iterator program '{name}' ({section})"), &e))?;
  let iter = libbpf_rs::Iter::new(&link).map_err(|e| BpfError::libbpf(Code::Attach, format!("opening iterator '{name}'"), &e))?;
  let mut out = Vec::new();
  // one byte past the limit tells "more than max" from "exactly max"
  iter
    .take(max as u64 + 1)
    .read_to_end(&mut out)
    .map_err(|e| BpfError::new(Code::Attach, format!("reading iterator '{name}': {e}")))?;
  if out.len() > max {
    return err(
      Code::InvalidValue,
      format!("iterator '{name}' wrote more than maxBytes ({max} bytes): give readIterator() a larger maxBytes"),
    );
  }
  Ok(out)
}
