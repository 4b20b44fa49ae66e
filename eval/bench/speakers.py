"""Speaker-label benchmark: who spoke when, scored with pyannote.metrics' diarization error rate (collar 0.25 s,
overlapped speech scored) on conversations made from the shared clips, word-level speaker accuracy, the stereo
file with a voice per channel, and what diarizing costs on top of transcription.

    python -m eval.bench.speakers [--main base] [--repeats 3] [--threads N] [--audio DIR]

Conversations (eval/bench/conversations.py): 2, 3 and 4 voices of the shared clips taking turns of about 4 s, with
0.3-0.5 s pauses, back to back, or overlapping by 0.3 s; the reference speech of each turn is where Silero VAD
hears speech in that clip alone. Diarization takes its speech from the transcript's words (no VAD of its own), so
DER depends on the transcribing model (`--main`): each conversation is transcribed once with `diarize=` (count
given) and word timestamps, and its turns with the count estimated come from the same transcription
(speakers/transcript.py's speaker_turns). DER is given over all conversations together, with the number of speakers
given and estimated. Word accuracy: on those same transcriptions (count given); a word is right when its speaker,
mapped to a voice by DER's optimal mapping, is the voice speaking at its middle (the nearest turn's in a pause).
Stereo: ../shared/audio/peer/stereo_diarization.wav, each word must carry its channel's speaker (left SPEAKER_00,
right SPEAKER_01) and be a word of that channel transcribed alone. Cost: the 64-s joined clips
(eval/bench/longform.py) transcribed by default and with `diarize=True`, the two taking turns run by run; the ratio
of the best times (diarizing turns word timestamps on: their cost is in it), wall-clock and the process's CPU time
(all its threads: on a machine shared with other work, the CPU ratio is the steadier one). "After the
transcription" is the time diarizing adds once the transcription is done: the speech from the words, the encoder,
clustering and labels.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from .cli import bench_parser
from .harness import add_common_flags, interleave, joined_clips, process_timed, set_threads, transcriber

COLLAR = 0.25


def annotation(turns):
    from pyannote.core import Annotation, Segment

    annotated = Annotation()
    for index, (start, end, speaker) in enumerate(turns):
        annotated[Segment(start, end), index] = speaker
    return annotated


def diarized(whisper, talks) -> list[tuple]:
    """(conversation, its transcription diarized with the count given, its turns with the count estimated)."""
    from asr_specdec.whisper.speakers.options import SpeakerOptions
    from asr_specdec.whisper.speakers.transcript import speaker_turns

    rows = []
    for talk in talks:
        given = whisper.transcribe(talk.samples, diarize=voices_in(talk), word_timestamps=True)
        rows.append((talk, given, speaker_turns(talk.samples, given, SpeakerOptions())))
    return rows


def voices_in(talk) -> int:
    return len({voice for *_, voice in talk.turns})


def error_rates(rows) -> list[str]:
    from pyannote.metrics.diarization import DiarizationErrorRate

    lines = []
    for known in (True, False):
        metric = DiarizationErrorRate(collar=COLLAR)
        found = []
        for talk, given, estimated in rows:
            turns = given.turns if known else estimated
            rate = metric(annotation(talk.turns), annotation([(t.start, t.end, t.speaker) for t in turns]))
            found.append(f"{talk.name}: {rate:.1%} ({len({turn.speaker for turn in turns})}/{voices_in(talk)})")
        lines.append(f"DER, speakers {'given' if known else 'estimated'}: {abs(metric):.1%} over "
                     f"{len(rows)} conversations; " + "; ".join(found))
    return lines


def word_accuracy(rows) -> str:
    from pyannote.metrics.diarization import DiarizationErrorRate

    right = total = 0
    for talk, result, _ in rows:
        mapping = DiarizationErrorRate().optimal_mapping(
            annotation(talk.turns), annotation([(t.start, t.end, t.speaker) for t in result.turns]))
        for word in (word for segment in result.segments for word in segment.words):
            middle = (word.start + word.end) / 2
            voice = min(talk.turns, key=lambda turn: 0 if turn[0] <= middle <= turn[1]
                        else min(abs(middle - turn[0]), abs(middle - turn[1])))[2]
            right += mapping.get(word.speaker) == voice
            total += 1
    return f"word speaker accuracy, speakers given: {right}/{total} = {right / max(total, 1):.1%}"


def stereo_words(whisper, path: Path) -> str:
    from asr_specdec.whisper.io.audio import load_stereo

    result = whisper.transcribe(str(path), diarize=True, word_timestamps=True)
    labelled = total = 0
    for speaker, channel in zip(("SPEAKER_00", "SPEAKER_01"), load_stereo(path)):
        alone = [word.word for segment in whisper.transcribe(channel, word_timestamps=True).segments
                 for word in segment.words]
        mine = [word for segment in result.segments for word in segment.words if segment.speaker == speaker]
        labelled += sum(word.speaker == speaker for word in mine) if [w.word for w in mine] == alone else 0
        total += len(alone)
    return f"stereo_diarization.wav: {labelled}/{total} words labelled with their channel's speaker"


def cost(whisper, audio, repeats: int) -> str:
    whisper.transcribe(audio[: 5 * 16000], diarize=True)  # warm-up: the models' first calls
    cpu = {"default": [], "diarize": []}
    diarizing = []

    def record(name, index, outcome, seconds):
        result, cpu_seconds = outcome
        cpu[name].append(cpu_seconds)
        if name == "diarize":
            diarizing.append(result.timings["diarization_seconds"])

    runs = {"default": lambda samples: process_timed(whisper.transcribe, samples),
            "diarize": lambda samples: process_timed(whisper.transcribe, samples, diarize=True)}
    rounds = interleave(runs, [audio], repeats, warm_up=False, each=record)
    seconds = {name: rounds.seconds[name][0] for name in runs}
    best = {name: min(values) for name, values in seconds.items()}
    best_cpu = {name: min(values) for name, values in cpu.items()}
    runs = "; ".join(f"{name} {' / '.join(f'{value:.2f}' for value in values)} s" for name, values in seconds.items())
    return (f"cost on {len(audio) / 16000:.0f} s ({whisper.mode}): {runs}; diarized / default (best) "
            f"{best['diarize'] / best['default']:.3f} ({best['diarize'] / best['default'] - 1:+.1%}); CPU time "
            f"(best) default {best_cpu['default']:.2f} s, diarize {best_cpu['diarize']:.2f} s "
            f"({best_cpu['diarize'] / best_cpu['default'] - 1:+.1%}); after the transcription {min(diarizing):.2f} s "
            f"at best")


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.speakers")
    add_common_flags(parser, repeats=3, audio_help="folder with manifest.jsonl and peer/")
    parser.add_argument("--skip", default="", help="parts to leave out, comma-separated: der,words,stereo,cost")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    from eval.bench.conversations import conversations

    folder, skip = Path(args.audio), set(args.skip.split(","))
    talks = conversations(folder)
    print(f"{len(talks)} conversations, {sum(len(t.samples) for t in talks) / 16000:.0f} s; {args.threads} threads; "
          f"{args.main}")
    whisper = transcriber(args.main)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = diarized(whisper, talks) if not {"der", "words"} <= skip else []
        if "der" not in skip:
            print("\n".join(error_rates(rows)), flush=True)
        if "words" not in skip:
            print(word_accuracy(rows), flush=True)
        if "stereo" not in skip:
            print(stereo_words(whisper, folder / "peer" / "stereo_diarization.wav"), flush=True)
    if "cost" not in skip:
        print(cost(whisper, joined_clips(folder), args.repeats), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
