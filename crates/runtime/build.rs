//! Compiles the small C helper that gives tern the platform's `long double` (see csrc/).
fn main() {
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new()
        .file("csrc/longdouble.c")
        .warnings(true)
        .compile("ternlongdouble");
}
