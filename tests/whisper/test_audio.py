import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile

from asr_specdec.errors import AudioError
from asr_specdec.whisper.io.audio import SAMPLE_RATE, duration_seconds, load_audio, split_long_audio

PROJECT = Path(__file__).resolve().parents[2]
SHARED_AUDIO = PROJECT.parent / "shared" / "audio"
SAMPLES = PROJECT / "samples"


def sine(frequency: float, seconds: float, rate: int, amplitude: float = 0.5) -> np.ndarray:
    return (amplitude * np.sin(2 * np.pi * frequency * np.arange(int(seconds * rate)) / rate)).astype(np.float32)


def peak_frequency(samples: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.fft.rfftfreq(len(samples), 1 / SAMPLE_RATE)[np.argmax(spectrum)])


def assert_audio_error(source, *expected_words: str) -> str:
    with pytest.raises(AudioError) as caught:
        load_audio(source)
    message = str(caught.value)
    assert "\n" not in message
    for word in expected_words:
        assert word in message, message
    return message


def flac_of_real_speech(tmp_path: Path) -> Path:
    speech, rate = soundfile.read(SHARED_AUDIO / "librivox-0870.wav", dtype="float32")
    path = tmp_path / "speech.flac"
    soundfile.write(path, speech, rate)
    return path


# --- unusable input: one AudioError naming the file and the problem ---

def test_missing_file(tmp_path):
    path = tmp_path / "nowhere.wav"
    assert_audio_error(path, str(path), "no such file")


def test_directory(tmp_path):
    assert_audio_error(tmp_path, str(tmp_path), "directory")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.wav"
    path.write_bytes(b"")
    assert_audio_error(path, str(path), "empty")


def test_empty_bytes():
    assert_audio_error(b"", "audio bytes", "empty")


def test_text_file_renamed_wav(tmp_path):
    path = tmp_path / "notes.wav"
    path.write_text("this is a shopping list, not a recording\n" * 20)
    assert_audio_error(path, str(path), "not a recognised audio file")


