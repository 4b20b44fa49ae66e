"""eval/bench/shared_cpu.py and its worker: the report's tables and ratios from given times, the server section's
client passes and answer checks with fake transcribe functions, and the worker's default system (no mode given,
the resolved mode reported), with a fake transcriber and, once, for real on the tiny.en pack."""

from __future__ import annotations

import statistics
import threading
from pathlib import Path

import pytest

from eval.bench import shared_cpu, shared_cpu_worker
from eval.bench.server import serve_options
from eval.bench.shared_cpu import (
    CLIENTS,
    Worker,
    differing,
    report,
    rotated,
    server_report,
    table,
    time_clients,
    versus,
)
from eval.bench.shared_cpu_worker import build_ours, concurrent_passes
from eval.paths import PROJECT_ROOT

TIMES = {("ours", "alone"): [5.0, 6.0, 7.5], ("ours", "fw-int8"): [13.0, 12.0, 14.0],
         ("fw-int8", "alone"): [6.5, 7.0, 6.9], ("fw-int8", "fw-int8"): [11.0, 10.5, 11.5]}
LABELS = {"ours": "ours, default (off)", "fw-int8": "faster-whisper int8"}


def median(key, condition) -> float:
    return statistics.median(TIMES[key, condition])


def test_table_gives_median_range_and_ratio_to_the_first_condition():
    lines = table(TIMES, LABELS, ["alone", "fw-int8"], {"alone": "alone", "fw-int8": "beside it"}, "slower")
    assert lines[0] == "| system | alone | beside it |"
    ours = lines[2]
    assert ours.startswith("| ours, default (off) | ")
    assert f"{median('ours', 'alone'):.2f} s (5.00-7.50)" in ours
    assert f"{median('ours', 'fw-int8'):.2f} s (12.00-14.00) = " \
           f"{median('ours', 'fw-int8') / median('ours', 'alone'):.2f}x slower" in ours
    assert f"{median('fw-int8', 'fw-int8') / median('fw-int8', 'alone'):.2f}x slower" in lines[3]


def test_versus_is_the_reference_median_over_each_system_and_skips_the_reference():
    lines = versus(TIMES, LABELS, ["alone", "fw-int8"], {"alone": "alone", "fw-int8": "beside it"}, "fw-int8")
    alone = median("fw-int8", "alone") / median("ours", "alone")
    beside = median("fw-int8", "fw-int8") / median("ours", "fw-int8")
    assert lines == [f"- ours, default (off) vs faster-whisper int8: alone {alone:.2f}x, beside it {beside:.2f}x"]


def test_report_names_each_competitor_column_and_compares_with_faster_whisper():
    lines = report(TIMES, LABELS, ["alone", "fw-int8"])
    assert lines[0] == f"| system | alone | {shared_cpu.COMPETITORS['fw-int8']} |"
    assert lines[-1].startswith("- ours, default (off) vs faster-whisper int8: alone ")
    assert f"{shared_cpu.COMPETITORS['fw-int8']} {median('fw-int8', 'fw-int8') / median('ours', 'fw-int8'):.2f}x" \
           in lines[-1]


def test_server_report_gives_each_systems_two_client_ratio_and_ours_against_faster_whisper():
    times = {("ours-server", 1): [6.0, 6.4], ("ours-server", 2): [9.0, 9.6],
             ("fw", 1): [7.0, 7.2], ("fw", 2): [12.0, 12.4]}
    labels = {"ours-server": "ours' server, default (off)", "fw": "faster-whisper int8, num_workers=2"}
    lines = server_report(times, labels, "fw", {"ours-server": 16, "fw": 16}, {"ours-server": 0, "fw": 2})
    ours = next(line for line in lines if line.startswith("| ours' server"))
    assert f"= {statistics.median([9.0, 9.6]) / statistics.median([6.0, 6.4]):.2f}x the 1-client time" in ours
    fw = next(line for line in lines if line.startswith("| faster-whisper"))
    assert f"= {statistics.median([12.0, 12.4]) / statistics.median([7.0, 7.2]):.2f}x the 1-client time" in fw
    one, two = (statistics.median(times["fw", n]) / statistics.median(times["ours-server", n]) for n in (1, 2))
    assert f"- ours' server, default (off) vs faster-whisper int8, num_workers=2: 1 client {one:.2f}x, " \
           f"2 clients {two:.2f}x" in lines
    assert lines[-1].endswith("ours' server, default (off) yes (16/16), faster-whisper int8, num_workers=2 NO (14/16)")


