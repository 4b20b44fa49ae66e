"""The compute types the page offers on this hardware, each with one line on what it is and how it measured.

The figures are from `eval.bench.speed` (Whisper base, the 12 shared clips, plain decoding, a 2-core CPU), kept in
app/measured.json by the README's benchmark run. Reduced decoder precisions need the native CPU kernels."""

from __future__ import annotations

from asr_specdec.whisper.runtime.compute import auto_compute_type

from .measured import COMPUTE_TYPES, measured_here

AUTO = "auto"
CPU_TYPES = ("float32", "int8:float32", "bfloat16:float32", "bfloat16", "int8")
NATIVE_DECODER = ("bfloat16", "int8")  # decoder precisions that run only on the native kernels
CUDA_TYPES = ("float16",)  # the app loads models in float16 on a GPU; the PyTorch path runs the model's own dtype
# (speed vs float32, clips whose text equals float32's, clips), from the README's benchmark run
CPU_MEASURED = COMPUTE_TYPES
WHAT = {
    "float32": "full precision, transformers' own arithmetic",
    "int8:float32": "int8 encoder products (bfloat16 attention), float32 decoder",
    "bfloat16:float32": "bfloat16 encoder, float32 decoder",
    "bfloat16": "bfloat16 encoder and decoder weights (float32 sums)",
    "int8": "int8 encoder products and int8 decoder weights (float32 sums)",
    "float16": "float16 encoder and decoder",
}


def native_kernels() -> bool:
    from asr_specdec.native import kernels

    return kernels() is not None


def offered_types(device: str, native: bool | None = None) -> tuple[str, ...]:
    """The compute types that run on `device`: without the native kernels, a CPU decoder stays float32."""
    if str(device).startswith("cuda"):
        return CUDA_TYPES
    native = native_kernels() if native is None else native
    return tuple(name for name in CPU_TYPES if native or name.split(":")[-1] not in NATIVE_DECODER)


def compute_choices(device: str, native: bool | None = None) -> list[tuple[str, str]]:
    """("auto (bfloat16:float32 here)", "auto") first, then each type offered."""
    return [(f"auto ({auto_compute_type(device).name} here)", AUTO),
            *((name, name) for name in offered_types(device, native))]


def compute_help(name: str, device: str) -> str:
    """One line under the picker: what the type is and how it measured here (speed, whether the text stays)."""
    chosen = auto_compute_type(device).name if name == AUTO else name
    line = WHAT.get(chosen, chosen)
    if name == AUTO:
        line = f"the fastest type measured to keep float32's text on this hardware: {chosen}, {line}"
    measured = CPU_MEASURED.get(chosen) if measured_here(device) else None
    if measured is None:
        return f"{line[0].upper()}{line[1:]}. Not measured on this device."
    speed, same, clips = measured
    if chosen == "float32":
        others = [figures[0] for other, figures in CPU_MEASURED.items() if other != "float32"]
        return (f"{line[0].upper()}{line[1:]}. The other types measured {min(others):.1f}-{max(others):.1f}x its "
                "speed (Whisper base, 2-core CPU).")
    text = f"all {clips}" if same == clips else f"{same} of {clips}"
    text = f"float32's text on {text} test clips"
    return (f"{line[0].upper()}{line[1:]}. Measured (Whisper base, 2-core CPU): {speed:.2f}x float32's speed, "
            f"{text}.")
