"""Frames, faces and caption boxes for make bench-quality (quality.py):
sampling a clip and the same instants of its source, the two-cascade Haar
face search with its skin check, the caption boxes of a clip's own ASS
rendered alone, and the pictures of the worst samples. quality.py's
docstring says what each measure means.
"""

import json
import math
import os
import subprocess
import sys

import cv2
import numpy as np

DET_SHORT = 600          # detection frames: short side in pixels
MIN_FACE_SHARE = 0.04    # faces at least this share of the short side
SAMPLE_FPS = 2
GREY = 128
CAPTION_DIFF = 40        # a pixel this far from the grey is caption (its box)
INPAINT_DIFF = 12        # ... or at least its anti-aliased edge (inpainted)
SAVE_PER_KIND = 3
MIN_SKIN = 0.3
PERSIST_IOU = 0.3        # the same face in the next sample (0.5 s on) overlaps this much


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def probe(path):
    """Width, height, duration and frame rate (a string such as 24/1) of a video."""
    out = sh(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
              "stream=width,height,r_frame_rate:format=duration", "-of", "json", path]).stdout
    j = json.loads(out)
    s = j["streams"][0]
    return int(s["width"]), int(s["height"]), float(j["format"]["duration"]), s["r_frame_rate"]


def det_size(w, h):
    """The detection frame size: short side DET_SHORT, even, aspect kept."""
    k = DET_SHORT / min(w, h)
    return int(round(w * k / 2)) * 2, int(round(h * k / 2)) * 2


def frame_stream(cmd, size):
    """Yields bgr24 frames of `size` from an ffmpeg command writing rawvideo."""
    w, h = size
    n = w * h * 3
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        while True:
            buf = p.stdout.read(n)
            if len(buf) < n:
                break
            yield np.frombuffer(buf, np.uint8).reshape(h, w, 3)
    finally:
        p.stdout.close()
        p.wait()


# The first frame at or after each sample instant k / SAMPLE_FPS. (ffmpeg's
# fps filter would give the last frame before the next half-interval, up to
# 0.25 s late, which the caption render at the exact instants would not
# match.)
SELECT = f"select='gte(t,selected_n/{SAMPLE_FPS})'"


def sampled(path, size, ss=None, dur=None):
    cmd = ["ffmpeg", "-nostdin", "-v", "error"]
    if ss is not None:
        cmd += ["-ss", f"{ss:.3f}"]
    if dur is not None:
        cmd += ["-t", f"{dur:.3f}"]
    cmd += ["-i", path, "-an", "-vf", f"{SELECT},scale={size[0]}:{size[1]}:flags=area,setsar=1",
            "-vsync", "0", "-f", "rawvideo", "-pix_fmt", "bgr24", "-"]
    return frame_stream(cmd, size)


def frame_at(path, t, size):
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-ss", f"{t:.3f}", "-i", path, "-an", "-frames:v", "1",
           "-vf", f"scale={size[0]}:{size[1]}:flags=area,setsar=1", "-f", "rawvideo", "-pix_fmt", "bgr24", "-"]
    return next(iter(frame_stream(cmd, size)), None)


def to_source_offset(cuts, start, t):
    """Clip time -> seconds from `start` in the source (filler cuts skipped)."""
    out = t
    for a, b in cuts:
        if out >= a - start:
            out += b - a
    return out


def source_samples(src, start, cuts, n, size):
    if not cuts:
        return sampled(src, size, start, n / SAMPLE_FPS)
    return (frame_at(src, start + to_source_offset(cuts, start, k / SAMPLE_FPS), size) for k in range(n))


def caption_frames(ass, clip_size, rate, dur, size, work):
    """The clip's captions rendered alone on grey, at the clip's own frame
    times (its frame rate) picked as the clip's frames are."""
    text = open(ass, encoding="utf-8").read()
    keep = [l for l in text.splitlines()
            if not (l.startswith("Dialogue:") and l.split(",", 4)[3].strip() == "Watermark")]
    only = os.path.join(work, os.path.basename(ass) + ".captions.ass")
    open(only, "w", encoding="utf-8").write("\n".join(keep) + "\n")
    esc = only.replace("\\", "\\\\").replace("'", "\\'").replace(":", "\\:")
    w, h = clip_size
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
           f"color=c=0x{GREY:02x}{GREY:02x}{GREY:02x}:s={w}x{h}:r={rate}:d={dur:.3f}",
           "-vf", f"{SELECT},ass=filename='{esc}',scale={size[0]}:{size[1]}:flags=area,setsar=1",
           "-vsync", "0", "-f", "rawvideo", "-pix_fmt", "bgr24", "-"]
    return frame_stream(cmd, size)


def caption_mask(img, diff=CAPTION_DIFF):
    return np.abs(img.astype(np.int16) - GREY).max(axis=2) > diff


