"""The main model's encoder in the compute type's encoder precision: features in, float32 states out.

float32 runs the model's own encoder (transformers' arithmetic, bit for bit). bfloat16 and float16 run a copy
through `fused_forward`: one product for q, k and v, fc1 and its GELU fused, and on a CPU with AVX512-BF16 the
attention by a native kernel. int8 runs the same forward with every linear layer as int8 products of int8
activations on the native kernels (VNNI where the CPU has it: weights with a scale per output column, each row of
activations quantized with its own scale, its outlier dimensions multiplied in float32), in bfloat16 between the
products on the AVX-512 build and in float32 (the model's own modules, attention by the native float32 kernel with
int8 scores) on the others, where PyTorch's bfloat16 is emulated, and projects the decoder's cross-attention
keys/values the same way (`cross_projection`); without those kernels, torch's dynamic int8 quantization of a
float32 copy.

The encoder runs once per window, identically for plain and speculative decoding: its precision changes the
text as any model change may (measured in docs/benchmarks.md), never the equality of speculative and plain output.
"""

from __future__ import annotations

import copy
import ctypes
import warnings
import weakref
from collections.abc import Callable
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from ...weights.mapped import FilePages, file_pages, let_go
from .compute import DTYPES, auto_compute_type
from .lean_model import narrower_linears

_ENCODER_COPIES: dict[int, tuple[weakref.ref, dict]] = {}


def _encoder_copy(encoder: nn.Module, precision: str, weights_key: str | None = None) -> nn.Module:
    """The encoder in `precision`, one copy per (encoder, precision) in the process (several transcribers on
    the same model share it; the model itself is left as it was). "bfloat16-frame" is the bfloat16 encoder
    without its layers' linear weights (empty): all the int8 products' forward reads besides their packs.
    `weights_key` names the model's exact weights: a CPU copy is then kept on disk and mapped from there, so a
    warm start never reads the float32 weights."""
    key = id(encoder)
    entry = _ENCODER_COPIES.get(key)
    if entry is None or entry[0]() is not encoder:
        entry = _ENCODER_COPIES[key] = (weakref.ref(encoder, lambda _: _ENCODER_COPIES.pop(key, None)), {})
    copies = entry[1]
    if precision not in copies:
        if precision == "int8":
            copies[precision] = _dynamic_int8(encoder)
        else:
            copies[precision] = _converted(encoder, DTYPES[precision.removesuffix("-frame")],
                                           without_linears=precision.endswith("-frame"), weights_key=weights_key)
    return copies[precision]


def _dynamic_int8(encoder: nn.Module) -> nn.Module:
    """torch's dynamic int8 quantization of `encoder`'s linear layers, in a copy that shares the float32 weights
    it keeps (norms, convolutions, positions) with the model instead of holding a float copy of the encoder."""
    # float32 parameters are shared (`.float()` leaves them as they are), others copied and widened
    shared = {id(parameter): parameter for parameter in encoder.parameters() if parameter.dtype == torch.float32}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch announces the move of this API to torchao
        quantized = torch.ao.quantization.quantize_dynamic(copy.deepcopy(encoder, shared).float().eval(),
                                                           {nn.Linear}, dtype=torch.qint8, inplace=True)
    let_go(*_linear_tensors(encoder))  # read to quantize: mapped pages go back to the file
    return quantized


def _converted(encoder: nn.Module, dtype: torch.dtype, without_linears: bool, weights_key: str | None) -> nn.Module:
    """A copy of `encoder` in `dtype`, each weight converted once (never a full-precision copy first, so the
    peak is the copy's size), read from the disk copy when there is one; `without_linears` leaves the layers'
    linear weights empty."""
    from ...native.packing import PackStore

    on_cpu = next(encoder.parameters()).device.type == "cpu"
    store = PackStore(weights_key if on_cpu else None, f"encoder-{str(dtype).removeprefix('torch.')}")
    linears = {id(parameter) for layer in encoder.layers for module in layer.modules()
               if isinstance(module, nn.Linear) for parameter in module.parameters()} if without_linears else set()
    memo = {}
    for name, parameter in encoder.named_parameters():
        converted = (torch.empty(0, dtype=dtype, device=parameter.device) if id(parameter) in linears
                     else store.tensor(name, lambda parameter=parameter: parameter.detach().to(dtype)))
        let_go(parameter)  # its mapped pages go back to the file once copied
        memo[id(parameter)] = nn.Parameter(converted, requires_grad=False)
    store.save()
    return copy.deepcopy(encoder, memo).to(dtype).eval()


