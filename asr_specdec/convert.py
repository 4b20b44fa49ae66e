"""`python -m asr_specdec.convert`: the convert command, which lives in cli/convert.py."""

import sys

from .cli.convert import main

if __name__ == "__main__":
    sys.exit(main())
