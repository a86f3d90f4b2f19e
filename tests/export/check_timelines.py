"""Parses editor exports with OpenTimelineIO and prints what an editor
would see, as JSON: per file, the clips of the first video track
([in, out) in source seconds and name) and how many caption lines it holds.

    python3 check_timelines.py [--edl-rate 25] project.fcpxml project.edl project.otio
"""
import json
import sys
import xml.etree.ElementTree as ET

import opentimelineio as otio


def first_timeline(obj):
    if isinstance(obj, otio.schema.Timeline):
        return obj
    for child in obj.find_children(descended_from_type=otio.schema.Timeline):
        return child
    for child in obj:
        if isinstance(child, otio.schema.Timeline):
            return child
    raise SystemExit(f"no timeline in {obj!r}")


def captions(path, timeline):
    if path.endswith(".fcpxml"):
        return len(ET.parse(path).getroot().findall(".//caption"))
    if path.endswith(".edl"):
        # AA/V events are read as a video and two audio tracks: count the video's.
        return sum(len(c.markers) for c in timeline.video_tracks()[0].find_clips())
    return sum(
        len(list(t.find_clips())) for t in timeline.tracks if t.name == "Captions"
    )


def main(args):
    # A CMX 3600 EDL does not say its frame rate: the reader is told
    # (`--edl-rate N`, the source's; OpenTimelineIO assumes 24 otherwise).
    edl_rate = 24.0
    if args[:1] == ["--edl-rate"]:
        edl_rate, args = float(args[1]), args[2:]
    out = {}
    for path in args:
        extra = {"rate": edl_rate} if path.endswith(".edl") else {}
        timeline = first_timeline(otio.adapters.read_from_file(path, **extra))
        video = timeline.video_tracks()[0]
        clips = []
        for c in video.find_clips():
            r = c.source_range
            clips.append(
                [r.start_time.to_seconds(), r.end_time_exclusive().to_seconds(), c.name]
            )
        out[path.rsplit(".", 1)[-1]] = {
            "clips": clips,
            "captions": captions(path, timeline),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