def test_unknown_format_without_ffmpeg(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    path = tmp_path / "voice.m4a"
    path.write_bytes(b"\x00\x00\x00\x20ftypM4A " + bytes(200))
    assert_audio_error(path, str(path), "ffmpeg")


def test_text_bytes():
    assert_audio_error(b"plain text, not audio\n" * 20, "audio bytes", "not a recognised audio file")


def test_truncated_flac(tmp_path):
    whole = flac_of_real_speech(tmp_path)
    cut = tmp_path / "cut.flac"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    assert_audio_error(cut, str(cut), "truncated", "FLAC")


def test_truncated_wav_keeps_the_samples_it_holds(tmp_path):
    tone = sine(440, 2.0, SAMPLE_RATE)
    path = tmp_path / "cut.wav"
    soundfile.write(path, tone, SAMPLE_RATE, subtype="PCM_16")
    data = path.read_bytes()
    path.write_bytes(data[: 44 + 2 * SAMPLE_RATE])
    audio = load_audio(path)
    assert len(audio) == SAMPLE_RATE
    np.testing.assert_allclose(audio, tone[:SAMPLE_RATE], atol=1e-4)


def test_zero_length_wav(tmp_path):
    path = tmp_path / "zero.wav"
    soundfile.write(path, np.zeros(0, dtype=np.float32), SAMPLE_RATE)
    assert_audio_error(path, str(path), "contains no audio samples")


def test_nan_samples_in_a_file(tmp_path):
    samples = sine(440, 0.5, SAMPLE_RATE)
    samples[100] = np.nan
    path = tmp_path / "nan.wav"
    soundfile.write(path, samples, SAMPLE_RATE, subtype="FLOAT")
    assert_audio_error(path, str(path), "NaN")


@pytest.mark.parametrize("bad_value", [np.nan, np.inf, -np.inf])
def test_non_finite_array(bad_value):
    samples = np.zeros(1000, dtype=np.float32)
    samples[10] = bad_value
    assert_audio_error(samples, "audio array", "NaN or infinite")


def test_empty_array():
    assert_audio_error(np.zeros(0, dtype=np.float32), "audio array", "no audio samples")


def test_three_dimensional_array():
    assert_audio_error(np.zeros((2, 2, 100), dtype=np.float32), "audio array", "shape")


@pytest.mark.parametrize("bad_rate", [0, -16000, "16k", float("nan"), float("inf")])
def test_bad_sample_rate(bad_rate):
    with pytest.raises(AudioError, match="sample_rate"):
        load_audio(np.zeros(100, dtype=np.float32), sample_rate=bad_rate)


def test_unsupported_source_type():
    with pytest.raises(TypeError):
        load_audio([0.0, 0.1])


# --- valid input, odd or not ---

def test_pure_silence_is_valid(tmp_path):
    path = tmp_path / "silence.wav"
    soundfile.write(path, np.zeros(2 * SAMPLE_RATE, dtype=np.int16), SAMPLE_RATE)
    audio = load_audio(path)
    assert audio.dtype == np.float32 and audio.shape == (2 * SAMPLE_RATE,)
    assert not audio.any()


@pytest.mark.parametrize("rate", [8000, 22050, 48000])
def test_other_rates_resampled_with_content_kept(tmp_path, rate):
    seconds = 1.5
    path = tmp_path / f"tone_{rate}.wav"
    soundfile.write(path, sine(440, seconds, rate), rate, subtype="PCM_16")
    audio = load_audio(path)
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert abs(len(audio) - seconds * SAMPLE_RATE) <= 1
    assert abs(peak_frequency(audio) - 440) < 2
    middle = audio[len(audio) // 4: -len(audio) // 4]
    assert np.sqrt(np.mean(middle ** 2)) == pytest.approx(0.5 / np.sqrt(2), rel=0.02)


def test_stereo_file_mixed_down_by_mean(tmp_path):
    left, right = sine(440, 1.0, SAMPLE_RATE, 0.6), sine(1000, 1.0, SAMPLE_RATE, 0.2)
    path = tmp_path / "stereo.wav"
    soundfile.write(path, np.stack([left, right], axis=1), SAMPLE_RATE, subtype="FLOAT")
    np.testing.assert_allclose(load_audio(path), (left + right) / 2, atol=1e-6)


def test_stereo_44k_file_resampled_and_mixed(tmp_path):
    left, right = sine(300, 1.0, 44100, 0.6), np.zeros(44100, dtype=np.float32)
    path = tmp_path / "stereo_44k.wav"
    soundfile.write(path, np.stack([left, right], axis=1), 44100, subtype="PCM_16")
    audio = load_audio(path)
    assert abs(len(audio) - SAMPLE_RATE) <= 1
    assert abs(peak_frequency(audio) - 300) < 2
    assert np.abs(audio[2000:-2000]).max() == pytest.approx(0.3, rel=0.02)


def test_mp3_real_speech():
    audio = load_audio(SHARED_AUDIO / "common_voice_en_651325.mp3")
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert abs(duration_seconds(audio) - 2.38) < 0.05
    assert 0.01 < np.sqrt(np.mean(audio ** 2)) < 0.5


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg decodes m4a")
def test_m4a_goes_through_ffmpeg(tmp_path):
    wav, m4a = tmp_path / "tone.wav", tmp_path / "tone.m4a"
    soundfile.write(wav, sine(440, 1.0, 44100), 44100)
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(wav), "-c:a", "aac", str(m4a)],
                   check=True)
    for source in (m4a, m4a.read_bytes()):
        audio = load_audio(source)
        assert abs(len(audio) - SAMPLE_RATE) < 0.05 * SAMPLE_RATE
        assert abs(peak_frequency(audio) - 440) < 2


def test_real_speech_at_16k_is_read_unchanged():
    path = SHARED_AUDIO / "librivox-0870.wav"
    expected, rate = soundfile.read(path, dtype="float32")
    assert rate == SAMPLE_RATE
    np.testing.assert_array_equal(load_audio(path), expected)
    np.testing.assert_array_equal(load_audio(str(path)), expected)


def test_real_speech_at_22k_is_resampled():
    audio = load_audio(SHARED_AUDIO / "LJ002-0020.wav")
    expected_length = soundfile.info(SHARED_AUDIO / "LJ002-0020.wav").frames * SAMPLE_RATE / 22050
    assert abs(len(audio) - expected_length) <= 1


def test_bytes_match_the_file(tmp_path):
    path = flac_of_real_speech(tmp_path)
    np.testing.assert_array_equal(load_audio(path.read_bytes()), load_audio(path))


def test_int16_array_scaled():
    audio = load_audio(np.array([0, 16384, -32768, 32767], dtype=np.int16))
    np.testing.assert_allclose(audio, [0.0, 0.5, -1.0, 32767 / 32768])
    assert audio.dtype == np.float32


def test_uint8_array_centred():
    np.testing.assert_allclose(load_audio(np.array([128, 0, 192], dtype=np.uint8)), [0.0, -1.0, 0.5])


