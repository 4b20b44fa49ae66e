"""The one window pipeline every Whisper path goes through: features -> encoder -> drafter start -> engine -> tokens.

A short utterance is one window, a long file a sequence of windows, a batch of files (or of a long file's
windows) many windows decoded together: all of them call `WindowPipeline.decode` with a list of windows, which
become the rows of one engine batch. The pipeline holds the main model and what runs it, nothing of a call: each
`Window` carries everything its row is decoded under (language, task, timestamps, previous text, sampling, rules
and limits), and the `Speculation` a decode is given says who drafts for every row of it and how far (a drafter
starts once per batch). A caller that routes window decodes elsewhere (the server's batcher) takes a
`WindowDecoder`, which `WindowPipeline.decode` is. What a window asks for besides its tokens (scores, aligned words)
is the recipe's business: the pipeline calls the `WindowAnalysis` it was given (recipe/window_extras.py) while the
window's encoder output and hidden states are at hand, and imports nothing of the recipe.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from ...core.beam import BeamOutcome, BeamSearch
from ...core.draft_length import DraftLength
from ...core.drafter import DraftContext, Drafter
from ...core.engine import GenerationSettings, generate_batch, generate_beams
from ...core.logits import LogitRules, Sampling
from ...core.stats import DecodeStats
from ...weights.mapped import libc_heap, trim_heap
from ..io import audio as audio_io
from .compute import ComputeType
from .decoder import DecoderTarget, KVCache, WhisperDecoderRunner
from .encoder import EncoderRunner
from .frames import Frames
from .tokens import Suppression, WhisperTokens


@dataclass(frozen=True)
class Window:
    """One 30-s window to decode: its log-mel features [1, mel bins, frames] and what its row needs."""

    features: torch.Tensor
    language_id: int | None = None  # None: detected from the audio (multilingual models)
    timestamps: bool = False
    previous: list[int] | None = None  # text tokens to condition on (<|startofprev|> prompt)
    prefix: tuple[int, ...] | None = None  # text tokens the transcript is made to begin with (kept in `tokens`)
    sampling: Sampling = Sampling()  # greedy unless the call (or a fallback retry) samples
    score: bool = False  # also read avg log-probability and no-speech probability (scoring.py)
    # word timestamps: given the window's tokens, the text tokens to time word by word (None: no words)
    word_tokens: Callable[[list[int]], list[int]] | None = None
    audio_frames: int | None = None  # feature frames that hold real audio (None: the whole window)
    task: str = "transcribe"  # or translate
    suppression: Suppression | None = None  # what the row may not produce; None: the model's generation config
    max_new_tokens: int | None = None  # None: as many as the model's context holds
    beam: BeamSearch | None = None  # beam search (core/beam.py) instead of greedy decoding; every row or none
    repetition_penalty: float = 1.0  # CTranslate2's, over what the row generates (core/logits.py); 1: off
    no_repeat_ngram_size: int = 0  # no n-gram of this size twice in what the row generates; 0: off
    # feature frames the window spans when shorter than the encoder's input (chunk_length; the rest is padding):
    # its timestamps end there. None: the whole input
    window_frames: int | None = None
    # a row whose no-speech probability (at start-of-transcript) is above this is silent whatever it would say:
    # it is not generated (no tokens; its score carries that probability). None: always generated
    silence_threshold: float | None = None


@dataclass(frozen=True, eq=False)
class Speculation:
    """Who drafts the tokens a decode verifies, and how many at a time: the same for every row of one decode. Both
    keep state across decodes (a drafter's caches, an adaptive schedule's measurements), so a transcriber, a live
    stream or a comparison keeps one of its own; decodes sharing one must not overlap."""

    drafter: Drafter | None = None  # None: plain decoding
    draft_length: DraftLength = field(default_factory=DraftLength)


PLAIN = Speculation()  # no drafter: the main model's own greedy/sampled/beam decoding
# heap memory free after a call above which it goes back to the system (call_ended): base leaves 44-60 MB, which its
# next call would fault in again, small about 120 MB and large-v3 about 450 MB, which stayed resident between calls
CALL_TRIM_BYTES = 96 << 20


class WindowAnalysis(Protocol):
    """What a window asks for besides its tokens (its scores, its aligned words): the recipe's
    (recipe/window_extras.py), computed while the window's encoder output and hidden states are at hand."""

    def __call__(self, pipeline, window: Window, row: int, encoder_output: torch.Tensor, cross_states,
                 prompt: list[int], forced: list[int], generated: list[int], rules, language_id: int | None,
                 hidden: torch.Tensor | None = None, no_speech_prob: float | None = None,
                 log_probs: list[float] | None = None) -> Any:
        """The extras of batch row `row` decoded to `generated` (`log_probs`: its tokens' log-probabilities, when
        decoding computed them as a pass of its own would)."""

    def silent(self, window: Window, no_speech_prob: float) -> Any:
        """The extras of a window judged silent before generation (its no-speech probability), nothing generated."""


