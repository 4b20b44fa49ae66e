"""faster-whisper's tests/test_transcribe.py, each test's intent ported to asr_specdec's drop-in on the offline
`base` pack (faster-whisper's suite uses `tiny`, which is not offline here: where base's words differ from tiny's,
the assertion keeps the intent and names the difference). test_transcribe decodes with faster-whisper's default
of 5 beams; the others pass beam_size=1 (greedy) to keep the suite fast."""

from __future__ import annotations

import numpy as np

from asr_specdec import BatchedInferencePipeline, WhisperModel, decode_audio

JFK = (" And so my fellow Americans, ask not what your country can do for you, "
       "ask what you can do for your country.")


def test_supported_languages(model):
    assert WhisperModel("tiny.en").supported_languages == ["en"]
    assert len(model.supported_languages) == 99 and {"en", "de", "fr"} <= set(model.supported_languages)


def words(text: str) -> list[str]:
    return "".join(character for character in text.lower() if character.isalnum() or character.isspace()).split()


def test_transcribe(pack_cache, peer_audio):
    # float32: what faster-whisper's compute_type="default" computes these weights in on a CPU, and what its test's
    # exact text is of; our auto (bfloat16:float32 on AVX-512) writes "And so, my fellow" at 5 beams
    model = WhisperModel("base", compute_type="float32")
    segments, info = model.transcribe(str(peer_audio / "jfk.flac"), word_timestamps=True)
    assert info.all_language_probs is not None
    assert info.language == "en" and info.language_probability > 0.9 and info.duration == 11
    top_language, top_probability = info.all_language_probs[0]
    assert info.language == top_language and info.language_probability == top_probability
    segments = list(segments)
    assert "".join(segment.text for segment in segments) == JFK  # base: two segments (tiny: one)
    assert [segment.id for segment in segments] == list(range(1, len(segments) + 1))
    for segment in segments:
        assert segment.text == "".join(word.word for word in segment.words)
        assert segment.start == segment.words[0].start and segment.end == segment.words[-1].end

    batched = BatchedInferencePipeline(model=model)
    result, info = batched.transcribe(str(peer_audio / "jfk.flac"), word_timestamps=True, vad_filter=False,
                                      beam_size=1)
    assert info.language == "en" and info.language_probability > 0.7
    (segment,) = list(result)
    assert segment.text == JFK and segment.words and segment.text == "".join(word.word for word in segment.words)


def test_empty_audio(model):
    audio = np.asarray([], dtype="float32")
    assert list(model.transcribe(audio, beam_size=1)[0]) == []
    assert list(BatchedInferencePipeline(model=model).transcribe(audio, beam_size=1)[0]) == []
    language, probability, _ = model.detect_language(audio)
    assert language in model.supported_languages and 0 < probability <= 1


def test_prefix_with_timestamps(model, peer_audio):
    segments, _ = model.transcribe(str(peer_audio / "jfk.flac"), prefix="And so my fellow Americans", beam_size=1)
    segments = list(segments)
    assert "".join(segment.text for segment in segments) == JFK
    assert segments[0].start == 0 and 10 < segments[-1].end <= 11


def test_vad(model, peer_audio):
    segments, info = model.transcribe(str(peer_audio / "jfk.flac"), vad_filter=True, beam_size=1,
                                      vad_parameters=dict(min_silence_duration_ms=500, speech_pad_ms=200))
    segments = list(segments)
    # a speech window's segments are cut where VAD removed a silence (faster-whisper: one segment here)
    assert "".join(segment.text for segment in segments).replace(",", "") == JFK.replace(",", "")
    assert 0 < segments[0].start < 1 and 10 < segments[-1].end < 11
    assert info.vad_options.min_silence_duration_ms == 500 and info.vad_options.speech_pad_ms == 200
    assert info.duration_after_vad < info.duration


def test_stereo_diarization(model, peer_audio):
    left, right = decode_audio(str(peer_audio / "stereo_diarization.wav"), split_stereo=True)
    transcription = "".join(segment.text for segment in model.transcribe(left, beam_size=1)[0]).strip()
    # base hears "who advanced behind", tiny "who had vanished behind"
    assert transcription.startswith("He began a confused complaint against the wizard, who")
    assert transcription.endswith("behind the curtain on the left.")
    transcription = "".join(segment.text for segment in model.transcribe(right, beam_size=1)[0]).strip()
    assert transcription == "The horizon seems extremely distant."


def test_multilingual_transcription(model, peer_audio):
    audio = decode_audio(str(peer_audio / "multilingual.mp3"))
    segments, info = model.transcribe(audio, multilingual=True, without_timestamps=True,
                                      condition_on_previous_text=False, beam_size=1)
    segments = list(segments)
    assert [segment.start for segment in segments] == [0.0, 30.0]  # a window each, without timestamps
    assert segments[0].text.startswith(" Permission is hereby granted, free of charge, to any person obtaining")
    assert "Software und die dazugehörigen Dokumentationsdateien erhält" in segments[1].text
    assert info.transcription_options.multilingual

    segments = list(BatchedInferencePipeline(model).transcribe(audio, multilingual=True, beam_size=1)[0])
    assert segments[0].text.startswith(" Permission is hereby granted, free of charge, to any person obtaining")
    assert "Software und die dazugehörigen Dokumentationsdateien erhält" in segments[1].text


def test_hotwords(model, peer_audio):
    audio = decode_audio(str(peer_audio / "hotwords.mp3"))
    assert "ComfyUI" not in "".join(segment.text for segment in model.transcribe(audio, beam_size=1)[0])
    for transcriber in (model, BatchedInferencePipeline(model)):
        segments, info = transcriber.transcribe(audio, hotwords="ComfyUI", beam_size=1)
        assert "ComfyUI" in list(segments)[0].text
        assert info.transcription_options.hotwords == "ComfyUI"


def test_monotonic_timestamps(model, peer_audio):
    audio = str(peer_audio / "multilingual.mp3")  # faster-whisper uses a physics talk that is not here
    for transcriber in (model, BatchedInferencePipeline(model=model)):
        segments, info = transcriber.transcribe(audio, word_timestamps=True, beam_size=1)
        segments = list(segments)
        assert len(segments) >= 2
        for segment, following in zip(segments, segments[1:]):
            assert segment.start <= segment.end <= following.start
            for word in segment.words:
                assert word.start <= word.end <= segment.end
        assert segments[-1].end <= info.duration


def test_default_beam_search_is_exact_under_speculation(model, plain_model, peer_audio):
    """faster-whisper's default, 5 beams: the default drafter's segments are the plain beam search's."""
    speculative = list(model.transcribe(str(peer_audio / "jfk.flac"))[0])
    plain = list(plain_model.transcribe(str(peer_audio / "jfk.flac"))[0])
    assert [segment.tokens for segment in speculative] == [segment.tokens for segment in plain]
    assert words("".join(segment.text for segment in speculative)) == words(JFK)  # the default compute type's text