@pytest.mark.parametrize("layout", ["samples_by_channels", "channels_by_samples"])
def test_stereo_array_mixed_over_smaller_axis(layout):
    left, right = sine(440, 0.5, SAMPLE_RATE, 0.8), sine(880, 0.5, SAMPLE_RATE, 0.4)
    stacked = np.stack([left, right], axis=1 if layout == "samples_by_channels" else 0)
    np.testing.assert_allclose(load_audio(stacked), (left + right) / 2, atol=1e-7)


def test_array_with_sample_rate_resampled():
    audio = load_audio(sine(440, 2.0, 8000).astype(np.float64), sample_rate=8000)
    assert audio.dtype == np.float32
    assert abs(len(audio) - 2 * SAMPLE_RATE) <= 1
    assert abs(peak_frequency(audio) - 440) < 2


def test_float_sample_rate_accepted():
    audio = load_audio(sine(440, 1.0, 8000), sample_rate=8000.0)
    assert abs(len(audio) - SAMPLE_RATE) <= 1


def test_array_without_sample_rate_taken_as_16k():
    samples = sine(440, 1.0, SAMPLE_RATE)
    np.testing.assert_array_equal(load_audio(samples), samples)


def test_committed_samples():
    hello = load_audio(SAMPLES / "message.wav")
    assert soundfile.info(SAMPLES / "message.wav").samplerate == SAMPLE_RATE
    assert 2.5 < duration_seconds(hello) < 4.5
    greeting = load_audio(SAMPLES / "greeting.flac")
    assert 3.0 < duration_seconds(greeting) < 5.0
    stereo_info = soundfile.info(SAMPLES / "stereo_44k.wav")
    assert (stereo_info.samplerate, stereo_info.channels) == (44100, 2)
    stereo = load_audio(SAMPLES / "stereo_44k.wav")
    assert abs(len(stereo) - stereo_info.frames * SAMPLE_RATE / 44100) <= 1
    assert sum(path.stat().st_size for path in SAMPLES.iterdir()) < 400_000  # small enough for git


def test_duration_seconds():
    assert duration_seconds(np.zeros(24000, dtype=np.float32)) == 1.5


# --- splitting long audio into <= 30 s windows ---

def frame_rms(samples: np.ndarray, frame: int = 400) -> np.ndarray:
    frames = len(samples) // frame
    return np.sqrt(np.mean(samples[: frames * frame].reshape(frames, frame).astype(np.float64) ** 2, axis=1))


def assert_exact_cover(windows, audio):
    position = 0
    for start, window in windows:
        assert start == position / SAMPLE_RATE
        assert 0 < len(window) <= 30 * SAMPLE_RATE
        position += len(window)
    assert position == len(audio)
    np.testing.assert_array_equal(np.concatenate([window for _, window in windows]), audio)


@pytest.mark.parametrize("length", [1, 16000, 30 * SAMPLE_RATE])
def test_audio_up_to_30_seconds_is_one_window(length):
    audio = np.ones(length, dtype=np.float32)
    [(start, window)] = split_long_audio(audio)
    assert start == 0.0 and len(window) == length


def test_one_sample_over_30_seconds_is_two_windows():
    audio = np.ones(30 * SAMPLE_RATE + 1, dtype=np.float32)
    windows = split_long_audio(audio)
    assert len(windows) == 2
    assert_exact_cover(windows, audio)


def test_cut_lands_in_the_pause():
    rng = np.random.default_rng(0)
    audio = (0.3 * rng.standard_normal(40 * SAMPLE_RATE)).astype(np.float32)
    pause = slice(int(26.5 * SAMPLE_RATE), int(27.0 * SAMPLE_RATE))
    audio[pause] *= 0.001
    windows = split_long_audio(audio)
    assert_exact_cover(windows, audio)
    assert len(windows) == 2
    cut = len(windows[0][1])
    assert pause.start <= cut < pause.stop


def test_ten_minute_file_split_at_quiet_places(tmp_path):
    speech, rate = soundfile.read(SHARED_AUDIO / "librivox-0870.wav", dtype="float32")
    assert rate == SAMPLE_RATE
    path = tmp_path / "ten_minutes.wav"
    soundfile.write(path, np.tile(speech, int(np.ceil(600 * SAMPLE_RATE / len(speech)))), SAMPLE_RATE,
                    subtype="PCM_16")
    audio = load_audio(path)
    assert duration_seconds(audio) >= 600

    windows = split_long_audio(audio)

    assert len(windows) >= 20
    assert_exact_cover(windows, audio)
    median_rms = np.median(frame_rms(audio))
    for start, _ in windows[1:]:
        cut = round(start * SAMPLE_RATE)
        assert frame_rms(audio[cut - 200: cut + 200])[0] < median_rms
