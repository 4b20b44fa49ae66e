"""Tiny random causal LMs (Llama-, GPT-2- and Gemma-3-style) and two toy tokenizers, built in the test."""

from __future__ import annotations

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from .threads import one_thread  # noqa: F401 (re-exported: the text tests import it from here)

POSITIONS = 64
SPECIALS = ["<unk>", "<bos>", "<eos>"]
BOS, EOS = 1, 2
# whitespace, digits, accents, CJK, Cyrillic and an emoji, each one token in the character vocabulary
CHARACTERS = list("abcdefghijklmnopqrstuvwxyz .,!?'\n\t0123456789") + list("éü日本語Жж😀")
MERGES = [("t", "h"), ("th", "e"), ("e", " "), (" ", "a"), ("i", "n"), ("in", "g"), ("1", "2"), ("日", "本"),
          (" ", " "), ("o", "n")]


def tiny_llama(seed: int, vocab: int = 96, layers: int = 3, positions: int = POSITIONS,
               init: float = 0.5) -> LlamaForCausalLM:
    """A large init makes confident, varied greedy choices; a small one spread-out sampling distributions."""
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=positions,
                         initializer_range=init, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=EOS)
    return LlamaForCausalLM(config).eval()


def tiny_gpt2(seed: int, vocab: int = 96, layers: int = 3, positions: int = POSITIONS) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=vocab, n_embd=32, n_layer=layers, n_head=4, n_positions=positions,
                        initializer_range=0.5, bos_token_id=BOS, eos_token_id=EOS)
    return GPT2LMHeadModel(config).eval()


def tiny_gemma3(seed: int, vocab: int = 96, layers: int = 4, positions: int = POSITIONS) -> Gemma3ForCausalLM:
    """Sliding-window layers with a window of 4, so that rollbacks cross the window."""
    torch.manual_seed(seed)
    config = Gemma3TextConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=4,
                              layer_types=["sliding_attention", "full_attention"] * (layers // 2),
                              max_position_embeddings=positions, initializer_range=0.02, bos_token_id=BOS,
                              eos_token_id=EOS, pad_token_id=0)
    return Gemma3ForCausalLM(config).eval()


ARCHITECTURES = {"llama": tiny_llama, "gpt2": tiny_gpt2, "gemma3": tiny_gemma3}


def _wrap(tokenizer: Tokenizer) -> PreTrainedTokenizerFast:
    tokenizer.decoder = decoders.Fuse()
    tokenizer.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", BOS)])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<bos>", eos_token="<eos>",
                                   unk_token="<unk>")


def char_tokenizer() -> PreTrainedTokenizerFast:
    """One token per character: every token sequence decodes to text that encodes back to it."""
    vocab = {token: index for index, token in enumerate(SPECIALS + CHARACTERS)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    return _wrap(tokenizer)


def bpe_tokenizer() -> PreTrainedTokenizerFast:
    """The same characters with merges: it segments text differently, and merges across word boundaries."""
    vocab = {token: index for index, token in enumerate(SPECIALS + CHARACTERS + ["".join(m) for m in MERGES])}
    return _wrap(Tokenizer(models.BPE(vocab, MERGES, unk_token="<unk>")))


def reference_greedy(model, prompt: list[int], max_new_tokens: int, eos: int | None = None,
                     positions: int = POSITIONS) -> list[int]:
    """transformers' own forward over the whole sequence each step (no cache), argmax."""
    sequence = list(prompt)
    limit = min(len(prompt) + max_new_tokens, positions)
    with torch.inference_mode():
        while len(sequence) < limit:
            token = int(model(torch.tensor([sequence])).logits[0, -1].argmax())
            sequence.append(token)
            if token == eos:
                break
    return sequence[len(prompt):]


def top2_gaps(model, prompt: list[int], tokens: list[int]) -> list[float]:
    """The main model's top-1 minus top-2 logit at each generated position: what a differing token must show."""
    with torch.inference_mode():
        logits = model(torch.tensor([prompt + tokens])).logits[0, len(prompt) - 1: len(prompt) + len(tokens) - 1]
    top = logits.float().topk(2, dim=-1).values
    return (top[:, 0] - top[:, 1]).tolist()
