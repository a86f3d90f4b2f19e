//! OpenTimelineIO JSON (`Timeline.1`): a video and an audio track holding
//! one clip per exported clip, each an `ExternalReference` to the source with
//! its in/out as `source_range`, and a "Captions" track of caption
//! generators (`GeneratorReference`, kind `Caption`, the text in its
//! parameters) at the lines' places, with gaps between them.

use serde_json::{json, Value};

use super::timeline::{one_line, FrameRate, Timeline};

fn rt(rate: FrameRate, frames: u64) -> Value {
    json!({
        "OTIO_SCHEMA": "RationalTime.1",
        "rate": rate.num as f64 / rate.den as f64,
        "value": frames as f64,
    })
}

fn range(rate: FrameRate, start: u64, len: u64) -> Value {
    json!({
        "OTIO_SCHEMA": "TimeRange.1",
        "start_time": rt(rate, start),
        "duration": rt(rate, len),
    })
}

fn item(schema: &str, name: &str, source_range: Value) -> serde_json::Map<String, Value> {
    let v = json!({
        "OTIO_SCHEMA": schema,
        "metadata": {},
        "name": name,
        "source_range": source_range,
        "effects": [],
        "markers": [],
        "enabled": true,
        "color": null,
    });
    match v {
        Value::Object(m) => m,
        _ => unreachable!("a json object literal"),
    }
}

fn clip(name: &str, source_range: Value, reference: Value) -> Value {
    let mut c = item("Clip.2", name, source_range);
    c.insert(
        "media_references".into(),
        json!({ "DEFAULT_MEDIA": reference }),
    );
    c.insert("active_media_reference_key".into(), json!("DEFAULT_MEDIA"));
    Value::Object(c)
}

fn track(name: &str, kind: &str, children: Vec<Value>) -> Value {
    let mut t = item("Track.1", name, Value::Null);
    t.insert("children".into(), Value::Array(children));
    t.insert("kind".into(), json!(kind));
    Value::Object(t)
}

pub fn to_otio(t: &Timeline) -> String {
    let rate = t.rate();
    let source_frames = rate.frames(t.source.duration).max(1);
    let reference = json!({
        "OTIO_SCHEMA": "ExternalReference.1",
        "metadata": {},
        "name": t.source.name,
        "available_range": range(rate, 0, source_frames),
        "available_image_bounds": null,
        "target_url": t.source.url,
    });
    let placed = t.placed();
    let media_clips: Vec<Value> = placed
        .iter()
        .map(|(c, p)| {
            let mut v = clip(
                &format!("{}. {}", c.index, one_line(&c.title)),
                range(rate, p.source_in, p.len()),
                reference.clone(),
            );
            v["metadata"] = json!({ "clipforge": { "index": c.index } });
            v
        })
        .collect();
    // Captions on the record timeline: a gap up to each line, then the line.
    let mut captions = Vec::new();
    let mut at = 0u64;
    for (c, p) in &placed {
        for (start, end, text) in t.caption_frames(c, *p) {
            let rec_start = p.record_in + (start - p.source_in);
            if rec_start > at {
                captions.push(Value::Object(item(
                    "Gap.1",
                    "",
                    range(rate, 0, rec_start - at),
                )));
            }
            let len = end - start;
            captions.push(clip(
                &text,
                range(rate, 0, len),
                json!({
                    "OTIO_SCHEMA": "GeneratorReference.1",
                    "metadata": {},
                    "name": text,
                    "available_range": null,
                    "available_image_bounds": null,
                    "generator_kind": "Caption",
                    "parameters": { "text": text, "language": t.language },
                }),
            ));
            at = rec_start + len;
        }
    }
    let mut stack = item("Stack.1", "tracks", Value::Null);
    stack.insert(
        "children".into(),
        json!([
            track("Video", "Video", media_clips.clone()),
            track("Audio", "Audio", media_clips),
            track("Captions", "Video", captions),
        ]),
    );
    let timeline = json!({
        "OTIO_SCHEMA": "Timeline.1",
        "metadata": {},
        "name": t.name,
        "global_start_time": rt(rate, 0),
        "tracks": Value::Object(stack),
    });
    serde_json::to_string_pretty(&timeline).unwrap_or_default()
}
