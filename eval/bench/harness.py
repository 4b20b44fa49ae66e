"""What every benchmark shares, so that a benchmark is only its systems and its workload: the common flags
(`--main`, `--threads`, `--repeats`, `--audio`), the workloads read from the shared clips, the models they load,
the timing loop (systems interleaved round by round after a warm-up, best or median of the repeats) and the
clip table the speed and drop-in benchmarks report.

    rounds = interleave({"plain": plain.transcribe, "speculative": fast.transcribe}, clips, repeats=3)
    rounds.total("plain"), rounds.total("speculative", statistics.median)
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..paths import SHARED_AUDIO

LANGUAGE = "en"  # the shared clips are English
SAMPLE_RATE = 16000
GAP_SECONDS = 0.5  # between the clips of the joined long file
TORCH_THREADS = "torch's"  # --threads defaults to torch's own thread count


# ------------------------------------------------------------------------------------------------- the flags

def add_common_flags(parser: argparse.ArgumentParser, *, main: str | None | bool = "base",
                     main_help: str | None = None, repeats: int | None | bool = 1, repeats_help: str | None = None,
                     audio: bool = True, audio_help: str = "folder with manifest.jsonl",
                     threads: int | str | None | bool = TORCH_THREADS, threads_help: str | None = None) -> None:
    """The flags every benchmark spells the same way, each with the benchmark's default; False leaves a flag out
    for a benchmark that has no use for it (None keeps it, defaulting to None: the benchmark decides)."""
    if main is not False:
        parser.add_argument("--main", default=main, help=main_help)
    if repeats is not False:
        parser.add_argument("--repeats", type=int, default=repeats, help=repeats_help)
    if audio:
        parser.add_argument("--audio", default=str(SHARED_AUDIO), help=audio_help)
    if threads is False:
        return
    if threads == TORCH_THREADS:
        import torch

        threads = torch.get_num_threads()
    parser.add_argument("--threads", type=int, default=threads, help=threads_help)


def set_threads(threads: int | None) -> None:
    """torch's thread count for the whole run (None: torch's own choice)."""
    if threads is not None:
        import torch

        torch.set_num_threads(threads)


# ------------------------------------------------------------------------------------------------- workloads

def manifest_entries(folder: Path) -> list[dict]:
    lines = (Path(folder) / "manifest.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def manifest_clips(folder: Path) -> list[Path]:
    """The clips a folder's manifest.jsonl lists, in its order."""
    return [Path(folder) / entry["audio"] for entry in manifest_entries(folder)]


def load_clips(clips: Sequence[Path]) -> list[np.ndarray]:
    """16-kHz samples of each clip."""
    from asr_specdec.whisper.io.audio import load_audio

    return [load_audio(clip) for clip in clips]


def joined_clips(folder: Path, gap_seconds: float = GAP_SECONDS) -> np.ndarray:
    """The long file: every clip of the manifest with `gap_seconds` of silence after each (64 s for the shared
    clips)."""
    gap = np.zeros(int(SAMPLE_RATE * gap_seconds), dtype=np.float32)
    return np.concatenate([part for samples in load_clips(manifest_clips(folder)) for part in (samples, gap)])


# ---------------------------------------------------------------------------------------------------- models

def load_main(spec: str):
    """The main model (a LoadedWhisper) for `--main`: an offline pack, a CTranslate2 or transformers directory,
    or a hub id; load it once and build every system of a benchmark from it, so all share the same weights."""
    from asr_specdec.weights.whisper_models import load_whisper

    return load_whisper(spec)


def load_lean_main(spec: str) -> tuple:
    """(model, processor) of `spec` without transformers' modeling code, as the transcribe command loads it."""
    from asr_specdec.weights.whisper_models import resolve_model_dir
    from asr_specdec.whisper.runtime.lean_model import load_lean_whisper
    from asr_specdec.whisper.runtime.lean_processor import load_lean_processor

    location = resolve_model_dir(spec)
    return load_lean_whisper(location), load_lean_processor(location)


def transcriber(main, mode: str | None = None, **options):
    """Our transcriber over `main` (a spec or loaded weights) in `mode` (None: the library's default drafter), in
    English unless `language` says otherwise."""
    from asr_specdec.whisper import SpeculativeWhisper

    options.setdefault("language", LANGUAGE)
    if mode is not None:
        options["mode"] = mode
    return SpeculativeWhisper(main, **options)


def ct2_checkpoint(spec: str, scratch: Path) -> tuple[Path | None, str]:
    """(the CTranslate2 checkpoint of `spec` for faster-whisper, or None and why)."""
    from asr_specdec.errors import SpecdecError
    from asr_specdec.weights.packs import PACKS, assemble_pack

    if spec in PACKS:
        (scratch / "ct2").mkdir()
        try:
            return assemble_pack(spec, scratch / "ct2"), ""
        except SpecdecError as error:
            return None, str(error)
    if (Path(spec).expanduser() / "model.bin").is_file():
        return Path(spec).expanduser().resolve(), ""
    return None, f"'{spec}' is neither an offline pack nor a CTranslate2 directory, which faster-whisper needs"


def faster_whisper(ct2_dir: Path, compute_type: str, threads: int | None):
    """faster-whisper's WhisperModel on the CPU over a CTranslate2 checkpoint, one worker."""
    from faster_whisper import WhisperModel

    options = {"cpu_threads": threads} if threads else {}
    return WhisperModel(str(ct2_dir), device="cpu", compute_type=compute_type, num_workers=1, **options)


# ---------------------------------------------------------------------------------------------------- timing

def timed(function: Callable, *args, **kwargs) -> tuple:
    """(what `function(*args, **kwargs)` returned, its wall seconds)."""
    started = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - started


