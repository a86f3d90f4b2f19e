//! Which worker gets a stage: the one with a free slot and the fewest stage
//! jobs per slot. A stage is held at its owner while every worker's slots
//! are taken, so no job waits in a busy worker's queue while another
//! worker is idle.

use std::collections::HashMap;
use std::time::Instant;

use super::heartbeat::Load;
use super::placement;

/// A worker as the dispatcher sees it: its last reported load and the jobs
/// this node sent it since.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub node: String,
    pub load: Load,
    pub sent: usize,
}

impl Candidate {
    fn taken(&self) -> f64 {
        (self.load.stages as f64 + self.sent as f64) / self.load.stage_slots.max(1) as f64
    }

    fn has_free_slot(&self) -> bool {
        (self.load.stages as usize + self.sent) < self.load.stage_slots.max(1) as usize
    }
}

/// What the dispatcher decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Send the stage to this node.
    Worker(String),
    /// Workers are up, but every slot is taken: hold the stage and ask again.
    AllBusy,
    /// No worker is up.
    NoWorker,
}

/// Picks among `candidates` (up workers): only those with a free slot, the
/// least taken first; among equals the one `last` says this node sent a
/// stage to longest ago (one never sent to first, by rendezvous hash of
/// `run`), so work spreads round robin. `avoid` (a worker that lost or
/// never took the stage) is skipped while another one is up.
pub fn choose(
    candidates: &[Candidate],
    run: &str,
    avoid: Option<&str>,
    last: &HashMap<String, Instant>,
) -> Choice {
    if candidates.is_empty() {
        return Choice::NoWorker;
    }
    let others = candidates.iter().any(|c| Some(c.node.as_str()) != avoid);
    let open: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| !(others && Some(c.node.as_str()) == avoid))
        .filter(|c| c.has_free_slot())
        .collect();
    if open.is_empty() {
        return Choice::AllBusy;
    }
    let best = open.iter().map(|c| c.taken()).fold(f64::INFINITY, f64::min);
    let tied: Vec<&str> = open
        .iter()
        .filter(|c| c.taken() <= best + 1e-9)
        .map(|c| c.node.as_str())
        .collect();
    let never: Vec<&str> = tied
        .iter()
        .copied()
        .filter(|n| !last.contains_key(*n))
        .collect();
    let chosen = if never.is_empty() {
        tied.iter().copied().min_by_key(|n| last.get(*n).copied())
    } else {
        placement::owner(run, never)
    };
    match chosen {
        Some(n) => Choice::Worker(n.to_string()),
        None => Choice::AllBusy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(node: &str, stages: u32, slots: u32, sent: usize) -> Candidate {
        Candidate {
            node: node.into(),
            load: Load {
                busy: 0,
                slots: 1,
                stages,
                stage_slots: slots,
            },
            sent,
        }
    }

    #[test]
    fn holds_the_stage_while_every_slot_is_taken() {
        let none = HashMap::new();
        assert_eq!(choose(&[], "r", None, &none), Choice::NoWorker);
        // a has its one slot taken, b is idle: b, whatever the history.
        let ws = [worker("a", 1, 1, 0), worker("b", 0, 1, 0)];
        assert_eq!(choose(&ws, "r", None, &none), Choice::Worker("b".into()));
        // A job sent to b since its heartbeat takes its slot too.
        let ws = [worker("a", 1, 1, 0), worker("b", 0, 1, 1)];
        assert_eq!(choose(&ws, "r", None, &none), Choice::AllBusy);
        // Two slots: one free on a.
        let ws = [worker("a", 1, 2, 0), worker("b", 1, 1, 0)];
        assert_eq!(choose(&ws, "r", None, &none), Choice::Worker("a".into()));
    }

    #[test]
    fn spreads_round_robin_and_avoids_a_lost_worker() {
        let ws = [worker("a", 0, 1, 0), worker("b", 0, 1, 0)];
        let mut last = HashMap::new();
        let first = match choose(&ws, "r", None, &last) {
            Choice::Worker(n) => n,
            other => panic!("{other:?}"),
        };
        last.insert(first.clone(), Instant::now());
        let second = choose(&ws, "r", None, &last);
        assert_ne!(second, Choice::Worker(first.clone()));
        // The lost worker is skipped while another is up…
        assert_eq!(
            choose(&ws, "r", Some("a"), &HashMap::new()),
            Choice::Worker("b".into())
        );
        // …and used when it is the only one.
        let one = [worker("a", 0, 1, 0)];
        assert_eq!(
            choose(&one, "r", Some("a"), &HashMap::new()),
            Choice::Worker("a".into())
        );
    }
}
