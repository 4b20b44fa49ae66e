"""The native kernels: every token's numbers are independent of the other tokens in a pass (so a verification
pass sees exactly what one-token steps see), the certified greedy choice equals the argmax of the full product,
packed weights survive the disk cache, and without the kernels everything falls back to PyTorch."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from asr_specdec.native import capabilities, kernels
from asr_specdec.native.packing import PackStore, float_activations, pack_linear
from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner

from ..tiny_whisper import encoder_output, tiny_whisper

pytestmark = pytest.mark.skipif(kernels() is None, reason="native kernels unavailable on this machine")
MODEL = tiny_whisper(0, layers=3)
FORMATS = ("float32", "bfloat16", "float16", "int8") + (("int8-vnni",) if capabilities().int8_products else ())


@pytest.mark.parametrize("weights", FORMATS)
def test_a_pass_over_many_tokens_equals_one_token_steps_bit_for_bit(weights):
    _, encoded = encoder_output(MODEL, 0)
    _, other = encoder_output(MODEL, 1)
    runner = WhisperDecoderRunner(MODEL, weights=weights)
    ids = [101, 110, 4, 9, 30, 2, 77, 12, 5, 60, 61]
    with torch.inference_mode():
        together = runner.feed_rows(runner.new_cache(torch.cat([encoded, other])), [ids, ids[:6]], [0, 0])
        for row, (features, length) in enumerate(((encoded, len(ids)), (other, 6))):
            cache = runner.new_cache(features)
            alone = torch.cat([runner.feed_rows(cache, [[token]], [position])[0]
                               for position, token in enumerate(ids[:length])])
            assert torch.equal(together[row], alone), (weights, row)
        if runner.native.exact:  # a drafter's format chooses approximately (test_draft_kernels.py)
            logits = runner.vocabulary_logits(together[0][None])[0]
            assert torch.equal(runner.greedy_choices(together[0], None), logits.argmax(dim=1))


def test_the_exact_int8_decoder_multiplies_the_activations_its_build_measured_faster(monkeypatch):
    """An int8 decoder's layers are in capabilities().int8_layers: with int8-vnni (AVX-512) its hidden states are
    a drafter's layers' bits (int8 activations), with int8 those of float32 activations, and the two differ; its
    vocabulary stays exact either way (the choice is the full logits' argmax)."""
    from dataclasses import replace

    from asr_specdec.whisper.runtime import native_decoder

    _, encoded = encoder_output(MODEL, 0)
    ids = [101, 110, 4, 9, 30, 2]

    def hidden(weights):
        runner = WhisperDecoderRunner(MODEL, weights=weights)
        with torch.inference_mode():
            together = runner.feed_rows(runner.new_cache(encoded), [ids], [0])[0]
            if runner.native.exact:
                logits = runner.vocabulary_logits(together[None])[0]
                assert torch.equal(runner.greedy_choices(together, None), logits.argmax(dim=1)), weights
        return runner.native.layer_storage, together

    layers, int8 = hidden("int8")
    assert layers == capabilities().int8_layers
    for storage in ("int8-vnni", "int8"):
        monkeypatch.setattr(native_decoder, "capabilities", lambda storage=storage: replace(capabilities(),
                                                                                            int8_layers=storage))
        assert hidden("int8")[0] == storage
        if storage == layers:
            assert torch.equal(hidden("int8")[1], int8)
    monkeypatch.setattr(native_decoder, "capabilities", lambda: replace(capabilities(), int8_layers="int8-vnni"))
    activations8 = hidden("int8")[1]
    assert torch.equal(activations8, hidden("int8-vnni")[1])  # a drafter's layers: the same packs, the same bits
    monkeypatch.setattr(native_decoder, "capabilities", lambda: replace(capabilities(), int8_layers="int8"))
    assert not torch.equal(activations8, hidden("int8")[1])
    torch.testing.assert_close(activations8, hidden("int8")[1], atol=0.2, rtol=0.05)


@pytest.mark.parametrize("weights", ["float32", "bfloat16"])
def test_certified_argmax_settles_close_rivals_exactly(weights):
    # tokens 3 and 7 lead all others by far and each other by 1e-3, far below the int8 screen's resolution
    generator = torch.Generator().manual_seed(0)
    model = tiny_whisper(0)
    with torch.no_grad():
        embedding = model.model.decoder.embed_tokens.weight  # tied to the output projection
        embedding.copy_(torch.randn(embedding.shape, generator=generator) * 0.1)
        hidden = torch.randn(8, embedding.shape[1], generator=generator)
        direction = hidden[0] / hidden[0].norm() ** 2
        embedding[3] += 40 * direction
        embedding[7] = embedding[3] + 1e-3 * direction
    runner = WhisperDecoderRunner(model, weights=weights)
    suppressed = torch.zeros(8, embedding.shape[0], dtype=torch.bool)
    suppressed[1:, 7] = True
    logits = runner.vocabulary_logits(hidden[None])[0].masked_fill(suppressed, -float("inf"))
    choices = runner.greedy_choices(hidden, suppressed)
    assert int(choices[0]) == 7 and int(logits[0].argmax()) == 7
    assert torch.equal(choices, logits.argmax(dim=1))


@pytest.mark.parametrize("outliers", [0, 1, 3])
def test_certified_argmax_equals_the_full_argmax_on_rows_with_outliers(outliers):
    # many near-ties (random vocabulary) and, like Whisper's final hidden states, a few dimensions far above
    # the rest: the int8 screen of int8 activations must still leave the exact choice among its candidates
    # int8 values times a power of two: the int8 copy is exact, so only quantizing the activations separates
    # the screen from the exact product
    generator = torch.Generator().manual_seed(outliers)
    model = tiny_whisper(0)
    with torch.no_grad():
        embedding = model.model.decoder.embed_tokens.weight
        values = torch.randint(-127, 128, embedding.shape, generator=generator).float()
        values[:, 0] = 127
        embedding.copy_(values * 2.0 ** -10)
    hidden = torch.randn(512, embedding.shape[1], generator=generator)
    hidden[:, :outliers] *= 40
    runner = WhisperDecoderRunner(model, weights="float32")
    logits = runner.vocabulary_logits(hidden[None])[0]
    assert torch.equal(runner.greedy_choices(hidden, None), logits.argmax(dim=1))


@pytest.mark.skipif(not capabilities().int8_products, reason="no native kernels here")
def test_int8_products_of_int8_activations_stay_close_to_float32():
    generator = torch.Generator().manual_seed(3)
    weight, bias = torch.randn(200, 96, generator=generator), torch.randn(200, generator=generator)
    x = torch.randn(7, 96, generator=generator)
    expected = torch.nn.functional.linear(x, weight, bias)
    packed = pack_linear(weight, bias, "int8-vnni")
    assert torch.allclose(packed.dequantized(), pack_linear(weight, bias, "int8").dequantized())
    out = torch.empty(7, 200)
    kernels().linear_forward(ctypes.byref(packed.struct), 7, x.data_ptr(), 96, out.data_ptr(), 200, 2)
    relative = (out - expected).norm() / expected.norm()
    assert relative < 0.03, relative
    alone = torch.empty(1, 200)
    kernels().linear_forward(ctypes.byref(packed.struct), 1, x[4].contiguous().data_ptr(), 96, alone.data_ptr(), 200,
                             1)
    assert torch.equal(alone[0], out[4])  # a row's numbers do not depend on the other rows


@pytest.mark.skipif(not capabilities().int8_products, reason="no native kernels here")
def test_an_int8_vnni_pack_read_with_float_activations_gives_an_int8_packs_bits():
    # one copy of an int8 vocabulary screens it (int8 activations) and scores its candidates exactly (float32 ones):
    # the second use must be what an int8 pack of the same values computes, bit for bit, at every row count, in a
    # short last tile, and with a bias (the widths are not multiples of 64: 200 columns, 4 tiles)
    generator = torch.Generator().manual_seed(4)
    weight, bias = torch.randn(200, 96, generator=generator), torch.randn(200, generator=generator)
    x = torch.randn(9, 96, generator=generator) * 3
    vnni = pack_linear(weight, bias, "int8-vnni")
    as_float, int8 = float_activations(vnni), pack_linear(weight, bias, "int8")
    assert as_float.packed is vnni.packed and torch.equal(as_float.dequantized(), int8.dequantized())
    for rows in range(1, 10):
        outputs = []
        for pack in (as_float, int8, vnni):
            out = torch.empty(rows, 200)
            kernels().linear_forward(ctypes.byref(pack.struct), rows, x.data_ptr(), 96, out.data_ptr(), 200, 2)
            outputs.append(out)
        assert torch.equal(outputs[0], outputs[1]), rows
        assert not torch.equal(outputs[0], outputs[2])  # int8 activations: other numbers (the kernel is not vnni's)
    with pytest.raises(ValueError, match="int8-vnni"):
        float_activations(int8)


def test_an_int8_decoder_keeps_one_copy_of_its_vocabulary(tmp_path, monkeypatch):
    """Screened by its int8-vnni pack, an int8 decoder scores with that same pack (the int8 store keeps none, and
    drops the one a cache made before); its logits and choices are those of the int8 pack a build without the
    screen uses."""
    from dataclasses import replace

    from asr_specdec.whisper.runtime import native_decoder

    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))
    model = tiny_whisper(0, layers=3)
    model.weights_key = "tiny-vocabulary"  # packs kept on disk, as lean_model.py keys a model's
    _, encoded = encoder_output(model, 0)
    ids = [101, 110, 4, 9, 30, 2, 77, 12]
    earlier = PackStore(model.weights_key, "int8")  # what a cache made before 2026-12-07 held
    vocabulary = model.proj_out.weight
    earlier.linear("vocabulary", lambda: pack_linear(vocabulary, None, "int8"))
    earlier.tensor("vocabulary.argmax_error", lambda: torch.zeros(vocabulary.shape[0]))
    earlier.save()

    def decode():
        runner = WhisperDecoderRunner(model, weights="int8")
        with torch.inference_mode():
            hidden = runner.feed_rows(runner.new_cache(encoded), [ids], [0])[0]
            return runner, runner.vocabulary_logits(hidden[None])[0], runner.greedy_choices(hidden, None)

    if capabilities().int8_products:
        runner, logits, choices = decode()
        assert runner.native.vocab.packed is runner.native.approx.packed
        assert runner.native.vocab.format == "int8-vnni-float"
        assert torch.equal(choices, logits.argmax(dim=1))
        assert not {name for name in PackStore(model.weights_key, "int8").names if name.startswith("vocabulary")}
        assert {"vocabulary.packed", "vocabulary.argmax_error"} <= PackStore(model.weights_key, "int8-vnni").names
        again = decode()  # from the cache: nothing built, the same numbers
        assert torch.equal(again[1], logits) and torch.equal(again[2], choices)
    monkeypatch.setattr(native_decoder, "capabilities", lambda: replace(capabilities(), int8_products=False))
    plain, plain_logits, plain_choices = decode()
    assert plain.native.approx is None and plain.native.vocab.format == "int8"
    if capabilities().int8_products:
        assert torch.equal(logits, plain_logits) and torch.equal(choices, plain_choices)


