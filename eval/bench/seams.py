"""Words at long-form window seams: every shared clip joined into one file (with 0.5 s and with 12 s of silence
after each), transcribed by sequential long-form decoding, ours and faster-whisper's on the same CTranslate2
weights (float32, greedy), scored by WER against the clips' own transcripts.

    python -m eval.bench.seams [--main base] [--gaps 0.5,12] [--threads 2]

A clip's reference is its manifest transcript where it has one, else faster-whisper's transcript of the clip
alone (a choice that can only favour faster-whisper). faster-whisper runs twice: with its default conditioning
on the previous text and without it (ours: without, its default). Prints one line per file and system: WER,
words, and the clips whose first reference word is missing from the transcript."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..metrics import normalize, wer
from .cli import bench_parser
from .harness import (
    add_common_flags,
    ct2_checkpoint,
    faster_whisper,
    joined_clips,
    manifest_entries,
    set_threads,
    transcriber,
)


def references(folder: Path, faster) -> list[str]:
    from asr_specdec.whisper.io.audio import load_audio

    return [entry["reference"] or faster_text(faster, load_audio(folder / entry["audio"]), False)
            for entry in manifest_entries(folder)]


def faster_text(model, audio, condition: bool) -> str:
    segments, _ = model.transcribe(audio, language="en", beam_size=1, best_of=1, temperature=0.0,
                                   condition_on_previous_text=condition)
    return "".join(segment.text for segment in segments)


def lost_first_words(clips: list[str], text: str) -> list[str]:
    """The clips whose opening (first two normalised words, in sequence) is not in the transcript."""
    words = normalize(text).split()
    joined = " ".join(words)
    lost = []
    for clip in clips:
        head = normalize(clip).split()[:2]
        if head and f" {' '.join(head)} " not in f" {joined} ":
            lost.append(" ".join(head))
    return lost


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.seams")
    add_common_flags(parser, main_help="main model (a pack with CTranslate2 weights)", repeats=False)
    parser.add_argument("--gaps", default="0.5,12", help="seconds of silence after each clip, comma-separated")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    folder = Path(args.audio)
    with tempfile.TemporaryDirectory() as scratch:
        ct2_dir, missing = ct2_checkpoint(args.main, Path(scratch))
        if ct2_dir is None:
            raise SystemExit(f"error: {missing}")
        faster = faster_whisper(ct2_dir, "float32", args.threads)
        ours = transcriber(args.main, "off", compute_type="float32")
        clips = references(folder, faster)
        reference = " ".join(clips)
        print(f"model {args.main}, float32, greedy, {args.threads} threads; {len(clips)} clips, "
              f"{len(normalize(reference).split())} reference words")
        for gap in (float(value) for value in args.gaps.split(",")):
            audio = joined_clips(folder, gap)
            texts = {"ours (sequential, default)": ours.transcribe(audio).text,
                     "faster-whisper (conditioned, its default)": faster_text(faster, audio, True),
                     "faster-whisper (not conditioned)": faster_text(faster, audio, False)}
            for name, text in texts.items():
                lost = lost_first_words(clips, text)
                print(f"{gap:g}-s gaps ({len(audio) / 16000:.0f} s): {name}: WER {wer([reference], [text]):.1%}; "
                      f"clip openings missing: {', '.join(lost) if lost else 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
