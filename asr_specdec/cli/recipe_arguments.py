"""Command-line options of Whisper's transcription recipe (word timestamps, fallback, no-speech, prompts, VAD),
shared by the transcribe command and the evaluation, and their translation to SpeculativeWhisper's arguments."""

from __future__ import annotations

import argparse

from ..errors import OptionError

WORD_CUES = ("segment", "each", "highlight")
# options whose flag is not their keyword (commands.error_line names a refused option by its flag)
FLAG_DESTS = {"diarize": "speakers", "threshold": "vad_threshold", "min_silence_duration_ms": "vad_min_silence_ms",
              "speech_pad_ms": "vad_speech_pad_ms", "vad_filter": "vad"}


def _temperatures(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(value) for value in text.split(",") if value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of numbers") from None
    if not values:
        raise argparse.ArgumentTypeError("give at least one temperature")
    return values


def _threshold(text: str) -> float | None:
    """A number, or 'off' (None) to switch a test off."""
    if text.strip().lower() in ("off", "none"):
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is neither a number nor 'off'") from None


def _whole_number(text: str) -> int | str:
    """An integer, or the text as given: check_recipe_arguments says what is wrong with it in one line (argparse
    would print its usage first)."""
    try:
        return int(text)
    except ValueError:
        return text


def add_recipe_arguments(parser: argparse.ArgumentParser, subtitles: bool = True, speakers: bool = True) -> None:
    """The recipe's flags, their defaults read from the options objects (TranscribeOptions, its Recipe and
    VadOptions): a default is written once, there."""
    from ..whisper.options import MAX_CHUNK_SECONDS, TranscribeOptions

    options = TranscribeOptions()
    recipe, vad = options.recipe, options.vad_options
    group = parser.add_argument_group("transcription recipe (openai-whisper / faster-whisper)")
    if speakers:
        group.add_argument("--speakers", nargs="?", type=_whole_number, const=0, default=None, metavar="N",
                           help="who spoke when: each segment and word labelled with its speaker (SPEAKER_00, ...) in "
                                "text, srt/vtt and json; N speakers, or estimated when N is left out; stereo with a "
                                "voice per channel: a speaker per channel")
    group.add_argument("--word-timestamps", action="store_true",
                       help="time every word (DTW over the alignment heads' cross-attention); segments start and end "
                            "with their words; JSON gets segments[i].words")
    if subtitles:
        group.add_argument("--word-cues", choices=WORD_CUES, default="segment",
                           help="srt/vtt cues: one per segment (default), one per word ('each'), or one per word "
                                "showing its segment with the word underlined ('highlight'); word cues imply "
                                "--word-timestamps")
    group.add_argument("--temperature", type=float, default=None, metavar="T",
                       help="openai-whisper's: the first temperature of the fallback ladder; 0 decodes greedily (the "
                            "default), above 0 samples at T (best of --best-of); with --temperature-fallback the "
                            "ladder climbs from T by 0.2 to 1.0. Sampling every token at a fixed temperature is "
                            "--do-sample --sampling-temperature")
    group.add_argument("--temperature-fallback", action="store_true",
                       help="retry a window that fails (too repetitive or unlikely) by sampling at 0.2, 0.4, ... 1.0, "
                            "as openai-whisper and faster-whisper do (off by default: greedy output is exact and "
                            "deterministic)")
    group.add_argument("--temperatures", type=_temperatures, default=None, metavar="T0,T1,...",
                       help="the fallback ladder itself (e.g. 0,0.2,0.4); implies --temperature-fallback")
    group.add_argument("--compression-ratio-threshold", type=_threshold, default=recipe.compression_ratio_threshold,
                       metavar="R", help="fallback when a window's gzip compression ratio is above R (default "
                                         "%(default)s; 'off')")
    group.add_argument("--logprob-threshold", type=_threshold, default=recipe.logprob_threshold, metavar="L",
                       help="fallback when a window's average log-probability is below L (default %(default)s; 'off')")
    group.add_argument("--no-speech-threshold", type=_threshold, default=recipe.no_speech_threshold, metavar="P",
                       help="skip a window whose no-speech probability is above P and whose log-probability is "
                            "below --logprob-threshold (default %(default)s; 'off' transcribes every window)")
    group.add_argument("--silence-threshold", type=_threshold, default=recipe.silence_threshold, metavar="P",
                       help="skip a window whose no-speech probability is above P whatever its text (default "
                            "%(default)s; 'off' keeps openai's rule alone, which lets Whisper's 'you' on silence "
                            "through)")
    group.add_argument("--best-of", type=int, default=recipe.best_of,
                       help="candidates sampled per fallback retry (default %(default)s)")
    group.add_argument("--beam-size", type=int, default=None, metavar="N",
                       help="beam search with N beams at temperature 0, as openai-whisper and faster-whisper decode "
                            "by default (5); speculative beam search returns exactly plain beam search's text "
                            "(default: greedy)")
    group.add_argument("--patience", type=float, default=None,
                       help="with --beam-size: stop after beam size x patience finished candidates (default 1.0)")
    group.add_argument("--length-penalty", type=float, default=None, metavar="ALPHA",
                       help="with --beam-size: rank candidates by sum / ((5 + length) / 6) ** ALPHA, ALPHA in [0, 1] "
                            "(default: sum / length)")
    group.add_argument("--repetition-penalty", type=float, default=options.repetition_penalty, metavar="P",
                       help="divide a positive logit (multiply a negative one) of every token the window already "
                            "generated by P, as faster-whisper's repetition_penalty (default 1: off; > 1 discourages "
                            "repeats)")
    group.add_argument("--no-repeat-ngram-size", type=int, default=options.no_repeat_ngram_size, metavar="N",
                       help="never generate an N-gram a window already holds, as faster-whisper's "
                            "no_repeat_ngram_size (default 0: off)")
    group.add_argument("--hallucination-silence-threshold", type=_threshold, default=None, metavar="S",
                       help="with --word-timestamps: drop a segment whose words look hallucinated when it stands in "
                            "over S seconds of silence, and skip that silence (openai-whisper's and faster-whisper's "
                            "option; default off)")
    group.add_argument("--chunk-length", type=_whole_number, default=None, metavar="SECONDS",
                       help=f"windows of SECONDS (1 to {MAX_CHUNK_SECONDS}) of audio, each zero-padded to Whisper's "
                            "30 s, as faster-whisper's chunk_length: long files are decoded window by window at this "
                            "length, and a window's timestamps end there (default 30)")
    group.add_argument("--initial-prompt", help="text the first window is conditioned on (spellings, style); "
                                                "over 223 tokens only its end is kept")
    group.add_argument("--prefix", help="text the first window's transcript is made to begin with")
    group.add_argument("--hotwords", help="hint words put in every window's prompt (ignored with --prefix)")
    group.add_argument("--vad", action="store_true",
                       help="Silero VAD: decode only speech, packed into windows of up to 30 s decoded as rows of "
                            "one batch; times map back to the file")
    group.add_argument("--vad-threshold", type=float, default=vad.threshold,
                       help="speech probability threshold (%(default)s)")
    group.add_argument("--vad-min-silence-ms", type=int, default=vad.min_silence_duration_ms,
                       help="a silence must last this long to split speech (%(default)s)")
    group.add_argument("--vad-speech-pad-ms", type=int, default=vad.speech_pad_ms,
                       help="padding around each speech region (%(default)s)")
    group.add_argument("--vad-batch-size", type=int, default=options.vad_batch_size,
                       help="speech windows decoded together (%(default)s)")


def check_recipe_arguments(args) -> None:
    """The recipe options checked by building them (an OptionError names the option by its keyword: the command
    names it by its flag, commands.error_line), plus what only a command line can get wrong."""
    from ..whisper.arguments import recipe_arguments
    from ..whisper.options import TranscribeOptions

    if getattr(args, "do_sample", False) and args.temperature is not None:
        raise OptionError("temperature", f"--temperature is openai-whisper's first temperature of the fallback ladder "
                                         f"now: sample at a fixed temperature with --do-sample --sampling-temperature "
                                         f"{args.temperature:g}")
    speakers = getattr(args, "speakers", None)
    if speakers is not None and not isinstance(speakers, int):
        raise OptionError("diarize", f"{{diarize}} takes a whole number of speakers (or nothing: estimated), not "
                                     f"'{speakers}'")
    TranscribeOptions().with_overrides(**recipe_arguments(recipe_options(args)))


def recipe_options(args) -> dict:
    """SpeculativeWhisper keyword arguments for the recipe options on the command line."""
    word_cues = getattr(args, "word_cues", "segment")
    options = {
        "word_timestamps": args.word_timestamps or word_cues != "segment",
        "compression_ratio_threshold": args.compression_ratio_threshold,
        "logprob_threshold": args.logprob_threshold,
        "no_speech_threshold": args.no_speech_threshold,
        "silence_threshold": args.silence_threshold,
        "best_of": args.best_of,
        "beam_size": args.beam_size,
        "patience": args.patience,
        "length_penalty": args.length_penalty,
        "repetition_penalty": args.repetition_penalty,
        "no_repeat_ngram_size": args.no_repeat_ngram_size,
        "initial_prompt": args.initial_prompt,
        "prefix": args.prefix,
        "hotwords": args.hotwords,
        "chunk_length": args.chunk_length,
        "vad_filter": args.vad,
        "vad_options": {"threshold": args.vad_threshold, "min_silence_duration_ms": args.vad_min_silence_ms,
                        "speech_pad_ms": args.vad_speech_pad_ms},
        "vad_batch_size": args.vad_batch_size,
    }
    speakers = getattr(args, "speakers", None)
    if speakers is not None:
        options["diarize"] = speakers or True  # 0: --speakers without a number, estimated
    if args.hallucination_silence_threshold is not None:
        options["hallucination_silence_threshold"] = args.hallucination_silence_threshold
    if args.temperatures is not None:
        options["temperatures"] = args.temperatures
    else:
        if args.temperature is not None:
            options["temperature"] = args.temperature
        if args.temperature_fallback:
            options["temperature_fallback"] = True
    return options
