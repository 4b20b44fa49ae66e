"""Speaker labels through every front end on real weights (tiny.en) and real speech: the library's `diarize=`,
stereo with a voice per channel, the command line's --speakers, the drop-in's diarize extra, the server's diarize
field and the eval's --speakers. Each test fails when its front end's wiring is removed."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest
import soundfile

from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.io.audio import load_stereo
from asr_specdec.whisper.speakers.options import SpeakerOptions
from asr_specdec.whisper.speakers.transcript import FewerSpeakers
from eval.bench.conversations import conversation

from ...threads import one_thread  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.slow
VOICES = ("librispeech-1088", "librivox-reader")


@pytest.fixture(scope="module")
def whisper(tiny_en_dir):
    return SpeculativeWhisper(str(tiny_en_dir), mode="off")


@pytest.fixture(scope="module")
def stereo(shared_audio):
    return shared_audio / "peer" / "stereo_diarization.wav"


@pytest.fixture(scope="module")
def talk(shared_audio):
    return conversation(shared_audio, VOICES, 0.5, turns=4)


def words_of(result) -> list:
    return [word for segment in result.segments for word in segment.words]


def test_stereo_every_word_is_labelled_with_its_channel_s_speaker(whisper, stereo):
    result = whisper.transcribe(str(stereo), diarize=True, word_timestamps=True)
    for channel, (speaker, samples) in enumerate(zip(("SPEAKER_00", "SPEAKER_01"), load_stereo(stereo))):
        alone = whisper.transcribe(samples, word_timestamps=True)  # what a split_stereo user gets per channel
        mine = [segment for segment in result.segments if segment.speaker == speaker]
        assert "".join(segment.text for segment in mine) == alone.text, channel
        assert [word.word for segment in mine for word in segment.words] == [word.word for word in words_of(alone)]
        assert all(word.speaker == speaker for segment in mine for word in segment.words)
    assert {turn.speaker for turn in result.turns} == {"SPEAKER_00", "SPEAKER_01"}
    array = whisper.transcribe(np.stack(load_stereo(stereo), axis=1), diarize=True)  # (samples, 2) as well
    assert [(s.text, s.speaker) for s in array.segments] == [(s.text, s.speaker) for s in result.segments]
    mixed = whisper.transcribe(str(stereo), diarize=SpeakerOptions(channels="mix"))
    assert result.timings["channels"] and "channels" not in mixed.timings and "diarization_seconds" in mixed.timings


def test_a_conversation_s_words_get_their_speakers(whisper, talk):
    result = whisper.transcribe(talk.samples, diarize=2, word_timestamps=True)
    voice_at = {}
    for start, end, voice in talk.turns:
        voice_at.setdefault(voice, []).append((start, end))
    first_voice = {talk.turns[0][2]: "SPEAKER_00"}
    first_voice[next(v for *_, v in talk.turns if v not in first_voice)] = "SPEAKER_01"
    words = words_of(result)
    right = sum(any(start - 0.25 <= (word.start + word.end) / 2 <= end + 0.25 and first_voice[voice] == word.speaker
                    for voice, spans in voice_at.items() for start, end in spans) for word in words)
    assert len(words) > 20 and right / len(words) >= 0.9
    plain = whisper.transcribe(talk.samples, diarize=2)  # words turned on inside, dropped from the output
    assert all(segment.words == () and segment.speaker for segment in plain.segments)
    assert plain.timings["diarization_seconds"] > 0


def test_silence_and_more_speakers_than_heard(whisper, shared_audio):
    silent = whisper.transcribe(np.zeros(16000 * 3, dtype=np.float32), diarize=2)
    assert silent.segments == [] and silent.turns == []
    with pytest.warns(FewerSpeakers, match="3 speakers asked for, 1 heard"):
        one = whisper.transcribe(str(shared_audio / "librivox-0920.wav"), diarize=3)
    assert {segment.speaker for segment in one.segments} == {"SPEAKER_00"}


def test_the_command_line_labels_text_srt_and_json(capsys, tiny_en_dir, stereo, tmp_path):
    from asr_specdec.cli.transcribe import main

    assert main(["--main", str(tiny_en_dir), "--mode", "off", str(stereo), "--speakers", "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert {segment["speaker"] for segment in record["segments"]} == {"SPEAKER_00", "SPEAKER_01"}
    assert record["turns"]
    talk_file = tmp_path / "talk.wav"
    assert main(["--main", str(tiny_en_dir), "--mode", "off", str(stereo), "--speakers", "2", "--format", "srt"]) == 0
    assert "[SPEAKER_01] " in capsys.readouterr().out
    soundfile.write(talk_file, np.zeros(16000, dtype=np.float32), 16000)
    assert main(["--main", str(tiny_en_dir), str(talk_file), "--speakers", "-1"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: --speakers must be a number of speakers") and "\n" not in error


def test_the_drop_in_s_diarize_extra(tiny_en_dir, talk):
    from asr_specdec import BatchedInferencePipeline, WhisperModel
    from asr_specdec.compat.plan import UnsupportedOption
    from asr_specdec.errors import OptionError

    model = WhisperModel(str(tiny_en_dir), mode="off")
    segments, _ = model.transcribe(talk.samples, beam_size=1, diarize=2, word_timestamps=True)
    segments = list(segments)
    assert {segment.speaker for segment in segments} == {"SPEAKER_00", "SPEAKER_01"}
    assert all(word.speaker == segment.speaker for segment in segments for word in segment.words)
    assert all(segment.speaker is None for segment in model.transcribe(talk.samples, beam_size=1)[0])
    with pytest.raises((UnsupportedOption, OptionError), match="diarize"):  # the batch rule (options.check_batch)
        BatchedInferencePipeline(model).transcribe(talk.samples, diarize=True)
    with pytest.raises(UnsupportedOption, match="diarize"):
        model.transcribe(talk.samples, diarize=True, clip_timestamps=[0, 5])


def test_the_server_s_diarize_field(whisper, stereo):
    from ...server.running import serving

    with serving(whisper, max_upload_mb=2.0, max_audio_seconds=80.0) as served:
        def post(**fields):
            files = {"file": ("talk.wav", stereo.read_bytes(), "audio/wav")}
            return httpx.post(served.url + "/v1/audio/transcriptions", data={"model": "whisper-1", **fields},
                              files=files, timeout=120)

        body = post(response_format="verbose_json", diarize="true").json()
        assert {segment["speaker"] for segment in body["segments"]} == {"SPEAKER_00", "SPEAKER_01"}
        assert "[SPEAKER_00] " in post(response_format="srt", diarize="2").text
        assert all("speaker" not in segment for segment in post(response_format="verbose_json").json()["segments"])
        for fields in ({"diarize": "true"}, {"diarize": "lots", "response_format": "verbose_json"}):
            refused = post(**fields)
            assert refused.status_code == 400 and refused.json()["error"]["param"] == "diarize"


def test_the_eval_s_speakers_option_reaches_the_transcriber_and_its_rows(whisper, tiny_en_dir, talk):
    from asr_specdec.cli.recipe_arguments import recipe_options
    from asr_specdec.whisper.arguments import recipe_arguments
    from asr_specdec.whisper.options import TranscribeOptions
    from eval.rows import ok_row
    from eval.run import build_parser
    from eval.settings import Variant

    args = build_parser().parse_args(["--speakers", "2", "--main", str(tiny_en_dir)])
    options = TranscribeOptions().with_overrides(**recipe_arguments(recipe_options(args)))
    assert options.diarize == SpeakerOptions(speakers=2)
    estimated = build_parser().parse_args(["--speakers", "--main", str(tiny_en_dir)])
    assert TranscribeOptions().with_overrides(**recipe_arguments(recipe_options(estimated))).diarize == \
        SpeakerOptions()
    result = whisper.transcribe(talk.samples, options=options)
    row = ok_row("talk", Variant("off", None, "off"), None, result, 1.0)
    assert {speaker for *_, speaker in row["turns"]} == {"SPEAKER_00", "SPEAKER_01"}