def process_timed(function: Callable, *args, **kwargs) -> tuple:
    """(what `function(*args, **kwargs)` returned, the CPU seconds this process spent on it, all threads): less
    sensitive than wall time to other work on a shared machine."""
    started = time.process_time()
    value = function(*args, **kwargs)
    return value, time.process_time() - started


def best_of(function: Callable, repeats: int) -> tuple:
    """(the least wall seconds of `function()` over `repeats` calls, what the last call returned)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        result, seconds = timed(function)
        best = min(best, seconds)
    return best, result


def own_clock(result, wall: float) -> float:
    """A `seconds_of` for interleave: the seconds a result's stats measured itself (`stats.total_seconds`, what
    our transcribers time from call to result), not the wall time around the call."""
    return result.stats.total_seconds


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or "no message"
    return f"{type(error).__name__}: {text[:200]}"


@dataclass
class Rounds:
    """What `interleave` measured: per system, per workload item, the seconds of each round and the last result."""

    seconds: dict[Hashable, list[list[float]]] = field(default_factory=dict)
    results: dict[Hashable, list] = field(default_factory=dict)
    errors: dict[Hashable, str] = field(default_factory=dict)  # system -> why it stopped (the systems `catch` covers)

    def per_item(self, name: str, reduce: Callable = min) -> list[float]:
        """Each item's seconds over the rounds, reduced (min: best of; statistics.median: the median)."""
        return [reduce(rounds) for rounds in self.seconds[name] if rounds]

    def total(self, name: str, reduce: Callable = min) -> float:
        return sum(self.per_item(name, reduce))


def interleave(systems: dict[Hashable, Callable], items: Sequence, repeats: int = 1, *, warm_up: bool = True,
               seconds_of: Callable | None = None, each: Callable | None = None,
               catch: bool | Collection[str] = False) -> Rounds:
    """Time every system on every item, taking turns: each of `repeats` rounds runs, item by item, every system
    once (so a slow spell of the machine falls on all of them alike). `warm_up` first runs each system once on
    the first item, untimed (first calls pay one-off costs). A system's time is its wall time, or
    `seconds_of(result, wall)` (a transcriber's own clock, for instance); `each(name, index, result, seconds)`
    sees every run in order. With `catch` (True, or the names of the systems it covers), a system that raises is
    reported in `errors` and left out from then on (what another library refuses, say), instead of stopping the
    benchmark."""
    catching = set(systems) if catch is True else set(catch or ())
    rounds = Rounds({name: [[] for _ in items] for name in systems}, {name: [None] * len(items) for name in systems})
    if warm_up and items:
        for name, run in systems.items():
            try:
                run(items[0])
            except Exception as error:
                if name not in catching:
                    raise
                rounds.errors[name] = one_line(error)
    for _ in range(repeats):
        for index, item in enumerate(items):
            for name, run in systems.items():
                if name in rounds.errors:
                    continue
                try:
                    result, wall = timed(run, item)
                except Exception as error:
                    if name not in catching:
                        raise
                    rounds.errors[name] = one_line(error)
                    continue
                seconds = wall if seconds_of is None else seconds_of(result, wall)
                rounds.seconds[name][index].append(seconds)
                rounds.results[name][index] = result
                if each is not None:
                    each(name, index, result, seconds)
    return rounds


# ---------------------------------------------------------------------------------------------------- report

@dataclass
class ClipTally:
    """One system over a list of clips: each clip's seconds and output, and what it drafted."""

    seconds: list = field(default_factory=list)  # per clip: the minimum over repeats
    texts: list = field(default_factory=list)
    tokens: list = field(default_factory=list)
    drafted: int = 0
    accepted: int = 0
    error: str = ""


def clip_table(tallies: dict, clips: list[Path]) -> list[str]:
    """The clip table of the speed and drop-in benchmarks: per system its total and median time, its speed
    against faster-whisper's, its WER against the manifest's references and its text against ours float32 plain."""
    from ..metrics import wer

    manifest = {json.loads(line)["audio"]: json.loads(line)["reference"]
                for line in (clips[0].parent / "manifest.jsonl").read_text().splitlines() if line.strip()}
    scored = [index for index, clip in enumerate(clips) if manifest.get(clip.name)]
    references = [manifest[clips[index].name] for index in scored]
    reference_name = next((name for name in tallies if name.startswith("ours float32, plain")), None)
    fw_int8, fw_fp32 = tallies.get("faster-whisper int8"), tallies.get("faster-whisper float32")
    lines = ["| system | total s | per clip ms (median) | vs faster-whisper int8 | vs faster-whisper float32 | "
             "WER | text = float32 | acceptance |", "|---|---|---|---|---|---|---|---|"]
    for name, tally in tallies.items():
        total = sum(tally.seconds)
        ratio_int8 = f"{sum(fw_int8.seconds) / total:.2f}x" if fw_int8 else ""
        ratio_fp32 = f"{sum(fw_fp32.seconds) / total:.2f}x" if fw_fp32 else ""
        error_rate = wer(references, [tally.texts[index] for index in scored]) if scored else 0.0
        same = ""
        if reference_name:
            reference = tallies[reference_name].texts
            same = f"{sum(a == b for a, b in zip(tally.texts, reference))}/{len(reference)}"
        acceptance = f"{tally.accepted / tally.drafted:.0%}" if tally.drafted else ""
        lines.append(f"| {name} | {total:.2f} | {np.median(tally.seconds) * 1e3:.0f} | {ratio_int8} | {ratio_fp32} | "
                     f"{error_rate:.2%} | {same} | {acceptance} |")
    return lines
