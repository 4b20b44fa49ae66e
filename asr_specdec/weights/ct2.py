"""CTranslate2 Whisper checkpoints (faster-whisper's format) -> transformers Whisper directories.

A checkpoint directory holds model.bin (binary version 6), config.json (suppress ids, alignment heads) and
tokenizer.json. The conversion infers the architecture from the tensor shapes and writes a directory that
`from_pretrained` loads: model, processor (feature extractor + tokenizer with Whisper's 1501 timestamp tokens)
and a complete generation config. It streams: model.bin is memory-mapped, and each weight is converted, written
and let go before the next is read, so a conversion holds about one tensor at a time, whatever the model's size.

The layers' linear weights, nearly all of a model, keep the checkpoint's float16 or bfloat16 when it stores them so
(every such value is a float32, so nothing is lost): the copy takes the checkpoint's own disk space, not twice it.
Whoever computes with them widens them (lean_model.py, "Stored in 16 bits"). Everything else (embeddings, positions,
convolutions, norms, biases), and int8 checkpoints' dequantized weights, are float32.

The cache's conversion of a CTranslate2 folder (whisper_models.py) copies none of those 16-bit linear weights:
LINEARS_FILE in the directory names where each lies in the folder's own model.bin, and `linears_in_place` maps them
from there, so the cache holds the packs made from them and the small rest, not a second copy of the checkpoint.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import struct
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ModelError

BINARY_VERSION = 6
TIMESTAMP_COUNT = 1501  # <|0.00|> .. <|30.00|> in 0.02 s steps
_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16, 5: "bfloat16"}
_ITEM_SIZES = {0: 4, 1: 1, 2: 2, 3: 4, 4: 2, 5: 2}
_LANGUAGE_TOKEN = re.compile(r"<\|[a-z]{2,3}\|>")
LINEARS_FILE = "asr_specdec-linears.json"
SIXTEEN_BIT = ("float16", "bfloat16")  # the dtypes a LINEARS_FILE entry may name


@dataclass(frozen=True)
class Ct2Checkpoint:
    """The parsed content of a model.bin: spec name, revision, variables by name, aliases (name -> target)."""

    spec_name: str
    revision: int
    variables: dict[str, np.ndarray]  # views of the memory-mapped file (read-only)
    aliases: dict[str, str]
    mapping: mmap.mmap | None = None  # the file's mapping, for release()
    bfloat16: frozenset[str] = frozenset()  # variables stored in bfloat16: their arrays hold the raw bits (uint16)

    def offset(self, array: np.ndarray) -> int:
        """Where `array` (a view of the mapping) starts in the file, in bytes."""
        return array.ctypes.data - np.frombuffer(self.mapping, dtype=np.uint8).ctypes.data

    def release(self, array: np.ndarray) -> None:
        """Drop the pages of `array` (a view of the mapping) from this process's resident set; read again, they
        come back from the file. Without it a conversion would end up holding the whole file."""
        if self.mapping is None or array.size == 0:
            return
        start = array.ctypes.data - np.frombuffer(self.mapping, dtype=np.uint8).ctypes.data
        if not 0 <= start < len(self.mapping):
            return  # not a view of the file
        begin = start - start % mmap.PAGESIZE
        self.mapping.madvise(mmap.MADV_DONTNEED, begin, start + array.nbytes - begin)


class _Cursor:
    def __init__(self, data: bytes, path: Path):
        self.data, self.path, self.offset = memoryview(data), path, 0

    def corrupt(self, why: str) -> ModelError:
        return ModelError(f"{self.path}: not a valid CTranslate2 model.bin ({why} at byte {self.offset})")

    def take(self, size: int) -> memoryview:
        if self.offset + size > len(self.data):
            raise self.corrupt(f"truncated: needs {size} more bytes, file has {len(self.data)}")
        chunk = self.data[self.offset: self.offset + size]
        self.offset += size
        return chunk

    def unpack(self, fmt: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))

    def string(self) -> str:
        (length,) = self.unpack("<H")
        try:
            return bytes(self.take(length)).decode("utf-8").rstrip("\0")
        except UnicodeDecodeError:
            raise self.corrupt("name is not UTF-8") from None


def _array(raw: memoryview, type_id: int, shape: tuple[int, ...]) -> np.ndarray:
    """A view of the file's bytes; bfloat16 ones (numpy has none) as their raw bits, widened when read (_Weights):
    widened here, every such variable would be copied whole at parse time, the whole model in float32 at once."""
    dtype = "<u2" if _DTYPES[type_id] == "bfloat16" else np.dtype(_DTYPES[type_id]).newbyteorder("<")
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def _map(path: Path, copy_on_write: bool) -> mmap.mmap | bytes:
    """The file mapped read-only, or (`copy_on_write`) privately and writable: a write would change this process's
    page, never the file, and torch holds such arrays without warning that they are read-only."""
    try:
        with open(path, "rb") as handle:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY if copy_on_write else mmap.ACCESS_READ)
    except ValueError:  # an empty file cannot be mapped
        return b""
    except OSError as error:
        raise ModelError(f"cannot read {path}: {error.strerror or error}") from None


def read_model_bin(path: str | Path) -> Ct2Checkpoint:
    """Parse a CTranslate2 model.bin, memory-mapped (its tensors are read when used); any malformed or truncated
    file raises ModelError."""
    path = Path(path)
    mapping = _map(path, copy_on_write=False)
    cursor = _Cursor(mapping, path)
    (version,) = cursor.unpack("<I")
    if version != BINARY_VERSION:
        raise ModelError(f"{path}: CTranslate2 binary version {version} is not supported (expected {BINARY_VERSION})")
    spec_name = cursor.string()
    (revision,) = cursor.unpack("<I")
    (count,) = cursor.unpack("<I")
    variables, bfloat16 = {}, set()
    for _ in range(count):
        name = cursor.string()
        (rank,) = cursor.unpack("<B")
        shape = cursor.unpack(f"<{rank}I")
        type_id, nbytes = cursor.unpack("<BI")
        if type_id not in _DTYPES:
            raise cursor.corrupt(f"variable {name!r} has unknown dtype id {type_id}")
        if nbytes != int(np.prod(shape, dtype=np.int64)) * _ITEM_SIZES[type_id]:
            raise cursor.corrupt(f"variable {name!r} of shape {list(shape)} declares {nbytes} bytes")
        variables[name] = _array(cursor.take(nbytes), type_id, shape)
        if _DTYPES[type_id] == "bfloat16":
            bfloat16.add(name)
    (alias_count,) = cursor.unpack("<I")
    aliases = {}
    for _ in range(alias_count):
        alias = cursor.string()
        aliases[alias] = cursor.string()
    if cursor.offset != len(cursor.data):
        raise cursor.corrupt(f"{len(cursor.data) - cursor.offset} unexpected trailing bytes")
    return Ct2Checkpoint(spec_name, revision, variables, aliases, mapping if isinstance(mapping, mmap.mmap) else None,
                         frozenset(bfloat16))


class _Weights:
    """Float32 torch tensors by CTranslate2 name, dequantizing int8/int16 weights and following aliases; each is a
    new tensor, and the file's pages it was read from are let go."""

    def __init__(self, checkpoint: Ct2Checkpoint, path: Path):
        self.checkpoint, self.path = checkpoint, path

    def has(self, name: str) -> bool:
        return name in self.checkpoint.variables or name in self.checkpoint.aliases

    def array(self, name: str) -> np.ndarray:
        name = self.checkpoint.aliases.get(name, name)
        if name not in self.checkpoint.variables:
            raise ModelError(f"{self.path}: not a Whisper checkpoint (no variable {name!r})")
        return self.checkpoint.variables[name]

    def _float32(self, name: str) -> np.ndarray:
        """`name`'s stored values in float32, a copy (bfloat16's bits are the top half of a float32's)."""
        stored = self.array(name)
        if self.checkpoint.aliases.get(name, name) in self.checkpoint.bfloat16:
            return (stored.astype(np.uint32) << 16).view(np.float32)
        return stored.astype(np.float32)

    def __call__(self, name: str):
        import torch

        stored = self.array(name)
        values = self._float32(name)  # a copy: the mapping is read-only, and its pages are let go below
        if self.has(name + "_scale"):  # quantized: stored value = round(weight * scale), per output channel
            scale = self._float32(name + "_scale")
            if scale.ndim == 1:
                scale = scale.reshape(-1, *[1] * (values.ndim - 1))
            try:
                values = values / scale
            except ValueError:
                raise ModelError(f"{self.path}: scale of {name!r} does not fit its shape {values.shape}") from None
        self.checkpoint.release(stored)
        return torch.from_numpy(np.ascontiguousarray(values))

    def stored_16_bit(self, name: str):
        """torch.float16 or torch.bfloat16 where `name` is stored plainly in that dtype (not quantized), so that a
        copy in it is exact; else None."""
        import torch

        if self.has(name + "_scale"):
            return None
        if self.checkpoint.aliases.get(name, name) in self.checkpoint.bfloat16:
            return torch.bfloat16
        return torch.float16 if self.array(name).dtype == np.float16 else None

    def sixteen_bit(self, name: str):
        """`name`'s values in the 16-bit dtype it is stored in (stored_16_bit), as a new torch tensor; its pages
        are let go."""
        import torch

        stored = self.array(name)
        if self.stored_16_bit(name) == torch.bfloat16:
            values = torch.from_numpy(stored.view(np.int16).copy()).view(torch.bfloat16)
        else:
            values = torch.from_numpy(stored.astype(np.float16))  # a copy: the mapping is read-only
        self.checkpoint.release(stored)
        return values

    def layer_count(self, side: str) -> int:
        pattern = re.compile(rf"{side}/layer_(\d+)/")
        indices = {int(match.group(1)) for name in self.checkpoint.variables if (match := pattern.match(name))}
        return max(indices) + 1 if indices else 0

    def scalar(self, name: str) -> int | None:
        values = self.array(name) if self.has(name) else np.zeros(0)
        return int(values.reshape(-1)[0]) if values.size == 1 else None