def quantized_product(weight: torch.Tensor, bias: torch.Tensor, row: torch.Tensor, steps_from_all: bool = True
                      ) -> torch.Tensor:
    """What kernels.h quantize_row and the int8 product compute for one row, in float64: the first 8 entries above
    6 rms multiplied in float, the rest quantized with one step, the largest |x| among them / 127 (among the entries
    below 6 rms only, when not `steps_from_all`: the larger ones then clip)."""
    values = row.double()
    limit = 6.0 * values.square().mean().sqrt()
    outliers = (values.abs() > limit).nonzero().flatten()[:8]
    rest = values.clone()
    rest[outliers] = 0
    step = (rest.abs() if steps_from_all else rest.abs().masked_fill(rest.abs() > limit, 0)).max() / 127
    dequantized = pack_linear(weight, bias, "int8-vnni").dequantized().double()
    quantized = torch.round(rest / step).clamp(-127, 127) * step
    quantized[outliers] = values[outliers]
    return dequantized @ quantized + bias.double()


@pytest.mark.skipif(not capabilities().int8_products, reason="no native kernels here")
@pytest.mark.parametrize("outliers", [0, 3, 12])
def test_int8_activations_keep_their_first_outliers_in_float_and_quantize_the_rest(outliers):
    # outliers in several 16-wide blocks, and more than the 8 kept: the others set the quantization step
    generator = torch.Generator().manual_seed(outliers)
    weight, bias = torch.randn(80, 1024, generator=generator), torch.randn(80, generator=generator)
    row = torch.randn(1024, generator=generator)
    row[torch.randperm(1024, generator=generator)[:outliers]] = 100.0 * (1 + torch.rand(outliers, generator=generator))
    out = torch.empty(1, 80)
    packed = pack_linear(weight, bias, "int8-vnni")
    kernels().linear_forward(ctypes.byref(packed.struct), 1, row.contiguous().data_ptr(), 1024, out.data_ptr(), 80, 1)
    expected = quantized_product(weight, bias, row)
    assert torch.allclose(out[0].double(), expected, rtol=1e-4, atol=1e-4 * expected.abs().max())
    if outliers > 8:  # the four outliers past the eighth, clipped to the small entries' step, would be far off
        assert not torch.allclose(out[0].double(), quantized_product(weight, bias, row, steps_from_all=False),
                                  rtol=1e-2)


