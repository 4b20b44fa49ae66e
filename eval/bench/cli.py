"""A benchmark's command line: its module docstring's first paragraph is the description and the rest the epilog,
as written (never cut mid-sentence), and every option with a help text shows its default."""

from __future__ import annotations

import argparse


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    pass


def bench_parser(doc: str, module: str) -> argparse.ArgumentParser:
    description, _, rest = doc.strip().partition("\n\n")
    return argparse.ArgumentParser(prog=f"python -m {module}", description=description, epilog=rest or None,
                                   formatter_class=HelpFormatter)
