//! Copies the face-detection model that the `rustface` crate ships inside its
//! package (SeetaFace frontal, BSD-2) into OUT_DIR, so it is embedded in the
//! binary and nothing is downloaded at run time.

use std::path::PathBuf;

const MODEL: &str = "model/seeta_fd_frontal_v1.0.bin";
const RUSTFACE_DIR: &str = "rustface-0.1.7";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("seeta_fd_frontal_v1.0.bin");
    let cargo_home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cargo"));
    let mut candidates: Vec<PathBuf> = Vec::new();
    for base in [
        cargo_home.join("registry").join("src"),
        PathBuf::from("vendor"),
    ] {
        if let Ok(entries) = std::fs::read_dir(&base) {
            for e in entries.flatten() {
                candidates.push(e.path().join(RUSTFACE_DIR).join(MODEL));
            }
        }
        candidates.push(base.join(RUSTFACE_DIR).join(MODEL));
    }
    let found = candidates
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "the rustface model ({RUSTFACE_DIR}/{MODEL}) was not found under {}",
                cargo_home.display()
            )
        });
    std::fs::copy(&found, &out).expect("copy the face model");
}
