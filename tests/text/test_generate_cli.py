"""`python -m asr_specdec.generate` on a tiny model saved to disk: the prompt from an argument, a file or stdin;
--compare, --stats and --json; bad input as one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from asr_specdec.cli import generate

from ..tiny_text import POSITIONS, char_tokenizer, one_thread, tiny_gpt2, tiny_llama  # noqa: F401 (an autouse fixture)

BASE = ["--max-new-tokens", "12"]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    """(main, same-tokenizer assistant) transformers directories."""
    tokenizer = char_tokenizer()
    folders = []
    models = {"main": tiny_llama(0, vocab=len(tokenizer)), "assistant": tiny_gpt2(1, vocab=len(tokenizer))}
    for name, model in models.items():
        folder = tmp_path_factory.mktemp(name)
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        folders.append(str(folder))
    return folders


def run(capsys, *argv):
    code = generate.main([*argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_prompt_from_argument_file_and_stdin_agree(model_dirs, capsys, tmp_path, monkeypatch):
    main = model_dirs[0]
    code, from_argument, _ = run(capsys, "the thing", "--main", main, *BASE)
    assert code == 0 and from_argument.strip()
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text("the thing", encoding="utf-8")
    assert run(capsys, "--prompt-file", str(prompt_file), "--main", main, *BASE)[1] == from_argument
    monkeypatch.setattr(sys, "stdin", io.StringIO("the thing"))
    assert run(capsys, "--main", main, *BASE)[1] == from_argument


def test_compare_stats_and_json(model_dirs, capsys):
    main, assistant = model_dirs
    code, out, err = run(capsys, "the thing", "--main", main, "--assistant", assistant, "--compare", "--stats",
                         "--json", *BASE)
    assert code == 0
    record = json.loads(out)
    assert record["mode"] == "assistant" and len(record["tokens"]) == record["stats"]["new_tokens"] == 12
    assert "identical output: yes" in err and "mode assistant" in err and "accepted" in err


@pytest.mark.parametrize("arguments", [["--mode", "quantized-self"], ["--mode", "early-exit"], ["--mode", "off"],
                                       ["--mode", "prompt-lookup", "--ngram-size", "2", "--dynamic"]])
def test_every_mode_is_identical_to_plain(model_dirs, capsys, arguments):
    code, _, err = run(capsys, "the thing", "--main", model_dirs[0], "--compare", *arguments, *BASE)
    assert code == 0 and "identical output: yes" in err


@pytest.mark.parametrize("arguments, message", [
    (["", "--main", "{main}"], "the prompt is empty"),
    (["--prompt-file", "{missing}", "--main", "{main}"], "cannot read the prompt file"),
    (["x" * POSITIONS, "--main", "{main}"], "shorten it"),
    (["hi", "--main", "{main}", "--mode", "assistant"], "needs an assistant"),
    (["hi", "--main", "{main}", "--mode", "early-exit", "--early-exit-layer", "9"], "out of range"),
    (["hi", "--main", "{main}", "--assistant", "{main}", "--mode", "prompt-lookup"], "--assistant is used by"),
    (["hi", "--main", "./no/such/model"], "no such model directory"),
    (["hi", "--main", "{main}", "--max-new-tokens", "0"], "at least 1"),
    (["hi", "--main", "{main}", "--threads", "0"], "--threads must be at least 1"),
])
def test_bad_input_is_one_line(model_dirs, capsys, tmp_path, arguments, message):
    argv = [argument.format(main=model_dirs[0], missing=tmp_path / "missing.txt") for argument in arguments]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_no_prompt_at_a_terminal(capsys, monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    code, _, err = run(capsys, "--main", "unused")
    assert code == 2 and "no prompt" in err


def test_a_real_process_prints_no_traceback(tmp_path):
    result = subprocess.run([sys.executable, "-m", "asr_specdec.generate", "--prompt-file", str(tmp_path / "none")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith("error: cannot read the prompt file") and result.stderr.count("\n") == 1