def without_captions(clip, caption):
    """The clip frame with its caption pixels (anti-aliased edges and a few
    pixels around them included) inpainted, so that caption text can neither
    make nor hide a face for the detector."""
    mask = cv2.dilate(caption_mask(caption, INPAINT_DIFF).astype(np.uint8) * 255, np.ones((9, 9), np.uint8))
    if not mask.any():
        return clip
    return cv2.inpaint(clip, mask, 3, cv2.INPAINT_TELEA)


def caption_boxes(img):
    """Bounding boxes (x, y, w, h) of each band of caption rows."""
    mask = caption_mask(img)
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return []
    gap = max(2, img.shape[0] // 100)
    bands, first, prev = [], rows[0], rows[0]
    for r in rows[1:]:
        if r - prev > gap:
            bands.append((first, prev))
            first = r
        prev = r
    bands.append((first, prev))
    boxes = []
    for a, b in bands:
        cols = np.flatnonzero(mask[a:b + 1].any(axis=0))
        boxes.append((int(cols[0]), int(a), int(cols[-1] - cols[0] + 1), int(b - a + 1)))
    return boxes


def iou(a, b):
    x = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    y = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    return x * y / float(a[2] * a[3] + b[2] * b[3] - x * y)


class Faces:
    """Frontal faces: haarcascade_frontalface_default (3 neighbours) boxes
    that haarcascade_frontalface_alt2 (3 neighbours) confirms (IoU >= 0.4);
    one cascade alone fires on jeans, textured walls and caption text, and
    5 neighbours miss large upscaled faces. Turned faces (three-quarter
    and side views, which both frontal cascades miss): haarcascade_profileface
    boxes (3 neighbours) on the frame and on its mirror image (the cascade
    knows one side only) that do not overlap a frontal face already found.
    A box with hardly any skin colour in its middle (dark shirts, jeans) is
    dropped."""

    def __init__(self):
        self.cascades = []
        for name in ("default", "alt2"):
            path = os.path.join(cv2.data.haarcascades, f"haarcascade_frontalface_{name}.xml")
            c = cv2.CascadeClassifier(path)
            if c.empty():
                sys.exit(f"cannot load {path}")
            self.cascades.append(c)
        path = os.path.join(cv2.data.haarcascades, "haarcascade_profileface.xml")
        self.profile = cv2.CascadeClassifier(path)
        if self.profile.empty():
            sys.exit(f"cannot load {path}")

    def __call__(self, img):
        gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
        m = max(24, int(round(MIN_FACE_SHARE * min(img.shape[:2]))))
        out = []
        for f in self.cascades[0].detectMultiScale(gray, 1.1, 3, minSize=(m, m)):
            x, y, w, h = (int(v) for v in f)
            # alt2 only around the candidate (the same as on the whole frame
            # for this box, at a fraction of the time)
            x0, y0 = max(0, x - w // 2), max(0, y - h // 2)
            roi = gray[y0:y + h + h // 2, x0:x + w + w // 2]
            near = self.cascades[1].detectMultiScale(roi, 1.1, 3, minSize=(max(m, int(w * 0.6)),) * 2,
                                                     maxSize=(int(w * 1.6) + 1,) * 2)
            if (any(iou((x, y, w, h), (gx + x0, gy + y0, gw, gh)) >= 0.4 for gx, gy, gw, gh in near)
                    and skin_share(img, (x, y, w, h)) >= MIN_SKIN):
                out.append((x, y, w, h))
        width = gray.shape[1]
        turned = [tuple(int(v) for v in f) for f in self.profile.detectMultiScale(gray, 1.1, 3, minSize=(m, m))]
        turned += [(width - int(x) - int(w), int(y), int(w), int(h))
                   for x, y, w, h in self.profile.detectMultiScale(cv2.flip(gray, 1), 1.1, 3, minSize=(m, m))]
        for box in turned:
            if not any(intersects(box, f) for f in out) and skin_share(img, box) >= MIN_SKIN:
                out.append(box)
        return out


def skin_share(img, box):
    """Share of the box's central 60 % in a broad YCrCb skin range (faces in
    this corpus: >= 0.7; cascade hits on dark shirts, jeans, white walls: 0)."""
    x, y, w, h = box
    roi = cv2.cvtColor(img[y + h // 5:y + h * 4 // 5, x + w // 5:x + w * 4 // 5], cv2.COLOR_BGR2YCrCb)
    cr, cb = roi[..., 1], roi[..., 2]
    return float(((cr >= 133) & (cr <= 180) & (cb >= 77) & (cb <= 135)).mean()) if roi.size else 0.0


def intersects(a, b):
    return (min(a[0] + a[2], b[0] + b[2]) > max(a[0], b[0])
            and min(a[1] + a[3], b[1] + b[3]) > max(a[1], b[1]))


def picture(path, src, src_faces, clip, clip_faces, caps, label):
    s = src.copy()
    c = clip.copy()
    for x, y, w, h in src_faces:
        cv2.rectangle(s, (x, y), (x + w, y + h), (0, 255, 0), 2)
    for x, y, w, h in caps:
        cv2.rectangle(c, (x, y), (x + w, y + h), (0, 0, 255), 2)
    for x, y, w, h in clip_faces:
        cv2.rectangle(c, (x, y), (x + w, y + h), (0, 255, 0), 2)
    k = c.shape[0] / s.shape[0]
    s = cv2.resize(s, (int(round(s.shape[1] * k)), c.shape[0]), interpolation=cv2.INTER_AREA)
    img = np.hstack([s, np.full((c.shape[0], 8, 3), 255, np.uint8), c])
    cv2.putText(img, label, (8, 28), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (0, 0, 0), 4, cv2.LINE_AA)
    cv2.putText(img, label, (8, 28), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (255, 255, 255), 1, cv2.LINE_AA)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cv2.imwrite(path, img, [cv2.IMWRITE_JPEG_QUALITY, 85])


def majority(raw, k):
    """raw[k] smoothed over k-1..k+1: isolated detections and isolated misses
    (one sample, 0.5 s) do not count; at the ends raw[k] decides ties."""
    near = raw[max(0, k - 1):k + 2]
    yes = sum(near)
    return yes * 2 > len(near) or (yes * 2 == len(near) and raw[k])


def measure_frames(src, clip_path, ass, start, cuts, clip_size, rate, src_wh, dur, faces, work, frames_dir, tag):
    """Face kept and caption/face overlaps of one clip, and the saved pictures."""
    n = max(1, int(math.ceil(dur * SAMPLE_FPS - 1e-6)))
    csize = det_size(*clip_size)
    ssize = det_size(*src_wh)
    clips = sampled(clip_path, csize)
    sources = source_samples(src, start, cuts, n, ssize)
    captions = caption_frames(ass, clip_size, rate, dur, csize, work) if ass and os.path.exists(ass) else None
    r = {"samples": 0, "src_face": 0, "kept": 0, "overlaps": 0, "captioned": 0, "saved": [],
         "raw_src_face": 0, "raw_kept": 0, "raw_overlaps": 0}
    saved = {"face-lost": 0, "overlap": 0}
    raw_s, raw_c, recent = [], [], {}  # recent: the last three samples
    clip_boxes = lambda k: recent[k][3] if k in recent else []

    def save(k, kind):
        if saved[kind] >= SAVE_PER_KIND:
            return
        sf, fs, cf, fc, caps = recent[k]
        t = k / SAMPLE_FPS
        path = os.path.join(frames_dir, f"{tag}-{kind}-t{t:05.1f}.jpg")
        picture(path, sf, fs, cf, fc, caps,
                f"{tag} t={t:.1f}s (source {start + to_source_offset(cuts, start, t):.1f}s) {kind}")
        r["saved"].append(path)
        saved[kind] += 1

    def decide(k):
        """Face kept and overlap of sample k, once k + 1 is known (or is the last)."""
        s_face, c_face = majority(raw_s, k), majority(raw_c, k)
        r["src_face"] += s_face
        r["kept"] += s_face and c_face
        if s_face and not c_face:
            save(k, "face-lost")
        caps = recent[k][4]
        over = [f for f in clip_boxes(k) if any(intersects(f, c) for c in caps)]
        r["raw_overlaps"] += bool(over)
        # As for "face kept", a box in one sample alone (0.5 s) is detector
        # noise: an overlap needs the face in a neighbouring sample too, at
        # the same place.
        near = clip_boxes(k - 1) + clip_boxes(k + 1)
        if any(iou(f, g) >= PERSIST_IOU for f in over for g in near):
            r["overlaps"] += 1
            save(k, "overlap")

    for k, (cf, sf) in enumerate(zip(clips, sources)):
        if k >= n or sf is None:
            break
        cap = next(captions, None) if captions is not None else None
        caps = caption_boxes(cap) if cap is not None else []
        fs, fc = faces(sf), faces(without_captions(cf, cap) if cap is not None else cf)
        recent[k] = (sf, fs, cf, fc, caps)
        recent.pop(k - 3, None)
        raw_s.append(bool(fs))
        raw_c.append(bool(fc))
        r["samples"] += 1
        r["captioned"] += bool(caps)
        r["raw_src_face"] += bool(fs)
        r["raw_kept"] += bool(fs) and bool(fc)
        if k >= 1:
            decide(k - 1)
    if raw_s:
        decide(len(raw_s) - 1)
    for g in (clips, sources, captions):
        if hasattr(g, "close"):
            g.close()
    if captions is None:
        r["captions"] = "no .ass kept: overlaps not measured"
    return r
