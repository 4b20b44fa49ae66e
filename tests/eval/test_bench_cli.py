"""Every benchmark's --help: its whole first paragraph (never cut mid-sentence), its epilog, and each option's
default."""

from __future__ import annotations

import contextlib
import importlib
import io

import pytest

from eval.bench.__main__ import BENCHMARKS


@pytest.mark.parametrize("name", BENCHMARKS)
def test_help_has_the_whole_description_and_the_defaults(name):
    module = importlib.import_module(f"eval.bench.{name}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as exit:
        module.main(["--help"])
    assert exit.value.code == 0
    text = " ".join(printed.getvalue().split())
    first_paragraph = " ".join(module.__doc__.strip().split("\n\n")[0].split())
    assert first_paragraph in text and first_paragraph.endswith((".", ")"))
    assert f"python -m eval.bench.{name}" in text
    assert "default: " in text  # options without a help text show their default too