@pytest.mark.parametrize("storage", ["float32", "bfloat16", "int8", "int8-vnni", "int4-vnni"])
def test_a_pack_dequantized_a_few_tiles_at_a_time_is_the_whole_matrix(storage):
    # the argmax bound and the screen's row norms read a large vocabulary a part at a time (a float32 copy of all
    # of it, twice, was ~530 MB of a large-v3 first load): the parts must be the whole's rows, the short last tile too
    generator = torch.Generator().manual_seed(5)
    packed = pack_linear(torch.randn(1000, 256, generator=generator), None, storage)
    whole = packed.dequantized()
    assert whole.shape == (1000, 256)
    parts = [packed.dequantized(first, 3) for first in range(0, packed.packed.shape[0], 3)]
    assert [part.shape[0] for part in parts][-1] == 1000 - 15 * 64  # 16 tiles: the last part is one short tile
    assert torch.equal(torch.cat(parts), whole)
    assert torch.allclose(packed.row_norms(), whole.norm(dim=1))


def test_packs_kept_on_disk_are_the_packs_built(tmp_path, monkeypatch):
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))
    weight, bias = torch.randn(70, 32), torch.randn(70)
    for storage in FORMATS + (("int4-vnni",) if capabilities().int8_products else ()):
        store = PackStore("model-key", storage)
        built = store.linear("layer", lambda storage=storage: pack_linear(weight, bias, storage))
        store.save()
        kept = PackStore("model-key", storage).linear("layer", lambda: pytest.fail("rebuilt"))
        assert kept.format == built.format and torch.equal(kept.packed, built.packed)
        assert torch.equal(kept.dequantized(), built.dequantized())


