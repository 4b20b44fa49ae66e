"""Whisper without importing transformers' modeling code: the same module tree and parameter names as
`WhisperForConditionalGeneration` (so every part of this package, drafters included, reads it the same way),
loaded straight from a transformers directory's config.json and model.safetensors (and, for the cache's conversion
of a CTranslate2 folder, the 16-bit linear weights it left in the folder's model.bin: weights/ct2.py).

Why: importing transformers' Whisper model costs seconds at start-up (it pulls in torch's compiler and
distributed packages), more than decoding a short file. The encoder's forward pass repeats transformers' own
operations one for one, so its float32 output is the same; the decoder is only ever run by decoder.py.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ...errors import ModelError
from ...weights.ct2 import linears_in_place


def _embedding(count: int, width: int) -> nn.Embedding:
    # given weights skip the random initialisation (whose meta-device path would import torch's compiler)
    return nn.Embedding(count, width, _weight=torch.empty(count, width))


class Settings:
    """A config.json or generation_config.json as attributes (absent keys read as None)."""

    def __init__(self, values: dict):
        self.__dict__.update(values)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def _project(linear: nn.Linear, hidden: torch.Tensor) -> torch.Tensor:
    """linear(hidden), its weight read in the activations' dtype (widened where it is stored in 16 bits, see
    STORED_16_BIT; the same tensor, no copy, where it is not)."""
    return F.linear(hidden, linear.weight.to(hidden.dtype), linear.bias)


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.num_heads, self.head_dim = heads, width // heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(width, width, bias=False)
        self.v_proj = nn.Linear(width, width)
        self.q_proj = nn.Linear(width, width)
        self.out_proj = nn.Linear(width, width)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """Self-attention over the whole sequence, as transformers' SDPA path computes it."""
        batch, length, _ = hidden.shape
        shape = (batch, length, -1, self.head_dim)
        query = (_project(self.q_proj, hidden) * self.scaling).view(shape).transpose(1, 2).contiguous()
        key = _project(self.k_proj, hidden).view(shape).transpose(1, 2).contiguous()
        value = _project(self.v_proj, hidden).view(shape).transpose(1, 2).contiguous()
        attended = F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, scale=1.0,
                                                  is_causal=False)
        return _project(self.out_proj, attended.transpose(1, 2).contiguous().reshape(batch, length, -1).contiguous())


class EncoderLayer(nn.Module):
    def __init__(self, width: int, heads: int, ffn: int):
        super().__init__()
        self.self_attn = Attention(width, heads)
        self.self_attn_layer_norm = nn.LayerNorm(width)
        self.activation_fn = F.gelu
        self.fc1, self.fc2 = nn.Linear(width, ffn), nn.Linear(ffn, width)
        self.final_layer_norm = nn.LayerNorm(width)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        hidden = hidden + self.self_attn(self.self_attn_layer_norm(hidden))
        hidden = hidden + _project(self.fc2, self.activation_fn(_project(self.fc1, self.final_layer_norm(hidden))))
        if hidden.dtype == torch.float16:  # as transformers: keep float16 activations finite
            limit = torch.finfo(hidden.dtype).max - 1000
            hidden = torch.clamp(hidden, min=-limit, max=limit)
        return hidden


class DecoderLayer(nn.Module):
    def __init__(self, width: int, heads: int, ffn: int):
        super().__init__()
        self.self_attn, self.encoder_attn = Attention(width, heads), Attention(width, heads)
        self.self_attn_layer_norm = nn.LayerNorm(width)
        self.encoder_attn_layer_norm = nn.LayerNorm(width)
        self.activation_fn = F.gelu
        self.fc1, self.fc2 = nn.Linear(width, ffn), nn.Linear(ffn, width)
        self.final_layer_norm = nn.LayerNorm(width)


@dataclass
class EncoderOutput:
    last_hidden_state: torch.Tensor