def _planned_state(weights: _Weights, encoder_layers: int, decoder_layers: int, sources: dict | None = None) -> dict:
    """transformers' parameter names -> Planned tensors, made from the checkpoint only when written: float32, but
    the layers' linear weights in float16 or bfloat16 where the checkpoint stores them so (see the module's
    docstring); those also in `sources` when given: name -> [byte offset in model.bin, shape, dtype name] (a part of
    a fused projection: its rows)."""
    import torch

    from .streamed_safetensors import Planned

    state = {}

    def tensor(hf: str, ct2: str, part: int = 0, parts: int = 1, keep_16_bit: bool = False):
        shape = tuple(torch.empty(weights.array(ct2).shape, device="meta").chunk(parts)[part].shape)
        sixteen = weights.stored_16_bit(ct2) if keep_16_bit else None
        if sixteen is not None and sources is not None:  # where this part's rows start in the file, shape, dtype
            array = weights.array(ct2)
            rows_before = sum(chunk.shape[0] for chunk in torch.empty(array.shape, device="meta").chunk(parts)[:part])
            sources[hf] = [weights.checkpoint.offset(array) + rows_before * array[0].nbytes, list(shape),
                           str(sixteen).removeprefix("torch.")]
        read = weights.sixteen_bit if sixteen is not None else weights
        state[hf] = Planned(sixteen or torch.float32, shape,
                            lambda: read(ct2).chunk(parts)[part].contiguous() if parts > 1 else read(ct2))

    def linear(hf: str, ct2: str, bias: bool = True, in_layer: bool = True):
        tensor(f"{hf}.weight", f"{ct2}/weight", keep_16_bit=in_layer)
        if bias:
            tensor(f"{hf}.bias", f"{ct2}/bias")

    def split(hf_names: list[str], ct2: str):
        # a fused projection; the key projection has no bias in transformers, and CTranslate2 stores zeros
        # there (a key bias adds the same score to every key, which softmax ignores anyway)
        for part, hf in enumerate(hf_names):
            tensor(f"{hf}.weight", f"{ct2}/weight", part, len(hf_names), keep_16_bit=True)
            if not hf.endswith("k_proj"):
                tensor(f"{hf}.bias", f"{ct2}/bias", part, len(hf_names))

    def norm(hf: str, ct2: str):
        tensor(f"{hf}.weight", f"{ct2}/gamma")
        tensor(f"{hf}.bias", f"{ct2}/beta")

    for conv in ("conv1", "conv2"):
        linear(f"model.encoder.{conv}", f"encoder/{conv}", in_layer=False)
    tensor("model.decoder.embed_tokens.weight", "decoder/embeddings/weight")
    for side, count in (("encoder", encoder_layers), ("decoder", decoder_layers)):
        tensor(f"model.{side}.embed_positions.weight", f"{side}/position_encodings/encodings")
        norm(f"model.{side}.layer_norm", f"{side}/layer_norm")
        for index in range(count):
            hf, ct2 = f"model.{side}.layers.{index}", f"{side}/layer_{index}"
            norm(f"{hf}.self_attn_layer_norm", f"{ct2}/self_attention/layer_norm")
            split([f"{hf}.self_attn.{p}_proj" for p in "qkv"], f"{ct2}/self_attention/linear_0")
            linear(f"{hf}.self_attn.out_proj", f"{ct2}/self_attention/linear_1")
            if side == "decoder":
                norm(f"{hf}.encoder_attn_layer_norm", f"{ct2}/attention/layer_norm")
                linear(f"{hf}.encoder_attn.q_proj", f"{ct2}/attention/linear_0")
                split([f"{hf}.encoder_attn.k_proj", f"{hf}.encoder_attn.v_proj"], f"{ct2}/attention/linear_1")
                linear(f"{hf}.encoder_attn.out_proj", f"{ct2}/attention/linear_2")
            norm(f"{hf}.final_layer_norm", f"{ct2}/ffn/layer_norm")
            linear(f"{hf}.fc1", f"{ct2}/ffn/linear_0")
            linear(f"{hf}.fc2", f"{ct2}/ffn/linear_1")
    return state