def test_a_store_forgets_the_packs_its_format_no_longer_keeps(tmp_path, monkeypatch):
    """An int8 decoder whose layers are int8-vnni packs (capabilities().int8_layers) leaves its int8 store nothing
    (its vocabulary is one int8-vnni pack too): a cache made before, with the layers there, loses its file."""
    from safetensors import safe_open

    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))
    weight, bias = torch.randn(70, 32), torch.randn(70)
    old = PackStore("model-key", "int8")
    for name in ("layers.0.fc1", "vocabulary"):
        old.linear(name, lambda: pack_linear(weight, bias, "int8"))
    old.save()
    store = PackStore("model-key", "int8")
    store.drop("layers.")
    kept = store.linear("vocabulary", lambda: pytest.fail("rebuilt"))
    assert torch.equal(kept.packed, pack_linear(weight, bias, "int8").packed)
    store.save()
    with safe_open(str(store.path), framework="pt") as saved:
        assert {name.split(".packed")[0] for name in saved.keys() if name.endswith(".packed")} == {"vocabulary"}

    from dataclasses import replace

    from asr_specdec.whisper.runtime import native_decoder

    monkeypatch.setattr(native_decoder, "capabilities", lambda: replace(capabilities(), int8_layers="int8-vnni"))
    model = tiny_whisper(0, layers=1)
    model.weights_key = "tiny-key"
    stale = PackStore("tiny-key", "int8")
    stale.linear("layers.0.fc1", lambda: pack_linear(weight, bias, "int8"))
    stale.save()
    runner = WhisperDecoderRunner(model, weights="int8")
    assert runner.native.layer_storage == "int8-vnni"
    assert not stale.path.exists()
    with safe_open(str(PackStore("tiny-key", "int8-vnni").path), framework="pt") as saved:
        assert "layers.0.fc1.packed" in saved.keys()


