//! The `muser` binary.
fn main() {}
