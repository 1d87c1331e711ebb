#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| node_libbpf_fuzz_parsers::perf_map(data));
