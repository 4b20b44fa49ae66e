"""eval/bench/gpu.py: the projection's arithmetic, and the whole benchmark run on a CPU with tiny shapes."""

from __future__ import annotations

import pytest

from eval.bench.gpu import implied_acceptance, main, projected_speedup, tokens_per_round

COSTS = {"encoder, one 30-s window": 0.040, "main step": 0.020, "verification of 9 tokens": 0.024,
         "draft step": 0.002}


def test_tokens_per_round():
    assert tokens_per_round(0.0, 5) == 1.0 and tokens_per_round(1.0, 5) == 6.0
    assert tokens_per_round(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)


def test_projection_bounds_and_the_implied_acceptance():
    never, _ = projected_speedup(COSTS, 0.0, 40)
    always, drafts = projected_speedup(COSTS, 0.999, 40)
    assert never < 1.0 < always and drafts == 8
    # all 9 tokens of every round from one verification and 8 cheap draft steps, the encoder once
    rounds = 40 / tokens_per_round(0.999, 8)
    assert always == pytest.approx((0.040 + 40 * 0.020) / (0.040 + rounds * (8 * 0.002 + 0.024)))
    acceptance = implied_acceptance(COSTS, 40)
    assert 0.0 < acceptance < 1.0 and projected_speedup(COSTS, acceptance, 40)[0] == pytest.approx(2.0, abs=1e-3)
    assert implied_acceptance({**COSTS, "draft step": 0.020}, 40) is None  # a draft as dear as a step never pays 2x


def test_the_benchmark_runs_on_a_cpu_with_tiny_shapes(capsys, tiny_en_dir, shared_audio):
    assert main(["--tiny", "--device", "cpu", "--clips", "1", "--repeats", "1", "--threads", "1",
                 "--modes", "off,prompt-lookup", "--audio", str(shared_audio), "--acceptance", "0.75"]) == 0
    captured = capsys.readouterr()
    output = captured.out
    assert "| off |" in output and "| prompt-lookup |" in output and "| 1/1 |" in output
    for name in ("encoder, one 30-s window", "main step", "verification of 9 tokens", "draft step",
                 "main step, 16 rows", "verification of 9 tokens, 4 rows", "beam 5 step (5 rows)"):
        assert f"| {name} | " in output
    step = next(line for line in output.splitlines() if line.startswith("| main step | "))
    assert int(step.split("|")[3]) > 0 and float(step.split("|")[4]) > 0  # aten ops, the bandwidth floor
    assert "timing: main step" in captured.err and "clip 1/1 off" in captured.err  # progress as it goes
    assert "| 0.75 |" in output and "projected large-v3 ⟵ distil-large-v3 speed-up" in output


def test_cuda_without_a_gpu_is_one_clear_error(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(SystemExit) as exited:
        main(["--device", "cuda"])
    assert exited.value.code == 2 and "no CUDA GPU here" in capsys.readouterr().err


@pytest.mark.slow
def test_the_smoke_run_passes_every_case_on_a_cpu(capsys, tiny_en_dir, shared_audio):
    code = main(["--smoke", "--tiny", "--device", "cpu", "--threads", "1", "--audio", str(shared_audio)])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("float32 ")]
    assert code == 0, "\n".join(lines)
    verdicts = {line[9:57].strip(): line[57:].strip().split(" (")[0] for line in lines}
    assert {name for name, verdict in verdicts.items() if verdict != "ok"} == {"mode assistant", "mode universal"}
    for name in ("mode quantized-self", "batch of 8, uneven lengths", "beam search, 5 beams", "vad",
                 "temperature fallback, seeded",
                 "long-form, timestamps and words", "--compare", "two concurrent server requests, different modes"):
        assert verdicts[name] == "ok"
