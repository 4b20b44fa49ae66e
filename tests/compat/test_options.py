"""Each faster-whisper option does what it does there, on a case built to show it, and the drop-in's speculative
segments equal plain decoding's (and SpeculativeWhisper's own) with it."""

from __future__ import annotations

import threading
import time
import warnings

import pytest

from asr_specdec import SpeculativeWhisper, WhisperModel, decode_audio
from asr_specdec.errors import SpecdecError

from ..threads import THREADS


@pytest.fixture(scope="module")
def jfk(peer_audio):
    return decode_audio(str(peer_audio / "jfk.flac"))


def decoded(model, audio, **options):
    segments, info = model.transcribe(audio, beam_size=1, **options)
    return list(segments), info


def fields(segments):
    return [(s.start, s.end, s.text, s.tokens, s.avg_logprob, s.no_speech_prob, s.temperature) for s in segments]


def test_drop_in_segments_are_speculative_whispers_and_plain_decodings(model, plain_model, jfk):
    ours, info = decoded(model, jfk, word_timestamps=True)
    plain, _ = decoded(plain_model, jfk, word_timestamps=True)
    assert fields(ours) == fields(plain) and [s.words for s in ours] == [s.words for s in plain]
    # faster-whisper's defaults, spelt as SpeculativeWhisper's own arguments (its features too), give the same segments
    native = SpeculativeWhisper("base", mode="off").transcribe(
        jfk, language=info.language, timestamps=True, condition_on_previous_text=True,
        temperature=(0.0, 0.2, 0.4, 0.6, 0.8, 1.0), word_timestamps=True, whole_features=True)
    assert [(s.start, s.end, s.text, list(s.tokens)) for s in native.segments] == \
        [(s.start, s.end, s.text, s.tokens) for s in ours]
    assert native.text == "".join(s.text for s in ours)
    assert model.speculative.mode == "quantized-self" and plain_model.speculative.mode == "off"


def test_suppress_tokens_keep_a_token_out_and_stay_exact(model, plain_model, jfk):
    tokenizer = model.speculative.processor.tokenizer
    (country,) = tokenizer.encode(" country", add_special_tokens=False)
    before, info = decoded(model, jfk)
    assert country in [token for s in before for token in s.tokens]
    after, info = decoded(model, jfk, suppress_tokens=[-1, country])
    assert country not in [token for s in after for token in s.tokens] and fields(after) != fields(before)
    assert country in info.transcription_options.suppress_tokens
    assert fields(after) == fields(decoded(plain_model, jfk, suppress_tokens=[-1, country])[0])


def test_repetition_options_keep_repeats_out_and_stay_exact(model, plain_model, jfk):
    # JFK says "can do for" twice. No bigram twice (faster-whisper's no_repeat_ngram_size=2: CTranslate2's ban over
    # what the window generated): "can do" cannot come again, and base says "you can for your countries"; with
    # the penalty, the second "ask what you can do for your country" changes too
    greedy = {"beam_size": 1, "temperature": 0.0, "language": "en"}
    banned, info = model.transcribe(jfk, no_repeat_ngram_size=2, **greedy)
    banned = list(banned)
    tokens = [token for s in banned for token in s.tokens]
    assert len(set(zip(tokens, tokens[1:]))) == len(tokens) - 1 and "you can for your" in banned[-1].text
    assert info.transcription_options.no_repeat_ngram_size == 2
    assert fields(banned) == fields(plain_model.transcribe(jfk, no_repeat_ngram_size=2, **greedy)[0])
    penalised = list(model.transcribe(jfk, repetition_penalty=1.2, **greedy)[0])
    assert "ask what you can do for your country" not in "".join(s.text for s in penalised)
    assert fields(penalised) == fields(plain_model.transcribe(jfk, repetition_penalty=1.2, **greedy)[0])
    for bad in ({"repetition_penalty": 0}, {"no_repeat_ngram_size": -1}):
        with pytest.raises(SpecdecError, match=next(iter(bad))):
            model.transcribe(jfk, **bad)


def test_max_new_tokens_cuts_each_window(model, plain_model, jfk):
    short, _ = decoded(model, jfk, max_new_tokens=6, without_timestamps=True)
    (segment,) = short
    assert segment.text == " And so my fellow Americans," and len(segment.tokens) == 6
    assert fields(short) == fields(decoded(plain_model, jfk, max_new_tokens=6, without_timestamps=True)[0])


JFK_START = " And so my fellow Americans"


def test_clip_timestamps_decode_only_the_clips_on_the_files_timeline(model, jfk):
    segments, info = decoded(model, jfk, clip_timestamps="7.5")
    text = "".join(s.text for s in segments)
    assert "ask not" not in text.lower() and "ask what you can do for your country" in text.lower()
    assert segments[0].start >= 7.5 and segments[-1].end <= 11.0 and info.transcription_options.clip_timestamps == "7.5"


