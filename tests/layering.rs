//! No module imports one that imports it back: in each crate (the engine
//! `actors/src` and the binary `src`), the top-level modules' `crate::…`
//! references form no cycle. The domains do not import the engine
//! (`engine`, which wires them together) and the engine crate does not
//! depend on the web framework. Comment lines are not imports. At file
//! level (`scripts/module-graph.py`), neither crate has a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file under `root` belongs to (`None`: the crate root).
fn module_of(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "lib" && name != "main").then_some(name)
}

/// `module → modules it names as crate::<module>`.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(root, f)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(from) = module_of(root, file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read");
        let entry = edges.entry(from.clone()).or_default();
        for line in text.lines() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (i, _) in line.match_indices("crate::") {
                let rest = &line[i + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // `clipforge_actors::x` is another crate, not this one's `x`.
                let before = &line[..i];
                if before.ends_with('_') || before.ends_with(|c: char| c.is_ascii_alphanumeric()) {
                    continue;
                }
                if name != from && modules.contains(&name) {
                    entry.insert(name);
                }
            }
        }
    }
    edges
}

/// A cycle through the graph, if there is one.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        if let Some(c) = visit(node, edges, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

fn assert_acyclic(dir: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let edges = graph(&root);
    assert!(edges.len() > 5, "{dir}: found only {} modules", edges.len());
    if let Some(cycle) = find_cycle(&edges) {
        panic!("{dir}: modules import each other: {}", cycle.join(" → "));
    }
}

#[test]
fn engine_modules_form_no_cycle() {
    assert_acyclic("actors/src");
}

#[test]
fn binary_modules_form_no_cycle() {
    assert_acyclic("src");
}

/// The engine module that wires the domains together.
const ENGINE: &str = "engine";

/// The engine's modules that import [`ENGINE`]; only the engine's own
/// files (and the crate root) may.
fn importers_of_the_engine(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    edges
        .iter()
        .filter(|(module, to)| module.as_str() != ENGINE && to.contains(ENGINE))
        .map(|(module, _)| module.clone())
        .collect()
}

#[test]
fn domains_do_not_import_the_engine_or_http() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("actors/src");
    let edges = graph(&root);
    assert!(edges.contains_key(ENGINE), "the engine module was renamed");
    assert_eq!(importers_of_the_engine(&edges), Vec::<String>::new());
    // HTTP types stay in the binary: the engine crate does not depend on
    // the web framework.
    let manifest = std::fs::read_to_string(root.join("../Cargo.toml")).expect("manifest");
    let deps = manifest
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(name, _)| name.trim()))
        .collect::<Vec<_>>();
    assert!(!deps.iter().any(|d| d.starts_with("poem")), "{deps:?}");
}

#[test]
fn an_import_of_the_engine_is_found() {
    let mut edges = BTreeMap::new();
    edges.insert(ENGINE.to_string(), BTreeSet::from(["billing".to_string()]));
    edges.insert("billing".to_string(), BTreeSet::new());
    assert!(importers_of_the_engine(&edges).is_empty());
    edges.insert("billing".to_string(), BTreeSet::from([ENGINE.to_string()]));
    assert_eq!(importers_of_the_engine(&edges), ["billing"]);
}

#[test]
fn a_cycle_is_found() {
    let mut edges = BTreeMap::new();
    edges.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    edges.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    edges.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(find_cycle(&edges).map(|c| c.len()), Some(4));
    edges.get_mut("c").unwrap().clear();
    assert_eq!(find_cycle(&edges), None);
}

/// The file-level cycles `scripts/module-graph.py` finds in `dir`, each as
/// its files joined by spaces.
fn file_cycles(dir: &str) -> BTreeSet<String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("python3")
        .arg(repo.join("scripts/module-graph.py"))
        .arg(repo.join(dir))
        .output()
        .expect("python3 runs scripts/module-graph.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let summary = text.lines().last().unwrap_or_default();
    assert!(summary.contains(" files, "), "no summary line: {text}");
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(n, _)| n.parse::<usize>().is_ok())
        .map(|(_, files)| files.to_string())
        .collect()
}

/// At file level neither crate has a cycle: no file names an item of a
/// file that (directly or through others) names one of its own. A shared
/// type goes into a file of its own below both users, not into the
/// parent module that re-exports them.
#[test]
fn no_file_level_cycles() {
    for dir in ["actors/src", "src"] {
        let found = file_cycles(dir);
        assert!(
            found.is_empty(),
            "{dir}: files that import each other (python3 scripts/module-graph.py {dir} --edges \
             shows every edge; break each cycle): {found:#?}"
        );
    }
}