class Encoder(nn.Module):
    def __init__(self, config: Settings):
        super().__init__()
        width = config.d_model
        self.conv1 = nn.Conv1d(config.num_mel_bins, width, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(width, width, kernel_size=3, stride=2, padding=1)
        self.embed_positions = _embedding(config.max_source_positions, width)
        self.layers = nn.ModuleList([EncoderLayer(width, config.encoder_attention_heads, config.encoder_ffn_dim)
                                     for _ in range(config.encoder_layers)])
        self.layer_norm = nn.LayerNorm(width)

    def forward(self, input_features: torch.Tensor) -> EncoderOutput:
        expected = self.conv1.stride[0] * self.conv2.stride[0] * self.embed_positions.num_embeddings
        if input_features.shape[-1] != expected:
            raise ValueError(f"Whisper expects {expected} feature frames, got {input_features.shape[-1]}")
        hidden = F.gelu(self.conv1(input_features))
        hidden = F.gelu(self.conv2(hidden)).permute(0, 2, 1)
        hidden = hidden + self.embed_positions.weight
        for layer in self.layers:
            hidden = layer(hidden)
        return EncoderOutput(self.layer_norm(hidden))


class Decoder(nn.Module):
    def __init__(self, config: Settings):
        super().__init__()
        width = config.d_model
        self.embed_tokens = _embedding(config.vocab_size, width)
        self.embed_positions = _embedding(config.max_target_positions, width)
        self.layers = nn.ModuleList([DecoderLayer(width, config.decoder_attention_heads, config.decoder_ffn_dim)
                                     for _ in range(config.decoder_layers)])
        self.layer_norm = nn.LayerNorm(width)


class LeanWhisper(nn.Module):
    """model.encoder, model.decoder and proj_out (tied to the token embedding), as in transformers."""

    def __init__(self, config: Settings, generation_config: Settings):
        super().__init__()
        self.config, self.generation_config = config, generation_config
        self.model = nn.Module()
        self.model.encoder = Encoder(config)
        self.model.decoder = Decoder(config)
        self.proj_out = nn.Linear(config.d_model, config.vocab_size, bias=False)

    # where and in what dtype the weights are, as transformers' models say it (callers of either read these)
    device = property(lambda self: self.proj_out.weight.device)
    dtype = property(lambda self: self.proj_out.weight.dtype)


# Stored in 16 bits: a CTranslate2 checkpoint's float16 (or bfloat16) linear weights, converted (weights/ct2.py), stay
# so in a float32 model on the CPU, mapped from the file: half its memory and disk. Every such value is a float32, so
# widened they are the float32 weights exactly, and every consumer either widens them where it reads them (the packers,
# the decoder's own products: decoder.py linear_as_inputs, a converted copy of the encoder) or holds the float32 copy
# widen_linears makes (the PyTorch decoder). This module's own forward (an assistant's own encoder, a user calling
# the module) widens them as it reads them (_project).
STORED_16_BIT = (torch.float16, torch.bfloat16)


def narrower_linears(module: nn.Module, dtype: torch.dtype) -> list[nn.Linear]:
    """The linear layers in `module` whose weight is stored in another dtype than `dtype`."""
    return [linear for linear in module.modules() if isinstance(linear, nn.Linear) and linear.weight.dtype != dtype]


def widen_linears(module: nn.Module, dtype: torch.dtype) -> None:
    """Give every linear layer in `module` its weight in `dtype`, converted once and held (for code that runs the
    layers' own forward: PyTorch's decoder path), in place."""
    for linear in narrower_linears(module, dtype):
        linear.weight = nn.Parameter(linear.weight.detach().to(dtype), requires_grad=linear.weight.requires_grad)


def lean_loadable(directory: Path) -> bool:
    """Whether `directory` holds an encoder-decoder Whisper this module can load (safetensors weights)."""
    config = directory / "config.json"
    if not (config.is_file() and (directory / "model.safetensors").is_file()):
        return False
    values = json.loads(config.read_text())
    return (values.get("model_type") == "whisper" and "WhisperForConditionalGeneration" in (values.get("architectures")
                                                                                            or [])
            and values.get("activation_function", "gelu") == "gelu" and not values.get("scale_embedding"))


def load_lean_whisper(directory: str | Path, device: str = "cpu", dtype: torch.dtype = torch.float32) -> LeanWhisper:
    from safetensors.torch import load_file

    directory = Path(directory)
    config = Settings(json.loads((directory / "config.json").read_text()))
    config._name_or_path = str(directory)
    generation = directory / "generation_config.json"
    generation_config = Settings(json.loads(generation.read_text()) if generation.is_file() else {})
    with torch.device("meta"):
        model = LeanWhisper(config, generation_config)
    weights = load_file(directory / "model.safetensors", device=str(device))
    weights.update({name: tensor.to(device) for name, tensor in linears_in_place(directory).items()})
    weights = {name.removeprefix("model.") if name.startswith("model.proj_out") else name: tensor
               for name, tensor in weights.items()}
    weights.setdefault("proj_out.weight", weights.get("model.decoder.embed_tokens.weight"))
    parameters = {name for name, _ in model.named_parameters()}
    missing = [name for name in parameters if weights.get(name) is None]
    if missing:
        raise ModelError(f"{directory}: model.safetensors lacks {missing[0]} (and {len(missing) - 1} more)")
    # the layers' 16-bit linear weights stay as stored (mapped from the file) in a float32 model on the CPU; every
    # other weight (embeddings, norms, biases: what says the model's dtype) is converted (see STORED_16_BIT)
    stay = {f"{name}.weight" for name, module in model.named_modules() if isinstance(module, nn.Linear)
            and ".layers." in name} if dtype == torch.float32 and torch.device(device).type == "cpu" else set()
    model.load_state_dict({name: tensor if name in stay and tensor.dtype in STORED_16_BIT else tensor.to(dtype)
                           for name, tensor in weights.items() if name in parameters}, assign=True, strict=False)
    model.proj_out.weight = model.model.decoder.embed_tokens.weight
    # names these exact weights, so that converted copies of them (packed decoder weights) can be kept on disk:
    # which weights (the folder, the dtype), then which version of them (the file's size and time), so that the packs
    # of an earlier version can be found and removed once the file changed (PackStore.save)
    status = (directory / "model.safetensors").stat()
    which = hashlib.sha256(f"{directory.resolve()}|{dtype}".encode()).hexdigest()[:12]
    version = hashlib.sha256(f"{status.st_size}|{status.st_mtime_ns}".encode()).hexdigest()[:12]
    model.weights_key = f"{which}-{version}"
    return model.eval()
