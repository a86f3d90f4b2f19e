"""The 10-minute espeak talk of the benchmarks (bench-pipeline, bench-asr):
sixteen sentences shuffled eight times with a fixed seed, printed as one
line."""
import random

TALK = [
    "Have you ever wondered why some videos go viral while others are ignored?",
    "The secret is simple, and most creators never learn it.",
    "People decide in the first three seconds whether they will keep watching.",
    "So your opening sentence must promise something valuable.",
    "Here is the biggest mistake I see every single day.",
    "Creators start with a long introduction about themselves.",
    "Nobody cares about your name before they care about your idea.",
    "Instead, open with a question that your viewer really wants answered.",
    "Then deliver the answer quickly, and keep the pace lively.",
    "Short sentences work better than long explanations.",
    "Captions matter too, because many people watch without sound.",
    "Bright words that follow the speaker keep the eyes on the screen.",
    "What should you do after the video ends?",
    "Ask your audience to comment with their own experience.",
    "This simple habit can double your reach within a month.",
    "Try it this week and tell me what happens!",
]

rng = random.Random(7)
talk = list(TALK)
out = []
for _ in range(8):
    rng.shuffle(talk)
    out.extend(talk)
print(" ".join(out))
