//! Range checks of the numeric options that reach the addon. lib/core/validate.js
//! checks them first, with the same limits; these catch a caller of the
//! binding itself. A JavaScript number arrives here as an `f64` and is
//! checked, never cast: napi's u32/i32 conversions would wrap -1 to
//! 4294967295, and 1e12 to its low 32 bits, silently.

use napi::bindgen_prelude::BigInt;

use crate::error::{err, BpfResult, Code};

/// Milliseconds between a buffer's passes.
pub const POLL_INTERVAL: (u64, u64) = (1, 60_000);
/// Batches queued for JavaScript: the channel allocates its slots when the
/// buffer opens, so this bounds that allocation (a few MiB at most).
pub const QUEUE_SIZE: (u64, u64) = (1, 65_536);
/// Pages of each CPU's perf buffer, a power of two (32 MiB per CPU with 4 KiB pages).
pub const PAGE_COUNT: (u64, u64) = (1, 8192);
/// PID_MAX_LIMIT, the most /proc/sys/kernel/pid_max can be.
pub const PID: (u64, u64) = (1, 4_194_304);
/// Byte offsets (2^53 - 1: every integer a JavaScript number holds exactly).
pub const OFFSET: (u64, u64) = (0, (1 << 53) - 1);
/// Events per sample.
pub const PERIOD: (u64, u64) = (1, (1 << 53) - 1);

/// A number as JavaScript shows it (`-1`, `1.5`, `NaN`, `Infinity`).
fn show(value: f64) -> String {
  if value.is_infinite() {
    return if value > 0.0 { "Infinity".into() } else { "-Infinity".into() };
  }
  format!("{value}")
}

/// `value` if it is an integer from `min` to `max`, else an
/// ERR_BPF_INVALID_VALUE error naming the call (`what`), the option, the
/// range and the value.
pub fn integer(what: &str, name: &str, value: f64, (min, max): (u64, u64)) -> BpfResult<u64> {
  // (NaN fails every comparison, and so this test)
  if value.fract() == 0.0 && value >= min as f64 && value <= max as f64 {
    return Ok(value as u64);
  }
  err(Code::InvalidValue, format!("{what}: {name} must be an integer from {min} to {max}; got {}", show(value)))
}

/// An optional option: `default` when not given.
pub fn integer_or(what: &str, name: &str, value: Option<f64>, default: u64, range: (u64, u64)) -> BpfResult<u64> {
  value.map_or(Ok(default), |v| integer(what, name, v, range))
}

/// An optional pid (`-1`, every process, when not given).
pub fn pid(what: &str, value: Option<f64>) -> BpfResult<i32> {
  // PID.1 fits an i32
  value.map_or(Ok(-1), |v| integer(what, "pid", v, PID).map(|p| p as i32))
}

/// A 64-bit cookie: a bigint from 0 to 2^64 - 1 (0 when not given).
pub fn cookie(what: &str, name: &str, value: Option<&BigInt>) -> BpfResult<u64> {
  let Some(big) = value else { return Ok(0) };
  // (0n may come with no words at all)
  let v = big.words.first().copied().unwrap_or(0);
  let zero = big.words.iter().all(|w| *w == 0);
  if (big.sign_bit && !zero) || big.words.len() > 1 && !big.words[1..].iter().all(|w| *w == 0) {
    let sign = if big.sign_bit { "-" } else { "" };
    let shown = match (big.words.len(), big.sign_bit) {
      (1, _) => format!("{sign}{v}n"),
      (_, false) => "a bigint of more than 64 bits".to_string(),
      (_, true) => "a negative bigint of more than 64 bits".to_string(),
    };
    return err(Code::InvalidValue, format!("{what}: {name} must be an integer from 0 to 2**64-1; got {shown}"));
  }
  Ok(v)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn integers_in_range_pass() {
    assert_eq!(integer("f", "n", 1.0, (1, 10)).unwrap(), 1);
    assert_eq!(integer("f", "n", 10.0, (1, 10)).unwrap(), 10);
    assert_eq!(integer("f", "n", 9_007_199_254_740_991.0, OFFSET).unwrap(), (1 << 53) - 1);
    assert_eq!(integer_or("f", "n", None, 7, (1, 10)).unwrap(), 7);
    assert_eq!(pid("f", None).unwrap(), -1);
    assert_eq!(pid("f", Some(4_194_304.0)).unwrap(), 4_194_304);
  }

  #[test]
  fn everything_else_is_an_error_naming_the_option() {
    for (v, shown) in [
      (-1.0, "-1"),
      (0.0, "0"),
      (11.0, "11"),
      (1.5, "1.5"),
      (4_294_967_295.0, "4294967295"),
      (1e12, "1000000000000"),
      (f64::NAN, "NaN"),
      (f64::INFINITY, "Infinity"),
      (f64::NEG_INFINITY, "-Infinity"),
    ] {
      let e = integer("openRingBuffer", "queueSize", v, (1, 10)).unwrap_err();
      assert_eq!(e.code, Code::InvalidValue);
      assert_eq!(e.message, format!("openRingBuffer: queueSize must be an integer from 1 to 10; got {shown}"));
    }
    assert_eq!(pid("attachUprobe", Some(-1.0)).unwrap_err().code, Code::InvalidValue);
  }

  #[test]
  fn cookies_are_unsigned_64_bit() {
    let big = |sign_bit, words: Vec<u64>| BigInt { sign_bit, words };
    assert_eq!(cookie("f", "cookie", None).unwrap(), 0);
    assert_eq!(cookie("f", "cookie", Some(&big(false, vec![u64::MAX]))).unwrap(), u64::MAX);
    assert_eq!(cookie("f", "cookie", Some(&big(false, vec![0]))).unwrap(), 0);
    assert_eq!(cookie("f", "cookie", Some(&big(false, vec![]))).unwrap(), 0);
    let e = cookie("f", "cookie", Some(&big(true, vec![1]))).unwrap_err();
    assert_eq!(e.message, "f: cookie must be an integer from 0 to 2**64-1; got -1n");
    let e = cookie("f", "cookie", Some(&big(false, vec![0, 1]))).unwrap_err();
    assert_eq!(e.message, "f: cookie must be an integer from 0 to 2**64-1; got a bigint of more than 64 bits");
  }
}
