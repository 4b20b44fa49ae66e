"""app/service.py and app/settings.py: one model per spec shared by every decoder, decoders cached per
setting, and only the offered models can be asked for."""

from __future__ import annotations

import threading
import time
from collections import Counter
from types import SimpleNamespace

import pytest

import app.service as service_module
from app.server import make_settings
from app.service import TranscriptionService
from app.settings import DecodeOptions
from asr_specdec.errors import SpecdecError


def test_settings_a_mode_ignores_do_not_split_the_cache():
    assert DecodeOptions("base", "off", "tiny.en", 8, True).normalized() == DecodeOptions("base", "off").normalized()
    assert DecodeOptions("base", "quantized-self", "tiny.en").normalized().assistant is None
    assert DecodeOptions("base", "universal", "tiny.en").normalized().assistant == "tiny.en"
    assert DecodeOptions("base", "prompt-lookup", draft_tokens=3).normalized().draft_tokens == 3


def test_offered_models_are_the_packs_plus_the_ones_given():
    assert make_settings("tiny.en").models == ("tiny.en", "base")
    assert make_settings("/models/large", assistant="/models/small").models == (
        "/models/large", "tiny.en", "base", "/models/small")


def test_a_model_not_offered_is_refused_without_loading_anything():
    service = TranscriptionService(make_settings("tiny.en"))
    with pytest.raises(SpecdecError, match="'/etc' is not offered here"):
        service.decoder(DecodeOptions("/etc"))
    assert not service._models


@pytest.mark.slow
def test_decoders_share_the_loaded_model_and_are_reused(tiny_en_dir):
    service = TranscriptionService(make_settings("tiny.en"), max_decoders=2)
    plain, _ = service.decoder(DecodeOptions("tiny.en", "off"))
    speculative, _ = service.decoder(DecodeOptions("tiny.en", "prompt-lookup", draft_tokens=3))
    assert plain.model is speculative.model is service.model("tiny.en").model
    assert service.decoder(DecodeOptions("tiny.en", "off", draft_tokens=9))[0] is plain
    service.decoder(DecodeOptions("tiny.en", "prompt-lookup", draft_tokens=4))
    assert service.decoder(DecodeOptions("tiny.en", "prompt-lookup", draft_tokens=3))[0] is not speculative


@pytest.mark.slow
def test_without_a_default_mode_the_page_offers_the_one_the_default_models_decoder_chose(tiny_en_dir):
    """The project's default drafter depends on the loaded main model (its decoder's arithmetic), so the app reads it
    back from the decoder it builds at start-up, and a request naming that mode gets that same decoder."""
    service = TranscriptionService(make_settings("tiny.en"))
    assert service.settings.default_mode is None
    service.load_defaults()
    chosen = service.settings.default_mode
    built, _ = service.decoder(DecodeOptions("tiny.en"))
    assert chosen == built.mode == built.model_options.mode != "off"  # tiny.en's auto decoder is float32 here
    assert service.decoder(DecodeOptions("tiny.en", chosen))[0] is built


def test_each_decoder_serves_one_request_at_a_time_while_different_decoders_run_together(monkeypatch):
    monkeypatch.setattr(service_module, "load_whisper", lambda spec, **_: SimpleNamespace(model=spec, processor=None))
    running, most_per_decoder, most_overall, count_lock = Counter(), Counter(), [0], threading.Lock()

    class FakeDecoder:
        def __init__(self, model_options, options):
            self.model_options, self.options = model_options, options

        @classmethod
        def from_options(cls, model_options, options):
            return cls(model_options, options)

        def transcribe(self, samples, progress=None, timestamps=None, **recipe):
            with count_lock:
                running[id(self)] += 1
                most_per_decoder[id(self)] = max(most_per_decoder[id(self)], running[id(self)])
                most_overall[0] = max(most_overall[0], sum(running.values()))
            time.sleep(0.2)
            with count_lock:
                running[id(self)] -= 1

    monkeypatch.setattr(service_module, "SpeculativeWhisper", FakeDecoder)
    service = TranscriptionService(make_settings("tiny.en"))
    monkeypatch.setattr(service, "read", lambda upload: None)
    requests = [DecodeOptions("tiny.en", mode) for mode in ("off", "off", "prompt-lookup", "prompt-lookup")]
    threads = [threading.Thread(target=service.transcribe, args=("clip.wav", options)) for options in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(most_per_decoder) == 2 and set(most_per_decoder.values()) == {1}
    assert most_overall[0] == 2
