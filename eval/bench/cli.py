"""A benchmark's command line: its module docstring's first paragraph is the description and the rest the epilog,
as written (never cut mid-sentence), and every option shows its default."""

from __future__ import annotations

import argparse
import copy


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    def add_argument(self, action: argparse.Action) -> None:
        # argparse shows a default only beside a help text: an option without one gets its default as its text
        if action.help is None and action.option_strings and action.default not in (None, argparse.SUPPRESS):
            action = copy.copy(action)
            action.help = "default: %(default)s"
        super().add_argument(action)


def bench_parser(doc: str, module: str, parser_class: type = argparse.ArgumentParser) -> argparse.ArgumentParser:
    description, _, rest = doc.strip().partition("\n\n")
    return parser_class(prog=f"python -m {module}", description=description, epilog=rest or None,
                        formatter_class=HelpFormatter)
