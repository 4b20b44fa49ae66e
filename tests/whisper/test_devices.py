"""What a GPU runs, checked on a CPU: the PyTorch path (the one CUDA takes) creates every tensor on the device of
the data it meets and draws every random number in one place (tests/devices.py); it runs in float16 with
speculative output equal to plain; finished rows leave caches on another device than their slot numbers; a model
object's own device is used, and one that disagrees with `device=` is refused."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch

from asr_specdec.core.beam import BeamSearch
from asr_specdec.errors import ModelError
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.drafters import EarlyExitDrafter
from asr_specdec.whisper.runtime.compute import ComputeType
from asr_specdec.whisper.runtime.decoder import KVCache
from asr_specdec.whisper.runtime.lean_model import load_lean_whisper
from asr_specdec.whisper.runtime.lean_processor import load_lean_processor
from asr_specdec.whisper.runtime.pipeline import Window, WindowPipeline

from ..devices import explicit_devices
from ..tiny_ct2 import converted_dir
from ..tiny_whisper import DraftedPipeline

pytest.importorskip("ctranslate2")
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "message.wav"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return converted_dir(tmp_path_factory.mktemp("devices"), seed=0)


@pytest.fixture(autouse=True)
def pytorch_path(monkeypatch):
    """No native kernels: the encoder, decoder and drafters take the PyTorch path a GPU takes; one thread."""
    import asr_specdec.native as native

    monkeypatch.setattr(native, "kernels", lambda: None)
    monkeypatch.setattr(native, "unavailable_reason", lambda: "the PyTorch path (a GPU's) is under test")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def noise(seconds: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(seconds * 16000)) * 0.1).astype(np.float32)


@pytest.fixture(scope="module")
def assistant_dir(tmp_path_factory) -> Path:
    return converted_dir(tmp_path_factory.mktemp("devices-assistant"), seed=1)


@pytest.mark.parametrize("mode", ["off", "early-exit", "prompt-lookup", "assistant"])
def test_beam_search_creates_every_tensor_on_its_data_device(model_dir, assistant_dir, mode):
    """Plain and speculative beam search, alone, batched, with word timestamps and fallback retries."""
    extra = {"assistant_model": str(assistant_dir)} if mode == "assistant" else {}
    whisper = SpeculativeWhisper(str(model_dir), mode=mode, compute_type="float32", num_draft_tokens=3,
                                 max_new_tokens=24, **extra)
    clips = [noise(seconds, seed) for seed, seconds in enumerate((2, 5))]
    windows = [Window(whisper.pipeline.features(clip), beam=BeamSearch(3)) for clip in clips]
    with explicit_devices() as calls:
        alone = whisper.transcribe(clips[0], beam_size=3)
        whisper.transcribe(clips[1], beam_size=3, word_timestamps=True, temperature=(0.0, 0.6),
                           compression_ratio_threshold=0.1)
        batched = whisper.decode_windows(windows)  # rows of two audios, beams leaving as their audio finishes
    assert calls == []
    assert [row.tokens for row in batched] == [row.tokens for row in whisper.decode_windows(windows[:1])] + [
        row.tokens for row in whisper.decode_windows(windows[1:])]
    assert alone.text == SpeculativeWhisper(str(model_dir), mode="off", compute_type="float32", max_new_tokens=24
                                            ).transcribe(clips[0], beam_size=3).text


def test_the_drop_in_defaults_vad_live_and_a_server_request_create_every_tensor_on_their_data_device(model_dir):
    import httpx
    import soundfile

    from asr_specdec import WhisperModel
    from asr_specdec.whisper import load_audio
    from asr_specdec.whisper.live.replay import play
    from asr_specdec.whisper.live.streaming import StreamingTranscriber

    from ..server.running import serving

    speech = load_audio(str(SAMPLE))[:16000 * 6]
    drop_in = WhisperModel(str(model_dir), device="cpu")  # faster-whisper's defaults: beam 5
    whisper = SpeculativeWhisper(str(model_dir), mode="early-exit", compute_type="float32", max_new_tokens=24)
    encoded = io.BytesIO()
    soundfile.write(encoded, speech, 16000, format="WAV", subtype="PCM_16")
    with explicit_devices() as calls:
        segments, info = drop_in.transcribe(speech)
        segments = list(segments)  # a random model may write nothing here (it did in one CI run): the decode ran
        spoken = whisper.transcribe(speech, vad_filter=True)
        updates = list(play(StreamingTranscriber(whisper), speech, chunk_seconds=2.0))
        with serving(whisper) as served:  # the request is decoded on the server's own threads
            response = httpx.post(served.url + "/v1/audio/transcriptions", data={"model": "whisper-1"},
                                  files={"file": ("clip.wav", encoded.getvalue(), "audio/wav")}, timeout=120)
    assert calls == []
    assert info.language_probability > 0 and isinstance(segments, list)
    assert spoken.stats.main_passes > 0 and updates and response.status_code == 200


@pytest.mark.parametrize("mode", ["early-exit", "prompt-lookup"])
def test_the_pytorch_path_creates_every_tensor_on_its_data_device(model_dir, mode):
    whisper = SpeculativeWhisper(str(model_dir), mode=mode, compute_type="float32", num_draft_tokens=3)
    sampled = SpeculativeWhisper(str(model_dir), mode=mode, compute_type="float32", do_sample=True, seed=1)
    assert whisper.runner.native is None and whisper.pipeline.encoder.backend.products is None
    clips = [noise(seconds, seed) for seed, seconds in enumerate((2, 5, 9))]
    with explicit_devices() as calls:
        batch = whisper.transcribe_batch(clips, batch_size=3)  # rows that end apart leave the batch
        whisper.transcribe(clips[1], word_timestamps=True)  # timestamps, scores, alignment
        whisper.transcribe(clips[2], temperature=(0.0, 0.6), compression_ratio_threshold=0.1)  # fallback retries
        whisper.transcribe(clips[0], temperature=0.7)  # a sampled request, as the server makes it
        sampled.transcribe_batch(clips, batch_size=3)
    assert calls == []
    assert [result.text for result in batch] == [whisper.transcribe(clip).text for clip in clips]


def test_the_float16_pytorch_path_runs_and_speculative_equals_plain(model_dir):
    """float16 is refused on a CPU to users (slow there), but it is what CUDA runs: the same code runs here."""
    model = load_lean_whisper(model_dir, dtype=torch.float16)
    processor = load_lean_processor(model_dir)
    compute = ComputeType("float16", "float16")

    def pipeline(drafter):
        return DraftedPipeline(WindowPipeline(model, processor, compute=compute), drafter)

    plain, speculative = pipeline(None), pipeline(EarlyExitDrafter(model, 1))
    assert plain.runner.native is None and plain.runner.dtype == torch.float16
    # prompts of different lengths: the rows reach the length limit apart, so finished rows leave the batch
    windows = [Window(plain.features(noise(seconds, seed)), previous=[65 + seed] * (4 * seed))
               for seed, seconds in enumerate((2, 5, 9))]
    with explicit_devices() as calls:
        expected = [row.tokens for row in plain.decode(windows)]
        drafted = speculative.decode(windows)
    assert calls == []
    assert [row.tokens for row in drafted] == expected
    assert len({len(tokens) for tokens in expected}) > 1
    assert sum(row.stats.accepted_tokens for row in drafted) > 0


class _IndexDevices(torch.overrides.TorchFunctionMode):
    """Fails an index_select whose index is on another device than its input (torch does on CUDA, not on meta)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.index_select, torch.Tensor.index_select):
            source, index = args[0], args[2] if len(args) > 2 else kwargs["index"]
            assert index.device == source.device, f"index on {index.device}, data on {source.device}"
        return func(*args, **kwargs)


