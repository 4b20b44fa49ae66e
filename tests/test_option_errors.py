"""Options out of range are refused where their options object is built, in one line naming the option in the
front end's own words: a flag and exit code 2 on the command line, the field (param) of a 400 on the server, a
keyword and a typed error (OptionError) in Python. Nothing here loads a model except the assistant pairing."""

from __future__ import annotations

import pytest

from asr_specdec.cli.transcribe import build_parser, main
from asr_specdec.errors import OptionError


@pytest.mark.parametrize("flags, expected", [
    (["--temperature=-0.5"], "error: --temperature must be a number from 0 to 2.0 (0: greedy)"),
    (["--temperature", "0.7", "--do-sample"],
     "error: --temperature is openai-whisper's first temperature of the fallback ladder now: sample at a fixed "
     "temperature with --do-sample --sampling-temperature 0.7"),
    (["--sampling-temperature", "0.5"], "error: --sampling-temperature goes with --do-sample"),
    (["--do-sample", "--sampling-temperature", "0"], "error: --sampling-temperature must be > 0 with --do-sample"),
    (["--num-draft-tokens", "0"], "error: --num-draft-tokens must be a whole number from 1 to 16"),
    (["--num-draft-tokens", "0", "--draft-schedule", "fixed"],
     "error: --num-draft-tokens must be a whole number from 1 to 16"),
    (["--top-p", "0"], "error: --top-p must be in (0, 1]"),
    (["--do-sample", "--top-k", "-1"], "error: --top-k must be an integer >= 0"),
])
def test_cli_refuses_in_one_line_naming_the_flag_with_exit_2(capsys, tmp_path, flags, expected):
    code = main(["--main", "tiny.en", str(tmp_path / "never-read.wav"), *flags])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(expected), err


def test_cli_help_explains_the_sampling_flags():
    text = build_parser().format_help()
    for flag in ("--sampling-temperature", "--top-k", "--top-p", "--temperature "):
        line = next(line for line in text.splitlines() if line.strip().startswith(flag))
        described = (line + text.split(line, 1)[1]).split("\n  -", 1)[0]  # the flag's entry up to the next one
        assert "--do-sample" in described, described


@pytest.mark.parametrize("keywords, option, words", [
    ({"do_sample": True, "temperature": 0}, "temperature", "temperature must be > 0 with do_sample"),
    ({"temperature": -0.5}, "temperature", "temperature must be a number from 0 to 2.0"),
    ({"num_draft_tokens": 0}, "num_draft_tokens", "num_draft_tokens must be a whole number from 1 to 16"),
    ({"mode": "universal", "assistant_model": "tiny.en", "assistant_tokenizer": "tiny.en"}, "assistant_tokenizer",
     "assistant_tokenizer must be a tokenizer object"),
])
def test_python_refuses_with_a_typed_error_naming_the_keyword(keywords, option, words):
    from asr_specdec.whisper import SpeculativeWhisper

    with pytest.raises(OptionError) as refused:
        SpeculativeWhisper("base", **keywords)
    assert refused.value.option == option and str(refused.value).startswith(words)
    assert "--" not in str(refused.value) and "\n" not in str(refused.value)


def test_assistant_pair_with_other_tokenizers_is_answered_with_the_keyword(tiny_en_dir, base_dir):
    from asr_specdec.whisper import SpeculativeWhisper

    with pytest.raises(OptionError) as refused:
        SpeculativeWhisper(str(base_dir), assistant_model=str(tiny_en_dir))
    assert 'use mode="universal"' in str(refused.value) and "--mode" not in str(refused.value)
    assert "use --mode universal" in refused.value.in_words(lambda name: "--" + name.replace("=", " "))


def test_server_answers_a_refused_option_with_a_400_naming_the_field():
    from asr_specdec.core.logits import Sampling
    from asr_specdec.server.errors import from_exception

    with pytest.raises(OptionError) as refused:
        Sampling(do_sample=True, temperature=0.0)
    error = from_exception(refused.value)
    assert (error.status, error.param, error.code) == (400, "temperature", "invalid_value")