def test_initial_prompt_as_token_ids_is_the_same_prompt(model, jfk):
    prompt = "Kennedy's inaugural address."
    ids = model.speculative.processor.tokenizer.encode(" " + prompt, add_special_tokens=False)
    as_text, _ = decoded(model, jfk, initial_prompt=prompt)
    assert fields(as_text) == fields(decoded(model, jfk, initial_prompt=ids)[0])


def test_without_timestamps_gives_window_segments(model, jfk):
    (segment,), _ = decoded(model, jfk, without_timestamps=True)
    assert (segment.start, segment.end) == (0.0, 11.0) and segment.text.startswith(JFK_START)


def test_segments_are_decoded_as_they_are_read(model, peer_audio):
    audio = decode_audio(str(peer_audio / "multilingual.mp3"))  # two 30-s windows
    calls = []
    decode = model._decode
    model._decode = lambda *arguments: calls.append(1) or decode(*arguments)
    try:
        segments, _ = model.transcribe(audio, language="en", temperature=0.0, beam_size=1)
        time.sleep(0.5)
        assert calls == []  # nothing decoded before the first read
        next(segments)
        time.sleep(1.0)
        assert len(calls) == 1  # the first window only, while the reader holds its first segment
        rest = list(segments)
        assert len(calls) > 1 and rest  # the later windows as the rest was read
        segments, _ = model.transcribe(audio, language="en", temperature=0.0, beam_size=1)
        next(segments)
        segments.close()  # the worker gives up at its next segment
        deadline = time.time() + 30
        while any(thread.name == "whisper-segments" for thread in threading.enumerate()) and time.time() < deadline:
            time.sleep(0.1)
        assert not any(thread.name == "whisper-segments" for thread in threading.enumerate())
    finally:
        del model._decode


def test_log_progress_shows_a_bar_over_audio_seconds(model, jfk, capsys):
    list(model.transcribe(jfk, beam_size=1, log_progress=True)[0])
    assert "11.0/11.0" in capsys.readouterr().err


def test_detect_language_and_its_threshold_rule(model, peer_audio, jfk):
    audio = decode_audio(str(peer_audio / "multilingual.mp3"))
    language, first_probability, ranked = model.detect_language(audio)
    assert language == "en" and first_probability == ranked[0][1] > 0.9
    assert sum(p for _, p in ranked) == pytest.approx(1.0, abs=1e-4) and len(ranked) == 99
    assert model.detect_language(audio[30 * 16000:])[0] == "de"
    # no window clears a threshold of 1: the language most windows chose, at its best probability
    language, probability, _ = model.detect_language(audio, language_detection_segments=2,
                                                     language_detection_threshold=1.0)
    assert language in ("en", "de") and probability > 0.9
    # the transcription reports the same detection, in its result and its JSON record
    from asr_specdec.whisper.io.records import result_record

    result = model.speculative.transcribe(audio[: 30 * 16000], temperature=0.0)
    assert result.language == "en" and result.language_probability == pytest.approx(first_probability, abs=1e-3)
    assert result_record(result, "clip")["language_probability"] == result.language_probability
    assert model.speculative.transcribe(jfk, language="en").language_probability == 1.0
    features = model.speculative.pipeline.features(audio[30 * 16000:])[0].cpu().numpy()
    assert model.detect_language(features=features)[0] == "de"


def test_language_is_checked_at_once_and_english_only_models_say_so(model, pack_cache, jfk):
    with pytest.raises(SpecdecError, match="unknown language"):
        model.transcribe(jfk, language="klingon", beam_size=1)
    english = WhisperModel("tiny.en", mode="off")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        segments, info = english.transcribe(jfk, language="fr", multilingual=True, beam_size=1)
    assert info.language == "en" and not info.transcription_options.multilingual
    assert {"English-only" in str(warning.message) for warning in caught} == {True} and len(caught) == 2
    assert "ask not what your country" in "".join(s.text for s in segments)


def test_unsupported_options_are_refused_not_ignored(model, jfk):
    # without word timestamps, where faster-whisper ignores it
    with pytest.raises(SpecdecError, match="hallucination"):
        model.transcribe(jfk, beam_size=1, hallucination_silence_threshold=2.0)
    for bad in (0, 31, "x"):  # whole seconds up to Whisper's window, said in one line before anything is decoded
        with pytest.raises(SpecdecError, match="chunk_length must be a whole number of seconds from 1 to 30") as error:
            model.transcribe(jfk, beam_size=1, chunk_length=bad)
        assert "\n" not in str(error.value)


def test_device_cuda_without_a_gpu_is_an_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(SpecdecError, match="no CUDA GPU"):
        WhisperModel("tiny.en", device="cuda")
    assert WhisperModel("tiny.en", device="auto", mode="off").speculative.runner.device.type == "cpu"


