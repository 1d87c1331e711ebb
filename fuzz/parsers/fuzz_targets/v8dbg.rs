#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| node_libbpf_fuzz_parsers::v8dbg(data));
