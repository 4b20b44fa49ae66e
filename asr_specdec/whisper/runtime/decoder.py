"""A lean Whisper decoder over a static KV cache, for one utterance or a batch of rows at their own positions.

transformers' decoder forward builds masks, cache objects and output dataclasses on every call, and its
dynamic cache grows by concatenation. Speculative decoding calls the decoder many times with a handful of
tokens, so the engine runs the same weights through this module instead: keys and values live in
preallocated buffers, a forward pass writes its tokens at an explicit position, and rolling back after a
rejected draft costs nothing (the next pass simply writes over the rejected slots).

Two backends run the same arithmetic behind one protocol (decoder_backend.py), picked in one place
(`choose_backend`). On a CPU with a kernel build the native kernels (native_decoder.py) run a whole pass in one
call, with the weights in the runner's storage format (float32, bfloat16, float16 or int8, computed in float32,
except where an int8 decoder's linear layers quantize each token's activations alone: capabilities().int8_layers)
and every token's numbers independent of the other tokens in the pass: a verification pass gives each
draft position exactly the logits of a one-token step. Elsewhere (no kernel build, a GPU) the PyTorch backend
(torch_decoder.py) does the same layer by layer, in the model's own dtype. Each keeps the cache's keys in its
own layout (kv_cache.py).

Batches of rows (docs/longform.md, Batches): every row has its own start position. A pass feeds each row its own tokens;
keys and values are written at each row's own positions, and token i of row b sees positions <= start_b + i
only. Slots past a row's valid length may hold anything (rejected drafts, padding): they are never attended,
because the next pass that reaches them writes them first. Padding positions past the model's limit (the
PyTorch path pads rows to the longest feed) all write to one scratch slot beyond it.
"""

from __future__ import annotations

import torch
from torch import nn

from ...errors import ModelError
from .decoder_backend import DecoderBackend
from .kv_cache import (
    SLOT_MULTIPLE,
    KVCache,
    blocked_keys,
    is_blocked,
    key_columns,
    padded,
    row_keys,
    self_pairs,
)
from .torch_decoder import TorchBackend

WEIGHT_FORMATS = ("float32", "bfloat16", "float16", "int8", "int8-vnni")
transposed_keys = key_columns  # the name issue 14's hook and cross_attention.py read keys by


