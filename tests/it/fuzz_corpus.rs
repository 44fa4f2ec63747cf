//! The fuzz targets' corpus as a regression test on stable Rust: every file of
//! `fuzz/corpus/<target>/` goes through the same check the libFuzzer target runs
//! (`fuzz/src/checks.rs`). A crash the fuzzer finds is fixed and its input added there.

use std::path::Path;

#[path = "../../fuzz/src/checks.rs"]
mod checks;

#[test]
fn every_corpus_file_passes_its_fuzz_target_check() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (target, check) in checks::TARGETS {
        let dir = corpus.join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no corpus for {target}");
        for file in files {
            let data = std::fs::read(&file).unwrap();
            let result = std::panic::catch_unwind(|| check(&data));
            assert!(result.is_ok(), "{target}: {} fails", file.display());
        }
    }
}
