//! src/symbols/{v8dbg,perf_map}.rs without their `//!` lines, for
//! `include!` (which takes no inner doc comment): their private functions
//! are then reachable from a module of ours, with no change to src/.

fn main() {
  let out = std::env::var("OUT_DIR").unwrap();
  for name in ["v8dbg", "perf_map"] {
    let src = format!("../../src/symbols/{name}.rs");
    println!("cargo:rerun-if-changed={src}");
    let text = std::fs::read_to_string(&src).unwrap();
    let body: String = text.lines().filter(|l| !l.starts_with("//!")).map(|l| format!("{l}\n")).collect();
    std::fs::write(format!("{out}/{name}.rs"), body).unwrap();
  }
}