class EncoderRunner:
    """Features [batch, mel bins, frames] in, float32 encoder states out, in `precision` (see the module's
    docstring), by the backend `encoder_backend` chooses. `weights_key` names the model's exact weights: int8 packs
    are then kept on disk."""

    def __init__(self, encoder: nn.Module, precision: str, weights_key: str | None = None):
        self.precision = precision
        self.backend = encoder_backend(encoder, precision, weights_key)
        self._pages: tuple[int, FilePages] | None = None

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        output = self.backend(features.to(self.backend.input_dtype))
        return output if output.dtype == torch.float32 else output.float()

    @property
    def cross_projection(self):
        """For WhisperDecoderRunner.cross_attention_states: the decoder's cross-attention keys/values projected
        in this precision's products (int8), or None (the decoder runner's own products)."""
        return self.backend.cross_projection

    def file_pages(self) -> FilePages:
        """The pages of the weights a window reads that lie in file mappings (packs, and copies mapped from the
        cache), found once per set of packs: a window reads each of them once, so between calls they can wait in the
        page cache rather than in the process (WindowPipeline.call_ended)."""
        products = self.backend.products
        tensors = [*self.backend.encoder.parameters(), *(products.tensors() if products is not None else ())]
        if self._pages is None or self._pages[0] != len(tensors):
            self._pages = (len(tensors), file_pages(*tensors))
        return self._pages[1]


class EncoderBackend(Protocol):
    """What EncoderRunner runs: the model's own forward (ModelForward) or the fused one (FusedForward)."""

    encoder: nn.Module  # the module whose weights it reads (besides the products' packs)
    input_dtype: torch.dtype  # of the features it takes
    products: Int8Products | None  # its native int8 products, if it has them
    cross_projection: Callable | None  # the decoder's cross-attention keys/values in its products, or None

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        """Encoder states [batch, frames, width] (in its own dtype)."""


def encoder_backend(encoder: nn.Module, precision: str, weights_key: str | None) -> EncoderBackend:
    """The one place the encoder's arithmetic is chosen, from the precision and what native.capabilities() says."""
    from ...native import capabilities

    own = next(encoder.parameters()).dtype
    if precision == "int8" and native_int8_products(encoder):
        native = capabilities()
        # float32 between the products where PyTorch's bfloat16 would run emulated: the model's own encoder
        # supplies the convolutions and norms (its linear weights are never read, so never paged in)
        dtype = DTYPES[native.int8_between]
        products = Int8Products(encoder, weights_key, dtype)
        frame = encoder if dtype == own else _encoder_copy(encoder, f"{native.int8_between}-frame", weights_key)
        # the float32 form's attention as int8 products: the scores, and where int8 dot products are native the
        # weights x values too (two products, each a quarter of a float32 one's instructions; slower than float32
        # with the sign trick); their error is the int8 linear layers' size (docs/compute.md)
        attend = encoder_attention(frame, dtype, int8_level=2 if native.int8_dot_product else 1)
        return FusedForward(frame, products, dtype, attend, products)
    if precision in ("bfloat16", "float16"):
        dtype = DTYPES[precision]
        if precision == "bfloat16" and next(encoder.parameters()).device.type == "cpu":
            _announce_emulated_bfloat16()
        copied = encoder if dtype == own else _encoder_copy(encoder, precision, weights_key)
        return FusedForward(copied, float_products(copied), dtype, encoder_attention(copied, dtype, int8_level=0))
    if precision == "int8":  # no native int8 products: torch's dynamic int8 of a float32 copy
        return ModelForward(_encoder_copy(encoder, precision, weights_key), torch.float32)
    dtype = DTYPES[precision]
    as_stored = dtype == own and not narrower_linears(encoder, dtype)  # (else a copy: lean_model, Stored in 16 bits)
    return ModelForward(encoder if as_stored else _encoder_copy(encoder, precision, weights_key), dtype)


def _announce_emulated_bfloat16() -> None:
    """Warn (once a process, Python's default for a warning's place) where the CPU has no native bfloat16: there
    PyTorch emulates the encoder's bfloat16 products (on a Zen 3, one thread, base: a short clip's whole call 9.5 s
    at bfloat16:float32 against 1.3 s at int8:float32); faster-whisper refuses bfloat16 on such a CPU."""
    from ...native.backend import native_bfloat16

    if not native_bfloat16():
        warnings.warn("a bfloat16 encoder on this CPU (no AVX512-BF16 or AMX) runs on PyTorch's emulated bfloat16, "
                      f"several times slower than float32 or int8 here (auto: {auto_compute_type('cpu')})",
                      RuntimeWarning, stacklevel=2)


