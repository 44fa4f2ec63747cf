//! The fuzz targets' checks (see `checks.rs`), shared with hookbin's own tests.

pub mod checks;
