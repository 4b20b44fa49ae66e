"""One rule book (issue 48): every front end (the Python call, the CLI, a server request, the web app's handler, the
faster-whisper drop-in, eval's transcriber construction) given the same bad and edge inputs accepts all of them or
refuses all of them, naming the same option (each in its own words: a keyword, a flag, a form field, a control).

The one allowed difference is a deployment's own server limit, tighter than the options' (ServerSettings.limits):
`test_a_deployment_may_tighten_the_server_s_limits_and_only_there` shows it.

Real weights (the offline pack tiny.en, English-only) on a 2.8-s clip. Every refusal happens before anything is
decoded (most before a model loads); the accepted inputs decode in full, except temperature 1.5 in the Python call
and the CLI (SLOW_TO_DECODE: their options are built) and everything in eval, where building the transcribers (its
front end) is checked and a dataset run would be slow.
"""

from __future__ import annotations

import json
import re
import warnings

import pytest

from asr_specdec.errors import OptionError, SpecdecError

from .threads import one_thread  # noqa: F401 (an autouse fixture)

ACCEPTED = "accepted"
ENGLISH_ONLY = "tiny.en"
# sampled at 1.5 every candidate runs to the token limit (about 20 s for best_of 5 on 2 cores): the Python call and
# the CLI build their options for it (the server, one sample, and the drop-in decode it; eval never decodes here)
SLOW_TO_DECODE = {"temperature 1.5"}

# each input, and what every front end must do with it: accept it, or refuse it naming this option (its keyword)
EXPECTED = {
    "beam_size 17": "beam_size",
    "best_of 17": "best_of",
    "temperature 1.5": ACCEPTED,  # openai's: sampled at 1.5 (the options take 0 to 2)
    "temperature -0.5": "temperature",
    "num_draft_tokens 17": "num_draft_tokens",
    "num_draft_tokens 0": "num_draft_tokens",
    "speakers 40": "diarize",
    "chunk_length 31": "chunk_length",
    "hallucination threshold without word timestamps": "hallucination_silence_threshold",
    "language de on tiny.en": ACCEPTED,  # decoded in English, and the result says "en"
    "translate on tiny.en": "task",
    "batch with word timestamps": ACCEPTED,
}


@pytest.fixture(scope="module")
def clip(shared_audio) -> str:
    return str(shared_audio / "goforward.wav")