def test_saving_a_store_removes_the_packs_of_its_weights_earlier_versions(tmp_path, monkeypatch):
    """Once a model's file changed (converted again), its key's version changes and the old version's packs would
    never be read again: the first save of the new version removes them, of every storage, with the packs of the
    older one-part keys; other weights' packs and the same version's other storages stay."""
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))
    which, earlier, now = "a" * 12, "0" * 12, "1" * 12
    folder = tmp_path / "packed"
    folder.mkdir()
    names = {"earlier": f"{which}-{earlier}-int8.safetensors",
             "earlier other": f"{which}-{earlier}-int8-vnni.safetensors",
             "old form": "0123456789abcdef01234567-int8.safetensors",
             "other weights": f"{'b' * 12}-{earlier}-int8.safetensors",
             "same version": f"{which}-{now}-float32.safetensors"}
    for name in names.values():
        (folder / name).write_bytes(b"not read")
    store = PackStore(f"{which}-{now}", "int8")
    store.tensor("x", lambda: torch.ones(3))
    store.save()
    left = {path.name for path in folder.glob("*.safetensors")}
    assert left == {names["other weights"], names["same version"], f"{which}-{now}-int8.safetensors"}


def _mapped_file(tensor: torch.Tensor) -> str | None:
    """The file whose mapping holds `tensor`'s data, or None (the heap)."""
    address = tensor.data_ptr()
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        start, end = (int(value, 16) for value in fields[0].split("-"))
        if start <= address < end:
            return fields[5] if len(fields) > 5 else None
    return None


def test_packs_made_now_live_in_a_mapped_spool_not_the_heap(tmp_path, monkeypatch):
    """A pack made on a first load is written to the spool beside the store and mapped back (memory the kernel
    can drop and read again, as a pack read from the store is), with the same numbers and the same kernel
    output; small tensors and stores without a disk stay in the heap."""
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))
    weight, bias = torch.randn(512, 256), torch.randn(512)
    expected = pack_linear(weight, bias, "int8")
    store = PackStore("model-key", "int8")
    built = store.linear("layer", lambda: pack_linear(weight, bias, "int8"))
    spool = str(tmp_path / "packed")  # an unlinked file there

    def spooled(tensor):
        return (_mapped_file(tensor) or "").startswith(spool)

    assert spooled(built.packed)  # 128 KB of int8
    assert torch.equal(built.packed, expected.packed) and torch.equal(built.scale, expected.scale)
    assert not spooled(built.bias)  # 2 KB: kept in the heap
    x = torch.randn(3, 256)
    outputs = []
    for packed in (expected, built):
        out = torch.empty(3, 512)
        kernels().linear_forward(ctypes.byref(packed.struct), 3, x.data_ptr(), 256, out.data_ptr(), 512, 1)
        outputs.append(out)
    assert torch.equal(outputs[0], outputs[1])
    large = store.tensor("table", lambda: torch.arange(40000, dtype=torch.float32))
    assert spooled(large) and torch.equal(large, torch.arange(40000, dtype=torch.float32))
    store.save()  # then lets the spool's pages go: read again, they are the file's, the same numbers
    assert torch.equal(built.packed, expected.packed) and torch.equal(large, torch.arange(40000, dtype=torch.float32))
    kept = PackStore("model-key", "int8").linear("layer", lambda: pytest.fail("rebuilt"))
    assert torch.equal(kept.packed, expected.packed)
    no_disk = PackStore(None, "int8").linear("layer", lambda: pack_linear(weight, bias, "int8"))
    assert not (_mapped_file(no_disk.packed) or "").startswith("/")  # no file holds it: the heap


