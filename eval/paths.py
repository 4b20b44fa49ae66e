"""Where the project and the team's shared clips are, for scripts run from a checkout."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_AUDIO = PROJECT_ROOT.parent / "shared" / "audio"
