//! src/elf_check.rs as a C function for the libFuzzer harness (harness.c).

#[path = "../../src/elf_check.rs"]
#[allow(dead_code)]
mod elf_check;

/// 0 when the check accepts the bytes, 1 when it refuses them.
///
/// # Safety
/// `data` points to `size` readable bytes (libFuzzer's input).
#[no_mangle]
pub unsafe extern "C" fn node_libbpf_elf_check(data: *const u8, size: usize) -> i32 {
  let bytes = if size == 0 { &[][..] } else { std::slice::from_raw_parts(data, size) };
  match elf_check::check(bytes) {
    Ok(()) => 0,
    Err(_) => 1,
  }
}
