#!/usr/bin/env bash
# Runs every fuzz target for a while: fuzz/run.sh [SECONDS per target, default 60].
#
# cargo-fuzz needs nightly Rust for `-Zsanitizer`; on a stable toolchain RUSTC_BOOTSTRAP=1 lets
# it use those flags (as the Rust project's own CI does for its tools). Without sanitizers
# (`-s none`) and in the dev profile the build is plain rustc plus libFuzzer's coverage
# instrumentation, which stable rustc has. New inputs go to a scratch directory, not the
# checked-in corpus (fuzz/corpus/<target>, replayed by `cargo test` through
# tests/it/fuzz_corpus.rs). A crash leaves its input in fuzz/artifacts/<target>/: fix it, add
# the input to fuzz/corpus/<target>/ and run the tests. A fixed -seed makes a CI run repeatable
# as far as a time limit allows (the same first inputs, in the same order).
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
export RUSTC_BOOTSTRAP=1
if ! command -v cargo-fuzz >/dev/null; then
  cargo install cargo-fuzz --locked --version 0.13.2
fi
targets=(rawhead decode multipart search_query curl signature_headers)
cargo fuzz build --dev -s none
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t"
  echo "fuzz: $t for ${seconds}s"
  cargo fuzz run --dev -s none "$t" "$scratch/$t" "corpus/$t" -- \
    -seed=1 -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2>&1 \
    | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==|SUMMARY|artifact_prefix|Test unit written)" || true
  # libFuzzer exits non-zero on a crash; pipefail is off for grep's sake, so check artifacts.
  if compgen -G "artifacts/$t/*" >/dev/null; then
    echo "fuzz: $t found a crash: $(ls artifacts/$t)" >&2
    exit 1
  fi
done
echo "fuzz: ${#targets[@]} targets ran ${seconds}s each, no crash"