@pytest.fixture(scope="module")
def uploaded_clip(clip):
    """The clip where the app takes files from: its upload folder (app/intake.py)."""
    import shutil
    import tempfile

    from app.intake import upload_folder

    upload_folder().mkdir(parents=True, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="option-edges-", dir=upload_folder())
    yield shutil.copy(clip, folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def whisper(tiny_en_dir):
    from asr_specdec.whisper import SpeculativeWhisper

    return SpeculativeWhisper(ENGLISH_ONLY)


def _named(error: Exception) -> str | None:
    return error.option if isinstance(error, OptionError) else None


# --- the Python call: SpeculativeWhisper(...).transcribe -------------------------------------------------------

def python_front(whisper, clip):
    from asr_specdec.whisper import SpeculativeWhisper
    from asr_specdec.whisper.arguments import call_options

    def call(**options):
        return lambda: whisper.transcribe(clip, **options)

    def built(**options):
        return lambda: SpeculativeWhisper(ENGLISH_ONLY, **options).transcribe(clip)

    def batch():
        results = whisper.transcribe_batch([clip, clip], word_timestamps=True)
        assert all(segment.words for result in results for segment in result.segments)
        return results[0]

    cases = {
        "beam_size 17": call(beam_size=17), "best_of 17": call(best_of=17),
        "temperature 1.5": lambda: call_options(whisper.options, temperature=1.5),  # options only (SLOW_TO_DECODE)
        "temperature -0.5": call(temperature=-0.5), "num_draft_tokens 17": built(num_draft_tokens=17),
        "num_draft_tokens 0": built(num_draft_tokens=0), "speakers 40": call(diarize=40),
        "chunk_length 31": call(chunk_length=31),
        "hallucination threshold without word timestamps": call(hallucination_silence_threshold=2.0),
        "language de on tiny.en": call(language="de"), "translate on tiny.en": call(task="translate"),
        "batch with word timestamps": batch,
    }

    def attempt(case):
        try:
            return ACCEPTED, cases[case]().language
        except SpecdecError as error:
            return _named(error), None

    return attempt, set(cases)


# --- the command line: python -m asr_specdec.transcribe, in-process through its main --------------------------

def cli_front(clip, capsys):
    from asr_specdec.cli import transcribe
    from asr_specdec.cli.recipe_arguments import FLAG_DESTS, check_recipe_arguments
    from asr_specdec.cli.transcriber_arguments import transcribe_options

    destinations = {flag: action.dest for action in transcribe.build_parser()._actions
                    for flag in action.option_strings}
    keywords = {flag_dest: keyword for keyword, flag_dest in FLAG_DESTS.items()}
    cases = {
        "beam_size 17": ["--beam-size", "17"], "best_of 17": ["--best-of", "17"],
        "temperature 1.5": ["--temperature", "1.5"], "temperature -0.5": ["--temperature=-0.5"],
        "num_draft_tokens 17": ["--num-draft-tokens", "17"], "num_draft_tokens 0": ["--num-draft-tokens", "0"],
        "speakers 40": ["--speakers", "40"], "chunk_length 31": ["--chunk-length", "31"],
        "hallucination threshold without word timestamps": ["--hallucination-silence-threshold", "2"],
        "language de on tiny.en": ["--language", "de"], "translate on tiny.en": ["--task", "translate"],
        "batch with word timestamps": ["--batch-size", "2", "--word-timestamps"],
    }

    def attempt(case):
        capsys.readouterr()
        files = [clip, clip] if case == "batch with word timestamps" else [clip]
        argv = [*files, "--main", ENGLISH_ONLY, "--format", "json", *cases[case]]
        if case in SLOW_TO_DECODE:  # the command's own mapping of its flags into the options, without the decode
            args = transcribe.build_parser().parse_args(argv)
            check_recipe_arguments(args)
            return ACCEPTED, transcribe_options(args).language
        code = transcribe.main(argv)
        out, err = capsys.readouterr()
        if code == 0:
            records = json.loads(out)
            records = records if isinstance(records, list) else [records]
            if case == "batch with word timestamps":
                assert all(segment["words"] for record in records for segment in record["segments"])
            return ACCEPTED, records[0]["language"]
        line = [text for text in err.splitlines() if text.startswith("error:")][-1]
        flag = re.search(r"--[a-z][a-z-]*", line)
        destination = destinations.get(flag.group(0)) if flag else None
        return keywords.get(destination, destination), None

    return attempt, set(cases)


# --- a server request, through FastAPI's TestClient -----------------------------------------------------------

def server_front(client, clip):
    with open(clip, "rb") as file:
        audio = file.read()
    cases = {
        "beam_size 17": {"beam_size": "17"}, "best_of 17": {"best_of": "17"}, "temperature 1.5": {"temperature": "1.5"},
        "temperature -0.5": {"temperature": "-0.5"}, "num_draft_tokens 17": {"num_draft_tokens": "17"},
        "num_draft_tokens 0": {"num_draft_tokens": "0"}, "speakers 40": {"diarize": "40"},
        "chunk_length 31": {"chunk_length": "31"},
        "hallucination threshold without word timestamps": {"hallucination_silence_threshold": "2"},
        "language de on tiny.en": {"language": "de"}, "translate on tiny.en": {},
    }

    def attempt(case):
        path = "/v1/audio/translations" if case == "translate on tiny.en" else "/v1/audio/transcriptions"
        response = client.post(path, files={"file": ("clip.wav", audio, "audio/wav")},
                               data={"model": "whisper-1", "response_format": "verbose_json", **cases[case]})
        if response.status_code == 200:  # verbose_json names the language, as OpenAI's
            return ACCEPTED, {"english": "en"}.get(response.json()["language"], response.json()["language"])
        assert 400 <= response.status_code < 500, response.text
        return response.json()["error"]["param"], None

    return attempt, set(cases)


# --- the web app's handler ------------------------------------------------------------------------------------

def app_front(clip):
    from app.handlers import Handlers
    from app.messages import CONTROLS
    from app.service import TranscriptionService
    from app.settings import AppSettings
    from asr_specdec.core.modes import default_drafter

    handlers = Handlers(TranscriptionService(AppSettings(models=(ENGLISH_ONLY,), default_main=ENGLISH_ONLY,
                                                         default_assistant=ENGLISH_ONLY)))
    settings = {"language": "en", "task": "transcribe", "draft_tokens": 8, "beam_size": 0, "speakers": "off"}
    cases = {"beam_size 17": {"beam_size": 17}, "num_draft_tokens 17": {"draft_tokens": 17},
             "num_draft_tokens 0": {"draft_tokens": 0}, "speakers 40": {"speakers": "40"},
             "language de on tiny.en": {"language": "de"}, "translate on tiny.en": {"task": "translate"}}
    keywords = {label: flag.removeprefix("--").replace("-", "_") for flag, label in CONTROLS.items()}

    def attempt(case):
        import gradio as gr

        chosen = {**settings, **cases[case]}
        try:
            mode = default_drafter()[0]
            outputs = handlers.transcribe(clip, ENGLISH_ONLY, mode, None, chosen["language"], chosen["task"],
                                          chosen["draft_tokens"], False, "auto", False, False, "", "",
                                          chosen["beam_size"], 1.0, 0, chosen["speakers"],
                                          progress=lambda *args, **kwargs: None)
        except gr.Error as error:
            label = re.search(r"the '([^']+)' setting", error.message)
            return keywords.get(label.group(1)) if label else None, None
        language = re.search(r'class="language">([^<]+)<', outputs[1]).group(1)
        return ACCEPTED, {"English": "en"}.get(language, language)

    return attempt, set(cases)


# --- the drop-in: faster-whisper's WhisperModel.transcribe ----------------------------------------------------

def dropin_front(clip):
    from asr_specdec.compat import BatchedInferencePipeline, WhisperModel

    model = WhisperModel(ENGLISH_ONLY, device="cpu")

    def call(**options):
        def run():
            segments, info = model.transcribe(clip, **options)
            list(segments)
            return info
        return run

    def built(**options):
        return lambda: WhisperModel(ENGLISH_ONLY, device="cpu", **options)

    def batch():
        segments, info = BatchedInferencePipeline(model).transcribe(clip, word_timestamps=True, batch_size=2)
        segments = list(segments)
        assert segments and all(segment.words for segment in segments)
        return info

    cases = {
        "beam_size 17": call(beam_size=17), "best_of 17": call(best_of=17), "temperature 1.5": call(temperature=1.5),
        "temperature -0.5": call(temperature=-0.5), "num_draft_tokens 17": built(num_draft_tokens=17),
        "num_draft_tokens 0": built(num_draft_tokens=0), "speakers 40": call(diarize=40),
        "chunk_length 31": call(chunk_length=31),
        "hallucination threshold without word timestamps": call(hallucination_silence_threshold=2.0),
        "language de on tiny.en": call(language="de"), "translate on tiny.en": call(task="translate"),
        "batch with word timestamps": batch,
    }

    def attempt(case):
        try:
            return ACCEPTED, getattr(cases[case](), "language", None)
        except SpecdecError as error:
            return _named(error), None

    return attempt, set(cases)


# --- eval: its command line's options built into its transcribers ---------------------------------------------

def eval_front():
    from eval.cli_args import check_arguments, decoding_settings, parse_draft_lengths
    from eval.run import build_parser
    from eval.settings import EvalSettings
    from eval.transcribers import build_transcribers

    cases = {
        "beam_size 17": ["--beam-size", "17"], "best_of 17": ["--best-of", "17"],
        "temperature 1.5": ["--temperature", "1.5"], "temperature -0.5": ["--temperature=-0.5"],
        "num_draft_tokens 17": ["--num-draft-tokens", "17"], "num_draft_tokens 0": ["--num-draft-tokens", "0"],
        "speakers 40": ["--speakers", "40"], "chunk_length 31": ["--chunk-length", "31"],
        "hallucination threshold without word timestamps": ["--hallucination-silence-threshold", "2"],
        "language de on tiny.en": ["--language", "de"],
    }

    def attempt(case):
        args = build_parser().parse_args(["--dataset", "clips.jsonl", "--main", ENGLISH_ONLY, "--assistant", "",
                                          "--modes", "quantized-self", *cases[case]])
        try:  # what eval.run does with its arguments before it reads any audio
            check_arguments(args)
            settings = EvalSettings(dataset=args.dataset, modes=("quantized-self",), main=args.main, assistant=None,
                                    draft_lengths=parse_draft_lengths(args.num_draft_tokens),
                                    **decoding_settings(args))
            transcribers = build_transcribers(settings, settings.variants())
        except SpecdecError as error:
            return _named(error), None
        return ACCEPTED, next(iter(transcribers.values())).options.language

    return attempt, set(cases)


FRONT_ENDS = ("python", "cli", "server", "app", "dropin", "eval")


@pytest.fixture(scope="module")
def server_client(whisper):
    from fastapi.testclient import TestClient

    from asr_specdec.server import ServerSettings, create_app

    with TestClient(create_app(whisper, ServerSettings())) as client:
        yield client


@pytest.fixture(scope="module")
def fronts(whisper, clip, server_client, uploaded_clip):
    """Each front end's (attempt(case) -> (what it did, the language its result reports), the cases it offers)."""
    made = {}

    def front(name, capsys=None):
        if name == "cli":
            return cli_front(clip, capsys)
        if name not in made:
            made[name] = {"python": lambda: python_front(whisper, clip),
                          "server": lambda: server_front(server_client, clip), "app": lambda: app_front(uploaded_clip),
                          "dropin": lambda: dropin_front(clip), "eval": eval_front}[name]()
        return made[name]

    return front


@pytest.mark.parametrize("case", list(EXPECTED))
@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_every_front_end_accepts_or_refuses_each_input_as_the_options_do(fronts, capsys, front_end, case):
    attempt, offered = fronts(front_end, capsys)
    if case not in offered:
        pytest.skip(f"{front_end} offers no way to ask for {case}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome, language = attempt(case)
    assert outcome == EXPECTED[case], f"{front_end}: {case}"
    if case == "language de on tiny.en":
        assert language == "en", f"{front_end} reports a language it did not decode"
        if front_end in ("python", "dropin"):  # the others say so in their own way (the CLI: a warning line)
            assert any("replaced by 'en'" in str(warning.message) for warning in caught)


def test_each_input_is_offered_by_several_front_ends(fronts, capsys):
    """Where an option exists at all, the front ends that take it are compared; none offers an input silently."""
    offered = {name: fronts(name, capsys)[1] for name in FRONT_ENDS}
    assert all(set(cases) <= set(EXPECTED) for cases in offered.values())
    for case in EXPECTED:
        assert sum(case in cases for cases in offered.values()) >= 3, case


def test_a_deployment_may_tighten_the_server_s_limits_and_only_there(whisper, clip):
    """The allowed difference: a server started with --max-beam-size 4 refuses 5 beams, which the options (and so
    every other front end) accept; its message says it is this server's limit."""
    from fastapi.testclient import TestClient

    from asr_specdec.core.limits import OptionLimits
    from asr_specdec.server import ServerSettings, create_app
    from asr_specdec.whisper.arguments import call_options

    assert call_options(whisper.options, beam_size=5).recipe.beam_size == 5
    settings = ServerSettings(limits=OptionLimits(beam_size=4, where="on this server"))
    with TestClient(create_app(whisper, settings)) as client, open(clip, "rb") as file:
        response = client.post("/v1/audio/transcriptions", files={"file": ("clip.wav", file.read(), "audio/wav")},
                               data={"model": "whisper-1", "beam_size": "5"})
    error = response.json()["error"]
    assert response.status_code == 400 and error["param"] == "beam_size" and "on this server" in error["message"]
    with pytest.raises(OptionError):  # and no deployment may widen them
        OptionLimits(beam_size=17)


# a transcription option's range or cap written as a literal: a comparison with a number, a range in words, a
# control's range, a constant or a table entry (`"beam_size": 16`)
OPTION_WORDS = r"(beam[_ -]?size|beams|best[_ -]of|patience|draft[_ -]tokens|speakers|diarize|temperature|" \
               r"chunk[_ -]length|hallucination)"
RANGE_LITERALS = (
    rf"{OPTION_WORDS}[^\n#]*?(<=?|>=?)\s*-?(\d*\.\d+|[2-9]|\d\d+)\b",
    rf"{OPTION_WORDS}[^\n#]*?(<\s*1\b|<=\s*0\b)",
    rf"(\d+|[A-Z_]+)\s*<=?\s*\w*{OPTION_WORDS}",
    rf"{OPTION_WORDS}[^\n]*?(from \d+(\.\d+)? to \d|between \d+(\.\d+)? and \d|at most \d|at least \d|\d+ to \d+)",
    rf"{OPTION_WORDS}[^\n]*(Slider|range)\(\s*\d+\s*,\s*\d+",
    r"(?-i:MAX_\w*(BEAM|BEST|DRAFT|SPEAKER|TEMPERATURE|CHUNK)\w*\s*=\s*\d)",
    rf"\"{OPTION_WORDS}\"\s*:\s*([2-9]|\d\d+)",
)
# the front ends: each maps its own inputs onto the options objects, whose rules (and the one limits value,
# core/limits.py) hold every range
FRONT_END_ROOTS = ("asr_specdec/server", "app", "asr_specdec/compat", "eval", "asr_specdec/cli")


def test_no_front_end_writes_a_range_or_cap_of_a_transcription_option():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = [path for folder in FRONT_END_ROOTS for path in sorted((root / folder).rglob("*.py"))]
    assert len(files) > 50
    found = [f"{path.relative_to(root)}:{number}: {line.strip()}" for path in files
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if any(re.search(pattern, line, re.IGNORECASE) for pattern in RANGE_LITERALS)]
    assert found == []


def test_the_grep_finds_the_literals_it_is_for():
    lines = ('CAPS = {"beam_size": 16, "best_of": 16}', "MAX_DRAFT_TOKENS = 16",
             'if not 0.0 <= fields["temperature"] <= 1.0:', "if beam_size < 1:",
             'speakers = gr.Dropdown(["off", *map(str, range(1, 9))])', "draft_tokens = gr.Slider(1, 16, value=8)",
             'raise SpecdecError("--chunk-length must be a whole number of seconds from 1 to 30")')
    for line in lines:
        assert any(re.search(pattern, line, re.IGNORECASE) for pattern in RANGE_LITERALS), line
    for line in ('{"best_of": 1} if temperature > 0 else {}', "if beam_size == 1:", "for size in range(1, 9):"):
        assert not any(re.search(pattern, line, re.IGNORECASE) for pattern in RANGE_LITERALS), line