def _special_ids(tokenizer_json: dict, path: Path, multilingual: bool) -> dict[str, int]:
    try:
        ids = {token["content"]: int(token["id"]) for token in tokenizer_json.get("added_tokens", [])}
    except (KeyError, TypeError, ValueError):
        raise ModelError(f"{path}: malformed added_tokens") from None
    needed = ["<|endoftext|>", "<|startoftranscript|>", "<|notimestamps|>"]
    needed += ["<|transcribe|>", "<|translate|>"] if multilingual else []
    if missing := [token for token in needed if token not in ids]:
        raise ModelError(f"{path}: not a Whisper tokenizer (no {', '.join(missing)})")
    return ids


def _tokenizer(path: Path, tokenizer_json: dict, special_ids: dict[str, int], vocab_size: int):
    from transformers import AddedToken, WhisperTokenizerFast

    specials = [token["content"] for token in tokenizer_json["added_tokens"] if token.get("special")]
    # the decoder finds timestamp ids as "after the last special id", so the order matters
    specials.sort(key=special_ids.__getitem__)
    try:
        tokenizer = WhisperTokenizerFast(tokenizer_file=str(path), pad_token="<|endoftext|>",
                                         additional_special_tokens=specials)
    except Exception as error:  # the tokenizers library's parse errors have no common type
        raise ModelError(f"{path}: unreadable tokenizer ({' '.join(str(error).split())[:200]})") from None
    first_timestamp = special_ids["<|notimestamps|>"] + 1
    if vocab_size < first_timestamp + TIMESTAMP_COUNT:
        return tokenizer  # a vocabulary without timestamp rows: nothing to name
    if "<|0.00|>" not in special_ids:
        tokenizer.add_tokens([AddedToken(f"<|{index * 0.02:.2f}|>", lstrip=False, rstrip=False, normalized=False,
                                         special=False) for index in range(TIMESTAMP_COUNT)])
    if tokenizer.convert_tokens_to_ids("<|0.00|>") != first_timestamp:
        raise ModelError(f"{path}: timestamp tokens do not start right after <|notimestamps|>")
    return tokenizer


