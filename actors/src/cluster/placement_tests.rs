use super::*;
use std::collections::HashMap;

fn accounts() -> Vec<String> {
    (0..3000).map(|i| format!("user-{i}")).collect()
}

#[test]
fn owner_is_stable_and_independent_of_order() {
    assert_eq!(owner("u", []), None);
    assert_eq!(owner("u", ["a"]), Some("a"));
    for k in accounts().iter().take(200) {
        let o1 = owner(k, ["a", "b", "c"]);
        let o2 = owner(k, ["c", "a", "b"]);
        assert_eq!(o1, o2);
        assert_eq!(o1, owner(k, ["a", "b", "c"]));
    }
}

#[test]
fn accounts_spread_evenly() {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for k in accounts() {
        *counts
            .entry(owner(&k, ["a", "b", "c"]).unwrap())
            .or_default() += 1;
    }
    for n in ["a", "b", "c"] {
        let c = counts[n];
        assert!((800..=1200).contains(&c), "{n}: {c} of 3000");
    }
}

#[test]
fn a_joining_node_only_takes_accounts_and_a_leaving_node_only_gives_its_own() {
    let mut moved = 0;
    for k in accounts() {
        let before = owner(&k, ["a", "b", "c"]).unwrap();
        let after = owner(&k, ["a", "b", "c", "d"]).unwrap();
        if before != after {
            assert_eq!(after, "d", "{k} moved between old nodes");
            moved += 1;
        }
        let without_b = owner(&k, ["a", "c"]).unwrap();
        if before != "b" {
            assert_eq!(without_b, before, "{k} moved though its node stayed");
        }
    }
    assert!(
        (500..=1000).contains(&moved),
        "about a quarter moves: {moved}"
    );
}
