// The console's assets (web/dist, built by `make console`) are embedded by
// rust-embed: rebuild when they change, or appear.
fn main() {
    if std::path::Path::new("web/dist").is_dir() {
        println!("cargo:rerun-if-changed=web/dist");
    } else {
        println!("cargo:rerun-if-changed=web");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
