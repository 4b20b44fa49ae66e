"""Live transcription on a tiny random Whisper (real feature extractor, tokenizer and timestamp tokens): every
update's tokens are plain greedy's on the same buffer and prompt; the commit policy, buffer cuts and prompts on
scripted hypotheses; and streams that send nothing, silence, odd chunks, or stop mid-way."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from asr_specdec.core.stats import DecodeStats
from asr_specdec.errors import AudioError, SpecdecError
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.live.replay import play, summarize
from asr_specdec.whisper.live.streaming import IDLE_SECONDS, StreamingTranscriber
from asr_specdec.whisper.recipe.alignment import AlignedWord
from asr_specdec.whisper.recipe.scoring import WindowScore
from asr_specdec.whisper.recipe.window_extras import WindowExtras
from asr_specdec.whisper.runtime.pipeline import DecodedWindow

from ..tiny_ct2 import write_tiny_ct2

pytest.importorskip("ctranslate2")
RATE = 16000


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    from asr_specdec.weights.ct2 import convert_ct2_whisper

    source = tmp_path_factory.mktemp("tiny_ct2_stream")
    write_tiny_ct2(source, quantization="float32", seed=0)
    out = convert_ct2_whisper(source, tmp_path_factory.mktemp("tiny_hf_stream") / "model")
    return WhisperForConditionalGeneration.from_pretrained(out).eval(), WhisperProcessor.from_pretrained(out)


@pytest.fixture(scope="module")
def asr(tiny_pair):
    # a random model talks until the length limit: a lower one keeps these tests quick
    return SpeculativeWhisper(tiny_pair, mode="quantized-self", max_new_tokens=24)


def noise(seconds: float, seed: int = 0, level: float = 0.1) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(seconds * RATE)) * level).astype(np.float32)


def record_windows(stream: StreamingTranscriber) -> list:
    """Wrap the stream's decodes so that every window it decodes with its own drafting (features, prompt) is kept,
    with its tokens (not compare=True's plain decodes of the same windows)."""
    seen, decode = [], stream.decode_windows

    def recording(windows, speculation):
        decoded = decode(windows, speculation)
        if speculation is stream.speculation:
            seen.append((windows[0], decoded[0].tokens))
        return decoded

    stream.decode_windows = recording
    return seen


@pytest.mark.parametrize("tail_drafting", [None, True], ids=["tail plain", "tail drafted by the int8 self"])
def test_every_update_is_plain_greedy_on_its_buffer_and_prompt(asr, tiny_pair, tail_drafting):
    """Buffers cut and prompts carried (short limits force both): each decode equals a plain transcriber's decode
    of features computed afresh from the stream's own audio at the update's buffer, with the same prompt."""
    audio = noise(4.0)
    stream = StreamingTranscriber(asr, trim_seconds=1.5, max_buffer_seconds=2.5, compare=True,
                                  tail_drafting=tail_drafting)
    seen = record_windows(stream)
    updates = [live.update for live in play(stream, audio, chunk_seconds=1.0, clock="fixed")]
    plain = SpeculativeWhisper(tiny_pair, mode="off", max_new_tokens=24)
    decoded = [update for update in updates if update.stats is not None]
    assert len(decoded) == len(seen) >= 4
    assert any(update.buffer_start > 0 for update in decoded), "the buffer was never cut"
    assert any(window.previous for window, _ in seen), "no update was conditioned on committed text"
    for update, (window, tokens) in zip(decoded, seen):
        assert update.identical and update.tokens == tokens
        begin = round(update.buffer_start * RATE)
        buffer = audio[begin:begin + round(update.buffer_seconds * RATE)]
        features = plain.pipeline.features(buffer)
        assert np.array_equal(features.numpy(), window.features.numpy())
        expected = plain.decode_windows([window.__class__(features, None, True, window.previous,
                                                          max_new_tokens=plain.max_new_tokens)])[0].tokens
        assert tokens == expected
    drafted = sum(update.drafting.hypothesis_accepted for update in decoded)
    assert drafted > 0, "nothing was accepted from the previous hypothesis"
    fallback = sum(update.drafting.fallback_drafted for update in decoded)
    assert (fallback > 0) == bool(tail_drafting), fallback


def test_updates_decode_under_the_transcribers_repetition_rules(tiny_pair):
    asr = SpeculativeWhisper(tiny_pair, mode="quantized-self", max_new_tokens=24, no_repeat_ngram_size=2)
    stream = StreamingTranscriber(asr, compare=True)
    seen = record_windows(stream)
    updates = [live.update for live in play(stream, noise(2.0), chunk_seconds=1.0, clock="fixed")]
    assert seen and all(window.no_repeat_ngram_size == 2 for window, _ in seen)
    assert all(len(set(zip(tokens, tokens[1:]))) == len(tokens) - 1 for _, tokens in seen)
    assert all(update.identical for update in updates if update.stats is not None)


def test_the_tail_is_drafted_by_the_transcribers_drafter_only_when_it_runs_no_model(tiny_pair):
    quantized = SpeculativeWhisper(tiny_pair, mode="quantized-self", max_new_tokens=24)
    lookup = SpeculativeWhisper(tiny_pair, mode="prompt-lookup", max_new_tokens=24)
    assert quantized.stream().hypothesis_drafter.fallback is None
    assert quantized.stream(tail_drafting=True).hypothesis_drafter.fallback is quantized.drafter
    assert lookup.stream().hypothesis_drafter.fallback is lookup.drafter
    assert lookup.stream(tail_drafting=False).hypothesis_drafter.fallback is None


def test_decodes_run_where_decode_windows_says(asr):
    """A server decodes on one thread of its own: every decode of a stream (drafted and plain) goes there, with
    the same tokens as decoding in the caller's thread."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    audio = noise(2.0, seed=5)
    direct = [live.update for live in play(StreamingTranscriber(asr), audio, chunk_seconds=1.0, clock="fixed")]
    threads = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="decoder") as executor:
        def on_decoder_thread(windows, speculation):
            threads.append(executor.submit(lambda: threading.current_thread().name).result())
            return executor.submit(asr.pipeline.decode, windows, speculation).result()

        stream = StreamingTranscriber(asr, compare=True, decode_windows=on_decoder_thread)
        routed = [live.update for live in play(stream, audio, chunk_seconds=1.0, clock="fixed")]
    decoded = [update for update in routed if update.stats is not None]
    assert len(threads) == 2 * len(decoded) >= 2 and all(name.startswith("decoder") for name in threads)
    assert all(update.identical for update in decoded)
    assert [update.tokens for update in routed] == [update.tokens for update in direct]


def test_compared_updates_each_encode_their_buffer_and_take_turns_going_first(asr, monkeypatch):
    """compare=True: the plain decode of an update runs its own encoder (it does not take the encoding the drafted
    decode of the same window kept), and the two ways take turns going first, update after update."""
    from asr_specdec.whisper.runtime.encoder import EncoderRunner

    encoded, original = [], EncoderRunner.__call__
    monkeypatch.setattr(EncoderRunner, "__call__", lambda self, features: encoded.append(1) or original(self, features))
    stream = StreamingTranscriber(asr, compare=True)
    order, decode = [], stream.decode_windows

    def recording(windows, speculation):
        order.append("plain" if speculation is stream.plain else "drafted")
        return decode(windows, speculation)

    stream.decode_windows = recording
    updates = [live.update for live in play(stream, noise(3.0, seed=3), chunk_seconds=1.0, clock="fixed")]
    decoded = [update for update in updates if update.stats is not None]
    assert len(decoded) >= 3 and all(update.identical for update in decoded)
    assert len(encoded) == len(order) == 2 * len(decoded)
    firsts = order[::2]
    assert firsts == [("drafted", "plain")[number % 2] for number in range(len(decoded))]
    assert all(pair[0] != pair[1] for pair in zip(order[::2], order[1::2]))


class Script:
    """A stand-in for the pipeline's decode: returns the hypotheses given, in order, and records each window and
    what the hypothesis drafter was told to expect. `scores`: (no-speech probability, avg log-probability) of
    each hypothesis (none: the decode has no score)."""

    def __init__(self, stream: StreamingTranscriber, hypotheses: list[list[int]],
                 scores: list[tuple[float, float]] | None = None, words: list | None = None):
        self.hypotheses, self.windows, self.expected = list(hypotheses), [], []
        self.scores = list(scores) if scores is not None else None
        self.words = list(words) if words is not None else None
        self.stream = stream
        stream.decode_windows = self

    def __call__(self, windows, speculation):
        self.windows.append(windows[0])
        self.expected.append(list(self.stream.hypothesis_drafter.hypothesis))
        extras = None
        if self.scores is not None:
            no_speech, logprob = self.scores.pop(0)
            extras = WindowExtras(score=WindowScore(0.0, logprob, no_speech))
        if self.words is not None:
            extras = WindowExtras(words=self.words.pop(0))
        return [DecodedWindow(self.hypotheses.pop(0), None, None, DecodeStats(), extras)]


@pytest.fixture
def words(tiny_pair):
    tokenizer = tiny_pair[1].tokenizer
    return lambda text: tokenizer.encode(text, add_special_tokens=False)


def test_local_agreement_commits_cuts_at_committed_segments_and_prompts_with_them(asr, words):
    stream = StreamingTranscriber(asr, min_agreed_seconds=0, trim_seconds=1.0, max_buffer_seconds=2.8)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    first = [ts, *words(" hello wor"), eot]
    second = [ts, *words(" hello world"), ts + 50, ts + 50, *words(" this"), eot]
    third = [ts, *words(" hello world"), ts + 50, ts + 50, *words(" this is"), eot]
    fourth = [ts, *words(" this is it"), eot]
    script = Script(stream, [first, second, third, fourth])
    updates = [stream.feed(noise(0.5, seed)) for seed in range(4)]
    assert updates[0].committed == "" and updates[0].tentative == "hello wor"
    # " hello wor" and " hello world this" share " hello wor", but "wor" goes on as "world" in the second
    assert updates[1].new_committed == "hello" and updates[1].tentative == "world this"
    assert updates[2].new_committed == "world this" and updates[2].committed == "hello world this"
    assert [word.text for word in updates[2].words] == ["world", "this"]
    assert updates[2].words[0].end == pytest.approx(1.0)  # the end of the segment " hello world"
    # past trim_seconds the buffer was cut where the committed segment " hello world" ends (1.00 s)
    assert updates[3].buffer_start == pytest.approx(1.0)
    assert script.windows[3].previous == words(" hello world")
    assert script.expected[3] == [ts, *words(" this is")]  # the rest of the last hypothesis, 1 s earlier
    assert updates[3].new_committed == "is" and updates[3].tentative == "it"
    final = stream.finish()
    assert final.final and final.committed == "hello world this is it" and final.tentative == ""
    with pytest.raises(SpecdecError):
        stream.feed(noise(0.5))


def test_a_cut_follows_the_last_committed_word_not_a_late_segment_end(asr, words):
    """Whisper ended the committed segment " hello world" at 1.4 s, long after its last word (aligned end 0.7 s):
    the buffer is cut at the quietest 20 ms between that word's end and the next word's start (a pause at
    1.0 s), so speech Whisper skipped before 1.4 s is decoded again, not cut away."""
    stream = StreamingTranscriber(asr, min_agreed_seconds=0, trim_seconds=1.0, max_buffer_seconds=2.8)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    hello, world, this = words(" hello"), words(" world"), words(" this")
    hypothesis = [ts, *hello, *world, ts + 70, ts + 70, *this, eot]
    aligned = [AlignedWord(" hello", hello, 0.1, 0.3, 0.9), AlignedWord(" world", world, 0.4, 0.7, 0.9),
               AlignedWord(" this", this, 1.45, 1.5, 0.9)]
    script = Script(stream, [hypothesis, hypothesis], words=[aligned, aligned])
    audio = noise(1.5)
    audio[RATE:RATE + RATE // 25] = 0.0  # a pause at 1.00-1.04 s
    first, second = stream.feed(audio[:12000]), stream.feed(audio[12000:])
    assert first.committed == "" and second.committed == "hello world this"
    assert all(window.word_tokens is not None for window in script.windows)  # every decode is aligned
    assert stream.buffer_seconds == pytest.approx(0.5)  # cut at 1.00 s, not at the segment's end (1.4 s)


def test_finish_decodes_again_what_a_cut_left(asr, words):
    """The last update was a forced cut whose hypothesis stopped short ("dos" and no more): finish() with no new
    audio decodes what the cut left and commits that decode, not the stale tentative text."""
    stream = StreamingTranscriber(asr, min_agreed_seconds=0, trim_seconds=1.0, max_buffer_seconds=1.2)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    script = Script(stream, [[ts, *words(" one"), ts + 30, ts + 30, *words(" two"), eot],
                             [ts, *words(" uno"), ts + 30, ts + 30, *words(" dos"), eot],
                             [ts, *words(" dos tres"), eot]])
    stream.feed(noise(1.0))
    assert stream.feed(noise(0.5)).new_committed == "uno"
    final = stream.finish()
    assert len(script.windows) == 3 and final.committed == "uno dos tres"


def test_committed_words_a_hypothesis_stops_short_of_are_kept_across_a_cut(asr, words):
    """The issue's join, 45 s in: " two" was committed; the next decode of the buffer ends early (Whisper skipped
    the rest of the audio) and the buffer is cut after " one". " two" is still in the buffer and still committed:
    when the next decode says it again it is found there, not committed a second time."""
    stream = StreamingTranscriber(asr, min_agreed_seconds=0, trim_seconds=1.0, max_buffer_seconds=2.8)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    both = [ts, *words(" one"), ts + 20, ts + 20, *words(" two"), eot]
    Script(stream, [both, both, [ts, *words(" one"), ts + 20, eot], [ts, *words(" two three"), eot],
                    [ts, *words(" two three"), eot]])
    updates = [stream.feed(noise(0.5, seed)) for seed in range(4)]
    assert updates[1].committed == "one two"
    assert updates[2].new_committed == "" and updates[2].buffer_start == 0
    assert updates[3].buffer_start == pytest.approx(0.4) and updates[3].tentative == "three"
    assert stream.finish().committed == "one two three"


class SkippingDecoder:
    """A stand-in for the pipeline's decode that transcribes the clips of a known layout a buffer holds whole, with
    segment timestamps and words aligned as dynamic time warping aligns them (contiguous, from the buffer's start),
    and that leaves out the second clip whenever the first is in the same buffer: the context effect of the
    issue's join, where Whisper went from one utterance to the one after next and the "." between them spans the
    skipped one."""

    def __init__(self, stream: StreamingTranscriber, layout: list[tuple[float, float, str]], words,
                 first_at_clip: bool = False):
        self.stream, self.layout, self.words, self.buffers = stream, layout, words, []
        self.first_at_clip = first_at_clip  # the first word starts where its clip does, not at the buffer's start
        stream.decode_windows = self

    def left_out(self, heard: list[int]) -> list[int]:
        """The clips (indices into the layout) that a decode of a buffer holding `heard` leaves out."""
        return [heard[1]] if len(heard) > 1 and heard[0] == 0 else []

    def __call__(self, windows, speculation):
        ts, eot = self.stream.pipeline.tokens.timestamp_begin, self.stream.pipeline.tokens.end_of_text
        start = self.stream.received_seconds - self.stream.buffer_seconds
        end = start + windows[0].audio_frames * 0.01  # a decode may cover only the head of the buffer
        self.buffers.append((start, end))
        held = [index for index, (begin, finish, _) in enumerate(self.layout)
                if begin >= start - 0.1 and finish <= end]
        skipped = self.left_out(held)
        heard = [(self.layout[index][0] - start, self.layout[index][1] - start, self.layout[index][2])
                 for index in held if index not in skipped]
        tokens, aligned = [], []
        for index, (begin, finish, text) in enumerate(heard):
            spoken, stop = text.split(), heard[index + 1][0] if index + 1 < len(heard) else finish
            tokens.append(ts + round(begin / 0.02))
            for place, word in enumerate(spoken):
                edge = begin + (finish - begin) * (place + 1) / len(spoken)
                piece = self.words(" " + word.rstrip("."))
                first = begin if self.first_at_clip else 0.0
                aligned.append(AlignedWord(" " + word.rstrip("."), piece, aligned[-1].end if aligned else first,
                                           edge, 0.9))
                tokens += piece
            aligned.append(AlignedWord(".", self.words("."), aligned[-1].end, stop, 0.9))
            tokens += self.words(".") + [ts + round(finish / 0.02)]
        return [DecodedWindow(tokens + [eot], None, None, DecodeStats(), WindowExtras(words=aligned))]


@pytest.fixture(scope="module")
def three_utterances(shared_audio):
    """(three shared clips joined with 0.5 s after each, each clip's (start, end, text), the whole text)."""
    from eval.bench.nonspeech import clips

    texts = {"goforward.wav": "Go forward ten meters.", "librivox-0880.wav": "He was not an ill disposed young man.",
             "forever.wav": "Feels like these days go on forever."}
    parts, layout, at = [], [], 0.0
    for name, samples in clips(shared_audio, list(texts)):
        layout.append((at, at + len(samples) / RATE, texts[name]))
        parts += [samples, np.zeros(RATE // 2, dtype=np.float32)]
        at = layout[-1][1] + 0.5
    return np.concatenate(parts), layout, " ".join(texts.values())


def test_speech_a_decode_skipped_is_not_committed_past_nor_cut_away(asr, words, three_utterances):
    """Three utterances, the second skipped by every decode of a buffer that also holds the first (silero-vad
    hears it inside the first one's "."). Two decodes agree on the first and the third: only the first is
    committed, the buffer is cut before the second, which the next decode hears; nothing is lost. The same at
    the end of a stream."""
    audio, layout, whole = three_utterances
    stream = StreamingTranscriber(asr, trim_seconds=10.8, max_buffer_seconds=12.0)
    decoder = SkippingDecoder(stream, layout, words)
    stream.append(audio[:8 * RATE])
    assert stream.update().tentative == "Go forward ten meters."
    stream.append(audio[8 * RATE:])
    second = stream.update()  # "Go forward ten meters. Feels like these days go on forever."
    assert second.committed == "Go forward ten meters." and second.buffer_start == 0
    stream.append(np.zeros(RATE // 2, dtype=np.float32))
    third = stream.update()  # the same again: the two agree on all of it, but "Feels ..." follows skipped speech
    assert third.committed == "Go forward ten meters."
    assert layout[0][1] - 0.3 < stream.received_seconds - stream.buffer_seconds <= layout[1][0] + 0.05
    final = stream.finish()
    assert final.committed == whole
    assert len(decoder.buffers) == 4
    # the whole recording at once: finish() commits up to the skipped speech, cuts there and decodes the rest
    stream = StreamingTranscriber(asr, min_agreed_seconds=0)
    decoder = SkippingDecoder(stream, layout, words)
    stream.append(audio)
    final = stream.finish()
    assert final.committed == final.new_committed == whole and len(decoder.buffers) == 2
    assert layout[0][1] - 0.3 < decoder.buffers[1][0] <= layout[1][0] + 0.05


class StartSkippingDecoder(SkippingDecoder):
    """Leaves out clip `skip` whenever it is the first clip of a buffer that also holds the next one: the decode
    begins after speech at the very start of its buffer."""

    def __init__(self, stream, layout, words, skip: int, first_at_clip: bool = False):
        super().__init__(stream, layout, words, first_at_clip)
        self.skip = skip

    def left_out(self, heard: list[int]) -> list[int]:
        return [self.skip] if heard[:2] == [self.skip, self.skip + 1] else []


@pytest.mark.parametrize("first_at_clip", [False, True], ids=["first word from the buffer's start", "first word late"])
def test_speech_a_decode_skipped_at_the_start_of_its_buffer_is_not_lost(asr, words, three_utterances,
                                                                        first_at_clip):
    """Three utterances; decodes leave out the one at the very start of a buffer that also holds the next (the
    first buffer's, then the first after a cut). Two such decodes agree on the rest: nothing after the skipped
    speech is committed, no cut falls past it, and finish() decodes it again: nothing is lost."""
    audio, layout, whole = three_utterances
    # the first buffer: "Go forward ten meters." alone, then left out of every buffer that holds it and the next
    stream = StreamingTranscriber(asr, trim_seconds=10.8, max_buffer_seconds=12.0)
    decoder = StartSkippingDecoder(stream, layout, words, skip=0, first_at_clip=first_at_clip)
    stream.append(audio[:5 * RATE])
    assert stream.update().tentative == "Go forward ten meters."
    stream.append(audio[5 * RATE:])
    assert stream.update().committed == ""  # "He was not ... forever."
    stream.append(np.zeros(RATE // 2, dtype=np.float32))
    third = stream.update()  # the same again: the two agree on all of it, but it follows skipped speech
    assert third.committed == "" and stream.buffer_seconds == pytest.approx(stream.received_seconds)
    assert stream.finish().committed == whole
    # after a cut: "Go forward ten meters." is committed and cut away; then "He was not ..." starts the buffer
    stream = StreamingTranscriber(asr, trim_seconds=5.0, max_buffer_seconds=12.0)
    decoder = StartSkippingDecoder(stream, layout, words, skip=1, first_at_clip=first_at_clip)
    stream.append(audio[:5 * RATE])
    stream.update()
    stream.append(audio[5 * RATE:7 * RATE])
    second = stream.update()
    assert second.committed == "Go forward ten meters."
    assert layout[0][1] - 0.3 < stream.received_seconds - stream.buffer_seconds < layout[1][0]  # cut between
    stream.append(audio[7 * RATE:])
    assert stream.update().committed == "Go forward ten meters."  # "Feels like these days go on forever."
    stream.append(np.zeros(RATE // 2, dtype=np.float32))
    fourth = stream.update()
    assert fourth.committed == "Go forward ten meters."
    assert stream.received_seconds - stream.buffer_seconds < layout[1][0]  # no cut past the skipped speech
    assert stream.finish().committed == whole
    # the whole recording at once: finish() decodes the skipped start on its own, then the rest
    stream = StreamingTranscriber(asr, min_agreed_seconds=0)
    decoder = StartSkippingDecoder(stream, layout, words, skip=0, first_at_clip=first_at_clip)
    stream.append(audio)
    final = stream.finish()
    assert final.committed == final.new_committed == whole and len(decoder.buffers) == 3
    assert layout[0][1] - 0.3 < decoder.buffers[1][1] <= layout[1][0] + 0.05  # the skipped start alone


def test_a_full_buffer_without_agreement_is_cut_at_its_last_complete_segment(asr, words):
    stream = StreamingTranscriber(asr, min_agreed_seconds=0, trim_seconds=1.0, max_buffer_seconds=1.2)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    Script(stream, [[ts, *words(" one"), ts + 30, ts + 30, *words(" two"), eot],
                    [ts, *words(" uno"), ts + 30, ts + 30, *words(" dos"), eot]])
    assert stream.feed(noise(1.0)).committed == ""
    update = stream.feed(noise(0.5))  # 1.5 s > max_buffer_seconds: " uno" is committed and cut away
    assert update.new_committed == "uno" and update.tentative == "dos"
    assert stream.buffer_seconds == pytest.approx(0.9)


def test_an_update_the_model_doubts_commits_nothing_and_is_not_agreed_with(asr, words):
    """The start of the issue's meeting clip: short buffers that the model thinks hold no speech (no-speech
    probability over 0.6) say "Thank you."; two of them agreeing must not commit it, and the first heard
    hypothesis must not be agreed with a doubted one."""
    stream = StreamingTranscriber(asr, min_agreed_seconds=0)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    thanks, abigail = [ts, *words(" Thank you."), eot], [ts, *words(" I'm Abigail Klaflin."), eot]
    Script(stream, [thanks, thanks, abigail, abigail], scores=[(0.7, -0.5), (0.75, -0.4), (0.3, -0.5), (0.2, -0.4)])
    updates = [stream.feed(noise(0.5, seed)) for seed in range(4)]
    assert [update.committed for update in updates[:3]] == ["", "", ""]
    assert updates[0].tentative == updates[1].tentative == ""  # a doubted hypothesis is not shown either
    assert updates[0].no_speech_prob == pytest.approx(0.7) and updates[0].as_dict()["no_speech_prob"] == 0.7
    assert updates[2].tentative == "I'm Abigail Klaflin."
    assert updates[3].committed == "I'm Abigail Klaflin."


def test_hypotheses_of_buffers_under_min_agreed_seconds_commit_nothing(asr, words):
    """librivox-0920 live: Whisper hears "Howdy, Mary, to more amiable" in the first 1.0-2.0 s of "Had he married
    a more amiable woman"; two such hypotheses agreeing must not commit it. From 2.5 s of audio on they agree."""
    stream = StreamingTranscriber(asr)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    howdy, married = [ts, *words(" Howdy, Mary, to more amiable"), eot], [ts, *words(" Had he married a"), eot]
    Script(stream, [howdy, howdy, howdy, married, married])
    updates = [stream.feed(noise(0.5 if step == 0 else 0.75, step)) for step in range(5)]  # 0.5 ... 3.5 s
    assert [update.committed for update in updates[:4]] == [""] * 4
    assert updates[2].tentative == "Howdy, Mary, to more amiable" and updates[4].committed == "Had he married a"
    with pytest.raises(SpecdecError, match="min_agreed_seconds"):
        StreamingTranscriber(asr, min_agreed_seconds=-1)


def test_a_decode_judged_silent_is_no_text_and_the_buffer_is_let_go(asr, words):
    """openai's rule (no-speech probability over 0.8, or over 0.6 with a low log-probability) makes a decode
    count as no text, as offline decoding skips such a window: nothing committed, not even by finish(), and the
    buffer is cut back as for a decode without text."""
    stream = StreamingTranscriber(asr, min_agreed_seconds=0)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    you = [ts, *words(" you"), eot]
    Script(stream, [you] * 7, scores=[(0.85, -0.2), (0.65, -1.5)] * 3 + [(0.9, -0.3)])
    for seed in range(6):
        update = stream.feed(noise(0.5, seed))
        assert update.committed == "" and update.tentative == ""
    assert stream.buffer_seconds <= IDLE_SECONDS
    assert stream.finish().committed == ""


def test_a_doubted_decode_that_offline_would_keep_is_committed_at_the_end(asr, words):
    """No-speech probability 0.7 with a likely text: offline decoding keeps it, so finish() commits it."""
    stream = StreamingTranscriber(asr, min_agreed_seconds=0)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    Script(stream, [[ts, *words(" quiet words"), eot]], scores=[(0.7, -0.3)])
    assert stream.feed(noise(0.5)).committed == ""
    final = stream.finish()
    assert final.committed == "quiet words" and final.new_committed == "quiet words"


def test_a_buffer_longer_than_a_window_is_decoded_window_by_window(asr, words):
    """Decoding fell far behind: 40 s waiting. The first max_buffer_seconds are decoded and cut at their last
    segment; the rest is decoded next, even with no new audio, and finish() commits it; nothing is cut unread."""
    stream = StreamingTranscriber(asr)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    script = Script(stream, [[ts, *words(" one"), ts + 1000, eot], [ts, *words(" two"), eot]])
    stream.append(noise(40.0))
    first = stream.update()
    assert first.buffer_seconds == pytest.approx(25.0, abs=0.01) and first.new_committed == "one"
    assert stream.buffer_seconds == pytest.approx(20.0)  # cut at the segment's end, 20 s
    second = stream.update()  # nothing new arrived, but 20 s are waiting
    assert second is not None and second.buffer_start == pytest.approx(20.0) and second.tentative == "two"
    assert stream.update() is None
    final = stream.finish()
    assert final.committed == "one two" and len(script.windows) == 2


def test_finish_decodes_a_backlog_of_more_than_a_window_first(asr, words):
    stream = StreamingTranscriber(asr)
    eot, ts = asr.tokens.end_of_text, asr.tokens.timestamp_begin
    script = Script(stream, [[ts, *words(" one"), ts + 1000, eot], [ts, *words(" two"), eot]])
    stream.append(noise(40.0))
    final = stream.finish()
    assert final.committed == "one two" and final.new_committed == "one two" and len(script.windows) == 2
    assert [word.text for word in final.words] == ["one", "two"]


def test_nothing_then_finish_and_empty_chunks(asr):
    stream = StreamingTranscriber(asr)
    assert stream.update() is None
    assert stream.feed(np.zeros(0, dtype=np.float32)) is None and stream.feed(b"") is None
    final = stream.finish()
    assert final.final and final.committed == "" and final.tentative == "" and final.decode_seconds == 0


def test_a_minute_of_silence_gives_no_text_decodes_nothing_and_holds_little_audio(asr):
    stream = StreamingTranscriber(asr)
    Script(stream, [])  # any decode would fail: silence must not reach the model
    quiet = noise(0.5, level=0.0005)  # a quiet room, -66 dBFS
    for index in range(120):
        update = stream.feed(quiet if index % 2 else np.zeros(RATE // 2, dtype=np.float32))
        assert update.committed == "" and update.tentative == "" and update.decode_seconds == 0
        assert stream.buffer_seconds <= IDLE_SECONDS + 0.5
    assert stream.received_seconds == pytest.approx(60.0)
    assert stream.finish().committed == ""


def test_a_stream_dropped_mid_way_frees_itself_and_leaves_the_models_working(asr):
    audio = noise(2.0, seed=3)
    before = asr.transcribe(audio).tokens
    stream = StreamingTranscriber(asr)
    stream.feed(audio[:RATE])
    alive = weakref.ref(stream)
    del stream
    gc.collect()
    assert alive() is None
    assert asr.transcribe(audio).tokens == before


def test_chunks_as_pcm_bytes_or_at_another_rate(asr):
    stream = StreamingTranscriber(asr, min_chunk_seconds=10.0)  # no decode: only the audio path
    pcm = (noise(1.0) * 32767).astype("<i2").tobytes()
    stream.feed(pcm[:RATE])
    stream.feed(pcm[RATE:])
    assert stream.received_seconds == pytest.approx(1.0)
    resampled = StreamingTranscriber(asr, min_chunk_seconds=10.0)
    chunk = noise(0.25, level=0.001)
    high = np.repeat(chunk, 3)  # 48 kHz
    for _ in range(4):
        resampled.feed(high, sample_rate=48000)
    resampled.finish()
    assert resampled.received_seconds == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("chunk, rate, problem", [
    ("not audio", None, "expected a sample array"),
    (np.array([0.1, np.nan], dtype=np.float32), None, "NaN"),
    (b"\x00\x01\x02", None, "even number of bytes"),
    (np.zeros(10, dtype=np.float32), -5, "positive number"),
])
def test_bad_chunks_are_one_line_errors(asr, chunk, rate, problem):
    stream = StreamingTranscriber(asr)
    with pytest.raises(AudioError, match=problem):
        stream.feed(chunk, sample_rate=rate)


def test_the_rate_may_not_change_mid_stream(asr):
    stream = StreamingTranscriber(asr, min_chunk_seconds=10.0)
    stream.feed(np.zeros(100, dtype=np.float32), sample_rate=48000)
    with pytest.raises(AudioError, match="changed"):
        stream.feed(np.zeros(100, dtype=np.float32), sample_rate=44100)


def test_live_summary_of_a_fixed_clock_run(asr):
    stream = StreamingTranscriber(asr, compare=True)
    Script(stream, [[asr.tokens.timestamp_begin, 72, 75, asr.tokens.end_of_text]] * 3)
    stream.plain = None  # the scripted decode stands in for both
    updates = list(play(stream, noise(1.2), chunk_seconds=0.5, clock="fixed"))
    assert [round(live.update.audio_seconds, 2) for live in updates] == [0.5, 1.0, 1.2, 1.2]
    assert [round(live.clock, 2) for live in updates] == [0.5, 1.0, 1.2, 1.2]  # each chunk's arrival
    summary = summarize(updates, 1.2)
    assert summary["updates"] == 4 and summary["text"] == updates[-1].update.committed
    assert summary["words"] >= 1 and 0 <= summary["mean_word_lag"] <= 1.2


def test_the_live_speedup_is_the_median_over_compared_updates_after_the_warm_up_one():
    from asr_specdec.whisper import StreamingUpdate
    from asr_specdec.whisper.live.replay import LiveUpdate

    def update(seconds, plain_seconds):
        return LiveUpdate(0.0, StreamingUpdate(1.0, "", "", "", 0.0, 1.0, seconds, None, stats=DecodeStats(),
                                               plain_decode_seconds=plain_seconds, identical=True))

    summary = summarize([update(1.0, 9.0), update(1.0, 2.0), update(1.0, 3.0), update(2.0, 2.0)], 3.0)
    assert summary["speedup_median"] == 2.0 and summary["compared_updates"] == 3  # the cold first one left out
    assert summary["plain_median"] == 2.0 and summary["identical"]


def test_a_run_replayed_from_its_schedule_gives_the_same_updates(asr):
    """The simulated clock's schedule depends on measured decode times; a recorded schedule replays a run exactly
    (updates that coalesce two chunks included)."""
    from asr_specdec.whisper.live.replay import play_schedule, schedule

    audio = noise(3.0, seed=7)
    first = list(play(StreamingTranscriber(asr, trim_seconds=1.5, max_buffer_seconds=2.5), audio,
                      chunk_seconds=0.5, clock="fixed"))
    recorded = schedule(first)
    recorded = recorded[:1] + recorded[2:]  # the second update also takes the third chunk
    again = list(play_schedule(StreamingTranscriber(asr, trim_seconds=1.5, max_buffer_seconds=2.5), audio, recorded))
    assert schedule(again) == recorded and again[-1].update.final
    replayed = list(play_schedule(StreamingTranscriber(asr, trim_seconds=1.5, max_buffer_seconds=2.5), audio,
                                  recorded))
    assert [live.update.tokens for live in replayed] == [live.update.tokens for live in again]
    assert replayed[-1].update.committed == again[-1].update.committed


def test_a_streams_windows_are_built_as_a_calls_windows_are(tiny_pair):
    """Hotwords, suppression, limits and the repetition rules of the transcriber reach every live decode."""
    asr = SpeculativeWhisper(tiny_pair, mode="off", max_new_tokens=12, hotwords="hello", repetition_penalty=1.3,
                             no_repeat_ngram_size=3)
    stream = asr.stream()
    seen = record_windows(stream)
    stream.feed(noise(3.0))
    stream.finish()
    hotwords = asr.processor.tokenizer.encode(" hello", add_special_tokens=False)
    assert seen and all(window.previous[:len(hotwords)] == hotwords for window, _ in seen)
    assert all((window.repetition_penalty, window.no_repeat_ngram_size, window.max_new_tokens) == (1.3, 3, 12)
               for window, _ in seen)
    assert all(window.word_tokens is not None and window.prefix is None for window, _ in seen)


def test_a_live_window_is_the_window_builders_own_untouched(tiny_pair):
    """Every live decode's window is CallWindows.live_window's, field for field: timestamps, words always aligned,
    scores and the silence rule of the recipe, the whole 30-s window even where the transcriber's chunk_length is
    shorter."""
    import dataclasses

    asr = SpeculativeWhisper(tiny_pair, mode="off", max_new_tokens=12, chunk_length=10)
    stream = asr.stream()
    seen = record_windows(stream)
    stream.feed(noise(3.0, seed=2))
    stream.finish()
    builder = asr.call_windows()
    sample = [1, 2, asr.tokens.end_of_text, asr.tokens.timestamp_begin]
    assert seen
    for window, _ in seen:
        built = builder.live_window(window.features, window.language_id, previous=window.previous,
                                    audio_frames=window.audio_frames)
        for field in dataclasses.fields(window):
            if field.name not in ("features", "word_tokens"):
                assert getattr(built, field.name) == getattr(window, field.name), field.name
        assert window.word_tokens(sample) == built.word_tokens(sample) == [1, 2]
        assert window.timestamps and window.window_frames is None and window.prefix is None
        assert window.score and window.silence_threshold == asr.options.recipe.skip_threshold
