"""Speaker-label benchmark: who spoke when, scored with pyannote.metrics' diarization error rate (collar 0.25 s,
overlapped speech scored) on conversations made from the shared clips, word-level speaker accuracy, the stereo
file with a voice per channel, and what diarizing costs on top of transcription.

    python -m eval.bench.speakers [--main base] [--repeats 3] [--threads N] [--audio DIR]

Conversations (eval/bench/conversations.py): 2, 3 and 4 voices of the shared clips taking turns of about 4 s,
with 0.3-0.5 s pauses, back to back, or overlapping by 0.3 s; the reference speech of each turn is where Silero
VAD hears speech in that clip alone. DER is given over all conversations together, with the number of speakers
given and estimated. Word accuracy: the conversations transcribed with `diarize=` (count given) and word
timestamps; a word is right when its speaker, mapped to a voice by DER's optimal mapping, is the voice speaking at
its middle (the nearest turn's in a pause). Stereo: ../shared/audio/peer/stereo_diarization.wav, each word must
carry its channel's speaker (left SPEAKER_00, right SPEAKER_01) and be a word of that channel transcribed alone.
Cost: the 64-s joined clips (eval/bench/longform.py) transcribed by default and with `diarize=True`, the two
taking turns run by run; the ratio of the best times (diarizing turns word timestamps on: their cost is in it).
"After the transcription" is the time diarizing adds once the transcription is done (the speech is found while it
runs, transcript.py): the encoder, clustering and labels, and any wait for the VAD.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import torch

from ..paths import SHARED_AUDIO
from .cli import bench_parser

COLLAR = 0.25


def annotation(turns):
    from pyannote.core import Annotation, Segment

    annotated = Annotation()
    for index, (start, end, speaker) in enumerate(turns):
        annotated[Segment(start, end), index] = speaker
    return annotated


def error_rates(talks) -> list[str]:
    from pyannote.metrics.diarization import DiarizationErrorRate

    from asr_specdec.whisper.speakers.options import SpeakerOptions
    from asr_specdec.whisper.speakers.turns import find_turns

    lines = []
    for known in (True, False):
        metric = DiarizationErrorRate(collar=COLLAR)
        found = []
        for talk in talks:
            voices = len({voice for *_, voice in talk.turns})
            turns = find_turns(talk.samples, SpeakerOptions(speakers=voices if known else None))
            rate = metric(annotation(talk.turns), annotation([(t.start, t.end, t.speaker) for t in turns]))
            found.append(f"{talk.name}: {rate:.1%} ({len({turn.speaker for turn in turns})}/{voices})")
        lines.append(f"DER, speakers {'given' if known else 'estimated'}: {abs(metric):.1%} over "
                     f"{len(talks)} conversations; " + "; ".join(found))
    return lines


def word_accuracy(whisper, talks) -> str:
    from pyannote.metrics.diarization import DiarizationErrorRate

    right = total = 0
    for talk in talks:
        voices = len({voice for *_, voice in talk.turns})
        result = whisper.transcribe(talk.samples, diarize=voices, word_timestamps=True)
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
    seconds = {"default": [], "diarize": []}
    diarizing = []
    for _ in range(repeats):
        for name, options in (("default", {}), ("diarize", {"diarize": True})):
            started = time.perf_counter()
            result = whisper.transcribe(audio, **options)
            seconds[name].append(time.perf_counter() - started)
            if options:
                diarizing.append(result.timings["diarization_seconds"])
    best = {name: min(values) for name, values in seconds.items()}
    runs = "; ".join(f"{name} {' / '.join(f'{value:.2f}' for value in values)} s" for name, values in seconds.items())
    return (f"cost on {len(audio) / 16000:.0f} s ({whisper.mode}): {runs}; diarized / default (best) "
            f"{best['diarize'] / best['default']:.3f} ({best['diarize'] / best['default'] - 1:+.1%}); after the "
            f"transcription {min(diarizing):.2f} s at best")


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.speakers")
    parser.add_argument("--main", default="base")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--audio", default=str(SHARED_AUDIO), help="folder with manifest.jsonl and peer/")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--skip", default="", help="parts to leave out, comma-separated: der,words,stereo,cost")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from asr_specdec.whisper import SpeculativeWhisper
    from eval.bench.conversations import conversations

    from .longform import joined_clips

    folder, skip = Path(args.audio), set(args.skip.split(","))
    talks = conversations(folder)
    print(f"{len(talks)} conversations, {sum(len(t.samples) for t in talks) / 16000:.0f} s; {args.threads} threads")
    if "der" not in skip:
        print("\n".join(error_rates(talks)), flush=True)
    whisper = SpeculativeWhisper(args.main, language="en")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "words" not in skip:
            print(word_accuracy(whisper, talks), flush=True)
        if "stereo" not in skip:
            print(stereo_words(whisper, folder / "peer" / "stereo_diarization.wav"), flush=True)
    if "cost" not in skip:
        print(cost(whisper, joined_clips(folder), args.repeats), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
