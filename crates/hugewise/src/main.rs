//! hugewise binary (being built).
fn main() {}
