"""Per-utterance scoring and per-mode summaries on hand-made rows, where every number can be checked by hand."""

from __future__ import annotations

import pytest

from eval.report import markdown, write_report
from eval.rows import failed_row, score_utterance
from eval.settings import EvalSettings, Variant
from eval.summary import summarize

PLAIN, DRAFT = Variant("off", None, "off"), Variant("quantized-self", 8, "quantized-self")


def row(utterance_id, variant, text, tokens, seconds, reference, drafted=0, accepted=0, passes=1, duration=2.0):
    return {"id": utterance_id, "variant": variant.label, "mode": variant.mode, "draft_tokens": variant.draft_tokens,
            "reference": reference, "status": "ok", "error": None, "duration": duration, "text": text,
            "tokens": tokens, "seconds": seconds,
            "stats": {"new_tokens": len(tokens), "drafted_tokens": drafted, "accepted_tokens": accepted,
                      "main_passes": passes}}


@pytest.fixture
def rows():
    utterance_a = score_utterance([
        row("a", PLAIN, "Mr. Smith paid $20.", [1, 2, 3, 4], 2.0, "mister smith paid twenty dollars", passes=4),
        row("a", DRAFT, "Mr. Smith paid $20.", [1, 2, 3, 4], 1.0, "mister smith paid twenty dollars",
            drafted=8, accepted=3, passes=1)])
    utterance_b = score_utterance([
        row("b", PLAIN, "go forward ten meters", [5, 6], 4.0, None, passes=2, duration=4.0),
        row("b", DRAFT, "go backward", [5, 7], 4.0, None, drafted=4, accepted=1, passes=2, duration=4.0)])
    utterance_c = score_utterance([failed_row("c", variant, "a b", "c.flac: corrupt") for variant in (PLAIN, DRAFT)])
    return utterance_a + utterance_b + utterance_c


def test_rows_are_scored_against_plain_greedy(rows):
    first = rows[1]
    # "Mr. Smith paid $20." and "mister smith paid twenty dollars" both normalise to "mister smith paid $20"
    assert (first["word_errors"], first["reference_words"]) == (0, 4)
    assert first["identical_to_plain"] is True and first["speedup"] == 2.0 and first["rtf"] == 0.5
    assert rows[3]["identical_to_plain"] is False and rows[3]["word_errors"] is None
    assert rows[4]["identical_to_plain"] is None and rows[4]["speedup"] is None


def test_summary_numbers(rows):
    plain, draft = summarize(rows, ["off", "quantized-self"])
    assert (draft["utterances"], draft["failed"]) == (2, 1)
    assert draft["parity"] == 0.5 and plain["parity"] == 1.0
    assert draft["speedup"] == pytest.approx((2.0 + 4.0) / (1.0 + 4.0))  # summed times, not mean of ratios
    assert draft["speedup_per_utterance"]["median"] == pytest.approx(1.5)
    assert (draft["speedup_per_utterance"]["min"], draft["speedup_per_utterance"]["max"]) == (1.0, 2.0)
    assert draft["acceptance_rate"] == pytest.approx(4 / 12)
    assert draft["tokens_per_main_pass"] == pytest.approx((4 + 2) / (1 + 2))
    assert draft["rtf"] == pytest.approx(5.0 / 6.0)
    assert draft["wer"] == 0.0 and draft["reference_words"] == 4  # the clip without a reference is not counted
    assert plain["acceptance_rate"] is None


def test_report_files(rows, tmp_path):
    settings = EvalSettings("x.jsonl", modes=("off", "quantized-self"))
    context = {"command": "python -m eval.run", "engine": "local", "dataset": {"dataset": "x.jsonl"},
               "machine": {"cpu": "test cpu", "cpu_count": 2, "torch_threads": 1, "gpus": [], "platform": "p"},
               "libraries": {"torch": "0"}, "models": {"main": {"name": "m", "source": "pack", "sha256": "ab",
                                                                "sha256_of": "model.bin"}},
               "notes": ["a note"], "settings": settings.as_dict()}
    report = write_report(tmp_path, rows, ["off", "quantized-self"], context)
    text = (tmp_path / "report.md").read_text()
    table = [line for line in text.splitlines() if line.startswith("| quantized-self")]
    assert table == ["| quantized-self | 8 | 2 | 1 | 0.0% | 50.0% | 1.20x | 1.50x [1.25–1.75] | 33.3% | 2.00 | "
                     "0.833 |"]
    assert "`c`: off: c.flac: corrupt" in text and "a note" in text and "sha256 of its model.bin ab" in text
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(report["rows"]) == 6 and markdown(report) == text


def test_sweep_labels():
    settings = EvalSettings("x", modes=("quantized-self", "prompt-lookup"), draft_lengths=(2, 4))
    assert [variant.label for variant in settings.variants()] == [
        "off", "quantized-self k=2", "quantized-self k=4", "prompt-lookup k=2", "prompt-lookup k=4"]
    assert EvalSettings("x", modes=("prompt-lookup",), plain_baseline=False).variants() == [
        Variant("prompt-lookup", 8, "prompt-lookup")]


def test_beam_runs_report_beam_steps_per_pass_against_plain_beam_search(tmp_path):
    import json

    def beam_row(variant, tokens, seconds, steps, passes):
        made = row("a", variant, "go forward", tokens, seconds, "go forward", drafted=4, accepted=2, passes=passes)
        made["stats"]["beam_steps"] = steps
        return made

    rows = score_utterance([beam_row(PLAIN, [1, 2, 3], 3.0, 6, 6), beam_row(DRAFT, [1, 2, 3], 2.0, 6, 4)])
    plain, draft = summarize(rows, ["off", "quantized-self"])
    assert (plain["beam_steps_per_main_pass"], draft["beam_steps_per_main_pass"]) == (1.0, 1.5)
    assert draft["parity"] == 1.0 and draft["speedup"] == 1.5 and draft["wer"] == 0.0
    settings = EvalSettings("x.jsonl", modes=("off", "quantized-self"), recipe=json.dumps({"beam_size": 5}))
    context = {"command": "python -m eval.run --beam-size 5", "engine": "local", "dataset": {"dataset": "x.jsonl"},
               "machine": {"cpu": "c", "cpu_count": 2, "torch_threads": 1, "gpus": [], "platform": "p"},
               "libraries": {}, "models": {}, "settings": settings.as_dict()}
    text = markdown(write_report(tmp_path, rows, ["off", "quantized-self"], context))
    assert "beam steps / main pass" in text and "against plain beam search (5 beams)" in text
    assert [line for line in text.splitlines() if line.startswith("| quantized-self")] == [
        "| quantized-self | 8 | 1 | 0 | 0.0% | 100.0% | 1.50x | 1.50x [1.50–1.50] | 50.0% | 1.50 | 1.000 |"]
    assert summarize(score_utterance([row("b", PLAIN, "x", [1], 1.0, None)]), ["off"])[0][
        "beam_steps_per_main_pass"] is None  # greedy rows have none
