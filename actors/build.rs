//! 1. Copies the face-detection model that the `rustface` crate ships inside
//!    its package (SeetaFace frontal, BSD-2) into OUT_DIR, so it is embedded
//!    in the binary and nothing is downloaded at run time.
//! 2. Compiles `src/media/ct2_support.cc` (used by `media::ct2_backend`)
//!    against the CTranslate2 headers that the `ct2rs` package carries (the
//!    library itself is built and linked by ct2rs).

use std::path::{Path, PathBuf};

const MODEL: &str = "model/seeta_fd_frontal_v1.0.bin";
const RUSTFACE_DIR: &str = "rustface-0.1.7";
/// Must name the ct2rs version in Cargo.lock.
const CT2RS_DIR: &str = "ct2rs-0.10.3";
const CT2_INCLUDE: &str = "CTranslate2/include";

/// `<package>/<rel>` in the cargo registry (or `vendor/`), if present.
fn find_in_packages(cargo_home: &Path, package: &str, rel: &str) -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for base in [
        cargo_home.join("registry").join("src"),
        PathBuf::from("vendor"),
    ] {
        if let Ok(entries) = std::fs::read_dir(&base) {
            for e in entries.flatten() {
                candidates.push(e.path().join(package).join(rel));
            }
        }
        candidates.push(base.join(package).join(rel));
    }
    candidates.into_iter().find(|p| p.exists())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/media/ct2_support.cc");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let cargo_home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cargo"));

    let model = find_in_packages(&cargo_home, RUSTFACE_DIR, MODEL).unwrap_or_else(|| {
        panic!(
            "the rustface model ({RUSTFACE_DIR}/{MODEL}) was not found under {}",
            cargo_home.display()
        )
    });
    std::fs::copy(&model, out_dir.join("seeta_fd_frontal_v1.0.bin")).expect("copy the face model");

    let include = find_in_packages(&cargo_home, CT2RS_DIR, CT2_INCLUDE).unwrap_or_else(|| {
        panic!(
            "the CTranslate2 headers ({CT2RS_DIR}/{CT2_INCLUDE}) were not found under {}",
            cargo_home.display()
        )
    });
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .include(include)
        .file("src/media/ct2_support.cc")
        .warnings(false)
        .compile("clipforge_ct2_support");
}
