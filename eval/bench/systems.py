"""The duel's contestants. Each one turns a batch of 16-kHz utterances (raw samples) into generated token ids,
feature extraction included, so that every system is timed from the same input to the same kind of output.

Systems are built by key (`build_system`), in the bench process and in the fresh processes that measure
peak memory, so both measure the very same thing.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .harness import LANGUAGE, SAMPLE_RATE, faster_whisper, load_main, one_line, transcriber

SYSTEMS = {
    "ours-plain": "ours, plain greedy",
    "ours-spec": "ours, speculative (quantized-self)",
    "hf-plain": "transformers generate()",
    "hf-assisted": "transformers generate(assistant_model=...)",
    "fw-fp32": "faster-whisper float32",
    "fw-int8": "faster-whisper int8 (NOT exact: int8 weights)",
}
ASSISTANT_INT8_SELF = "int8-self"  # decoder-only WhisperForCausalLM: the main decoder, int8 dynamic
ASSISTANT_MAIN = "main"  # the main model itself (fallback)


@dataclass
class Decoded:
    tokens: list[int]  # generated text tokens only (ids below end-of-text)
    stats: object | None = None  # DecodeStats for our systems


@dataclass
class Setup:
    """What every system is built from: the same weights, language and thread count."""

    main: str
    threads: int
    ct2_dir: Path | None = None  # the CTranslate2 checkpoint faster-whisper runs; None if --main has none
    ct2_missing: str = ""  # why there is no CTranslate2 checkpoint
    assistant: str = ASSISTANT_INT8_SELF
    loaded: object | None = None  # LoadedWhisper, loaded on first use
    int8_self: object | None = None  # transformers' int8 decoder-only assistant, built on first use

    def main_model(self):
        if self.loaded is None:
            self.loaded = load_main(self.main)
        return self.loaded

    def int8_assistant(self):
        if self.int8_self is None:
            self.int8_self = int8_self_assistant(self.main_model().model)
        return self.int8_self


def text_tokens(ids, end_of_text: int) -> list[int]:
    """The text tokens of a generated sequence: Whisper's special tokens (prompt, end-of-text, padding) all have
    ids from end-of-text up."""
    return [int(token) for token in ids if token < end_of_text]


class System:
    key = ""
    label = ""

    def decode(self, audios: list[np.ndarray]) -> list[Decoded]:
        raise NotImplementedError

    def refusal(self, batch_size: int) -> str | None:
        """Why this system cannot run batches of `batch_size` (None: it can)."""
        return None


class OursSystem(System):
    def __init__(self, key: str, whisper):
        self.key, self.label, self.whisper = key, SYSTEMS[key], whisper
        self.end_of_text = whisper.tokens.end_of_text

    def decode(self, audios):
        results = self.whisper.transcribe_batch(audios, batch_size=len(audios))
        return [Decoded(text_tokens(result.tokens, self.end_of_text), result.stats) for result in results]


class TransformersSystem(System):
    """transformers' own generate() on the converted model; with an assistant when one is given."""

    def __init__(self, key: str, loaded, assistant=None, label: str | None = None):
        self.key, self.label = key, label or SYSTEMS[key]
        self.model, self.processor, self.assistant = loaded.model, loaded.processor, assistant
        self.end_of_text = self.model.generation_config.eos_token_id
        self._refusals: dict[int, str | None] = {}

    def generate(self, features):
        return hf_generate(self.model, features, self.assistant)

    def features(self, audios):
        return self.processor(audios, sampling_rate=SAMPLE_RATE, return_tensors="pt").input_features

    def decode(self, audios):
        ids = self.generate(self.features(audios))
        return [Decoded(text_tokens(row.tolist(), self.end_of_text)) for row in ids]

    def refusal(self, batch_size):
        """transformers' assisted generation refuses batches; ask it once per batch size, on silence."""
        if self.assistant is None or batch_size == 1:
            return None
        if batch_size not in self._refusals:
            silence = [np.zeros(SAMPLE_RATE // 10, dtype=np.float32)] * batch_size
            try:
                self.generate(self.features(silence))
                self._refusals[batch_size] = None
            except Exception as error:  # its refusal is a ValueError today; any failure means it cannot
                self._refusals[batch_size] = f"transformers refuses: {one_line(error)}"
        return self._refusals[batch_size]


class FasterWhisperSystem(System):
    """faster-whisper on the CTranslate2 checkpoint: one utterance through WhisperModel.transcribe, a batch
    through the CTranslate2 model's batched generate, as faster-whisper's BatchedInferencePipeline calls it."""

    def __init__(self, key: str, ct2_dir: Path, compute_type: str, threads: int):
        from faster_whisper.tokenizer import Tokenizer
        from faster_whisper.transcribe import get_suppressed_tokens

        self.key, self.label = key, SYSTEMS[key]
        self.model = faster_whisper(ct2_dir, compute_type, threads)
        self.tokenizer = Tokenizer(self.model.hf_tokenizer, self.model.model.is_multilingual, task="transcribe",
                                   language=LANGUAGE)
        self.prompt = self.model.get_prompt(self.tokenizer, [], without_timestamps=True)
        self.suppress_tokens = get_suppressed_tokens(self.tokenizer, [-1])

    def decode(self, audios):
        if len(audios) == 1:
            return [self.transcribe(audios[0])]
        return self.generate_batch(audios)

    def transcribe(self, audio) -> Decoded:
        # no_speech_threshold=None: never drop a segment as silence, so every utterance yields its tokens
        segments, _ = self.model.transcribe(audio, beam_size=1, without_timestamps=True, temperature=0,
                                            condition_on_previous_text=False, vad_filter=False, language=LANGUAGE,
                                            no_speech_threshold=None)
        return Decoded(text_tokens([token for segment in segments for token in segment.tokens], self.tokenizer.eot))

    def generate_batch(self, audios) -> list[Decoded]:
        from faster_whisper.audio import pad_or_trim

        extract = self.model.feature_extractor
        features = np.stack([pad_or_trim(extract(audio)[..., :-1]) for audio in audios])
        encoder_output = self.model.encode(features)
        results = self.model.model.generate(encoder_output, [list(self.prompt) for _ in audios], beam_size=1,
                                            max_length=self.model.max_length, suppress_blank=True,
                                            suppress_tokens=self.suppress_tokens)
        return [Decoded(text_tokens(result.sequences_ids[0], self.tokenizer.eot)) for result in results]


def hf_generate(model, features, assistant=None):
    """transformers' greedy generate() on a [B, mels, 3000] feature batch; assisted when `assistant` is given."""
    import torch

    # an English-only checkpoint refuses language/task arguments
    options = {"language": LANGUAGE, "task": "transcribe"} if model.generation_config.is_multilingual else {}
    if assistant is not None:
        options["assistant_model"] = assistant
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.generate(features, **options)


def int8_self_assistant(model):
    """A decoder-only WhisperForCausalLM holding the main model's decoder and output projection, int8
    dynamically quantized on nn.Linear: the recipe of our quantized-self drafter, in transformers' form."""
    import torch
    from torch import nn
    from transformers import WhisperForCausalLM

    assistant = WhisperForCausalLM(copy.deepcopy(model.config))
    assistant.model.decoder.load_state_dict(model.model.decoder.state_dict())
    assistant.proj_out.weight = nn.Parameter(model.proj_out.weight.detach().clone())
    assistant.generation_config = copy.deepcopy(model.generation_config)
    assistant.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch announces the move of this API to torchao
        return torch.ao.quantization.quantize_dynamic(assistant, {nn.Linear}, dtype=torch.qint8)


@dataclass
class SharingCheck:
    """What one assisted generate did with the encoder: run by the main model only once, its output handed to
    the decoder-only assistant."""

    encoder_runs: int = 0
    assistant_steps: int = 0
    assistant_got_main_encoder_output: bool = False
    equals_plain: bool = False
    error: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def shared(self) -> bool:
        return not self.error and self.encoder_runs == 1 and self.assistant_got_main_encoder_output


def check_encoder_sharing(model, assistant, features) -> SharingCheck:
    """Run plain and assisted generate once on `features` (one utterance) and watch the encoder hand-off."""
    import torch

    check, encoded, received = SharingCheck(), [], []
    plain = hf_generate(model, features)
    encoder_hook = model.model.encoder.register_forward_hook(lambda module, args, output:
                                                             encoded.append(output.last_hidden_state))
    decoder_hook = assistant.model.decoder.register_forward_pre_hook(
        lambda module, args, kwargs: received.append(kwargs.get("encoder_hidden_states")), with_kwargs=True)
    try:
        assisted = hf_generate(model, features, assistant)
    except Exception as error:
        check.error = one_line(error)
        return check
    finally:
        encoder_hook.remove()
        decoder_hook.remove()
    check.encoder_runs, check.assistant_steps = len(encoded), len(received)
    check.assistant_got_main_encoder_output = bool(encoded) and bool(received) and all(
        state is not None and torch.equal(state, encoded[0]) for state in received)
    check.equals_plain = plain.tolist() == assisted.tolist()
    return check


def build_system(key: str, setup: Setup) -> System:
    """The system `key` over `setup`'s weights; raises with a one-line reason when it cannot be built."""
    if key in ("ours-plain", "ours-spec"):
        mode = "off" if key == "ours-plain" else "quantized-self"
        return OursSystem(key, transcriber(setup.main_model(), mode))
    if key == "hf-plain":
        return TransformersSystem(key, setup.main_model())
    if key == "hf-assisted":
        loaded = setup.main_model()
        if setup.assistant == ASSISTANT_MAIN:
            return TransformersSystem(key, loaded, loaded.model, "transformers generate(assistant_model=main "
                                                                 "model itself)")
        return TransformersSystem(key, loaded, setup.int8_assistant(),
                                  "transformers generate(assistant_model=int8 self, decoder-only)")
    if key in ("fw-fp32", "fw-int8"):
        if setup.ct2_dir is None:
            raise RuntimeError(setup.ct2_missing or "no CTranslate2 checkpoint")
        return FasterWhisperSystem(key, setup.ct2_dir, "float32" if key == "fw-fp32" else "int8", setup.threads)
    raise ValueError(f"unknown system '{key}'")


def pair_assistant(setup: Setup, audio: np.ndarray) -> SharingCheck:
    """Pick transformers' assistant: the int8 decoder-only self when transformers hands it the main encoder
    output and runs the encoder once, else (say so) the main model itself. Sets `setup.assistant`."""
    loaded = setup.main_model()
    features = loaded.processor(audio, sampling_rate=SAMPLE_RATE, return_tensors="pt").input_features
    try:
        check = check_encoder_sharing(loaded.model, setup.int8_assistant(), features)
    except Exception as error:
        check = SharingCheck(error=one_line(error))
    setup.assistant = ASSISTANT_INT8_SELF if check.shared else ASSISTANT_MAIN
    return check
