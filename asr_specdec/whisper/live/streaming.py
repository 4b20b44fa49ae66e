"""Live transcription: audio arrives in chunks; each update re-decodes the buffer of audio not yet cut away and
commits the words on which two consecutive hypotheses agree (LocalAgreement-2, agreement.py).

Every update decodes through the window pipeline with timestamps, conditioned on the committed text before the
buffer (<|startofprev|>), so its tokens are exactly plain greedy decoding of that buffer and prompt. What makes it
fast is the drafter: the previous update's tokens (core/hypothesis.py), which the new decode mostly repeats; the
new audio's tail is decoded plain (or drafted by the transcriber's own drafter when that runs no model). Once the
buffer is longer than `trim_seconds`, it is cut at the end of the last segment whose text is committed, and the
next hypothesis is the rest of this one, moved back in time; past `max_buffer_seconds` the buffer is cut at its
last complete segment, committed or not, so it stays within Whisper's 30-s window. Audio with no speech in it is
not decoded and not kept.

The stream keeps no clock: `feed` (or `append` then `update`) whenever audio arrives, and each update covers all
the audio received so far. `append` and `update` may run in different threads (a receiver and a decoder).

This module keeps the stream's state and runs an update; each job of an update is a module of its own: the audio
intake (intake.py), the decode (decoding.py), the commit decision (commit.py, over agreement.py's matching), where
the buffer is cut (cuts.py, with speech.py's speech the decode skipped) and the words committed (words.py).
"""

from __future__ import annotations

import numpy as np

from ...errors import SpecdecError
from ..io import audio as audio_io
from ..recipe.fallback import Recipe
from . import agreement, commit, cuts, speech
from .decoding import DEFAULT_HYPOTHESIS_TOKENS, LiveDecode, UpdateDecoder
from .intake import SILENCE_RMS, AudioIntake, is_quiet
from .updates import StreamingUpdate
from .words import CommittedWord, TokenText, committed_words

__all__ = ["DEFAULT_HYPOTHESIS_TOKENS", "SILENCE_RMS", "CommittedWord", "StreamingTranscriber", "StreamingUpdate"]

IDLE_SECONDS = 2.0  # a buffer in which nothing was heard is cut back to its last KEEP_SECONDS past this
KEEP_SECONDS = 1.0
MAX_FINAL_DECODES = 8  # finish() decodes again after speech its decode skipped, at most this many times
# a hypothesis of a shorter buffer is not agreed with: with under 2.5 s of audio Whisper guesses the first words
# ("Howdy, Mary, to more amiable" for "Had he married a more amiable" at 1.0-2.0 s, right from 2.5 s)
MIN_AGREED_SECONDS = 2.5


