"""faster-whisper's `transcribe` arguments mapped, once, onto SpeculativeWhisper's options (plan_call): the
ladder, the suppressed tokens, the search, what is refused; and the clips to decode. Nothing here decodes."""

from __future__ import annotations

from dataclasses import fields

from ..errors import SpecdecError
from ..whisper.arguments import call_options
from ..whisper.options import TranscribeOptions, check_batch, for_model
from ..whisper.runtime.tokens import Suppression
from .types import TranscriptionOptions


class UnsupportedOption(SpecdecError, NotImplementedError):
    """A faster-whisper option this drop-in cannot honour: refused with its name, never accepted and ignored."""


# faster-whisper's transcribe keywords that SpeculativeWhisper takes under the same name, with the same meaning
SAME = ("task", "best_of", "repetition_penalty", "no_repeat_ngram_size", "compression_ratio_threshold",
        "no_speech_threshold", "prompt_reset_on_temperature", "prefix", "hotwords", "word_timestamps",
        "prepend_punctuations", "append_punctuations", "max_new_tokens", "chunk_length",
        "hallucination_silence_threshold")


def plan_call(base: TranscribeOptions, given: dict, tokens, multilingual: bool
              ) -> tuple[TranscribeOptions, TranscriptionOptions]:
    """faster-whisper's transcribe keywords (`given`, with `batch_size`: None for WhisperModel's) mapped, in one
    pass, onto (the call's TranscribeOptions, what faster-whisper's info reports it ran with). Everything refused is
    refused here, before any audio is read: an OptionError or UnsupportedOption naming it. The drop-in decides the
    clips, the VAD and the language itself (model.py); the language given is in the options, as the model takes it
    (an English-only model decodes "en", with a warning)."""
    batched = given["batch_size"] is not None
    ladder = temperatures(given["temperature"])
    if batched:  # faster-whisper's batched decoding: first temperature, no conditioning, first timestamp 0
        ladder, condition, max_initial = ladder[:1], False, 0.0
    else:
        condition, max_initial = given["condition_on_previous_text"], given["max_initial_timestamp"]
    suppress = suppressed_tokens(given["suppress_tokens"], tokens.suppress_tokens, tokens.special_ids())
    initial_prompt = given["initial_prompt"]
    if initial_prompt is not None and not isinstance(initial_prompt, str):
        initial_prompt = tuple(int(token) for token in initial_prompt)
    options = for_model(call_options(
        base, **{name: given[name] for name in SAME}, language=None if multilingual else given["language"],
        logprob_threshold=given["log_prob_threshold"], timestamps=not given["without_timestamps"],
        # batched: each clip one window decoded once, split as faster-whisper's batched pipeline splits it
        long_form="chunked" if batched else "sequential", faster_whisper_windows=batched,
        condition_on_previous_text=condition, temperature=ladder, initial_prompt=initial_prompt,
        multilingual=multilingual, suppression=Suppression(suppress, given["suppress_blank"], max_initial),
        whole_features=True, seek_to_words=False,  # faster-whisper's features and seek
        vad_filter=False,  # the drop-in finds the speech itself (model.py), as faster-whisper does
        **search_options(given["beam_size"], given["patience"], given["length_penalty"]),
        **diarize_option(given["diarize"], given["clip_timestamps"])), tokens.multilingual)
    if batched:
        check_batch(options)
    used = TranscriptionOptions(**{  # what ran, under faster-whisper's names (its info record)
        **{item.name: given[item.name] for item in fields(TranscriptionOptions) if item.name in given},
        "condition_on_previous_text": condition, "temperatures": list(ladder), "max_initial_timestamp": max_initial,
        "multilingual": multilingual, "suppress_tokens": list(suppress) if given["suppress_tokens"] else
        given["suppress_tokens"]})
    return options, used


def search_options(beam_size: int, patience: float, length_penalty: float) -> dict:
    """The beam-search options for SpeculativeWhisper.transcribe, with faster-whisper's meaning: CTranslate2's
    algorithm (core/beam_ctranslate2.py: its candidates, finished hypotheses, patience and sum / length **
    length_penalty ranking); beam_size=1 is greedy search (CTranslate2 decodes one beam greedily), where patience
    and length_penalty change nothing. Their ranges are the options' (Recipe)."""
    if beam_size == 1:
        return {}
    return {"beam_size": beam_size, "patience": patience, "length_penalty": length_penalty,
            "beam_algorithm": "ctranslate2"}


def temperatures(temperature) -> tuple[float, ...]:
    return tuple(float(value) for value in temperature) if isinstance(temperature, (list, tuple)) \
        else (float(temperature),)


def suppressed_tokens(suppress_tokens, default: tuple[int, ...], special: tuple[int, ...]) -> tuple[int, ...]:
    """faster-whisper's rule: -1 stands for the model's non-speech symbols (here its generation config's list);
    a list also suppresses the special tokens; None or an empty list suppresses nothing."""
    if not suppress_tokens:
        return ()
    ids = {int(token) for token in suppress_tokens if int(token) >= 0} | set(special)
    if -1 in suppress_tokens:
        ids |= set(default)
    return tuple(sorted(ids))


def clip_ranges(clip_timestamps, duration: float) -> list[tuple[float, float]] | None:
    """(start, end) seconds of each clip to decode, from "start,end,start,..." (the last end defaults to the end of
    the audio), a list of such numbers, or a list of {"start", "end"} dicts; None for the whole audio ("0")."""
    if clip_timestamps is None or clip_timestamps == "0":
        return None
    if isinstance(clip_timestamps, str):
        try:
            points = [float(value) for value in clip_timestamps.split(",") if value.strip()]
        except ValueError:
            raise SpecdecError(f"clip_timestamps must be numbers separated by commas, not '{clip_timestamps}'") \
                from None
    elif all(isinstance(clip, dict) for clip in clip_timestamps):
        points = [float(value) for clip in clip_timestamps for value in (clip["start"], clip["end"])]
    else:
        points = [float(value) for value in clip_timestamps]
    if len(points) % 2:
        points.append(duration)
    clips = [(max(0.0, start), min(end, duration)) for start, end in zip(points[::2], points[1::2])]
    for start, end in clips:
        if end < start:
            raise SpecdecError(f"clip_timestamps: a clip ends ({end} s) before it starts ({start} s)")
    if clips == [(0.0, duration)]:
        return None
    return [(start, end) for start, end in clips if end > start]


def diarize_option(diarize: bool | int | None, clip_timestamps) -> dict:
    """This build's `diarize` extra for SpeculativeWhisper.transcribe: speakers on the whole file's segments, so
    refused by name with clip_timestamps (a batch refuses it: options.check_batch)."""
    if diarize is None or diarize is False:
        return {}
    if clip_timestamps not in ("0", [0], [0.0], None):
        raise UnsupportedOption("diarize labels the whole file: it cannot be combined with clip_timestamps")
    return {"diarize": diarize}