class ModelForward:
    """The encoder module's own forward: float32 gives transformers' arithmetic bit for bit."""

    products = None
    cross_projection = None

    def __init__(self, encoder: nn.Module, input_dtype: torch.dtype):
        self.encoder, self.input_dtype = encoder, input_dtype

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        return self.encoder(features).last_hidden_state


class FusedForward:
    """`fused_forward` with the linear layers from `project` (float_products, Int8Products) and the attention
    from `attend` (encoder_attention); `products`: the native int8 products, which also project the decoder's
    cross-attention keys/values."""

    def __init__(self, encoder: nn.Module, project, input_dtype: torch.dtype, attend,
                 products: Int8Products | None = None):
        self.encoder, self.project, self.input_dtype, self.attend = encoder, project, input_dtype, attend
        self.products = products
        self.cross_projection = products.cross if products is not None else None

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        try:
            return fused_forward(self.encoder, self.project, features, self.attend)
        finally:
            if self.products is not None:
                self.products.forget_outputs()


def fused_qkv(attention) -> tuple[torch.Tensor, torch.Tensor]:
    """The q, k and v projections as one weight [3 * width, width] and bias (k has none)."""
    bias = torch.cat([attention.q_proj.bias, torch.zeros_like(attention.q_proj.bias), attention.v_proj.bias])
    return (torch.cat([attention.q_proj.weight, attention.k_proj.weight, attention.v_proj.weight]).detach(),
            bias.detach())


def float_products(encoder: nn.Module):
    """The encoder's linear layers in its own dtype, as fused_forward asks for them: (layer index, part, inputs)
    with part "qkv" (one product), "out", "fc1" (with its GELU) or "fc2"."""
    fused = [fused_qkv(layer.self_attn) for layer in encoder.layers]

    def project(index: int, part: str, inputs: torch.Tensor) -> torch.Tensor:
        layer = encoder.layers[index]
        if part == "qkv":
            return F.linear(inputs, *fused[index])
        if part == "out":
            return layer.self_attn.out_proj(inputs)
        if part == "fc1":
            return _linear_gelu(layer.fc1, inputs)
        return layer.fc2(inputs)

    return project


def fused_forward(encoder: nn.Module, project, features: torch.Tensor, attend=None) -> torch.Tensor:
    """Whisper's encoder forward with its linear layers from `project` (float_products, Int8Products): q, k
    and v by one product per layer (queries scaled after it, as transformers does), the attention by `attend`
    (encoder_attention; PyTorch's when None)."""
    attend = attend or torch_attention
    hidden = F.gelu(encoder.conv1(features))
    hidden = F.gelu(encoder.conv2(hidden)).permute(0, 2, 1).contiguous()  # else every later op copies it
    hidden = hidden + encoder.embed_positions.weight[: hidden.shape[1]]
    for index, layer in enumerate(encoder.layers):  # (hidden is this pass's own tensor: added to in place)
        attended = attend(layer.self_attn, project(index, "qkv", layer.self_attn_layer_norm(hidden)))
        hidden += project(index, "out", attended)
        hidden += project(index, "fc2", project(index, "fc1", layer.final_layer_norm(hidden)))
    return encoder.layer_norm(hidden)


def encoder_attention(encoder: nn.Module, dtype: torch.dtype, int8_level: int):
    """The attention fused_forward runs: on a CPU with the native kernels, their flash kernel in bfloat16
    (bfloat16 products, float32 softmax and sums) or float32 (the int8 encoder's float32 form, whose products
    `int8_level` makes int8: 0 none, 1 the scores, 2 the scores and the weights x values; see
    encoder_attention_f32); PyTorch's attention otherwise."""
    from ...native import capabilities, kernels

    if (dtype in (torch.bfloat16, torch.float32) and next(encoder.parameters()).device.type == "cpu"
            and capabilities().encoder_attention and encoder.layers[0].self_attn.head_dim % 32 == 0):
        return NativeAttention(kernels(), int8_level)
    return torch_attention


