//! CMX3600 EDL: one event per clip (reel `AX`, video and two audio
//! channels, cut), source in/out and record in/out as non-drop-frame
//! timecode, the record side starting at 01:00:00:00. `FROM CLIP NAME` names
//! the source, `TO CLIP NAME` the clip's title, `FROM FILE` where the source
//! is, and each caption line is a `LOC` locator at its source timecode.

use std::fmt::Write as _;

use super::timeline::{one_line, Timeline};

/// One hour: where the record side starts, as editors expect.
const RECORD_START_SECS: u64 = 3600;

fn timecode(timebase: u64, frames: u64) -> String {
    let ff = frames % timebase;
    let secs = frames / timebase;
    format!(
        "{:02}:{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60,
        ff
    )
}

/// EDL text is plain ASCII on single lines; others become `?`.
fn ascii(s: &str) -> String {
    one_line(s)
        .chars()
        .map(|c| if c.is_ascii() { c } else { '?' })
        .collect()
}

pub fn to_edl(t: &Timeline) -> String {
    let rate = t.rate();
    let tb = rate.timebase();
    let record_start = RECORD_START_SECS * tb;
    let mut e = String::new();
    let _ = writeln!(e, "TITLE: {}", ascii(&t.name));
    e.push_str("FCM: NON-DROP FRAME\n\n");
    for (n, (c, p)) in t.placed().into_iter().enumerate() {
        let rec_in = record_start + p.record_in;
        let _ = writeln!(
            e,
            "{:03}  {:<8} {:<5} C        {} {} {} {}",
            n + 1,
            "AX",
            "AA/V",
            timecode(tb, p.source_in),
            timecode(tb, p.source_out),
            timecode(tb, rec_in),
            timecode(tb, rec_in + p.len())
        );
        let _ = writeln!(e, "* FROM CLIP NAME: {}", ascii(&t.source.name));
        let _ = writeln!(e, "* TO CLIP NAME: {}. {}", c.index, ascii(&c.title));
        let _ = writeln!(e, "* FROM FILE: {}", ascii(&t.source.url));
        for (start, _, text) in t.caption_frames(c, p) {
            let _ = writeln!(e, "* LOC: {} YELLOW  {}", timecode(tb, start), ascii(&text));
        }
        e.push('\n');
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timecodes_count_frames_at_the_timebase() {
        assert_eq!(timecode(25, 0), "00:00:00:00");
        assert_eq!(timecode(25, 25 * 3661 + 7), "01:01:01:07");
        assert_eq!(timecode(30, 29), "00:00:00:29");
    }

    #[test]
    fn text_is_one_ascii_line() {
        assert_eq!(ascii("São\nPaulo  x"), "S?o Paulo x");
    }
}
