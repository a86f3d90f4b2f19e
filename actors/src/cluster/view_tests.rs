use super::*;

fn hb(node: &str, busy: u32) -> Heartbeat {
    Heartbeat {
        node: node.into(),
        roles: vec!["worker".into()],
        load: Load {
            busy,
            slots: 2,
            ..Load::default()
        },
        sent_ms: 1,
        addr: "127.0.0.1:1".into(),
        peers: Vec::new(),
    }
}

#[test]
fn peers_go_down_after_the_timeout_and_come_back() {
    let t0 = Instant::now();
    let timeout = Duration::from_secs(3);
    let mut v = View::new("a", "127.0.0.1:0", vec!["api".into()]);
    assert!(v.record(hb("b", 0), t0), "new peer");
    assert!(
        !v.record(hb("b", 1), t0 + Duration::from_secs(1)),
        "already up"
    );
    assert!(!v.record(hb("a", 0), t0), "own heartbeat ignored");
    assert!(!v.record(hb("", 0), t0), "undecodable heartbeat ignored");
    assert!(v.sweep(t0 + Duration::from_secs(3), timeout).is_empty());
    assert_eq!(v.sweep(t0 + Duration::from_secs(5), timeout), ["b"]);
    assert!(
        v.sweep(t0 + Duration::from_secs(6), timeout).is_empty(),
        "once"
    );
    let s = v.snapshot(
        t0 + Duration::from_secs(6),
        Load {
            busy: 1,
            slots: 4,
            ..Load::default()
        },
    );
    assert_eq!(s.nodes.len(), 2);
    assert!(s.nodes[0].is_self && s.nodes[0].load.busy == 1);
    assert_eq!(s.nodes[1].state, NodeState::Down);
    assert_eq!(s.nodes[1].last_heartbeat_ms, Some(5000));
    assert!(v.up_peers().is_empty());
    assert!(v.record(hb("b", 2), t0 + Duration::from_secs(7)), "back up");
    assert_eq!(v.up_peers()[0].2.busy, 2);
    assert!(v.mark_down("b"));
    assert!(!v.mark_down("b"));
}

#[test]
fn snapshot_serialises_for_the_admin_view() {
    let mut v = View::new("a", "h:1", vec!["api".into()]);
    v.record(hb("b", 0), Instant::now());
    let j = serde_json::to_value(v.snapshot(Instant::now(), Load::default())).unwrap();
    assert_eq!(j["nodes"][0]["self"], true);
    assert_eq!(j["nodes"][1]["name"], "b");
    assert_eq!(j["nodes"][1]["state"], "up");
    assert!(j["nodes"][1]["lastHeartbeatMs"].is_u64());
    let single = serde_json::to_value(ClusterSnapshot::single("a", &[], Load::default())).unwrap();
    assert_eq!(single["enabled"], false);
}
