#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookbin_fuzz::checks::multipart(data));
