"""The speaker encoder: Resemblyzer's d-vector model (a 3-layer LSTM over 40 mel bands, its last hidden state
projected to 256 values, ReLU, unit length), built here as a small torch module that reads the weights file
shipped inside the `resemblyzer` wheel. Resemblyzer's own package is not imported: its `__init__` imports webrtcvad
(which imports pkg_resources, gone from current setuptools) and scipy.ndimage.morphology (deprecated), for its
silence trimming only. The embeddings equal Resemblyzer's (tests/whisper/speakers/test_encoder.py).
The model is loaded once per process and shared (`shared_encoder`)."""

from __future__ import annotations

import importlib.util
import threading
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ...errors import ModelError
from ..io.audio import SAMPLE_RATE

MEL_BANDS = 40
HIDDEN = 256
LAYERS = 3
FRAME_STEP = SAMPLE_RATE // 100  # 10-ms mel frames
FRAME_LENGTH = SAMPLE_RATE * 25 // 1000  # 25-ms FFT window
WINDOW_FRAMES = 160  # one embedding window: 1.6 s, the partial utterance the model was trained on


class SpeakerEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(MEL_BANDS, HIDDEN, LAYERS, batch_first=True)
        self.linear = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, mels: torch.Tensor) -> torch.Tensor:
        """(batch, frames, 40) mel power frames -> (batch, 256) unit-length embeddings."""
        _, (hidden, _) = self.lstm(mels)
        raw = torch.relu(self.linear(hidden[-1]))
        return raw / torch.linalg.vector_norm(raw, dim=1, keepdim=True).clamp_min(1e-12)

    @torch.inference_mode()
    def embed(self, mels: np.ndarray, batch: int = 64, precision: str = "float32") -> np.ndarray:
        """Embeddings of equal-length mel windows (n, frames, 40), `batch` at a time, in float32 (Resemblyzer's
        own) or with the LSTM's products in bfloat16 (`precision`, see encoder_precision)."""
        if len(mels) == 0:
            return np.zeros((0, HIDDEN), dtype=np.float32)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
            pieces = [self(torch.from_numpy(np.ascontiguousarray(mels[begin:begin + batch]))).float()
                      for begin in range(0, len(mels), batch)]
        return torch.cat(pieces).numpy()


class SlowerSpeakerEncoder(RuntimeWarning):
    """bfloat16 was asked for on a CPU without native bfloat16: the encoder runs in float32."""


def encoder_precision(precision: str) -> str:
    """"auto": bfloat16 where the CPU multiplies it natively (native/backend.py decides: there the LSTM takes
    half float32's time, its embeddings within cosine 0.997 of float32's on the 64-s joined clips), else float32.
    "bfloat16" asked for where it is not native is float32, announced: PyTorch's LSTM has no bfloat16 path there
    (oneDNN cannot build it without AVX512-BF16)."""
    if precision == "float32":
        return precision
    from ...native.backend import native_bfloat16

    if native_bfloat16():
        return "bfloat16"
    if precision == "bfloat16":
        warnings.warn("the speaker encoder runs in float32: this CPU does not multiply bfloat16 natively",
                      SlowerSpeakerEncoder, stacklevel=2)
    return "float32"


def mel_frames(samples: np.ndarray) -> np.ndarray:
    """(frames, 40) mel power spectrogram, 10-ms frames: the model's input (Resemblyzer's, not a log-mel)."""
    import librosa

    frames = librosa.feature.melspectrogram(y=np.asarray(samples, dtype=np.float32), sr=SAMPLE_RATE,
                                            n_fft=FRAME_LENGTH, hop_length=FRAME_STEP, n_mels=MEL_BANDS)
    return frames.astype(np.float32).T


def weights_path() -> Path:
    """pretrained.pt inside the installed resemblyzer wheel (found without importing the package)."""
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("speaker labels need the speaker encoder of the `resemblyzer` package: "
                         "pip install resemblyzer (or the project's [speakers] extra)")
    path = Path(next(iter(spec.submodule_search_locations))) / "pretrained.pt"
    if not path.is_file():
        raise ModelError(f"the resemblyzer package has no speaker encoder weights at {path}")
    return path


def load_encoder(path: Path | None = None) -> SpeakerEncoder:
    encoder = SpeakerEncoder()
    state = torch.load(path or weights_path(), map_location="cpu", weights_only=True)["model_state"]
    # the checkpoint also holds the training-only similarity scale (similarity_weight/bias): not used here
    encoder.load_state_dict({key: value for key, value in state.items() if key.split(".")[0] in ("lstm", "linear")})
    return encoder.eval()


_shared: SpeakerEncoder | None = None
_lock = threading.Lock()


def shared_encoder() -> SpeakerEncoder:
    """The process's one speaker encoder, loaded on first use."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = load_encoder()
        return _shared
