"""Whisper's log-mel features and text decoding without importing transformers (see lean_model.py for why).

The features repeat transformers' `WhisperFeatureExtractor` (its PyTorch path) operation for operation, and
decoding goes through the same `tokenizers` file as its tokenizer, so both give the same results; anything
else a caller asks of the tokenizer is answered by transformers' own tokenizer, loaded on first use.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

TIMESTAMP = re.compile(r"<\|(\d+\.\d+)\|>")


def _hertz_to_mel(frequency):
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    frequency = np.asarray(frequency, dtype=np.float64)
    mels = 3.0 * frequency / 200.0
    above = frequency >= 1000.0
    return np.where(above, 15.0 + np.log(np.maximum(frequency, 1e-10) / 1000.0) * (27.0 / np.log(6.4)), mels)


def _mel_to_hertz(mels):
    mels = np.asarray(mels, dtype=np.float64)
    frequency = 200.0 * mels / 3.0
    return np.where(mels >= 15.0, 1000.0 * np.exp(np.log(6.4) / 27.0 * (mels - 15.0)), frequency)


def mel_filters(bins: int, n_fft: int, sampling_rate: int) -> np.ndarray:
    """[n_fft // 2 + 1, bins] triangular filters on Slaney's mel scale, Slaney-normalised (0 Hz to Nyquist)."""
    fft_frequencies = np.linspace(0, sampling_rate // 2, n_fft // 2 + 1)
    mel_points = np.linspace(_hertz_to_mel(0.0), _hertz_to_mel(8000.0), bins + 2)
    edges = _mel_to_hertz(mel_points)
    widths = np.diff(edges)
    slopes = np.expand_dims(edges, 0) - np.expand_dims(fft_frequencies, 1)
    falling = -slopes[:, :-2] / widths[:-1]
    rising = slopes[:, 2:] / widths[1:]
    filters = np.maximum(np.zeros(1), np.minimum(falling, rising))
    return filters * np.expand_dims(2.0 / (edges[2: bins + 2] - edges[:bins]), 0)


@dataclass
class Features:
    input_features: torch.Tensor


class LogMelFeatures:
    """Callable like transformers' WhisperFeatureExtractor for one utterance at 16 kHz."""

    def __init__(self, settings: dict):
        self.feature_size = settings.get("feature_size", 80)
        self.sampling_rate = settings.get("sampling_rate", 16000)
        self.hop_length = settings.get("hop_length", 160)
        self.n_fft = settings.get("n_fft", 400)
        self.chunk_length = settings.get("chunk_length", 30)
        self.n_samples = settings.get("n_samples", self.chunk_length * self.sampling_rate)
        self.nb_max_frames = settings.get("nb_max_frames", self.n_samples // self.hop_length)
        self.dither = settings.get("dither", 0.0)
        self.mel_filters = mel_filters(self.feature_size, self.n_fft, self.sampling_rate)

    def __call__(self, samples, sampling_rate: int | None = None, return_tensors: str = "pt", truncation: bool = True,
                 padding: str = "max_length") -> Features:
        if sampling_rate is not None and sampling_rate != self.sampling_rate:
            raise ValueError(f"Whisper features need {self.sampling_rate} Hz audio, not {sampling_rate}")
        waveform = np.asarray(samples, dtype=np.float32)
        if padding == "max_length" or truncation:
            if truncation and len(waveform) > self.n_samples:
                waveform = waveform[: self.n_samples]
            if padding == "max_length" and len(waveform) < self.n_samples:
                waveform = np.pad(waveform, (0, self.n_samples - len(waveform)))
        return Features(self._log_mel(waveform[None]))

    def _log_mel(self, waveform: np.ndarray) -> torch.Tensor:
        audio = torch.from_numpy(np.ascontiguousarray(waveform)).to(torch.float32)
        if self.dither:
            audio = audio + self.dither * torch.randn(audio.shape, device=audio.device)
        window = torch.hann_window(self.n_fft, device=audio.device)
        stft = torch.stft(audio, self.n_fft, self.hop_length, window=window, return_complex=True)
        magnitudes = (stft[..., :-1].abs() ** 2).contiguous()
        mel_spec = torch.from_numpy(self.mel_filters).to(torch.float32).T @ magnitudes
        log_spec = torch.clamp(mel_spec, min=1e-10).log10()
        top = log_spec.max(dim=2, keepdim=True)[0].max(dim=1, keepdim=True)[0]
        log_spec = torch.maximum(log_spec, top - 8.0)
        return (log_spec + 4.0) / 4.0


class LeanTokenizer:
    """Decodes ids to text, encodes text without special tokens (a prompt, hotwords, a prefix, universal mode's
    drafts) and looks tokens up with the `tokenizers` library, which transformers' fast tokenizer wraps; other
    requests go to transformers' tokenizer (importing it costs ~2 s)."""

    def __init__(self, directory: Path):
        from tokenizers import Tokenizer

        self.directory = directory
        self._tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._full = None
        self._start_of_prev = self._tokenizer.token_to_id("<|startofprev|>")
        self._start = self._tokenizer.token_to_id("<|startoftranscript|>")

    def decode(self, token_ids, skip_special_tokens: bool = False, **options) -> str:
        if options:
            return self.full.decode(token_ids, skip_special_tokens=skip_special_tokens, **options)
        ids = [int(token) for token in token_ids]
        if skip_special_tokens and ids and ids[0] == self._start_of_prev:  # text before the prompt is not output
            ids = ids[ids.index(self._start):] if self._start in ids else []
        return TIMESTAMP.sub("", self._tokenizer.decode(ids, skip_special_tokens=skip_special_tokens))

    def encode(self, text: str, add_special_tokens: bool = True, **options) -> list[int]:
        if add_special_tokens or options:
            return self.full.encode(text, add_special_tokens=add_special_tokens, **options)
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def get_added_vocab(self) -> dict[str, int]:
        return {token.content: id_ for id_, token in self._tokenizer.get_added_tokens_decoder().items()}

    def convert_tokens_to_ids(self, tokens: str | list[str]):
        """Each token's id; transformers' own answer (its unknown-token id) for a token not in the vocabulary."""
        ids = [self._tokenizer.token_to_id(token) for token in ([tokens] if isinstance(tokens, str) else tokens)]
        if None in ids:
            return self.full.convert_tokens_to_ids(tokens)
        return ids[0] if isinstance(tokens, str) else ids

    @property
    def full(self):
        if self._full is None:
            from transformers import AutoTokenizer

            self._full = AutoTokenizer.from_pretrained(self.directory)
        return self._full

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.full, name)


class LeanProcessor:
    """feature_extractor and tokenizer, as a WhisperProcessor offers them."""

    def __init__(self, feature_extractor: LogMelFeatures, tokenizer: LeanTokenizer):
        self.feature_extractor, self.tokenizer = feature_extractor, tokenizer

    def __call__(self, audio, sampling_rate: int | None = None, return_tensors: str = "pt", **options) -> Features:
        return self.feature_extractor(audio, sampling_rate=sampling_rate, return_tensors=return_tensors, **options)


def feature_settings(directory: Path) -> dict | None:
    """The feature extractor's settings in a transformers directory (None when it ships none)."""
    for name, key in (("preprocessor_config.json", None), ("processor_config.json", "feature_extractor")):
        path = directory / name
        if path.is_file():
            values = json.loads(path.read_text())
            values = values.get(key) if key else values
            if values and values.get("feature_extractor_type", "WhisperFeatureExtractor") == "WhisperFeatureExtractor":
                return values
    return None


def load_lean_processor(directory: str | Path) -> LeanProcessor | None:
    """A processor for `directory`, or None when it lacks what the lean one reads."""
    directory = Path(directory)
    settings = feature_settings(directory)
    if settings is None or not (directory / "tokenizer.json").is_file():
        return None
    return LeanProcessor(LogMelFeatures(settings), LeanTokenizer(directory))