class StreamingTranscriber:
    """Live transcription with a SpeculativeWhisper's models (shared, not copied) and its drafter as fallback.

    `hypothesis_drafting=False` decodes each update with the transcriber's own drafter only. `tail_drafting` says
    whether that drafter drafts the new audio's tail, after the hypothesis (decoding.py). `compare=True` also
    decodes each update plain and reports both times and whether the tokens are identical. The transcriber's
    drafter keeps per-decode state, so decodes of streams and files sharing one SpeculativeWhisper must not
    overlap (one at a time, as the web app's queue and a server's lock ensure). `decode_windows(windows, speculation)`
    runs each decode (default: the transcriber's pipeline), e.g. on the one thread a server decodes with.
    """

    def __init__(self, asr, *, language: str | None = None, hypothesis_drafting: bool = True,
                 hypothesis_tokens: int = DEFAULT_HYPOTHESIS_TOKENS, tail_drafting: bool | None = None,
                 min_chunk_seconds: float = 0.5, trim_seconds: float = 15.0, max_buffer_seconds: float = 25.0,
                 silence_rms: float = SILENCE_RMS, compare: bool = False, decode_windows=None,
                 min_agreed_seconds: float = MIN_AGREED_SECONDS):
        base = asr.pipeline
        window_seconds = base.window_samples / audio_io.SAMPLE_RATE
        if not 0 < trim_seconds <= max_buffer_seconds < window_seconds:
            raise SpecdecError(f"need 0 < trim_seconds <= max_buffer_seconds < {window_seconds:g} s")
        if not min_agreed_seconds >= 0:
            raise SpecdecError("need min_agreed_seconds >= 0")
        self.pipeline = base  # the same models, runner and tokens; its own drafter and draft length
        self.decoder = UpdateDecoder(asr, language=language, hypothesis_drafting=hypothesis_drafting,
                                     hypothesis_tokens=hypothesis_tokens, tail_drafting=tail_drafting,
                                     compare=compare, decode_windows=decode_windows)
        self.min_chunk_seconds, self.trim_seconds = min_chunk_seconds, trim_seconds
        self.max_buffer_seconds, self.silence_rms = max_buffer_seconds, silence_rms
        self.min_agreed_seconds = min_agreed_seconds
        # what judges a decode: openai's rule drops a silent one (as offline decoding skips a silent window); one
        # whose no-speech probability alone is over the threshold commits nothing and is agreed with by nothing
        options = getattr(asr, "options", None)
        self.recipe: Recipe = options.recipe if options is not None else Recipe()
        tokens = base.tokens
        self._step_seconds = base.frames.timestamp_seconds
        self._step_samples = round(self._step_seconds * audio_io.SAMPLE_RATE)
        self._cut_rules = cuts.CutRules(self._step_seconds, trim_seconds, max_buffer_seconds, tokens.end_of_text)
        self._prompt_limit = tokens.max_positions // 2 - 1
        self._token_text = TokenText(base.processor.tokenizer)
        self._intake = AudioIntake()
        self._decoded_until = 0
        self._finished = False
        self._prompt: list[int] = []  # committed text before the buffer (the conditioning prompt)
        self._hypothesis: list[int] = []  # the last update's tokens, as the next decode would see them
        self._committed_in_buffer: list[int] = []  # committed text tokens at the start of the hypothesis
        self._tentative: list[int] = []  # the hypothesis's text after them
        self._heard = False  # whether the last hypothesis may be agreed with (its no-speech probability was low)
        self._context = False  # whether the last hypothesis's buffer was long enough to be agreed with
        self._backlog = False  # the buffer held more than one window: the rest waits for the next update
        self._decoded_samples = np.zeros(0, dtype=np.float32)  # the buffer of the update being made
        self._decoded_start = 0  # its first sample in the stream
        self._speech = speech.SpeechFrames()  # where the audio holds speech (VAD, computed when asked)
        self._skip_cut = False  # the last update cut the buffer where its decode skipped speech
        self._head: int | None = None  # the next decode covers only these samples: speech skipped at the start
        self._skipped = False  # the last hypothesis's tentative text follows speech its decode skipped
        self._cut_since_decode = False  # the last update cut the buffer after decoding it
        self._emitted: list[int] = []  # every committed text token
        self._committed_until: float | None = None

    # -- how updates decode (decoding.py); a test or a server may swap `decode_windows` and `plain` ---------------

    speculation = property(lambda self: self.decoder.speculation)
    hypothesis_drafter = property(lambda self: self.decoder.hypothesis_drafter)
    language_id = property(lambda self: self.decoder.language_id)

    @property
    def decode_windows(self):
        return self.decoder.decode_windows

    @decode_windows.setter
    def decode_windows(self, decode) -> None:
        self.decoder.decode_windows = decode

    @property
    def plain(self):
        return self.decoder.plain

    @plain.setter
    def plain(self, speculation) -> None:
        self.decoder.plain = speculation

    # -- audio in --------------------------------------------------------------------------------------

    @property
    def received_seconds(self) -> float:
        return self._intake.received / audio_io.SAMPLE_RATE

    @property
    def buffer_seconds(self) -> float:
        return len(self._intake.samples) / audio_io.SAMPLE_RATE

    @property
    def committed(self) -> str:
        return self.pipeline.text(self._emitted)

    def append(self, samples, sample_rate: float | None = None) -> None:
        """Add audio: a sample array (any rate, given by `sample_rate`; 16 kHz when None; mono or 2-D) or raw
        bytes of 16-bit little-endian PCM. An empty chunk is fine. The rate may not change within a stream."""
        if self._finished:
            raise SpecdecError("this stream has finished: start a new one")
        self._intake.append(samples, sample_rate)

    def feed(self, samples, sample_rate: float | None = None) -> StreamingUpdate | None:
        """`append`, then `update` once at least `min_chunk_seconds` of audio arrived since the last decode."""
        self.append(samples, sample_rate)
        if self._intake.received - self._decoded_until < self.min_chunk_seconds * audio_io.SAMPLE_RATE:
            return None
        return self.update()

    # -- updates -----------------------------------------------------------------------------------------

    def update(self) -> StreamingUpdate | None:
        """Decode all the audio received so far and commit what two hypotheses agree on; None if no audio arrived
        since the last update."""
        if self._finished:
            raise SpecdecError("this stream has finished: start a new one")
        if self._intake.received == self._decoded_until and not self._backlog and self._head is None:
            return None
        return self._update(final=False)

    def finish(self) -> StreamingUpdate:
        """The end of the stream: decode what is left and commit the whole last hypothesis."""
        if self._finished:
            raise SpecdecError("this stream has finished: start a new one")
        self._intake.close()
        earlier_tokens, earlier_words, decode_seconds = [], [], 0.0
        # more than a window waiting (decoding fell behind): decoded window by window first
        while self._backlog or len(self._intake.samples) > self.pipeline.window_samples:
            update = self._update(final=False)
            earlier_tokens += update.new_tokens
            earlier_words += update.words
            decode_seconds += update.decode_seconds
        update = self._update(final=True)
        # the last decode skipped speech: committed up to it and cut there, the rest is decoded again
        for _ in range(MAX_FINAL_DECODES - 1):
            if not self._skip_cut:
                break
            earlier_tokens += update.new_tokens
            earlier_words += update.words
            decode_seconds += update.decode_seconds
            update = self._update(final=True)
        if earlier_tokens or earlier_words:
            update.new_tokens = earlier_tokens + update.new_tokens
            update.new_committed = self.pipeline.text(update.new_tokens)
            update.words = earlier_words + update.words
            update.decode_seconds += decode_seconds
        self._finished = True
        self._intake.clear()
        return update

    def _update(self, final: bool) -> StreamingUpdate:
        samples, start, received = self._intake.snapshot()
        # the end of a stream decodes again what is left when the last update cut the buffer (that update's
        # hypothesis may have stopped short of the audio that is left) or when its decode skipped speech
        head, self._head = self._head, None
        fresh = (received > self._decoded_until or self._backlog or final and (self._cut_since_decode or self._skipped)
                 or head is not None)
        self._decoded_until = received
        # a buffer longer than the window (decoding fell far behind): its first window now, the rest next update
        self._backlog = len(samples) > self.pipeline.window_samples and not final
        if head is not None:  # the last decode skipped the speech at the buffer's start: that speech alone now
            samples = samples[:head]
        elif self._backlog:
            samples = samples[:round(self.max_buffer_seconds * audio_io.SAMPLE_RATE) + 1]
        decoded = LiveDecode()
        self._decoded_samples, self._decoded_start, self._cut_since_decode = samples, start, False
        if not fresh:  # the end of a stream with nothing new: the last hypothesis stands
            new_tokens, words = self._commit_tentative(len(samples), start)
        else:
            if len(samples) and not is_quiet(samples, self.silence_rms):
                decoded = self.decoder.decode(samples, self._prompt, self._hypothesis)
            new_tokens, words = self._advance(decoded.tokens, len(samples), start, final, decoded.score,
                                              decoded.words, head is not None)
        audio_seconds = received / audio_io.SAMPLE_RATE
        return StreamingUpdate(
            audio_seconds=audio_seconds, committed=self.committed, new_committed=self.pipeline.text(new_tokens),
            tentative=self.pipeline.text(self._tentative) if self._heard else "",
            buffer_start=start / audio_io.SAMPLE_RATE,
            buffer_seconds=len(samples) / audio_io.SAMPLE_RATE, decode_seconds=decoded.seconds,
            lag_seconds=None if self._committed_until is None else max(0.0, audio_seconds - self._committed_until),
            words=words, tokens=decoded.tokens, stats=decoded.stats, drafting=decoded.usage, final=final,
            plain_decode_seconds=decoded.plain_seconds, identical=decoded.identical,
            no_speech_prob=None if decoded.score is None else decoded.score.no_speech_prob, new_tokens=new_tokens)

    def _commit_tentative(self, buffer_samples: int, buffer_start: int):
        """Commit the last hypothesis's tentative text as it stands (the stream ended with no new audio)."""
        eot, timestamp_begin = self.pipeline.tokens.end_of_text, self.pipeline.tokens.timestamp_begin
        text = self._committed_in_buffer + self._tentative
        start, new_tokens = len(self._committed_in_buffer), self._tentative
        found = agreement.pieces(self._hypothesis, timestamp_begin, eot)
        words = self._words(found, text, start, len(text), self._seconds(buffer_samples), buffer_start)
        self._emitted += new_tokens
        if words:
            self._committed_until = words[-1].end
        self._committed_in_buffer, self._tentative = text, []
        return new_tokens, words

    def _advance(self, tokens: list[int], buffer_samples: int, buffer_start: int, final: bool,
                 score=None, aligned: list | None = None, head: bool = False):
        """Commit what this hypothesis agrees on with the last one (all of it when final; commit.py), cut the
        buffer where committed segments end (cuts.py), and keep the hypothesis for the next update. A decode that
        openai's rule judges silent counts as no text (offline decoding skips such a window); one whose no-speech
        probability is over the threshold commits nothing by agreement and is not agreed with by the next. A `head`
        decode (of the speech a decode skipped at its buffer's start) is committed whole and cut away. Returns (new
        committed tokens, committed words)."""
        eot, timestamp_begin = self.pipeline.tokens.end_of_text, self.pipeline.tokens.timestamp_begin
        silent, heard = commit.judge(None if score is None else score.no_speech_prob,
                                     None if score is None else score.avg_logprob, self.recipe)
        if silent:
            tokens = []
        text = agreement.text_tokens(tokens, eot)
        last = commit.Agreement(tuple(self._committed_in_buffer), tuple(self._tentative), self._heard, self._context)
        samples, start_sample = self._decoded_samples, self._decoded_start
        # the words after speech this decode skipped are neither committed nor cut away (speech.py)
        decision = commit.decide(last, text, heard, final or head, lambda start: None if head else speech.heard_end(
            aligned if text else None, self._speech, samples, start_sample, not start),
            self._token_text.starts_word, self._token_text.text_of)
        start = decision.start
        # committed words this hypothesis stopped short of (it ended early): still in the buffer, kept as committed
        unreached = list(decision.unreached)
        self._heard = heard
        self._context = buffer_samples >= self.min_agreed_seconds * audio_io.SAMPLE_RATE
        found = agreement.pieces(tokens, timestamp_begin, eot)
        buffer_seconds = self._seconds(buffer_samples)
        plan = cuts.place(tokens, text, found, decision.committed, decision.heard_end, final=final, head=head,
                          aligned=aligned, samples=samples, start=start_sample, buffer_seconds=buffer_seconds,
                          frames=self._speech, rules=self._cut_rules)
        cut, committed = plan.cut, plan.committed
        self._head, self._skip_cut, self._skipped = plan.head, plan.decode_again, plan.skipped
        new_tokens = text[start:committed]
        words = self._words(found, text, start, committed, buffer_seconds, buffer_start)
        self._emitted += new_tokens
        if words:
            self._committed_until = words[-1].end
        # the committed tokens still in the buffer, as they were emitted (a hypothesis may reword them)
        in_buffer = self._committed_in_buffer + new_tokens
        hypothesis = [token for token in tokens if token != eot]
        if cut is not None:
            self._prompt = (self._prompt + text[:cut.text_end])[-self._prompt_limit:]
            hypothesis = agreement.shift(hypothesis[cut.end_index:], cut.end, timestamp_begin)
            in_buffer = text[cut.text_end:committed] + unreached
            self._drop(cut.end * self._step_samples)
        elif plan.whole and text or not text and (head or buffer_samples > IDLE_SECONDS * audio_io.SAMPLE_RATE):
            self._prompt = (self._prompt + in_buffer)[-self._prompt_limit:]
            hypothesis, in_buffer = [], []
            self._drop(buffer_samples - (0 if text or head else int(KEEP_SECONDS * audio_io.SAMPLE_RATE)))
        self._hypothesis, self._committed_in_buffer, self._tentative = hypothesis, in_buffer, text[committed:]
        return new_tokens, words

    def _words(self, found, text: list[int], start: int, end: int, buffer_seconds: float,
               buffer_start: int) -> list[CommittedWord]:
        return committed_words(found, text, start, end, buffer_seconds, buffer_start, self._step_seconds,
                               self._token_text, self.pipeline.text)

    def _seconds(self, buffer_samples: int) -> float:
        """Seconds of a buffer that its 30-s window holds (features past the window are cut)."""
        return min(buffer_samples, self.pipeline.window_samples) / audio_io.SAMPLE_RATE

    def _drop(self, count: int) -> None:
        """Cut `count` samples from the start of the buffer (audio appended meanwhile stays)."""
        if self._intake.drop(count):
            self._cut_since_decode = True
        self._speech.forget_before(self._intake.start)