def test_the_server_is_started_with_only_the_options_given():
    assert serve_options("base") == ["--main", "base"]
    assert serve_options("base", language="en", threads=2) == ["--main", "base", "--language", "en", "--threads", "2"]


def test_rotated_starts_each_repeat_one_place_further():
    assert [rotated(["a", "b", "c"], repeat) for repeat in range(4)] == [
        ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]


def test_concurrent_passes_run_the_clients_at_once_each_over_every_clip():
    clips = ["one", "two", "three"]
    both_in = threading.Barrier(2, timeout=10)  # broken (and the test failed) unless two calls overlap
    orders, lock = {}, threading.Lock()

    def transcribe(clip: str) -> str:
        with lock:
            orders.setdefault(threading.get_ident(), []).append(clip)
        both_in.wait()
        return clip.upper()

    seconds, texts = concurrent_passes(transcribe, clips, 2)
    assert texts == [["ONE", "TWO", "THREE"]] * 2  # in clip order, whichever clip a client sent first
    assert sorted(orders.values()) == [["one", "two", "three"], ["two", "three", "one"]]
    assert seconds > 0


def test_concurrent_passes_with_one_client_send_the_clips_in_turn():
    calls = []
    seconds, texts = concurrent_passes(lambda clip: calls.append(clip) or clip, ["a", "b"], 1)
    assert (calls, texts) == (["a", "b"], [["a", "b"]])


def test_differing_counts_answers_unlike_the_reference():
    assert differing([["a", "b"], ["a", "x"]], ["a", "b"]) == 1
    assert differing([["a", "b"]], ["a", "b"]) == 0
    with pytest.raises(ValueError):
        differing([["a"]], ["a", "b"])


def test_time_clients_checks_every_answer_and_rotates_the_systems(capsys):
    clips = ["one", "two"]
    calls = []

    def fake(name: str, wrong_at: int | None = None):
        def passes(clients: int):
            calls.append((name, clients))
            seconds, texts = concurrent_passes(str.upper, clips, clients)
            if len(calls) == wrong_at:
                texts[-1][0] = "wrong"
            return float(clients), texts
        return passes

    passes = {"ours": fake("ours"), "fw": fake("fw", wrong_at=8)}
    times, answers, wrong = time_clients(passes, repeats=2)
    # references (1 client each), warm-up at 2 clients, then per repeat each system at 1 and 2, order rotating
    assert calls == [("ours", 1), ("fw", 1), ("ours", 2), ("fw", 2),
                     ("ours", 1), ("ours", 2), ("fw", 1), ("fw", 2),
                     ("fw", 1), ("fw", 2), ("ours", 1), ("ours", 2)]
    assert times == {(key, n): [float(n)] * 2 for key in passes for n in CLIENTS}
    per_system = len(clips) * (2 + 2 * sum(CLIENTS))  # answers checked: the warm-up at 2 clients, then the repeats
    assert answers == {"ours": per_system, "fw": per_system}
    assert wrong == {"ours": 0, "fw": 1}
    assert "repeat 2 server" in capsys.readouterr().out


class FakeWhisper:
    made: list[dict] = []

    def __init__(self, main, **options):
        FakeWhisper.made.append(options)
        self.mode = options.get("mode", "quantized-self")  # as if the hardware chose it

    def transcribe(self, audio):
        return type("Result", (), {"text": f"text of {audio}"})()


@pytest.fixture
def fake_whisper(monkeypatch):
    import torch

    import asr_specdec

    monkeypatch.setattr(asr_specdec, "SpeculativeWhisper", FakeWhisper)
    monkeypatch.setattr(torch, "set_num_threads", lambda threads: None)  # the test process keeps its own
    FakeWhisper.made = []
    return FakeWhisper


def test_ours_passes_no_mode_and_reports_the_one_resolved(fake_whisper):
    transcribe, mode, _ = build_ours("ours", 2)
    assert fake_whisper.made == [{"language": "en"}]
    assert mode == "quantized-self"
    assert transcribe("clip") == "text of clip"
    _, mode, _ = build_ours("ours-plain", 2)
    assert fake_whisper.made[-1] == {"language": "en", "mode": "off"} and mode == "off"


def test_ours_at_another_thread_count_asks_torch_for_it_during_the_pass_only(fake_whisper, monkeypatch):
    import torch

    asked = []
    monkeypatch.setattr(torch, "set_num_threads", asked.append)
    _, _, at_threads = build_ours("ours", 2)
    asked.clear()
    assert at_threads(1)("clip") == "text of clip"
    assert asked == [1, 2]
    assert len(fake_whisper.made) == 1  # the same transcriber, not a second one