def decoder_parts(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(decoder, proj_out) of a WhisperForConditionalGeneration or a decoder-only WhisperForCausalLM."""
    inner = model.model
    decoder = inner.decoder
    return decoder, model.proj_out


def native_decoder_unavailable(model: nn.Module) -> str | None:
    """None when the native kernels can run `model`'s decoder, else why not."""
    from ...native import capabilities
    from .native_decoder import supported

    native = capabilities()
    if not native.decoder:
        return f"native kernels unavailable ({native.reason})"
    return supported(decoder_parts(model)[0])


def drafting_formats(model: nn.Module) -> dict:
    """The runner options of a decoder that only drafts (it needs no exactness: its drafts are verified), for
    `model`: on the native kernels its linear layers in the cheapest int8 storage this CPU has (int8-vnni: int8
    activations, and an int4 screen of the vocabulary), its keys and values in bfloat16 and its cross-attention
    ones in int8 where int8 products run; elsewhere nothing (the model's own dtype on the PyTorch path)."""
    if native_decoder_unavailable(model) is not None:
        return {}
    from ...native import capabilities

    native = capabilities()
    return {"weights": native.fastest_int8, "kv_dtype": torch.bfloat16,
            "cross_dtype": torch.int8 if native.int8_products else torch.bfloat16}


def choose_backend(model: nn.Module, layers: list, weights: str | None, kv_dtype: torch.dtype | None,
                   cross_dtype: torch.dtype | None, cross_projected: torch.dtype | None,
                   native: bool | None) -> DecoderBackend:
    """The one place that picks the decoder's backend: the native kernels where they run `model` (unless
    `native` is False), else the PyTorch path in the model's own dtype (announced when it was not asked for)."""
    decoder, proj_out = decoder_parts(model)
    if weights is not None and weights not in WEIGHT_FORMATS:
        raise ModelError(f"unknown weight format '{weights}': choose one of {', '.join(WEIGHT_FORMATS)}")
    why_not = native_decoder_unavailable(model) if native is not False else "the PyTorch path was asked for"
    if why_not is None:
        from ...native import kernels
        from .native_decoder import NativeBackend, NativeDecoder

        storage = weights or "float32"
        runner = NativeDecoder(kernels(), decoder, proj_out, layers, storage, getattr(model, "weights_key", None))
        return NativeBackend(runner, decoder.embed_positions.weight.shape[0], kv_dtype, cross_dtype, cross_projected)
    device = decoder.embed_tokens.weight.device
    if native is None and device.type == "cpu":
        from ...native import announce_fallback

        announce_fallback(why_not)
    backend = TorchBackend(decoder, proj_out, layers)
    if weights not in (None, backend.weights):
        raise ModelError(f"decoder weights in {weights} need the native CPU kernels: {why_not}")
    return backend


class WhisperDecoderRunner:
    """Runs the first `num_layers` layers of a Whisper decoder (all by default) and the output projection, on
    the backend `choose_backend` picks (decoder_backend.py).

    With fewer layers than the model has, this is the early-exit (LayerSkip-style) drafter: the same
    weights, cut short, then the final layer norm and vocabulary projection. `weights` is the storage format
    of the linear layers on the native kernels (None: float32 on a CPU, the model's own dtype elsewhere);
    activations, attention and sums are float32 whatever it is, but for int8 layers that multiply int8
    activations (each token's row quantized on its own, exact int32 sums: capabilities().int8_layers, AVX-512).
    `kv_dtype` is that of the self-attention keys and values the native kernels keep (default: bfloat16 for
    bfloat16 weights, else float32), `cross_dtype` that of the cross-attention keys and values, computed once per
    window (default: kv_dtype; in bfloat16 they are also projected in bfloat16), and `cross_projected` the dtype
    they are projected and handed around in before the cache takes them (default: cross_dtype, float32 for int8;
    the main model's int8 cache quantizes the bfloat16 states the drafters and the next call share). `native=False`
    forces the PyTorch path.
    """

    def __init__(self, model: nn.Module, num_layers: int | None = None, weights: str | None = None,
                 kv_dtype: torch.dtype | None = None, cross_dtype: torch.dtype | None = None,
                 native: bool | None = None, cross_projected: torch.dtype | None = None):
        self.decoder, self.proj_out = decoder_parts(model)
        total = len(self.decoder.layers)
        self.num_layers = total if num_layers is None else num_layers
        if not 1 <= self.num_layers <= total:
            raise ValueError(f"layer count {self.num_layers} out of range 1..{total}")
        self.layers = list(self.decoder.layers[: self.num_layers])
        first_attention = self.layers[0].self_attn
        self.num_heads = first_attention.num_heads
        self.head_dim = first_attention.head_dim
        self.scaling = first_attention.scaling
        self.max_positions = self.decoder.embed_positions.weight.shape[0]
        weight = self.decoder.embed_tokens.weight
        self.device = weight.device
        self.vocab_size = weight.shape[0]
        self.backend: DecoderBackend = choose_backend(model, self.layers, weights, kv_dtype, cross_dtype,
                                                       cross_projected, native)
        self.weights, self.dtype = self.backend.weights, self.backend.dtype
        self.kv_dtype, self.cross_dtype = self.backend.kv_dtype, self.backend.cross_dtype
        # greedy choices without the full float32 projection (core/argmax.py); False: always the full logits
        self.certified_argmax = True
        self._layer_path: TorchBackend | None = None

    @property
    def native(self):
        """The NativeDecoder running this decoder, or None on the PyTorch path."""
        return self.backend.native_decoder

    # ------------------------------------------------------------------ caches

    def cross_attention_states(self, encoder_output: torch.Tensor, project=None) -> tuple[list, list]:
        """Keys and values of every used layer's cross-attention over the encoder output (computed once), in the
        cache's layout and cross dtype; `project(linears, states)`, when given, computes the projections instead,
        all in one call (the encoder's int8 products)."""
        compute = self.backend.cross_compute
        encoder_output = encoder_output.to(compute)
        batch, length, _ = encoder_output.shape
        linears = [linear for layer in self.layers for linear in (layer.encoder_attn.k_proj, layer.encoder_attn.v_proj)]
        projected = (project(linears, encoder_output) if project is not None
                     else [linear_as_inputs(linear, encoder_output) for linear in linears])
        layout = blocked_keys if self.backend.blocked else row_keys
        keys, values = [], []
        for key, value in zip(projected[0::2], projected[1::2]):
            key = key.view(batch, length, self.num_heads, self.head_dim)
            value = value.view(batch, length, self.num_heads, self.head_dim)
            keys.append(layout(key.transpose(1, 2).to(compute)))
            values.append(value.transpose(1, 2).contiguous().to(compute))
        return keys, values

    def new_cache(self, encoder_output: torch.Tensor, cross_states: tuple[list, list] | None = None,
                  max_positions: int | None = None) -> KVCache:
        """A cache for a batch of utterances (one row each). `cross_states` lets a drafter reuse the main
        model's (converted to this runner's dtype and key layout when they differ)."""
        batch = encoder_output.shape[0]
        positions = min(max_positions or self.max_positions, self.max_positions)
        slots = padded(positions + 1)
        cross_keys, cross_values = cross_states or self.cross_attention_states(encoder_output)
        cross_keys, cross_values = cross_keys[: self.num_layers], cross_values[: self.num_layers]
        if cross_keys and is_blocked(cross_keys[0]) != self.backend.blocked:  # another backend's layout
            layout = blocked_keys if self.backend.blocked else row_keys
            cross_keys = [layout(key_columns(keys, values.shape[2]).transpose(2, 3))
                          for keys, values in zip(cross_keys, cross_values)]
        scales = {}
        if self.cross_dtype == torch.int8:
            native = self.backend.decoder  # int8 cross states exist on the native backend only
            quantized_keys = [_int8_vectors(native, layer, lanes=SLOT_MULTIPLE) for layer in cross_keys]
            quantized_values = [_int8_vectors(native, layer, lanes=1) for layer in cross_values]
            cross_keys, cross_values = [pair[0] for pair in quantized_keys], [pair[0] for pair in quantized_values]
            scales = {"cross_key_scales": [scale.view(*layer.shape[:2], -1)
                                           for (layer, scale) in quantized_keys],
                      "cross_value_scales": [scale.view(*layer.shape[:3]) for (layer, scale) in quantized_values]}
        else:
            cross_keys = [keys.to(self.cross_dtype) for keys in cross_keys]
            cross_values = [values.to(self.cross_dtype) for values in cross_values]
        if self.backend.blocked:
            key_shape = (batch, self.num_heads, slots // SLOT_MULTIPLE, self.head_dim, SLOT_MULTIPLE)
            value_shape = (batch, self.num_heads, slots, self.head_dim)
            pairs = None
            keys = [torch.zeros(key_shape, dtype=self.kv_dtype, device=self.device) for _ in self.layers]
            values = [torch.zeros(value_shape, dtype=self.kv_dtype, device=self.device) for _ in self.layers]
        else:
            pairs, keys, values = self_pairs(batch, self.num_heads, slots, self.head_dim, self.kv_dtype, self.device,
                                             len(self.layers))
        return KVCache(self_keys=keys, self_values=values, cross_keys=list(cross_keys), cross_values=list(cross_values),
                       max_positions=positions, **scales, shares_cross=self.backend.shares_cross, self_pairs=pairs)

    # ------------------------------------------------------------------ passes

    def forward(self, cache: KVCache, token_ids: torch.Tensor, start: int, scored: int | None = None) -> torch.Tensor:
        """Feed `token_ids` [batch, n] at positions start..start+n-1 of every row; return logits
        [batch, scored, vocab] of the last `scored` positions (all n when None).

        Whatever the cache held at those positions and beyond is overwritten or ignored.
        """
        length = token_ids.shape[1]
        if start + length > cache.max_positions:
            raise ValueError(f"decoder positions {start + length} exceed the model's {cache.max_positions}")
        hidden = self.hidden_states(cache, token_ids, start)
        if scored is not None:
            hidden = hidden[:, length - scored:]
        return self.vocabulary_logits(hidden)

    def hidden_states(self, cache: KVCache, token_ids: torch.Tensor, starts: int | list[int]) -> torch.Tensor:
        """Feed `token_ids` [batch, n], row b at positions starts[b].. (an int: the same for every row); return
        the final layer norm's output [batch, n, width]. Positions past the model's limit (padding only) go to
        the scratch slot."""
        if isinstance(starts, int):
            starts = [starts] * token_ids.shape[0]
        return self.backend.hidden_states(cache, token_ids, starts)

    def feed_rows(self, cache: KVCache, feeds: list[list[int]], starts: list[int]) -> list[torch.Tensor]:
        """Feed row b `feeds[b]` at positions starts[b].. (rows with nothing to feed are left alone); the final
        hidden states [len(feeds[b]), width] of each row."""
        if len(feeds) != cache.batch_size:
            raise ValueError(f"{len(feeds)} rows fed to a cache of {cache.batch_size}")
        return self.backend.feed_rows(cache, feeds, starts)

    def vocabulary_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """proj_out(hidden) [batch, n, vocab] of hidden [batch, n, width], by the backend."""
        batch, length, width = hidden.shape
        return self.backend.logits(hidden.reshape(batch * length, width)).view(batch, length, -1)

    def greedy_choices(self, hidden: torch.Tensor, suppressed: torch.Tensor | None,
                       group_begins: list[int | None] | None = None) -> torch.Tensor:
        """argmax of the vocabulary logits of `hidden` [rows, width] with `suppressed` [rows, vocab] excluded; in
        rows with a group_begins entry, under the group rule too (LogitRules.group_begin), or -1 where only the
        full logits can settle it (the caller applies the rules to them)."""
        return self.backend.greedy(hidden, suppressed, group_begins, self.certified_argmax)

    # ------------------------------------------------------------------ the PyTorch path, layer by layer

    @property
    def layer_path(self) -> TorchBackend:
        """The PyTorch arithmetic layer by layer, over this runner's caches (whichever backend made them)."""
        if self._layer_path is None:
            self._layer_path = (self.backend if isinstance(self.backend, TorchBackend)
                                else TorchBackend(self.decoder, self.proj_out, self.layers, self.kv_dtype))
        return self._layer_path

    def layer_steps(self, cache: KVCache, token_ids: torch.Tensor, starts: list[int]):
        """The PyTorch pass as a generator: yields (layer index, layer, hidden states entering it, attention
        context) before each layer and finally (None, None, final hidden states, context). A hook that needs
        a layer's own numbers (e.g. cross-attention probabilities) runs `self_attention`, `cross_attention` or
        `feed_forward` on them."""
        return self.layer_path.layer_steps(cache, token_ids, starts)

    def self_attention(self, cache: KVCache, index: int, layer, hidden: torch.Tensor, context):
        return self.layer_path.self_attention(cache, index, layer, hidden, context)

    def cross_attention(self, cache: KVCache, index: int, layer, hidden: torch.Tensor):
        return self.layer_path.cross_attention(cache, index, layer, hidden)

    def feed_forward(self, layer, hidden: torch.Tensor) -> torch.Tensor:
        return self.layer_path.feed_forward(layer, hidden)



def linear_as_inputs(layer: nn.Linear, inputs: torch.Tensor) -> torch.Tensor:
    """layer(inputs) in the inputs' dtype (the layer's weights cast to it when they differ: another compute type's,
    or stored in 16 bits: lean_model.py STORED_16_BIT)."""
    if layer.weight.dtype == inputs.dtype:
        return layer(inputs)
    bias = layer.bias.to(inputs.dtype) if layer.bias is not None else None
    return torch.nn.functional.linear(inputs, layer.weight.to(inputs.dtype), bias)


def _int8_vectors(native, states: torch.Tensor, lanes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 values, float32 scales [blocks, lanes]) of `states` [..., dim, lanes] (float32 or bfloat16, contiguous):
    every vector along dim quantized symmetrically with its own scale (by the kernels of the NativeDecoder `native`,
    on the threads its governor gives). Keys (lanes 16, blocks of 16 keys) come back as [..., dim / 4, 16, 4] uint8
    q + 128, the four dims of a key together, as the kernels' int8 scores read them; values (lanes 1) as int8 in
    the states' layout."""
    states = states.contiguous()
    if states.dtype not in (torch.float32, torch.bfloat16):
        states = states.float()
    dim = states.shape[-2] if lanes > 1 else states.shape[-1]
    blocks = states.numel() // (dim * lanes)
    values = (torch.empty(*states.shape[:-2], dim // 4, lanes, 4, dtype=torch.uint8) if lanes > 1
              else torch.empty(states.shape, dtype=torch.int8))
    scales = torch.empty(blocks, lanes)
    native.library.quantize_int8_vectors(states.data_ptr(), 0 if states.dtype == torch.float32 else 2, blocks, dim,
                                         lanes, values.data_ptr(), scales.data_ptr(), native.governor.threads())
    return values, scales


class DecoderTarget:
    """A Whisper decoder and its cache as the engine's target: one sequence (`extend`) or a batch of rows, each
    at its own position (`extend_rows`).

    `record_hidden`: keep every position's final hidden state per row (the last pass that fed a position wrote
    it, so at the end they are those of the row's final tokens): a score then needs no decoder pass of its own.
    On the native kernels (batch-invariant) they are the bits a fresh pass over the final tokens gives, so
    scores are the same for plain and speculative decoding bit for bit. On the PyTorch path a product's
    rounding may depend on how many tokens its pass holds, so scores, like the logits the tokens were chosen
    by, may differ from plain decoding's in the last bits: a fallback decision changes only where the average
    log-probability is within that rounding of its threshold (docs/compute.md)."""

    def __init__(self, runner: WhisperDecoderRunner, cache: KVCache, record_hidden: bool = False):
        self.runner, self.cache = runner, cache
        self.max_positions = cache.max_positions
        self._slot_rows = list(range(cache.batch_size))  # the starting row each batch slot holds now
        self._recorded: list[torch.Tensor | None] | None = [None] * cache.batch_size if record_hidden else None

    def extend(self, token_ids: list[int], start: int, scored: int | None = None) -> torch.Tensor:
        return self.extend_rows([token_ids], [start], [len(token_ids) if scored is None else scored])[0]

    def _feed(self, feeds: list[list[int]], starts: list[int]) -> list[torch.Tensor]:
        hidden = self.runner.feed_rows(self.cache, feeds, starts)
        if self._recorded is not None:
            for slot, (rows, start) in enumerate(zip(hidden, starts)):
                if len(rows):
                    row = self._slot_rows[slot]
                    if self._recorded[row] is None:
                        self._recorded[row] = rows.new_empty(self.max_positions, rows.shape[1])
                    self._recorded[row][start:start + len(rows)] = rows
        return hidden

    def recorded_hidden(self, row: int, count: int) -> torch.Tensor | None:
        """The final hidden states [count, width] of starting row `row`'s first `count` positions (None when not
        recorded)."""
        if self._recorded is None or self._recorded[row] is None:
            return None
        return self._recorded[row][:count]

    def extend_rows(self, feeds: list[list[int]], starts: list[int], scored: list[int]) -> list[torch.Tensor]:
        """Feed row b `feeds[b]` at positions starts[b]..; logits [scored[b], vocab] of its last scored[b] tokens.
        A row with nothing to feed (it is not drafting this step) is left alone."""
        if any(start + len(feed) > self.max_positions for feed, start in zip(feeds, starts)):
            raise ValueError(f"decoder positions exceed the model's {self.max_positions}")
        hidden = self._feed(feeds, starts)
        picked = [rows[len(rows) - count:] for rows, count in zip(hidden, scored) if count]
        if not picked:
            return [torch.empty(0, self.runner.vocab_size, device=self.runner.device) for _ in feeds]
        logits = self.runner.vocabulary_logits(torch.cat(picked)[None])[0].split([count for count in scored if count])
        rows = iter(logits)
        return [next(rows) if count else logits[0].new_empty(0, self.runner.vocab_size) for count in scored]

    def greedy_rows(self, feeds: list[list[int]], starts: list[int], scored: list[int],
                    rules: list[tuple]) -> list[list[int]]:
        """Like extend_rows, but the greedy token at each scored position instead of its logits; rules[b] =
        (LogitRules, sequence index the row's first scored position predicts, the row's tokens so far including
        what this pass feeds). Rules must pass core.logits.greedy_by_mask."""
        hidden = self._feed(feeds, starts)
        picked = torch.cat([rows[len(rows) - count:] for rows, count in zip(hidden, scored)])
        vocab, device = self.runner.vocab_size, picked.device
        masks = [row_rules.greedy_mask(first_index, count, vocab, device, tokens)
                 for (row_rules, first_index, tokens), count in zip(rules, scored)]
        mask = None
        if any(row_mask is not None for row_mask in masks):
            mask = torch.cat([row_mask if row_mask is not None else
                              torch.zeros(count, vocab, dtype=torch.bool, device=device)
                              for row_mask, count in zip(masks, scored)])
        positions = [(row_rules, first_index + offset, tokens)
                     for (row_rules, first_index, tokens), count in zip(rules, scored) for offset in range(count)]
        group_begins = [row_rules.group_begin for row_rules, _, _ in positions]
        choices = self.runner.greedy_choices(picked, mask, group_begins).tolist()
        unsettled = [index for index, choice in enumerate(choices) if choice < 0]
        if unsettled:  # the group rule too close to call (or no way to call it) without every logit
            logits = self.runner.vocabulary_logits(picked[unsettled][None])[0]
            picks = [positions[index][0].apply(row_logits[None], *positions[index][1:]).argmax(dim=-1)
                     for index, row_logits in zip(unsettled, logits)]
            for index, choice in zip(unsettled, torch.cat(picks).tolist()):  # one wait for the device, not one each
                choices[index] = choice
        rows, begin = [], 0
        for count in scored:
            rows.append(choices[begin:begin + count])
            begin += count
        return rows

    def keep(self, rows: torch.Tensor, memo: dict) -> None:
        """Only batch rows `rows` go on, in that order; a row listed twice is duplicated (beam search)."""
        self._slot_rows = [self._slot_rows[slot] for slot in rows.tolist()]
        self.cache.keep(rows, memo)

    def copy_positions(self, moves: list[tuple[int, int, int, int]]) -> None:
        """Beam search's row moves (see KVCache.copy_positions); hidden states are not recorded for moved rows."""
        if self._recorded is not None:
            raise ValueError("a target recording hidden states cannot move rows (beam search)")
        self.cache.copy_positions(moves)
