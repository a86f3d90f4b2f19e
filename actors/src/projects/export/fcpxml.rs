//! FCPXML 1.10: one asset (the source), one project whose spine holds an
//! `asset-clip` per clip (`start` = source in, `duration` = clip length,
//! `offset` = place on the timeline), each with its caption lines as
//! `caption` elements on lane 1 (Final Cut's caption role, iTT format).

use std::fmt::Write as _;

use super::timeline::{one_line, FrameRate, Timeline};

/// A frame count as FCPXML's rational seconds (`"3003/30000s"`, `"0s"`).
fn time(rate: FrameRate, frames: u64) -> String {
    if frames == 0 {
        return "0s".into();
    }
    let (mut n, mut d) = (frames * rate.den, rate.num);
    let g = gcd(n, d);
    n /= g;
    d /= g;
    if d == 1 {
        format!("{n}s")
    } else {
        format!("{n}/{d}s")
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

pub fn to_fcpxml(t: &Timeline) -> String {
    let rate = t.rate();
    let src = &t.source;
    // Non-drop-frame timecode: frames are counted, never skipped.
    let tc = "NDF";
    let mut x = String::new();
    x.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE fcpxml>\n");
    x.push_str("<fcpxml version=\"1.10\">\n  <resources>\n");
    let _ = writeln!(
        x,
        "    <format id=\"r1\" frameDuration=\"{}\" width=\"{}\" height=\"{}\"/>",
        time(rate, 1),
        src.width.max(1),
        src.height.max(1)
    );
    let _ = writeln!(
        x,
        "    <asset id=\"r2\" name=\"{}\" start=\"0s\" duration=\"{}\" hasVideo=\"1\" hasAudio=\"1\" format=\"r1\">",
        escape(&one_line(&src.name)),
        time(rate, rate.frames(src.duration).max(1))
    );
    let _ = writeln!(
        x,
        "      <media-rep kind=\"original-media\" src=\"{}\"/>\n    </asset>",
        escape(&src.url)
    );
    x.push_str("  </resources>\n  <library>\n    <event name=\"Clipforge\">\n");
    let _ = writeln!(x, "      <project name=\"{}\">", escape(&one_line(&t.name)));
    let _ = writeln!(
        x,
        "        <sequence format=\"r1\" duration=\"{}\" tcStart=\"0s\" tcFormat=\"{tc}\">\n          <spine>",
        time(rate, t.total_frames())
    );
    let role = format!("iTT?captionFormat=ITT.{}", escape(&t.language));
    for (c, p) in t.placed() {
        let _ = writeln!(
            x,
            "            <asset-clip ref=\"r2\" name=\"{}\" offset=\"{}\" start=\"{}\" duration=\"{}\" format=\"r1\" tcFormat=\"{tc}\">",
            escape(&format!("{}. {}", c.index, one_line(&c.title))),
            time(rate, p.record_in),
            time(rate, p.source_in),
            time(rate, p.len())
        );
        for (i, (start, end, text)) in t.caption_frames(c, p).into_iter().enumerate() {
            // An anchored item's offset is on its parent's (source) timeline.
            let style = format!("ts{}-{}", c.index, i + 1);
            let _ = writeln!(
                x,
                "              <caption lane=\"1\" offset=\"{}\" duration=\"{}\" name=\"{}\" role=\"{role}\">\n                <text placement=\"bottom\"><text-style ref=\"{style}\">{}</text-style></text>\n                <text-style-def id=\"{style}\"><text-style font=\".SF NS Text\" fontSize=\"13\" fontFace=\"Regular\" fontColor=\"1 1 1 1\" backgroundColor=\"0 0 0 1\"/></text-style-def>\n              </caption>",
                time(rate, start),
                time(rate, end - start),
                escape(&text),
                escape(&text),
            );
        }
        x.push_str("            </asset-clip>\n");
    }
    x.push_str("          </spine>\n        </sequence>\n      </project>\n    </event>\n  </library>\n</fcpxml>\n");
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_reduced_fractions_of_the_frame_duration() {
        let ntsc = FrameRate {
            num: 30_000,
            den: 1001,
        };
        assert_eq!(time(ntsc, 0), "0s");
        assert_eq!(time(ntsc, 1), "1001/30000s");
        assert_eq!(time(ntsc, 30), "1001/1000s");
        let pal = FrameRate { num: 25, den: 1 };
        assert_eq!(time(pal, 50), "2s");
        assert_eq!(time(pal, 51), "51/25s");
    }

    #[test]
    fn markup_in_text_is_escaped() {
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
