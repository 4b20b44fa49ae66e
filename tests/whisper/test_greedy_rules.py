"""Greedy choices under Whisper's timestamp rules without the full logits (the certified best text token, the
exact timestamp logits, and the rule's comparison) equal the argmax of the rules applied to the full logits,
close calls included; and a score pass that reads the hidden states kept from decoding gives the scores of a
fresh pass, bit for bit."""

from __future__ import annotations

import random

import pytest
import torch

from asr_specdec.whisper.recipe.window_extras import recipe_analysis
from asr_specdec.whisper.runtime import native_decoder
from asr_specdec.whisper.runtime.compute import parse_compute_type
from asr_specdec.whisper.runtime.decoder import DecoderTarget, WhisperDecoderRunner, native_decoder_unavailable
from asr_specdec.whisper.runtime.pipeline import Window, WindowPipeline
from asr_specdec.whisper.runtime.tokens import WhisperTokens

from ..tiny_whisper import DraftedPipeline, encoder_output, features_for, tiny_whisper

MODEL = tiny_whisper(0)
TOKENS = WhisperTokens.from_model(MODEL)
with torch.no_grad():  # neighbouring timestamps alike, as Whisper's are: their total can outweigh a better text token
    _timestamps = MODEL.model.decoder.embed_tokens.weight[TOKENS.timestamp_begin:]
    _timestamps.copy_(_timestamps[0] + 0.1 * torch.randn(_timestamps.shape, generator=torch.Generator().manual_seed(0)))
pytestmark = pytest.mark.skipif(native_decoder_unavailable(MODEL) is not None, reason="native kernels unavailable")


def rule_abiding(rules, prompt: list[int], rng: random.Random, length: int) -> list[int]:
    """A transcript prefix the rules allow, drawn step by step."""
    sequence = list(prompt)
    for _ in range(length):
        mask = rules.greedy_mask(len(sequence), 1, TOKENS.vocab_size, "cpu", sequence)[0]
        allowed = [token for token in range(TOKENS.vocab_size) if not mask[token] and token != TOKENS.end_of_text]
        sequence.append(rng.choice(allowed))
    return sequence


def reference_choices(runner, hidden, rules, positions, sequences) -> list[int]:
    logits = runner.vocabulary_logits(hidden[None])[0]
    return [int(rules.apply(row[None], position, sequence).argmax()) for row, position, sequence
            in zip(logits, positions, sequences)]


def cases(seed: int, count: int = 60):
    """(rules, hidden [count, width], positions, sequences): hidden states that lean towards the timestamps by
    varying amounts, so that the rule forces a timestamp in some rows and not in others."""
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    prompt = TOKENS.prompt(None, "transcribe", True)
    rules = TOKENS.rules(len(prompt), True)
    sequences = [rule_abiding(rules, prompt, rng, 2 + rng.randrange(5)) for _ in range(count)]
    embedding = MODEL.model.decoder.embed_tokens.weight.detach()
    lean = embedding[TOKENS.timestamp_begin:].mean(dim=0)
    hidden = (torch.randn(count, embedding.shape[1], generator=generator) * 0.3
              + torch.rand(count, 1, generator=generator) * 6 * lean / lean.norm() ** 2)
    return rules, hidden, [len(sequence) for sequence in sequences], sequences


@pytest.mark.parametrize("weights", ["float32", "bfloat16"])
def test_grouped_choices_equal_the_rules_on_the_full_logits(weights):
    runner = WhisperDecoderRunner(MODEL, weights=weights)
    rules, hidden, positions, sequences = cases(0, count=240)
    mask = torch.cat([rules.greedy_mask(position, 1, TOKENS.vocab_size, "cpu", sequence)
                      for position, sequence in zip(positions, sequences)])
    expected = reference_choices(runner, hidden, rules, positions, sequences)
    choices = runner.greedy_choices(hidden, mask, [rules.group_begin] * len(positions)).tolist()
    settled = [index for index, choice in enumerate(choices) if choice >= 0]
    assert len(settled) > 200
    assert [choices[index] for index in settled] == [expected[index] for index in settled]
    timestamps = sum(expected[index] >= TOKENS.timestamp_begin for index in settled)
    assert 5 < timestamps < len(settled) - 5  # both outcomes of the rule occur
    logits = runner.vocabulary_logits(hidden[None])[0].masked_fill(mask, -float("inf"))
    begin = TOKENS.timestamp_begin
    decided_by_total = [index for index in settled if expected[index] >= begin
                        and logits[index, begin:].max() < logits[index, :begin].max()]
    assert len(decided_by_total) > 3  # a timestamp chosen over a better text token: the rule's own case


@pytest.mark.parametrize("margin", [0.0, 1e9])
def test_close_calls_are_settled_by_the_full_logits(monkeypatch, margin):
    # margin 1e9: every row is a close call, so every choice comes from the rules applied to the full logits
    monkeypatch.setattr(native_decoder, "GROUP_MARGIN", margin)
    runner = WhisperDecoderRunner(MODEL, weights="float32")
    _, encoded = encoder_output(MODEL, 0)
    rules, _, _, sequences = cases(1, count=8)
    with torch.inference_mode():
        for sequence in sequences:
            target = DecoderTarget(runner, runner.new_cache(encoded))
            choices = target.greedy_rows([sequence], [0], [3], [(rules, len(sequence) - 2, sequence)])[0]
            logits = DecoderTarget(runner, runner.new_cache(encoded)).extend_rows([sequence], [0], [3])[0]
            expected = rules.apply(logits, len(sequence) - 2, sequence).argmax(dim=-1).tolist()
            assert choices == expected


def pipeline(certified: bool = True) -> DraftedPipeline:
    result = WindowPipeline(MODEL, None, compute=parse_compute_type("float32"), analysis=recipe_analysis)
    result.runner.certified_argmax = certified  # False: the full logits at every step
    return DraftedPipeline(result, max_new_tokens=40)


def test_timestamped_decoding_equals_decoding_from_full_logits():
    windows = [Window(features_for(MODEL, seed), timestamps=True) for seed in range(8)]
    with_rules = [row.tokens for row in pipeline().decode(windows)]
    from_logits = [row.tokens for row in pipeline(certified=False).decode(windows)]
    assert with_rules == from_logits
    assert sum(token >= TOKENS.timestamp_begin for tokens in with_rules for token in tokens) > 4


@pytest.mark.parametrize("timestamps", [False, True])
def test_scores_from_kept_hidden_states_equal_a_fresh_pass(monkeypatch, timestamps):
    windows = [Window(features_for(MODEL, seed), timestamps=timestamps, score=True) for seed in range(3)]
    kept = [row.extras.score for row in pipeline().decode(windows)]
    monkeypatch.setattr(DecoderTarget, "recorded_hidden", lambda self, row, count: None)
    fresh = [row.extras.score for row in pipeline().decode(windows)]
    assert kept == fresh
    assert all(score.avg_logprob != 0.0 for score in kept)