def torch_attention(attention, projected: torch.Tensor) -> torch.Tensor:
    """Attention of the q, k, v `projected` [batch, frames, 3 * width] by PyTorch's scaled dot product."""
    batch, length, _ = projected.shape
    query, key, value = projected.view(batch, length, 3, attention.num_heads, attention.head_dim).permute(
        2, 0, 3, 1, 4)
    attended = F.scaled_dot_product_attention(query * attention.scaling, key, value, scale=1.0)
    return attended.transpose(1, 2).reshape(batch, length, -1)


class NativeAttention:
    """Attention by the native flash kernels (encoder_kernels.c, loaded as `library`), row by row, in the
    projections' dtype."""

    def __init__(self, library, int8_level: int):
        from ...native.threads import governor

        self.library, self.int8_level, self.governor = library, int8_level, governor()

    def __call__(self, attention, projected: torch.Tensor) -> torch.Tensor:
        batch, length, _ = projected.shape
        width = attention.num_heads * attention.head_dim
        attended = torch.empty(batch, length, width, dtype=projected.dtype)
        threads = self.governor.threads()
        scratch = torch.empty(threads * 2 * (-(-length // 32) * 32) * attention.head_dim, dtype=projected.dtype)
        for row in range(batch):
            source = projected[row].contiguous()
            shape = (source.data_ptr(), length, attention.num_heads, attention.head_dim, float(attention.scaling))
            if projected.dtype == torch.bfloat16:
                self.library.encoder_attention_bf16(*shape, attended[row].data_ptr(), scratch.data_ptr(), threads)
            else:
                self.library.encoder_attention_f32(*shape, self.int8_level, attended[row].data_ptr(),
                                                   scratch.data_ptr(), threads)
        return attended


def _linear_gelu(linear: nn.Linear, inputs: torch.Tensor) -> torch.Tensor:
    """GELU(linear(inputs)); on a CPU as one product with the GELU applied to its output in place (oneDNN's
    fused activation: the same bits, without a second pass over a [frames, 4 * width] tensor)."""
    if inputs.device.type != "cpu" or not hasattr(torch, "_addmm_activation"):
        return F.gelu(linear(inputs))
    flat = inputs.reshape(-1, inputs.shape[-1])
    output = torch._addmm_activation(linear.bias, flat, linear.weight.t(), use_gelu=True)
    return output.view(*inputs.shape[:-1], -1)


def native_int8_products(encoder: nn.Module | None = None) -> bool:
    """Whether the native int8 products of int8 activations (AVX512-VNNI) can run here, and on `encoder`'s
    linear layers (their input widths must be multiples of 16)."""
    from ...native import capabilities

    if encoder is not None and next(encoder.parameters()).device.type != "cpu":
        return False  # the kernels read host memory
    if encoder is not None and any(module.in_features % 16 for module in encoder.modules()
                                   if isinstance(module, nn.Linear)):
        return False
    return capabilities().int8_products


class Int8Products:
    """The encoder's linear layers (and the decoder's cross-attention key/value projections) as native int8
    products: `dtype` (bfloat16 or float32) in and out, exact int32 sums. Packed once per model, kept on disk
    under `weights_key`."""

    def __init__(self, encoder: nn.Module, weights_key: str | None, dtype: torch.dtype = torch.bfloat16):
        """Packs `encoder`'s linear layers from their bfloat16 values, reading the weights only when the pack is
        not on disk yet (so a warm start never pages the float32 weights in)."""
        from ...native import kernels
        from ...native.packing import PackStore, pack_linear
        from ...native.threads import governor

        self.library, self.governor = kernels(), governor()
        self.dtype = dtype
        self._store = PackStore(weights_key, "encoder-int8-vnni")
        self._pack = lambda name, build: self._store.linear(name, lambda: pack_linear(*build(), "int8-vnni"))
        self.layers = []
        for index, layer in enumerate(encoder.layers):
            prefix = f"encoder.{index}"
            self.layers.append({
                "qkv": self._pack(f"{prefix}.qkv", lambda layer=layer: _bfloat16(*fused_qkv(layer.self_attn))),
                "out": self._pack(f"{prefix}.out",
                                  lambda layer=layer: _bfloat16(*_weight_bias(layer.self_attn.out_proj))),
                "fc1": self._pack(f"{prefix}.fc1", lambda layer=layer: _bfloat16(*_weight_bias(layer.fc1))),
                "fc2": self._pack(f"{prefix}.fc2", lambda layer=layer: _bfloat16(*_weight_bias(layer.fc2))),
            })
            let_go(*_linear_tensors(layer))  # read to pack: mapped pages go back to the file
        self._store.save()
        self._cross: dict[tuple, object] = {}
        # each part's output, written again by the next layer's: a window's tens of MB a product are faulted in
        # once, not once a layer (freed, glibc gave them back to the system, a worker thread's arena most of all)
        self._outputs: dict[str, torch.Tensor] = {}

    def __call__(self, index: int, part: str, inputs: torch.Tensor) -> torch.Tensor:
        """Layer `index`'s `part` of `inputs`, in a buffer the same part of the next layer writes over (until
        forget_outputs)."""
        packed, rows = self.layers[index][part], inputs.numel() // inputs.shape[-1]
        output = self._outputs.get(part)
        if output is None or output.shape != (rows, packed.n):
            output = self._outputs[part] = torch.empty(rows, packed.n, dtype=self.dtype)
        return self.product(packed, inputs, gelu=part == "fc1", out=output)

    def forget_outputs(self) -> None:
        """Let the layers' output buffers go (a window's encoder pass is over)."""
        self._outputs.clear()

    def tensors(self) -> list[torch.Tensor]:
        """Every pack's tensors: the layers' and the cross-attention projections' made so far."""
        packs = [*(packed for layer in self.layers for packed in layer.values()), *self._cross.values()]
        return [tensor for packed in packs for tensor in (packed.packed, packed.scale, packed.bias)
                if tensor is not None]

    def product(self, packed, inputs: torch.Tensor, gelu: bool = False, dtype: torch.dtype | None = None,
                out: torch.Tensor | None = None) -> torch.Tensor:
        """`inputs` through `packed`, in `dtype` (bfloat16 or float32; default the products' own) in and out: the
        same integers either way, and a bfloat16 output is the float32 one rounded to nearest even (to zero below
        1.2e-38). `out`: a contiguous [rows, n] tensor of that dtype to write into."""
        dtype = dtype or self.dtype
        flat = inputs.reshape(-1, inputs.shape[-1])
        if flat.dtype != dtype or not flat.is_contiguous():
            flat = flat.to(dtype).contiguous()
        output = out if out is not None else torch.empty(flat.shape[0], packed.n, dtype=dtype)
        if dtype not in (torch.bfloat16, torch.float32):
            raise ValueError(f"the native int8 products take bfloat16 or float32, not {dtype}")
        product = self.library.linear_int8_bf16 if dtype == torch.bfloat16 else self.library.linear_int8_f32
        status = product(ctypes.byref(packed.struct), flat.shape[0], flat.data_ptr(), flat.shape[1],
                         output.data_ptr(), packed.n, int(gelu), self.governor.threads())
        if status != 0:
            raise RuntimeError(f"native int8 product failed ({status})")
        return output.view(*inputs.shape[:-1], packed.n)

    def cross(self, linears: list[nn.Linear], inputs: torch.Tensor) -> list[torch.Tensor]:
        """`linears` (the decoder's cross-attention key and value projections) of the encoder states `inputs`, in
        the inputs' dtype (bfloat16 straight from the product, not through a float32 copy twice its size), as one
        product: the states are quantized once for all of them."""
        key = tuple(id(linear.weight) for linear in linears)
        if key not in self._cross:
            def build():
                parts = [_weight_bias(linear) for linear in linears]
                biases = [bias if bias is not None else torch.zeros(weight.shape[0]) for weight, bias in parts]
                return torch.cat([weight for weight, _ in parts]), torch.cat(biases)

            self._cross[key] = self._pack(f"cross.{len(linears)}", build)
            let_go(*(tensor for linear in linears for tensor in _weight_bias(linear)))
            self._store.save()
        output = self.product(self._cross[key], inputs, dtype=inputs.dtype)
        return list(output.split([linear.out_features for linear in linears], dim=-1))


def _linear_tensors(module: nn.Module) -> list[torch.Tensor]:
    return [tensor for linear in module.modules() if isinstance(linear, nn.Linear) for tensor in _weight_bias(linear)]


def _weight_bias(linear: nn.Linear) -> tuple[torch.Tensor, torch.Tensor | None]:
    return linear.weight.detach(), linear.bias.detach() if linear.bias is not None else None


def _bfloat16(weight: torch.Tensor, bias: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    return weight.to(torch.bfloat16), bias.to(torch.bfloat16) if bias is not None else None