@dataclass
class DecodedWindow:
    tokens: list[int]  # generated ids, ending with end-of-text when the model produced it
    language_id: int | None
    detected_language: str | None  # the language code found in the audio; None when it was given
    stats: DecodeStats
    extras: Any = None  # the WindowAnalysis's scores and aligned words, when the window asked for them
    language_probability: float | None = None  # of the detected language, among the languages; None when given
    beam: BeamOutcome | None = None  # beam search's candidates and sums, when the window was decoded with beams


# decodes windows as rows of one batch: (windows, speculation, the sampling generator) -> rows
WindowDecoder = Callable[[list[Window], Speculation, torch.Generator | None], list[DecodedWindow]]


def _row_states(cross_states: tuple[list, list], row: int) -> tuple[list, list]:
    return tuple([layer[row:row + 1] for layer in side] for side in cross_states)


def _rows(tensors: list[torch.Tensor]) -> torch.Tensor:
    """Tensors of single rows as one batch (a lone row as it is, not copied)."""
    return tensors[0] if len(tensors) == 1 else torch.cat(tensors)


class WindowPipeline:
    """A main Whisper model turning windows of audio features into tokens, its encoder and decoder in the
    precisions of `compute`."""

    def __init__(self, model, processor, *, compute: ComputeType | None = None,
                 analysis: WindowAnalysis | None = None):
        self.model, self.processor = model, processor
        self.analysis = analysis  # scores and words of windows that ask for them; None: no window may ask
        self.tokens = WhisperTokens.from_model(model)
        self.compute = compute or ComputeType()
        self.encoder = EncoderRunner(model.model.encoder, self.compute.encoder, getattr(model, "weights_key", None))
        # the cross-attention keys/values are computed once per window, with the encoder: in its precision (kept in
        # bfloat16 when that is bfloat16 or native int8); an int8 decoder's cache holds them in int8, a scale a
        # vector (a step reads half the bytes: 123 of ~1,050 MB at large-v3)
        self._cross_projection = self.encoder.cross_projection  # decided with the encoder, read by every encode
        reduced = self.compute.encoder == "bfloat16" or self._cross_projection is not None
        projected = torch.bfloat16 if reduced else None
        cross_dtype = torch.int8 if self.compute.decoder == "int8" else projected
        self.runner = WhisperDecoderRunner(model, weights=self.compute.decoder, cross_dtype=cross_dtype,
                                           cross_projected=projected)
        trim_heap()  # packing's transient tensors, freed, would stay resident in the allocator
        # (features, encoder output, cross states) of the last call's one window (language detection's, or a
        # decode a fallback may retry), for the next call (see _encode); cross states None once a user's call ended
        # (call_ended)
        self._kept_encoding: tuple | None = None
        self._heap = libc_heap()  # looked up here, not per call (call_ended)
        self._encoder_read = False  # whether the encoder's weights were read since the last call ended

    def forget_encoding(self) -> None:
        """Drop the encoding kept from the last call, so that the next call runs its encoder: a timed comparison
        of two decodes of the same audio (plain and speculative) times each with its own encoding."""
        self._kept_encoding = None

    def call_ended(self) -> None:
        """A user's call has ended: what it left behind goes back. The kept encoding keeps its features and encoder
        output (a later call on the same audio still skips the encoder) but not its cross-attention states, most
        of it (246 MB in bfloat16 at large-v3), which such a call projects again; the encoder's weights mapped from
        disk (its int8 packs: 601 MB at large-v3-turbo), which a window reads once, go back to the page cache, from
        which the next window maps them again (about 1% of its time); and the heap's free memory, the
        call's buffers, goes back to the system where it is large (about 450 MB after a large-v3 call, which glibc
        would otherwise keep; under 64 MB after base's, whose next call would only fault it in again:
        docs/compute.md, Memory)."""
        if self._kept_encoding is not None:
            self._kept_encoding = (*self._kept_encoding[:2], None)
        if self._encoder_read:  # (a call that reused its encoding maps nothing again)
            for drop in self.encoder.file_pages().drops:
                drop()
            self._encoder_read = False
        if self._heap is not None and self._heap.info().fordblks >= CALL_TRIM_BYTES:
            self._heap.trim(0)

    def features(self, samples: np.ndarray, whole: bool = False) -> torch.Tensor:
        """Log-mel features of one window padded to 30 s, or (`whole`) of all the audio at once, normalised
        over all of it, as transformers' long-form generate and openai's transcribe compute them."""
        options = {"truncation": False, "padding": "longest"} if whole else {}
        features = self.processor.feature_extractor(samples, sampling_rate=audio_io.SAMPLE_RATE,
                                                    return_tensors="pt", **options).input_features
        return features.to(self.runner.device)

    @property
    def frames(self) -> Frames:
        return self.chunk_frames(None)

    def chunk_frames(self, chunk_length: int | None) -> Frames:
        """The time grid of windows `chunk_length` seconds long (None: the model's 30 s), each zero-padded to the
        encoder's input, as faster-whisper pads its chunk_length windows."""
        extractor = self.processor.feature_extractor
        encoder = self.model.model.encoder
        window = extractor.nb_max_frames if chunk_length is None else min(
            extractor.nb_max_frames, chunk_length * extractor.sampling_rate // extractor.hop_length)
        return Frames(window=window, per_timestamp=encoder.conv1.stride[0] * encoder.conv2.stride[0],
                      seconds=extractor.hop_length / extractor.sampling_rate, encoder_input=extractor.nb_max_frames)

    @property
    def window_samples(self) -> int:
        return self.processor.feature_extractor.n_samples

    def chunk_samples(self, chunk_length: int | None) -> int:
        """Samples in a window `chunk_length` seconds long (None: the model's)."""
        return self.chunk_frames(chunk_length).window * self.processor.feature_extractor.hop_length

    def text(self, tokens: list[int]) -> str:
        """The text of `tokens` without its surrounding spaces (live hypotheses, fallback scores)."""
        return self.segment_text(tokens).strip()

    def segment_text(self, tokens: list[int]) -> str:
        """The text of `tokens` as Whisper writes it, with its leading space (as openai and faster-whisper keep it):
        segments joined with "" read right, and a result's tokens decode to exactly its text."""
        return self.processor.tokenizer.decode(tokens, skip_special_tokens=True)

    def decode(self, windows: list[Window], speculation: Speculation = PLAIN,
               generator: torch.Generator | None = None) -> list[DecodedWindow]:
        """Decode `windows` as the rows of one batch, each under its own settings, drafted by `speculation`'s
        drafter (`generator`: what sampled rows draw from). Each row's times in its stats are its share of the
        batch's, so that they add up to the whole call."""
        started = time.perf_counter()
        with torch.inference_mode():
            features, encoder_output, cross_states, cache = self._encode([window.features for window in windows])
            encoder_seconds = time.perf_counter() - started
            languages = self._languages(cache, windows)
            prompts = [self.tokens.prompt(language_id, window.task, window.timestamps, window.previous)
                       for window, (language_id, _, _) in zip(windows, languages)]
            no_speech, held = self._no_speech(windows, prompts, encoder_output, cross_states, cache)
            spoken = [row for row, (window, probability) in enumerate(zip(windows, no_speech))
                      if probability is None or not probability > window.silence_threshold]
            if len(spoken) < len(windows):  # silent rows leave the batch before anything is generated
                rows = torch.tensor(spoken, device=encoder_output.device, dtype=torch.long)
                features, encoder_output = features[rows], encoder_output[rows]
                cross_states = tuple([layer[rows] for layer in side] for side in cross_states)
                if spoken:
                    cache.keep(torch.tensor(spoken, device="cpu", dtype=torch.long), {})
        decoded = self._generate([windows[row] for row in spoken], features, encoder_output, cross_states, cache,
                                 [languages[row] for row in spoken], [prompts[row] for row in spoken],
                                 [no_speech[row] for row in spoken], speculation, generator, started,
                                 encoder_seconds * len(spoken) / len(windows),
                                 [held[row] for row in spoken]) if spoken else []
        by_row = dict(zip(spoken, decoded))
        seconds = encoder_seconds / len(windows)
        return [by_row[row] if row in by_row else self._silent_row(window, languages[row], no_speech[row], seconds)
                for row, window in enumerate(windows)]

    def _no_speech(self, windows: list[Window], prompts: list[list[int]], encoder_output: torch.Tensor,
                   cross_states, cache: KVCache) -> tuple[list[float | None], list[list[int]]]:
        """(the no-speech probability of each row that asks for one (else None), the prompt tokens each row of
        `cache` now holds). Where the kernels are batch-invariant, the prompts up to start-of-transcript are fed
        into `cache` itself in one pass, whose logits there give the probabilities and whose keys and values beam
        search keeps (the bits a pass of the whole prompt computes); elsewhere a pass of its own per row."""
        asking = [window.silence_threshold is not None for window in windows]
        if not self.runner.backend.batch_invariant or not any(asking):
            return [self._no_speech_probability(prompt, encoder_output[row:row + 1], _row_states(cross_states, row))
                    if ask else None for row, (prompt, ask) in enumerate(zip(prompts, asking))], [[] for _ in windows]
        feeds = [prompt[:prompt.index(self.tokens.start_of_transcript) + 1] if ask else []
                 for prompt, ask in zip(prompts, asking)]
        hidden = self.runner.feed_rows(cache, feeds, [0] * len(feeds))
        last = torch.cat([rows[-1:] for rows in hidden if len(rows)])
        probabilities = iter(self.runner.vocabulary_logits(last[None])[0].float().softmax(dim=-1)
                             [:, self.tokens.no_speech].tolist())
        return [next(probabilities) if ask else None for ask in asking], feeds

    def _no_speech_probability(self, prompt: list[int], encoder_output: torch.Tensor, cross_states) -> float:
        """The probability of <|nospeech|> after start-of-transcript (scoring.py's no_speech_prob), from a pass over
        the prompt up to it: known before a token is generated."""
        prefix = prompt[:prompt.index(self.tokens.start_of_transcript) + 1]
        cache = self.runner.new_cache(encoder_output, cross_states=cross_states, max_positions=len(prefix))
        hidden = self.runner.hidden_states(cache, torch.tensor([prefix], device=self.runner.device), 0)
        logits = self.runner.vocabulary_logits(hidden[:, -1:])[0, 0].float()
        return float(logits.softmax(dim=-1)[self.tokens.no_speech])

    def _silent_row(self, window: Window, language: tuple, no_speech_prob: float, seconds: float) -> DecodedWindow:
        language_id, detected, probability = language
        stats = DecodeStats()
        stats.encoder_seconds = stats.total_seconds = seconds
        extras = self.analysis.silent(window, no_speech_prob) if window.score or window.word_tokens else None
        return DecodedWindow([], language_id, detected, stats, extras, probability)

    def _generate(self, windows: list[Window], features, encoder_output, cross_states, cache: KVCache,
                  languages: list[tuple], prompts: list[list[int]], no_speech: list[float | None],
                  speculation: Speculation, generator: torch.Generator | None, started: float,
                  encoder_seconds: float, held: list[list[int]]) -> list[DecodedWindow]:
        """The engine over encoded rows (`no_speech`: a row's probability read before, which its score keeps;
        `held`: the prompt tokens each row of `cache` holds already, which beam search does not feed again)."""
        with torch.inference_mode():
            forced = [self.tokens.forced_prefix(window.prefix, window.timestamps) for window in windows]
            settings = [GenerationSettings(
                eos_token_id=self.tokens.end_of_text,
                max_new_tokens=window.max_new_tokens or self.tokens.max_positions,
                rules=self.tokens.rules(len(prompt), window.timestamps, window.suppression, window.repetition_penalty,
                                        window.no_repeat_ngram_size, self._last_timestamp(window)),
                sampling=window.sampling, draft_length=speculation.draft_length, beam=window.beam)
                for window, prompt in zip(windows, prompts)]
            beams = any(window.beam is not None for window in windows)
            drafter_seconds = self._start_drafter(speculation.drafter, [row.rules for row in settings], generator,
                                                  features, encoder_output, cross_states, cache,
                                                  [row.sampling for row in settings])
            # a score reads the hidden states decoding computed instead of a pass of its own (decoder.py), where
            # they are the same bits whether a token was stepped alone or verified among others (batch-invariant
            # kernels): elsewhere a speculative run's scores could differ from plain's in the last bits, and a
            # temperature fallback decided on them could then differ too
            target = DecoderTarget(self.runner, cache, record_hidden=self.runner.backend.batch_invariant
                                   and not beams and any(window.score for window in windows))
            fed = [prompt + extra for prompt, extra in zip(prompts, forced)]
            outcomes = generate_beams(target, fed, settings, speculation.drafter, held) if beams else None
            rows = ([(outcome.tokens, outcome.stats) for outcome in outcomes] if beams
                    else generate_batch(target, fed, settings, speculation.drafter, generator))
            asking = any(window.score or window.word_tokens for window in windows)
            if asking and self.analysis is None:
                raise ValueError("a window asks for scores or words, and this pipeline was given no analysis")
            # beam search kept each token's log-probability, the bits a pass of its own computes where the kernels
            # are batch-invariant: a score then needs no pass
            kept_log_probs = beams and self.runner.backend.batch_invariant
            extras = [self.analysis(self, window, row, encoder_output[row:row + 1], _row_states(cross_states, row),
                                    prompt, extra, tokens, rules.rules, language_id,
                                    target.recorded_hidden(row, len(prompt) + len(extra) + len(tokens) - 1),
                                    no_speech_prob, outcomes[row].log_probs if kept_log_probs else None)
                      if window.score or window.word_tokens else None
                      for row, (window, prompt, extra, (tokens, _), rules, (language_id, _, _), no_speech_prob)
                      in enumerate(zip(windows, prompts, forced, rows, settings, languages, no_speech))]
        decoded = []
        for row, ((tokens, stats), (language_id, detected, probability), extra, window_extra) in enumerate(
                zip(rows, languages, forced, extras)):
            stats.encoder_seconds += encoder_seconds / len(windows)
            stats.draft_seconds += drafter_seconds / len(windows)
            stats.total_seconds = (time.perf_counter() - started) / len(windows)
            decoded.append(DecodedWindow(extra + tokens, language_id, detected, stats, window_extra, probability,
                                         outcomes[row] if outcomes else None))
        return decoded

    def _last_timestamp(self, window: Window) -> int | None:
        """The index of the last timestamp a window may hold: where its span ends (None: the vocabulary's last)."""
        return None if window.window_frames is None else window.window_frames // self.frames.per_timestamp

    def _encode(self, features: list[torch.Tensor], keep: bool = False):
        """(input features, encoder output, cross-attention states, main-model cache) of windows decoded as rows
        of one batch. Where the decoder is batch-invariant (the native kernels), each row is encoded on its own,
        so its bits equal those of the row decoded alone (on a CPU the encoder is compute-bound: batching it buys
        little), and rows of one window share its encoding; on the PyTorch path, whose rows are not batch-invariant
        anyway, all rows in one call. The encoding of a call of one window is kept for the next call (a fallback
        retry), and with `keep` the last row's (language detection's; see _encode_row)."""
        if not self.runner.backend.batch_invariant:
            self._encoder_read = True
            encoder_output = self.encoder(_rows(features))
            cross_states = self.runner.cross_attention_states(encoder_output, self._cross_projection)
            return _rows(features), encoder_output, cross_states, self.runner.new_cache(encoder_output,
                                                                                         cross_states=cross_states)
        kept, self._kept_encoding = self._kept_encoding, None
        known = [kept] if kept is not None else []
        entries = [self._encode_row(row, known) for row in features]
        if keep or len({id(entry) for entry in entries}) == 1:  # one window: a fallback retry decodes it again
            self._kept_encoding = (entries[-1][0].clone(), *entries[-1][1:])  # compared by value (buffers get reused)
        encoded, cross_rows = [entry[1] for entry in entries], [entry[2] for entry in entries]
        cross_states = tuple([_rows([row[side][layer] for row in cross_rows]) for layer in range(len(cross_rows[0][0]))]
                             for side in (0, 1))
        encoder_output = _rows(encoded)
        return _rows(features), encoder_output, cross_states, self.runner.new_cache(encoder_output,
                                                                                     cross_states=cross_states)

    def _encode_row(self, features: torch.Tensor, known: list[tuple]) -> tuple:
        """(features, encoder output, cross-attention states) of one window. The encoder is deterministic, so a
        window whose features equal those of an encoding in `known` takes it: another row of the call (best_of
        samples of one window) or the encoding kept from the call before (language detection's, or the window a
        temperature fallback decodes again); a new encoding joins `known`."""
        for index, entry in enumerate(known):
            if entry[0] is features or (entry[0].shape == features.shape and torch.equal(entry[0], features)):
                if entry[2] is None:  # kept past its call without them (call_ended)
                    self._encoder_read |= self._cross_projection is not None  # the encoder's pack of it
                    entry = known[index] = (*entry[:2], self.runner.cross_attention_states(
                        entry[1], self._cross_projection))
                return entry
        self._encoder_read = True
        encoded = self.encoder(features)
        entry = (features, encoded, self.runner.cross_attention_states(encoded, self._cross_projection))
        known.append(entry)
        return entry

    def _languages(self, cache: KVCache, windows: list[Window]) -> list[tuple[int | None, str | None, float | None]]:
        """(language token, detected code or None, its probability or None) per row: the window's language, or the
        one detected in it."""
        if not self.tokens.multilingual or all(window.language_id is not None for window in windows):
            return [(window.language_id, None, None) for window in windows]
        detected = self.detect_languages(cache)
        return [(window.language_id, None, None) if window.language_id is not None else found
                for window, found in zip(windows, detected)]

    def detect_languages(self, cache: KVCache) -> list[tuple[int, str, float]]:
        """(language token, language code, its probability among the languages) for each row of `cache`, each
        row's most likely language after start-of-transcript, as transformers' generate picks it."""
        candidates, logits = self._language_logits(cache)
        best = logits.argmax(dim=-1)
        probabilities = torch.softmax(logits.float(), dim=-1).gather(1, best[:, None])[:, 0].tolist()
        codes = {value: key.strip("<|>") for key, value in self.tokens.language_ids.items()}
        return [(token, codes[token], probability)
                for token, probability in zip(candidates[best].tolist(), probabilities)]

    def language_probabilities(self, features: torch.Tensor) -> list[tuple[str, float]]:
        """(language code, probability) for one window's features, likeliest first: openai's detect_language, a
        softmax over the language tokens' logits after start-of-transcript."""
        with torch.inference_mode():
            _, _, _, cache = self._encode([features], keep=self.runner.backend.batch_invariant)
            candidates, logits = self._language_logits(cache)
            probabilities = torch.softmax(logits[0].float(), dim=-1).tolist()
        codes = {value: key.strip("<|>") for key, value in self.tokens.language_ids.items()}
        ranked = sorted(zip(candidates.tolist(), probabilities), key=lambda pair: -pair[1])
        return [(codes[token], probability) for token, probability in ranked]

    def _language_logits(self, cache: KVCache) -> tuple[torch.Tensor, torch.Tensor]:
        """(language token ids, their logits per row [rows, languages]) after start-of-transcript."""
        ids = torch.full((cache.batch_size, 1), self.tokens.start_of_transcript, device=self.runner.device)
        logits = self.runner.forward(cache, ids, 0)[:, -1]
        candidates = torch.tensor(list(self.tokens.language_ids.values()), device=logits.device)
        return candidates, logits[:, candidates]

    def _start_drafter(self, drafter: Drafter | None, rules: list[LogitRules], generator, features, encoder_output,
                       cross_states, cache: KVCache, sampling: list[Sampling]) -> float:
        """Start `drafter` (if any) on the rows of `cache`, each row under its own rules; the seconds it took."""
        if drafter is None:
            return 0.0
        started = time.perf_counter()
        drafter.start(DraftContext(
            rules=rules[0], sampling=sampling[0], max_positions=cache.max_positions,
            eos_token_id=self.tokens.end_of_text, generator=generator, encoder_output=encoder_output,
            input_features=features, main_cache=cache, main_cross_states=cross_states,
            row_rules=rules if len(rules) > 1 else None,
            row_sampling=sampling if len(set(sampling)) > 1 else None))
        return time.perf_counter() - started
