"""`python -m asr_specdec.serve`: the serve command, which lives in cli/serve.py."""

import sys

from .cli.serve import main

if __name__ == "__main__":
    sys.exit(main())
