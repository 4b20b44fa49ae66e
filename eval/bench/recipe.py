"""Transcription-recipe benchmark: VAD + batched speech windows vs sequential long-form on a long file with
silences and noise, the extra time of word timestamps, and word times against faster-whisper's.

    python -m eval.bench.recipe [--model base] [--mode quantized-self] [--repeats 2] [--threads 2]
                                [--faster-whisper]

1. The paused file: every shared clip, each followed by 8-25 s of silence or low noise (about 4 minutes);
   sequential long-form (the default) and --vad (speech windows, 8 rows per batch), run by run interleaved:
   both times, the ratio, the text of each, and how far each segment after a pause starts from the speech onset.
2. Word timestamps: sequential long-form on the 64-s joined clips (eval.bench.longform) with and without
   word_timestamps, interleaved: both times and the extra cost.
3. --faster-whisper: faster-whisper (CTranslate2, float32, greedy, word_timestamps=True) on the same CTranslate2
   weights, clip by clip: the share of words whose start and end are within 0.1 s of ours.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from .cli import bench_parser
from .harness import (
    add_common_flags,
    ct2_checkpoint,
    faster_whisper,
    interleave,
    joined_clips,
    load_clips,
    manifest_clips,
    manifest_entries,
    own_clock,
    set_threads,
    transcriber,
)

SAMPLE_RATE = 16000


def speech_onset(clip: np.ndarray) -> int:
    """The first 10-ms frame whose RMS reaches 5% of the clip's loudest frame (samples)."""
    frames = clip[: len(clip) // 160 * 160].reshape(-1, 160)
    rms = np.sqrt((frames ** 2).mean(axis=1))
    return int(np.argmax(rms >= 0.05 * rms.max())) * 160


def paused_clips(folder: Path, pauses: list[tuple[float, str]], names: list[str] | None = None
                 ) -> tuple[np.ndarray, list[float]]:
    """(audio, speech onset of each clip in seconds): clips in manifest order (or `names`), each clip after the
    first preceded by `pauses[i]` = (seconds, 'silence' or 'noise'; noise is Gaussian, RMS 0.02)."""
    from asr_specdec.whisper.io.audio import load_audio

    entries = manifest_entries(folder)
    names = names or [entry["audio"] for entry in entries]
    rng = np.random.default_rng(0)
    parts, onsets, position = [], [], 0
    for index, name in enumerate(names):
        if index:
            seconds, kind = pauses[(index - 1) % len(pauses)]
            count = int(seconds * SAMPLE_RATE)
            gap = (rng.standard_normal(count) * 0.02 if kind == "noise" else np.zeros(count)).astype(np.float32)
            parts.append(gap)
            position += count
        clip = load_audio(folder / name)
        onsets.append((position + speech_onset(clip)) / SAMPLE_RATE)
        parts.append(clip)
        position += len(clip)
    return np.concatenate(parts), onsets


def onset_errors(segments, onsets: list[float]) -> list[float]:
    """For each speech onset after the first, |onset - start of the first segment that ends after it|."""
    errors = []
    for onset in onsets[1:]:
        following = [segment.start for segment in segments if segment.end > onset]
        errors.append(abs(following[0] - onset) if following else float("inf"))
    return errors


def matched_words(theirs: list, mine: list) -> list[tuple]:
    """Pairs of the same word in two transcripts of one clip (difflib's matching blocks over the word texts), so
    that one split differently ("cold-hearted" or "coldhearted") does not shift the pairs after it."""
    from difflib import SequenceMatcher

    def key(word) -> str:
        return word.word.strip().lower()

    matcher = SequenceMatcher(a=[key(word) for word in theirs], b=[key(word) for word in mine], autojunk=False)
    return [(theirs[block.a + offset], mine[block.b + offset]) for block in matcher.get_matching_blocks()
            for offset in range(block.size)]


def interleaved(runs: dict, audio: np.ndarray, repeats: int) -> tuple[dict, dict]:
    """(name -> each run's seconds on the transcriber's clock, name -> the last result), runs taking turns."""
    rounds = interleave(runs, [audio], repeats, warm_up=False, seconds_of=own_clock)
    return ({name: rounds.seconds[name][0] for name in runs}, {name: rounds.results[name][0] for name in runs})


def bench_vad(asr, audio: np.ndarray, onsets: list[float], repeats: int) -> None:
    seconds, results = interleaved({"sequential": asr.transcribe,
                                    "vad+batched": lambda samples: asr.transcribe(samples, vad_filter=True)},
                                   audio, repeats)
    print(f"\npaused file, {len(audio) / SAMPLE_RATE:.0f} s, {len(onsets)} clips:")
    for name, values in seconds.items():
        errors = onset_errors(results[name].segments, onsets)
        print(f"  {name}: {' / '.join(f'{value:.2f}' for value in values)} s; segments after a pause start within "
              f"0.5 s of the onset: {sum(error <= 0.5 for error in errors)}/{len(errors)} (worst "
              f"{max(errors):.2f} s); text: {results[name].text[:300]!r}")
    print(f"  VAD + batched is {sum(seconds['sequential']) / sum(seconds['vad+batched']):.2f}x the speed of "
          f"sequential long-form")


def bench_words(asr, audio: np.ndarray, repeats: int) -> None:
    seconds, results = interleaved({"without words": asr.transcribe,
                                    "word timestamps": lambda samples: asr.transcribe(samples, word_timestamps=True)},
                                   audio, repeats)
    extra = sum(seconds["word timestamps"]) / sum(seconds["without words"]) - 1
    words = sum(len(segment.words) for segment in results["word timestamps"].segments)
    print(f"\nword timestamps, {len(audio) / SAMPLE_RATE:.0f} s joined clips: " + ", ".join(
        f"{name} {' / '.join(f'{value:.2f}' for value in values)} s" for name, values in seconds.items())
        + f"; extra cost {extra:+.1%}; {words} words")


def compare_faster_whisper(model_name: str, folder: Path, threads: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        ct2_dir, missing = ct2_checkpoint(model_name, Path(scratch))
        if ct2_dir is None:
            raise SystemExit(f"error: {missing}")
        reference = faster_whisper(ct2_dir, "float32", threads)
        ours = transcriber(model_name, "off")
        clips = manifest_clips(folder)
        compared = starts = ends = differing = 0
        for audio in load_clips(clips):
            segments, _ = reference.transcribe(audio, language="en", beam_size=1, best_of=1, temperature=0.0,
                                               word_timestamps=True, condition_on_previous_text=False)
            theirs = [word for segment in segments for word in segment.words]
            mine = [word for segment in ours.transcribe(audio, word_timestamps=True).segments
                    for word in segment.words]
            differing += [word.word for word in theirs] != [word.word for word in mine]
            for their, my in matched_words(theirs, mine):
                compared += 1
                starts += int(abs(their.start - my.start) <= 0.1 + 1e-6)
                ends += int(abs(their.end - my.end) <= 0.1 + 1e-6)
    print(f"\nword times vs faster-whisper ({model_name}, float32, greedy, same CTranslate2 weights): {compared} "
          f"words, start within 0.1 s {starts / compared:.1%}, end within 0.1 s {ends / compared:.1%} "
          f"({differing} of {len(clips)} clips with a different word sequence: the same words compared)")


PAUSES = [(25.0, "silence"), (20.0, "noise"), (12.0, "silence"), (8.0, "noise")]


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.recipe")
    add_common_flags(parser, main_help="main model", repeats=2)
    parser.add_argument("--mode", default="quantized-self")
    parser.add_argument("--faster-whisper", action="store_true", help="also compare word times with faster-whisper")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    folder = Path(args.audio)
    asr = transcriber(args.main, args.mode)
    asr.transcribe(np.zeros(SAMPLE_RATE, dtype=np.float32))  # warm-up
    print(f"model {args.main}, mode {args.mode}, {args.threads} threads, {args.repeats} runs each, interleaved")
    audio, onsets = paused_clips(folder, PAUSES)
    bench_vad(asr, audio, onsets, args.repeats)
    bench_words(asr, joined_clips(folder), args.repeats)
    if args.faster_whisper:
        compare_faster_whisper(args.main, folder, args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