def _generation_config(ids: dict[str, int], ct2_config: dict, multilingual: bool, max_length: int):
    from transformers import GenerationConfig

    options = dict(
        decoder_start_token_id=ids["<|startoftranscript|>"],
        eos_token_id=ids["<|endoftext|>"],
        pad_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|endoftext|>"],
        no_timestamps_token_id=ids["<|notimestamps|>"],
        prev_sot_token_id=ids.get("<|startofprev|>"),
        suppress_tokens=list(ct2_config.get("suppress_ids") or []),
        begin_suppress_tokens=list(ct2_config.get("suppress_ids_begin") or []),
        alignment_heads=[list(head) for head in ct2_config.get("alignment_heads") or []],
        max_initial_timestamp_index=50,  # openai's max_initial_timestamp of 1.0 s
        is_multilingual=multilingual,
        max_length=max_length,
        forced_decoder_ids=None,
        return_timestamps=False,
    )
    if multilingual:
        options["lang_to_id"] = {token: id_ for token, id_ in ids.items() if _LANGUAGE_TOKEN.fullmatch(token)}
        options["task_to_id"] = {"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]}
        # without forced_decoder_ids, this is what keeps openai's default (detect the language, then
        # transcribe) instead of a prompt with no task token, on which the model loops
        options["task"] = "transcribe"
    return GenerationConfig(**options)


def _read_json(path: Path) -> dict:
    if not path.is_file():
        raise ModelError(f"{path.parent}: not a CTranslate2 Whisper checkpoint (no {path.name})")
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ModelError(f"{path}: unreadable JSON ({error})") from None
    if not isinstance(content, dict):
        raise ModelError(f"{path}: expected a JSON object")
    return content


def _whisper_config(weights: _Weights, ids: dict[str, int], ct2_config: dict):
    from transformers import WhisperConfig

    vocab_size, d_model = weights.array("decoder/embeddings/weight").shape
    return WhisperConfig(
        vocab_size=vocab_size,
        num_mel_bins=weights.array("encoder/conv1/weight").shape[1],
        d_model=d_model,
        encoder_layers=weights.layer_count("encoder"),
        decoder_layers=weights.layer_count("decoder"),
        # Whisper's head size is always 64; a checkpoint that records its head count wins
        encoder_attention_heads=weights.scalar("encoder/num_heads") or d_model // 64,
        decoder_attention_heads=weights.scalar("decoder/num_heads") or d_model // 64,
        encoder_ffn_dim=weights.array("encoder/layer_0/ffn/linear_0/weight").shape[0],
        decoder_ffn_dim=weights.array("decoder/layer_0/ffn/linear_0/weight").shape[0],
        max_source_positions=weights.array("encoder/position_encodings/encodings").shape[0],
        max_target_positions=weights.array("decoder/position_encodings/encodings").shape[0],
        decoder_start_token_id=ids["<|startoftranscript|>"],
        eos_token_id=ids["<|endoftext|>"],
        pad_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|endoftext|>"],
        suppress_tokens=list(ct2_config.get("suppress_ids") or []),
        begin_suppress_tokens=list(ct2_config.get("suppress_ids_begin") or []),
        architectures=["WhisperForConditionalGeneration"],
    )


def _planned_model(weights: _Weights, config, sources: dict | None = None) -> dict:
    """The model's weights as written by save_pretrained (a tied output projection is not written), checked
    against the model the inferred config builds, without making any of them (`sources`: _planned_state's)."""
    import torch
    from transformers import WhisperForConditionalGeneration

    state = _planned_state(weights, config.encoder_layers, config.decoder_layers, sources)
    aliases, variables = weights.checkpoint.aliases, weights.checkpoint.variables
    if "decoder/projection/weight" in variables and \
            aliases.get("decoder/projection/weight") != "decoder/embeddings/weight":
        config.tie_word_embeddings = False
        state["proj_out.weight"] = _planned_state_entry(weights, "decoder/projection/weight")
    try:
        with torch.device("meta"):  # shapes only: no weight is allocated
            model = WhisperForConditionalGeneration(config)
    except (RuntimeError, ValueError) as error:
        raise ModelError(f"{weights.path}: weights do not fit the inferred Whisper shape: "
                         f"{' '.join(str(error).split())[:300]}") from None
    expected = {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}
    if config.tie_word_embeddings:
        expected.pop("proj_out.weight", None)
    wrong = sorted(set(expected) ^ set(state)) or sorted(name for name in state if state[name].shape != expected[name])
    if wrong:
        name = wrong[0]
        why = (f"{name} is {list(state[name].shape)}, the model's is {list(expected[name])}"
               if name in state and name in expected
               else f"{name} is {'missing' if name in expected else 'unexpected'}")
        raise ModelError(f"{weights.path}: weights do not fit the inferred Whisper shape: {why}")
    return state


def _planned_state_entry(weights: _Weights, ct2: str):
    import torch

    from .streamed_safetensors import Planned

    return Planned(torch.float32, tuple(weights.array(ct2).shape), lambda: weights(ct2))


@contextmanager
def quiet_progress_bars():
    """Silence transformers' load/save progress bars, which would interleave with a CLI's one-line errors."""
    from transformers.utils import logging

    was_enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            logging.enable_progress_bar()


def convert_ct2_whisper(ct2_dir: str | Path, out_dir: str | Path, in_place_sha256: str | None = None) -> Path:
    """Write a transformers Whisper directory (model, processor, generation config) into out_dir: a float32 model
    whose layers' linear weights may be stored in 16 bits (see the module's docstring). With `in_place_sha256`
    (model.bin's SHA-256) those 16-bit weights stay in model.bin, named in LINEARS_FILE (`linears_in_place`)."""
    # the tokenizer and the feature extractor save their own files (preprocessor_config.json, the layout the hub's
    # Whisper repositories have), not through WhisperProcessor: importing it costs ~4 s to their ~1.5 s
    from transformers import WhisperFeatureExtractor

    from .streamed_safetensors import write_streamed

    ct2_dir, out_dir = Path(ct2_dir).expanduser(), Path(out_dir).expanduser()
    if not ct2_dir.is_dir():
        raise ModelError(f"no such CTranslate2 model directory: {ct2_dir}")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ModelError(f"output directory {out_dir} already exists and is not empty")
    ct2_config = _read_json(ct2_dir / "config.json")
    tokenizer_json = _read_json(ct2_dir / "tokenizer.json")
    if not (ct2_dir / "model.bin").is_file():
        raise ModelError(f"{ct2_dir}: not a CTranslate2 Whisper checkpoint (no model.bin)")
    checkpoint = read_model_bin(ct2_dir / "model.bin")
    if checkpoint.spec_name != "WhisperSpec":
        raise ModelError(f"{ct2_dir}: a CTranslate2 {checkpoint.spec_name} model, not Whisper")
    weights = _Weights(checkpoint, ct2_dir / "model.bin")
    vocab_size = weights.array("decoder/embeddings/weight").shape[0]
    multilingual = vocab_size >= 51865  # openai/whisper's own test
    ids = _special_ids(tokenizer_json, ct2_dir / "tokenizer.json", multilingual)

    config = _whisper_config(weights, ids, ct2_config)
    sources = {} if in_place_sha256 else None
    state = _planned_model(weights, config, sources)
    for name in sources or ():
        del state[name]
    generation_config = _generation_config(ids, ct2_config, multilingual, config.max_target_positions)
    tokenizer = _tokenizer(ct2_dir / "tokenizer.json", tokenizer_json, ids, vocab_size)
    feature_extractor = WhisperFeatureExtractor(feature_size=config.num_mel_bins)
    config.dtype = "float32"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with quiet_progress_bars():
            config.save_pretrained(out_dir)
            generation_config.save_pretrained(out_dir)
            tokenizer.save_pretrained(out_dir)
            feature_extractor.save_pretrained(out_dir)
        write_streamed(out_dir / "model.safetensors", state, {"format": "pt"})
        if sources:
            record_linears(out_dir, ct2_dir / "model.bin", in_place_sha256, sources)
    except OSError as error:
        raise ModelError(f"cannot write {out_dir}: {error.strerror or error}") from None
    return out_dir


def record_linears(directory: Path, model_bin: Path, sha256: str, sources: dict) -> None:
    """Write `directory`'s LINEARS_FILE: the model.bin its 16-bit linear weights lie in (its path and SHA-256) and
    where each lies (`sources`: name -> offset, shape, dtype name)."""
    record = {"model.bin": str(model_bin.resolve()), "sha256": sha256, "tensors": sources}
    staging = directory / f".{LINEARS_FILE}.{os.getpid()}"
    staging.write_text(json.dumps(record, indent=0))
    os.replace(staging, directory / LINEARS_FILE)


def read_linears_record(directory: Path) -> tuple[Path, str, dict]:
    """(model.bin, its SHA-256, name -> (byte offset, shape, dtype name)) from `directory`'s LINEARS_FILE;
    ModelError where it cannot be read or is not in this layout."""
    try:
        record = json.loads((directory / LINEARS_FILE).read_text())
        sources = {name: (int(offset), [int(size) for size in shape], str(dtype))
                   for name, (offset, shape, dtype) in record["tensors"].items()}
        if unknown := {dtype for _, _, dtype in sources.values()} - set(SIXTEEN_BIT):
            raise ValueError(f"dtype {sorted(unknown)[0]}")
        return Path(record["model.bin"]), str(record["sha256"]), sources
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ModelError(f"{directory}: unreadable {LINEARS_FILE} ({error}): load the CTranslate2 folder itself "
                         "again") from None


def linears_in_place(directory: str | Path) -> dict:
    """The 16-bit linear weights a conversion left in its CTranslate2 model.bin (LINEARS_FILE), by transformers
    name: views of model.bin mapped copy-on-write, read from the file when first used and let go as safetensors'
    mapped tensors are (weights/mapped.py); {} where the directory holds all its weights. ModelError where that
    model.bin is gone or is no longer the one converted (its SHA-256 vouches for the recorded offsets)."""
    import torch

    from .cache import known_sha256

    directory = Path(directory)
    if not (directory / LINEARS_FILE).is_file():
        return {}
    model_bin, sha256, sources = read_linears_record(directory)
    if not model_bin.is_file() or known_sha256(model_bin) != sha256:
        why = "is gone" if not model_bin.is_file() else "has changed since"
        raise ModelError(f"{directory} reads its weights from {model_bin}, which {why}: load the CTranslate2 folder "
                         "itself again")
    # mapped, not parsed: reading the headers between the tensors (read_model_bin) left 170 MB of small's model.bin
    # resident (153 headers), for weights that packs replace
    mapping = _map(model_bin, copy_on_write=True)
    tensors = {}
    for name, (offset, shape, dtype) in sources.items():
        bits = np.frombuffer(mapping, dtype="<i2", count=int(np.prod(shape)), offset=offset).reshape(shape)
        tensors[name] = torch.from_numpy(bits).view(getattr(torch, dtype))
    return tensors