def test_language_detection_and_the_first_window_share_one_encoding(model, jfk):
    """faster-whisper's transcribe() detects the language on the first window, then decodes it: one encoder run
    (detection's encoding is kept for the decode; the decode of that one window keeps it in turn, so a second call
    on the same audio takes it too, with the same output)."""
    pipeline = model.speculative.pipeline
    encoder, calls = pipeline.encoder, []

    def counting(features):
        calls.append(1)
        return encoder(features)

    counting.cross_projection, counting.file_pages = encoder.cross_projection, encoder.file_pages
    pipeline.encoder = counting
    try:
        first = fields(model.transcribe(jfk, beam_size=1)[0])
        assert len(calls) == 1
        assert fields(model.transcribe(jfk, beam_size=1)[0]) == first and len(calls) == 1
        list(model.transcribe(jfk[: len(jfk) // 2], beam_size=1)[0])  # other audio is encoded anew, once
        assert len(calls) == 2
    finally:
        pipeline.encoder = encoder


GREEDY = {"language": "en", "temperature": 0, "condition_on_previous_text": False}  # and beam_size=1


@pytest.fixture(scope="module")
def libri(shared_audio):
    return decode_audio(str(shared_audio / "libri-1088-134315-0000.wav"))  # 16 s of read speech


def test_chunk_length_windows_on_real_speech(model, plain_model, libri):
    ours, _ = decoded(model, libri, chunk_length=10, **GREEDY)
    plain, _ = decoded(plain_model, libri, chunk_length=10, **GREEDY)
    assert fields(ours) == fields(plain)
    begin = model.speculative.tokens.timestamp_begin
    # a segment's timestamps count from its window's start: none past the window's 10 s
    assert max(token for segment in plain for token in segment.tokens) <= begin + 10 * 50
    assert all(segment.end - segment.start <= 10 for segment in plain) and plain[-1].end > 15
    starts = [segment.start for segment in plain]
    assert starts == sorted(starts)
    # the 10-s windows cut the speech elsewhere than 30-s ones: the option is not ignored
    whole, _ = decoded(plain_model, libri, **GREEDY)
    assert fields(whole) != fields(plain)


def test_chunk_length_equals_faster_whispers_on_the_same_weights(libri, tmp_path):
    """faster-whisper 1.2 on the same CTranslate2 weights, float32 greedy: the same tokens with 15-s windows. With
    10-s windows on this clip the same segments and text; a segment that closes a window on a timestamp pair keeps
    the pair's second timestamp here (transformers' _retrieve_segment, docs/longform.md), not there."""
    faster_whisper = pytest.importorskip("faster_whisper")
    from asr_specdec.weights.packs import assemble_pack

    ours = WhisperModel("base", mode="off", compute_type="float32")
    reference = faster_whisper.WhisperModel(str(assemble_pack("base", tmp_path)), device="cpu",
                                            compute_type="float32", cpu_threads=THREADS)
    for chunk_length in (15, 10):
        theirs = list(reference.transcribe(libri, beam_size=1, chunk_length=chunk_length, vad_filter=False,
                                                 **GREEDY)[0])
        mine, _ = decoded(ours, libri, chunk_length=chunk_length, **GREEDY)
        assert [(s.start, s.end, s.text) for s in mine] == [(s.start, s.end, s.text) for s in theirs]
        if chunk_length == 15:
            assert [s.tokens for s in mine] == [s.tokens for s in theirs]


def test_num_workers_decode_from_two_threads_at_once_with_the_same_tokens(pack_cache, jfk, libri):
    """faster-whisper's num_workers: two threads' transcriptions decode at the same time (each worker's first
    decode waits for the other's: with one worker between them the barrier would time out), on the one set of
    weights, each worker drafting with its own drafter, and every token as one worker decodes it alone."""
    alone = WhisperModel("tiny.en")
    clips = [jfk, libri[: 8 * 16000]]
    expected = [[segment.tokens for segment in decoded(alone, clip)[0]] for clip in clips]
    model = WhisperModel("tiny.en", num_workers=2)
    workers = model._workers.all
    assert len(workers) == 2 and workers[1].model is workers[0].model
    assert workers[1].pipeline is not workers[0].pipeline
    assert workers[1].speculation.drafter is not workers[0].speculation.drafter
    barrier, entered, drafted = threading.Barrier(2, timeout=120), set(), {}
    for worker in workers:
        def decode(windows, speculation, generator=None, worker=worker, original=worker.decode_windows):
            if id(worker) not in entered:
                entered.add(id(worker))
                barrier.wait()
            rows = original(windows, speculation, generator)
            drafted[id(worker)] = drafted.get(id(worker), 0) + sum(row.stats.drafted_tokens for row in rows)
            return rows
        worker.decode_windows = decode
    got: dict[int, list] = {}

    def transcribe(index):
        got[index] = [segment.tokens for segment in decoded(model, clips[index])[0]]

    threads = [threading.Thread(target=transcribe, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not barrier.broken and len(entered) == 2
    assert [got.get(0), got.get(1)] == expected
    assert all(drafted.get(id(worker), 0) > 0 for worker in workers)  # each worker's drafter proposed tokens
    with pytest.raises(SpecdecError, match="num_workers"):
        WhisperModel("tiny.en", num_workers=0)