def test_a_store_saved_again_lets_go_of_what_it_read_back_only_to_copy(tmp_path, monkeypatch):
    """A second store on the same file (an int8 decoder's vocabulary screen beside its layers' packs, a drafter's
    packs beside the main model's) adds a tensor and saves: it reads the file's other tensors to write them again,
    and those pages go back (a large-v3 first load held its 734 MB of layer packs so), the numbers unchanged."""
    from ..resident import resident_kib_of

    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))
    weight = torch.randn(2048, 1024)
    first = PackStore("model-key", "int8-vnni")
    layer = first.linear("layer", lambda: pack_linear(weight, None, "int8-vnni"))
    first.save()
    second = PackStore("model-key", "int8-vnni")
    second.tensor("norms", lambda: torch.arange(40000, dtype=torch.float32))
    second.save()
    copied = second.tensors["layer.packed"]  # from the file, read only to be written again
    assert copied.nbytes == 2 << 20
    assert resident_kib_of([copied]) < 256  # of 2 MB read
    assert torch.equal(copied, layer.packed)  # read again: the file's bytes
    assert resident_kib_of([copied]) >= 1024


def test_a_spool_is_closed_when_its_store_is_saved_or_dropped(tmp_path, monkeypatch):
    """A first load used to print 'unclosed file' for every store it made packs in (the spool left for the
    collector): saving the store closes its spool, and a store dropped unsaved closes it too."""
    import gc
    import warnings

    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))
    weight, bias = torch.randn(512, 256), torch.randn(512)
    expected = pack_linear(weight, bias, "int8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        saved = PackStore("saved", "int8")
        built = saved.linear("layer", lambda: pack_linear(weight, bias, "int8"))
        assert (_mapped_file(built.packed) or "").startswith(str(tmp_path / "packed"))
        saved.save()
        assert torch.equal(built.packed, expected.packed)  # the mapping outlives the closed spool
        later = saved.linear("second", lambda: pack_linear(weight, bias, "int8"))  # a new spool after a save
        assert torch.equal(later.packed, expected.packed)
        dropped = PackStore("dropped", "int8")
        dropped.linear("layer", lambda: pack_linear(weight, bias, "int8"))
        del saved, dropped, built, later
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_without_kernels_the_pytorch_path_decodes_and_reduced_decoders_are_refused():
    script = (
        "import torch\n"
        "from asr_specdec.native import kernels, unavailable_reason\n"
        "from asr_specdec.errors import ModelError\n"
        "from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner\n"
        "from tests.tiny_whisper import tiny_whisper\n"
        "assert kernels() is None and 'ASR_SPECDEC_NATIVE' in unavailable_reason()\n"
        "runner = WhisperDecoderRunner(tiny_whisper(0))\n"
        "assert runner.native is None and runner.weights == 'float32'\n"
        "try:\n"
        "    WhisperDecoderRunner(tiny_whisper(0), weights='bfloat16')\n"
        "except ModelError as error:\n"
        "    print('refused:', error)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            env={**__import__("os").environ, "ASR_SPECDEC_NATIVE": "0"})
    assert result.returncode == 0, result.stderr
    assert "refused: decoder weights in bfloat16 need the native CPU kernels" in result.stdout


def test_a_failed_build_names_the_compilers_error_and_leaves_no_library(tmp_path, monkeypatch):
    """The sources compile at once, each to its object; one that fails ends the build with the compiler's last
    line, and the cache holds no library (nor objects) for a later process to load."""
    from asr_specdec.native import build, compiler

    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"compiling the native kernels failed: .*-mno-such-option"):
        build(compiler(), "avx2", ("-mno-such-option",))
    assert not [path for path in (tmp_path / "native").rglob("*") if path.is_file()]
