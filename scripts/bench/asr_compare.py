"""Compares `clipforge transcribe` with faster-whisper per file (bench-asr).

Reads `<file>\t<manifest language>` lines on stdin and, from the folder in
argv[1], `<name>.ours.json` and `<name>.fw.json`. Neither transcript is
ground truth, so the words each lost against the other are both printed:
the two word sequences are aligned (difflib, on lower-cased letters and
digits; Chinese and Japanese per character) and the unmatched runs of each
side listed. Then totals, the time ratios and the targets of issue 27.
"""
import difflib
import json
import os
import sys
import unicodedata

NO_SPACES = {"zh", "ja", "th", "lo", "my", "yue"}


def tokens(words, language):
    out = []
    for w in words:
        t = "".join(c for c in unicodedata.normalize("NFKC", w["text"]).lower() if c.isalnum())
        if not t:
            continue
        out.extend(list(t) if language in NO_SPACES else [t])
    return out


def lost(a, b):
    """Runs of `a` with no counterpart in `b`: (count, [phrases])."""
    m = difflib.SequenceMatcher(None, a, b, autojunk=False)
    count, runs = 0, []
    for op, i1, i2, _, _ in m.get_opcodes():
        if op in ("delete", "replace") and i2 > i1:
            count += i2 - i1
            runs.append(" ".join(a[i1:i2]))
    return count, runs


def bad_chars(words):
    return sum(w["text"].count("\ufffd") for w in words)


def main():
    folder = sys.argv[1]
    rows, total_ours, total_fw = [], 0.0, 0.0
    failures = []
    for line in sys.stdin:
        path, manifest_lang = line.rstrip("\n").split("\t")
        name = os.path.basename(path)
        ours = json.load(open(os.path.join(folder, name + ".ours.json")))
        fw = json.load(open(os.path.join(folder, name + ".fw.json")))
        lang = manifest_lang
        a, b = tokens(fw["words"], lang), tokens(ours["words"], lang)
        we_lost, we_lost_runs = lost(a, b)
        fw_lost, fw_lost_runs = lost(b, a)
        total_ours += ours["seconds"]
        total_fw += fw["seconds"]
        ratio = ours["seconds"] / max(fw["seconds"], 1e-9)
        print(f"{name}")
        print(f"  language: ours {ours['language']} ({ours.get('languageProbability') or 0:.2f}), "
              f"faster-whisper {fw['language']} ({fw['languageProbability']:.2f}), manifest {manifest_lang}")
        print(f"  seconds: ours {ours['seconds']:.2f}, faster-whisper {fw['seconds']:.2f}, ratio {ratio:.3f}")
        print(f"  units: ours {len(b)}, faster-whisper {len(a)}; lost by us {we_lost}, lost by faster-whisper {fw_lost}"
              f"; U+FFFD in ours {bad_chars(ours['words'])}")
        for label, runs in (("    we lost:", we_lost_runs), ("    fw lost:", fw_lost_runs)):
            if runs:
                shown = " | ".join(runs[:12]) + (" | …" if len(runs) > 12 else "")
                print(f"{label} {shown}")
        if ours["language"] != manifest_lang:
            failures.append(f"{name}: language {ours['language']} (manifest {manifest_lang})")
        if ratio > 1.0:
            failures.append(f"{name}: time ratio {ratio:.3f} > 1.0")
        if manifest_lang == "en" and we_lost > fw_lost:
            failures.append(f"{name}: lost {we_lost} words against faster-whisper's {fw_lost}")
        if bad_chars(ours["words"]):
            failures.append(f"{name}: U+FFFD in the words")
        rows.append((name, ratio))
    print()
    print(f"total: ours {total_ours:.2f} s, faster-whisper {total_fw:.2f} s, "
          f"ratio {total_ours / max(total_fw, 1e-9):.3f} (target <= 0.8; every file <= 1.0)")
    if total_ours / max(total_fw, 1e-9) > 0.8:
        failures.append(f"total time ratio {total_ours / total_fw:.3f} > 0.8")
    print("targets: " + ("all met" if not failures else f"{len(failures)} missed"))
    for f in failures:
        print(f"  missed: {f}")


main()
