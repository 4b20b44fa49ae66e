"""app/ui.py and the handlers behind the settings: one progress indicator per job, and choices that follow the
main model and the drafter."""

from __future__ import annotations

import pytest

from app.handlers import Handlers
from app.server import make_settings
from app.service import TranscriptionService
from app.ui import build_app

pytestmark = pytest.mark.slow  # the page reads the offline packs' configs (converted on a fresh machine)


@pytest.fixture(scope="module")
def service(tiny_en_dir, base_dir):
    return TranscriptionService(make_settings("tiny.en"))


def test_each_job_draws_one_progress_indicator(service):
    config = build_app(service).get_config_file()
    elem_ids = {component["id"]: component.get("props", {}).get("elem_id") for component in config["components"]}
    jobs = {dependency["api_name"]: dependency for dependency in config["dependencies"]
            if dependency["api_name"] in ("transcribe", "transcribe_microphone", "compare")}
    assert len(jobs) == 3
    shown_on = {name: [elem_ids[id_] for id_ in job["show_progress_on"]] for name, job in jobs.items()}
    assert shown_on == {"transcribe": ["file-transcript"], "transcribe_microphone": ["mic-transcript"],
                        "compare": ["comparison"]}
    assert all(len(job["outputs"]) == 6 for job in jobs.values())


def test_a_multilingual_main_model_offers_languages_by_name_and_translation(service):
    languages, tasks, assistant = Handlers(service).main_changed("base", "quantized-self", "en", "translate")
    assert languages["choices"][0] == ("Detect automatically", "auto") and ("German (de)", "de") in languages["choices"]
    assert languages["value"] == "en" and tasks["value"] == "translate"
    assert assistant == {"__type__": "update", "visible": False}


def test_an_english_only_main_model_offers_english_and_transcription_alone(service):
    languages, tasks, _ = Handlers(service).main_changed("tiny.en", "off", "de", "translate")
    assert languages["choices"] == [("English", "en")] and languages["value"] == "en"
    assert [value for _, value in tasks["choices"]] == ["transcribe"] and tasks["value"] == "transcribe"


@pytest.mark.parametrize("main, mode, offered", [("base", "assistant", ["base"]), ("tiny.en", "assistant", ["tiny.en"]),
                                                 ("base", "universal", ["tiny.en"])])
def test_the_drafter_choice_explains_itself_and_offers_assistants_that_work(service, main, mode, offered):
    drafter, assistant = Handlers(service).mode_changed(main, mode)
    assert drafter["info"].startswith(("Another Whisper with the same tokenizer", "A Whisper with another tokenizer"))
    assert assistant["visible"] and assistant["choices"] == offered and assistant["value"] == offered[0]
