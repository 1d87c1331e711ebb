//! Symbols: addresses to names (kernel frames from /proc/kallsyms, native
//! frames from ELF and DWARF, JavaScript frames from the perf map that
//! `node --perf-basic-prof` writes) with blazesym; the function symbols of
//! an ELF file; struct member offsets from DWARF; flame graphs of folded
//! stacks. One file per concern:
//!
//! - `symbolizer`: `Symbolizer` and its `Frame`s (blazesym)
//! - `elf`: `elfSymbols` and the ELF reading shared with `dwarf`
//! - `dwarf`: `dwarfMemberOffset`
//! - `flame_graph`: `flameGraph` (inferno)
//! - `files`: bounded reads of files a traced process controls
//! - `target_files`: `readTargetFile` and `statTargetFile` (files.rs's reads, for JS)
//! - `v8dbg`: `v8dbgSymbols`, what the V8 frame walk needs of a node binary
//! - `perf_map`: the perf map of a process (JIT frames)
//! - `kallsyms`: kernel addresses to names, readable on the libuv thread pool

mod dwarf;
mod elf;
mod files;
mod flame_graph;
mod kallsyms;
mod perf_map;
mod symbolizer;
mod target_files;
mod v8dbg;