def test_faster_whisper_systems_report_no_mode_and_load_a_model_per_thread_count(monkeypatch):
    workers = []
    monkeypatch.setattr(shared_cpu_worker, "build_faster_whisper",
                        lambda threads, count: workers.append((threads, count)) or f"model {threads}/{count}")
    transcribe, mode, at_threads = shared_cpu_worker.build("fw-int8", 2)
    assert mode is None and transcribe == "model 2/1"
    assert at_threads(1) == "model 1/1" and at_threads(1) == "model 1/1" and at_threads(2) == "model 2/1"
    assert shared_cpu_worker.build("fw-int8-2workers", 2)[1] is None
    assert workers == [(2, 1), (1, 1), (2, 2)]


def test_cores_are_cpu_seconds_over_wall_seconds_per_condition():
    cpu = {key: [2 * value for value in values] for key, values in TIMES.items()}
    cpu["fw-int8", "fw-int8"] = [11.0, 10.5, 11.5]  # one core beside it
    lines = report(TIMES, LABELS, ["alone", "fw-int8"], cpu)
    fw = next(line for line in lines if line.startswith("- faster-whisper int8: "))
    assert f"alone {statistics.median(cpu['fw-int8', 'alone']):.2f} CPU-s on 2.00 cores" in fw
    assert f"{shared_cpu.COMPETITORS['fw-int8']} 11.00 CPU-s on 1.00 cores" in fw


def test_the_worker_process_reports_the_default_mode_and_answers_rounds_and_clients(tiny_en_dir, shared_audio,
                                                                                    monkeypatch):
    from asr_specdec import SpeculativeWhisper

    monkeypatch.setenv("MAIN", "tiny.en")
    clip = str(Path(shared_audio) / "goforward.wav")
    worker = Worker("ours", 1, [clip], PROJECT_ROOT, fw_dir="")
    try:
        assert worker.mode == SpeculativeWhisper("tiny.en", language="en").mode
        seconds, used = worker.round()
        assert seconds > 0 and used > 0
        assert worker.round(2)[0] > 0  # another thread count: a warm-up pass first, then the timed one
        seconds, texts = worker.clients(1)  # one transcriber is not for two threads: the drop-in's num_workers is
        assert seconds > 0 and texts == [worker.texts]
    finally:
        worker.stop()


def test_a_run_whose_texts_differ_exits_non_zero():
    from eval.bench.shared_cpu import answers_agree

    assert answers_agree({"exact": True, "server": {"differing": {"ours-server": 0, "fw-int8-2workers": 0}}})
    assert answers_agree({"server": {"differing": {"ours-server": 0}}})  # the server section alone
    assert not answers_agree({"exact": False})  # ours default != ours plain on a clip
    assert not answers_agree({"exact": True, "server": {"differing": {"ours-server": 1, "fw-int8-2workers": 0}}})


def test_served_mode_asks_for_verbose_json_and_reads_the_mode(monkeypatch, shared_audio):
    import httpx

    from eval.bench.shared_cpu import served_mode

    clip = Path(shared_audio) / "goforward.wav"
    sent = []

    class Answer:
        def raise_for_status(self):
            pass

        def json(self):
            return {"text": "words", "asr_specdec": {"mode": "prompt-lookup"}}

    def post(url, data, files, timeout):
        sent.append((url, data, files["file"]))
        return Answer()

    monkeypatch.setattr(httpx, "post", post)
    assert served_mode("http://server", str(clip)) == "prompt-lookup"
    assert sent == [("http://server/v1/audio/transcriptions", {"model": "whisper-1", "response_format": "verbose_json"},
                     ("goforward.wav", clip.read_bytes()))]


def test_beside_starts_the_named_competitor_looping_and_stops_it_even_when_the_block_fails(monkeypatch):
    events = []

    class FakeWorker:
        def __init__(self, system, threads, clips, checkout, fw_dir):
            events.append(("start", system, threads, tuple(clips)))

        def loop(self):
            events.append(("loop",))

        def stop(self):
            events.append(("stop",))

    monkeypatch.setattr(shared_cpu, "Worker", FakeWorker)
    monkeypatch.setattr(shared_cpu, "SETTLE_SECONDS", 0.0)
    with shared_cpu.beside("alone", 2, "a.wav", ""):
        events.append(("measured",))
    assert events == [("measured",)]
    events.clear()
    with pytest.raises(RuntimeError), shared_cpu.beside("fw-int8", 3, "a.wav", ""):
        events.append(("measured",))
        raise RuntimeError("a worker exited")
    assert events == [("start", "fw-int8", 3, ("a.wav",)), ("loop",), ("measured",), ("stop",)]
