//! The documents state what is true now: every file path and every type-like
//! name (`CamelCase`, two humps or more) that README.md, ARCHITECTURE.md
//! and docs/ mention in backticks exists — a path in the repository (from
//! the root or a crate's source folder; a bare file name anywhere), or a
//! string the code uses (work files, object keys); a name in the source of
//! the binary, the engine, the console, the tests or the scripts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (not build output, dependencies or git).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if matches!(name.as_str(), ".git" | "target" | "node_modules") {
            continue;
        }
        out.push(path.clone());
        if path.is_dir() {
            walk(&path, out);
        }
    }
}

/// The spans in backticks on one line each (as a Markdown reader would).
fn code_spans(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let end = bytes[i + 1..]
                .iter()
                .position(|&b| b == b'`' || b == b'\n')
                .map(|k| i + 1 + k);
            if let Some(j) = end.filter(|&j| bytes[j] == b'`' && j > i + 1) {
                out.push(&text[i + 1..j]);
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

const EXTENSIONS: [&str; 12] = [
    ".rs", ".ts", ".tsx", ".py", ".sh", ".toml", ".md", ".json", ".yml", ".yaml", ".cc", ".css",
];

/// A span that names a file or folder (`a/b.rs`, `dir/`, `x.toml`).
fn is_path(s: &str) -> bool {
    let chars_ok = s
        .chars()
        .all(|c| c.is_alphanumeric() || "_./{},-".contains(c));
    let skipped = s.starts_with(['/', '.', '~', '$']) || s.starts_with("http");
    let segments_ok = s
        .trim_end_matches('/')
        .split('/')
        .all(|seg| !seg.is_empty());
    chars_ok
        && !skipped
        && segments_ok
        && (EXTENSIONS.iter().any(|e| s.ends_with(e)) || s.trim_end_matches('/').contains('/'))
}

/// `a/{b,c}.rs` → `a/b.rs`, `a/c.rs`.
fn expand(p: &str) -> Vec<String> {
    match (p.find('{'), p.find('}')) {
        (Some(a), Some(b)) if a < b => p[a + 1..b]
            .split(',')
            .flat_map(|alt| expand(&format!("{}{alt}{}", &p[..a], &p[b + 1..])))
            .collect(),
        _ => vec![p.to_string()],
    }
}

/// `CamelCase` words of two humps or more (`ClipRecord`, not `Fit`).
fn type_names(s: &str) -> Vec<&str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            let mut humps = 0;
            let mut chars = w.chars().peekable();
            while let Some(c) = chars.next() {
                if !c.is_ascii_uppercase() {
                    return false;
                }
                let mut lower = 0;
                while chars
                    .peek()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                {
                    chars.next();
                    lower += 1;
                }
                if lower == 0 {
                    return false;
                }
                humps += 1;
            }
            humps >= 2
        })
        .collect()
}

#[test]
fn every_path_and_name_the_documents_mention_exists() {
    let root = root();
    let mut files = Vec::new();
    walk(&root, &mut files);
    let names: BTreeSet<String> = files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    // What the code says: sources, tests, scripts, configuration.
    let code_roots = ["src", "actors/src", "web/src", "tests", "scripts", "deploy"];
    let mut code = String::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap_or(f);
        let in_code = code_roots.iter().any(|r| rel.starts_with(r))
            || ["Makefile", "cluster.toml", ".ci/run", "build.rs"]
                .iter()
                .any(|n| rel == Path::new(n));
        if in_code && f.is_file() {
            if let Ok(text) = std::fs::read_to_string(f) {
                code.push_str(&text);
                code.push('\n');
            }
        }
    }
    let words: BTreeSet<&str> = code
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    let bases = [
        "",
        "src",
        "actors/src",
        "actors",
        "web/src",
        "web",
        "tests",
        "scripts",
        "docs",
        "docs/internals",
        "actors/src/projects",
        "actors/src/media",
        "actors/src/projects/stages",
    ];
    let mut docs = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    docs.extend(
        files
            .iter()
            .filter(|p| {
                p.starts_with(root.join("docs")) && p.extension().is_some_and(|e| e == "md")
            })
            .cloned(),
    );
    assert!(docs.len() > 3, "no docs/ found");
    let mut missing = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(doc).expect("read a document");
        let shown = doc.strip_prefix(&root).unwrap_or(doc).display().to_string();
        for span in code_spans(&text) {
            let span = span.trim();
            if is_path(span) {
                for p in expand(span) {
                    let bare = p.trim_end_matches('/');
                    let found = bases.iter().any(|b| root.join(b).join(&p).exists())
                        || (!bare.contains('/') && names.contains(bare))
                        || code.contains(p.as_str());
                    if !found {
                        missing.push(format!("{shown}: path `{p}`"));
                    }
                }
            }
            for name in type_names(span) {
                if !words.contains(name) {
                    missing.push(format!("{shown}: name `{name}` (in `{span}`)"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the documents mention what does not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_checks_see_paths_and_names() {
    assert_eq!(code_spans("a `x.rs` b `Y` c"), vec!["x.rs", "Y"]);
    assert!(
        code_spans("`a\nb`").is_empty(),
        "a span does not cross lines"
    );
    assert!(is_path("service/clip_edit.rs") && is_path("web/src/") && is_path("cluster.toml"));
    assert!(!is_path("/api/projects") && !is_path("data/<id>") && !is_path("a b"));
    assert_eq!(expand("c/{a,b}.rs"), vec!["c/a.rs", "c/b.rs"]);
    assert_eq!(
        type_names("Services::pool, ClipRecord, Fit, HTTP, SeenFaces"),
        vec!["ClipRecord", "SeenFaces"]
    );
}
