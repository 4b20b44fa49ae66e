"""What the report says about each model: its name, where it came from and a checksum of its weights,
found without loading it (the Ray driver loads no model)."""

from __future__ import annotations

import json
from pathlib import Path

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def describe_model(spec: str) -> dict:
    """{name, source, sha256, sha256_of, vocab_size, location}; raises asr_specdec's ModelError for a bad spec."""
    from asr_specdec.weights.cache import known_sha256
    from asr_specdec.weights.packs import PACKS
    from asr_specdec.weights.whisper_models import resolve_model_dir

    location = resolve_model_dir(spec)
    info = {"name": spec, "source": "hub", "sha256": None, "sha256_of": None, "vocab_size": None,
            "location": str(location)}
    given = Path(spec).expanduser()
    if spec in PACKS:
        info.update(source="offline pack", sha256=PACKS[spec].sha256, sha256_of="CTranslate2 model.bin")
    elif (given / "model.bin").is_file():
        info.update(source="ctranslate2", sha256=known_sha256(given / "model.bin"), sha256_of="model.bin")
    elif isinstance(location, Path):
        weights = next((location / name for name in WEIGHT_FILES if (location / name).is_file()), None)
        info.update(source="transformers", sha256=known_sha256(weights) if weights else None,
                    sha256_of=weights.name if weights else None)
    if isinstance(location, Path) and (location / "config.json").is_file():
        info["vocab_size"] = json.loads((location / "config.json").read_text()).get("vocab_size")
    return info
