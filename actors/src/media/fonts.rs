//! Which font families are installed (fontconfig), to pick the first one of a
//! template's family and stack that libass can really use.

use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Used when none of a template's fonts is installed (fonts-dejavu-core).
pub const FALLBACK_FONT: &str = "DejaVu Sans";

fn installed() -> &'static BTreeSet<String> {
    static FAMILIES: OnceLock<BTreeSet<String>> = OnceLock::new();
    FAMILIES.get_or_init(|| {
        let out = std::process::Command::new("fc-list")
            .args([":", "family"])
            .output();
        let mut set = BTreeSet::new();
        if let Ok(out) = out {
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                // "DejaVu Sans,DejaVu Sans Condensed" lists aliases of one face.
                for fam in line.split(',') {
                    let fam = fam.trim();
                    if !fam.is_empty() {
                        set.insert(fam.to_ascii_lowercase());
                    }
                }
            }
        }
        set
    })
}

pub fn is_installed(family: &str) -> bool {
    installed().contains(&family.trim().to_ascii_lowercase())
}

/// The first installed family among `candidates`, else [`FALLBACK_FONT`].
pub fn resolve(candidates: &[String]) -> String {
    candidates
        .iter()
        .find(|f| is_installed(f))
        .cloned()
        .unwrap_or_else(|| FALLBACK_FONT.to_string())
}
