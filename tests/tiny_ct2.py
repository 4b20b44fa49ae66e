"""A tiny random Whisper written as a CTranslate2 checkpoint by CTranslate2's own spec writer.

Using the upstream writer (not one of ours) means the reader is tested against the real format. The
tokenizer is byte-level with Whisper's English-only special tokens; timestamp rows follow in the vocab.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch

SPECIALS = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|translate|>", "<|transcribe|>",
            "<|startoflm|>", "<|startofprev|>", "<|nocaptions|>", "<|notimestamps|>"]
BYTE_TOKENS = 256
EOT, START, NO_TIMESTAMPS = BYTE_TOKENS, BYTE_TOKENS + 1, BYTE_TOKENS + len(SPECIALS) - 1
VOCAB = NO_TIMESTAMPS + 1 + 1501
SUPPRESS, BEGIN_SUPPRESS, ALIGNMENT_HEADS = [1, 2, 7], [220 % BYTE_TOKENS, EOT], [[1, 0], [1, 3]]


def write_tokenizer(path: Path) -> None:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    vocab = {symbol: index for index, symbol in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(token, normalized=False) for token in SPECIALS])
    tokenizer.save(str(path))


def tiny_hf_whisper(n_mels: int = 80, seed: int = 0):
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(seed)
    config = WhisperConfig(
        vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=n_mels,
        max_target_positions=64, decoder_start_token_id=START, eos_token_id=EOT, pad_token_id=EOT,
        bos_token_id=EOT,
    )
    model = WhisperForConditionalGeneration(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():  # every weight random, biases included (the key bias has none)
            parameter.normal_(0.0, 0.2)
    return model


def write_tiny_ct2(directory: Path, quantization: str = "float16", n_mels: int = 80, seed: int = 0):
    """Write a CTranslate2 checkpoint into `directory`; returns the transformers model it was made from."""
    from ctranslate2.converters.transformers import WhisperLoader

    model = tiny_hf_whisper(n_mels, seed)
    spec = WhisperLoader().get_model_spec(copy.deepcopy(model))  # the spec quantizes its tensors in place
    spec.config.suppress_ids, spec.config.suppress_ids_begin = SUPPRESS, BEGIN_SUPPRESS
    spec.config.alignment_heads, spec.config.lang_ids = ALIGNMENT_HEADS, [START + 1]
    spec.register_vocabulary([f"token{index}" for index in range(VOCAB)])
    spec.validate()
    spec.optimize(quantization=quantization)
    directory.mkdir(parents=True, exist_ok=True)
    spec.save(str(directory))
    write_tokenizer(directory / "tokenizer.json")
    return model


def converted_dir(directory: Path, seed: int) -> Path:
    """The transformers directory of a tiny random Whisper written as a CTranslate2 checkpoint under `directory`
    and converted by our reader (what `SpeculativeWhisper(str(path))` loads with the lean loader, as a pack)."""
    from asr_specdec.weights.ct2 import convert_ct2_whisper

    write_tiny_ct2(directory / "ct2", quantization="float32", seed=seed)
    return Path(convert_ct2_whisper(directory / "ct2", directory / "model"))


def converted_whisper(directory: Path, seed: int):
    """(model, processor) of converted_dir's model, as transformers' classes: a real tokenizer with timestamp
    tokens, alignment heads, a 64-token context."""
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    out = converted_dir(directory, seed)
    return WhisperForConditionalGeneration.from_pretrained(out).eval(), WhisperProcessor.from_pretrained(out)


def tiny_converted_whisper(tmp_path_factory, seed: int = 0):
    """converted_whisper in a fresh pytest temporary directory."""
    return converted_whisper(tmp_path_factory.mktemp(f"tiny_converted_{seed}"), seed)


def tiny_whisper_on_one_thread(tmp_path_factory):
    """For a module fixture (`yield from`): a plain SpeculativeWhisper on a tiny converted model, with torch on one
    thread while it is in use (tiny models run faster so, and far faster on a busy machine)."""
    from asr_specdec.whisper import SpeculativeWhisper

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield SpeculativeWhisper(tiny_converted_whisper(tmp_path_factory), mode="off")
    finally:
        torch.set_num_threads(threads)
