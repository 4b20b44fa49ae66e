"""`python -m asr_specdec.transcribe`: the transcribe command, which lives in cli/transcribe.py."""

import sys

from .cli.transcribe import main

if __name__ == "__main__":
    sys.exit(main())