def test_finished_rows_leave_a_cache_on_another_device():
    def states(device):
        return [torch.zeros(3, 2, 4, 8, device=device)]

    shared = states("meta")
    main = KVCache(states("meta"), states("meta"), shared, states("meta"), max_positions=8)
    drafter = KVCache(states("meta"), states("meta"), shared, states("meta"), max_positions=8)
    rows = torch.tensor([0, 2], device="cpu")  # the engine's slot numbers, host-side
    memo: dict = {}
    with _IndexDevices():
        main.keep(rows, memo)
        drafter.keep(rows, memo)
    assert main.batch_size == drafter.batch_size == 2 and main.self_keys[0].device.type == "meta"
    assert main.cross_keys[0] is drafter.cross_keys[0]  # shared states are compacted once and stay shared


def test_a_model_object_runs_where_it_is(model_dir):
    model, processor = load_lean_whisper(model_dir), load_lean_processor(model_dir)
    whisper = SpeculativeWhisper((model, processor), mode="off", compute_type="float32")
    assert whisper.device == model.device == torch.device("cpu")
    with pytest.raises(ModelError, match="on cpu but device='cuda' was asked for"):
        SpeculativeWhisper((model, processor), mode="off", device="cuda")


def test_cpu_only_drafters_are_refused_on_a_gpu_by_name_and_left_out_by_default(capsys):
    from types import SimpleNamespace

    from app.compute_guide import compute_choices
    from app.drafter_guide import guide_markdown, mode_choices
    from asr_specdec.cli.transcribe import main
    from asr_specdec.cli.transcriber_arguments import choose_models
    from asr_specdec.server.transcribers import Transcribers
    from asr_specdec.whisper.model_options import ModelOptions

    sample = Path(__file__).resolve().parents[2] / "samples" / "message.wav"
    assert main(["--main", "tiny.en", "--mode", "quantized-self", "--device", "cuda", str(sample)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: mode 'quantized-self' cannot run on cuda") and error.count("\n") == 1
    args = SimpleNamespace(main="tiny.en", assistant=None, mode=None, device="cuda")
    assert choose_models(args)[2] is None  # the transcriber decides, with the model loaded
    mode, why = ModelOptions(main="tiny.en").resolved_drafter("cuda")
    assert mode == "off" and "CPU only" in why
    assert ModelOptions(main="tiny.en").resolved_drafter("cpu")[0] == "quantized-self"

    server = Transcribers(SimpleNamespace(mode="off", device=torch.device("cuda")))
    assert "quantized-self" not in server.modes and "early-exit" in server.modes
    with pytest.raises(Exception, match="CPU only"):
        server.check("quantized-self")
    assert "quantized-self" in Transcribers(SimpleNamespace(mode="off", device=torch.device("cpu"))).modes

    assert "quantized-self" not in [value for _, value in mode_choices("cuda")]
    assert "quantized-self" not in guide_markdown("cuda") and "quantized-self" in guide_markdown("cpu")
    # the app loads float16 weights on a GPU: a float32 decoder there would need the CPU kernels
    assert [value for _, value in compute_choices("cuda")] == ["auto", "float16"]


def test_native_encoder_products_only_for_an_encoder_on_the_cpu(monkeypatch):
    from dataclasses import replace

    import asr_specdec.native as native
    from asr_specdec.whisper.runtime.encoder import native_int8_products

    here = native.capabilities()
    monkeypatch.setattr(native, "capabilities", lambda: replace(here, int8_products=True))  # as with the kernels
    encoder = torch.nn.Sequential(torch.nn.Linear(16, 16))
    assert native_int8_products(encoder)
    with torch.device("meta"):  # a device other than the CPU (the kernels would read its pointers as host memory)
        elsewhere = torch.nn.Sequential(torch.nn.Linear(16, 16))
    assert not native_int8_products(elsewhere)
