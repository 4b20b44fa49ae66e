"""`python -m asr_specdec.generate`: the generate command, which lives in cli/generate.py."""

import sys

from .cli.generate import main

if __name__ == "__main__":
    sys.exit(main())
