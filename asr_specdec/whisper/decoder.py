"""A lean Whisper decoder over a static KV cache, for one utterance or a batch of rows at their own positions.

transformers' decoder forward builds masks, cache objects and output dataclasses on every call, and its
dynamic cache grows by concatenation. Speculative decoding calls the decoder many times with a handful of
tokens, so the engine runs the same weights through this module instead: keys and values live in
preallocated buffers, a forward pass writes its tokens at an explicit position, and rolling back after a
rejected draft costs nothing (the next pass simply writes over the rejected slots).

Two backends run the same arithmetic. On a CPU with AVX-512 the native kernels (native_decoder.py) run a
whole pass in one call, with the weights in the runner's storage format (float32, bfloat16, float16 or int8,
always computed in float32) and every token's numbers independent of the other tokens in the pass: a
verification pass gives each draft position exactly the logits of a one-token step. Elsewhere (no compiler,
a GPU) the PyTorch path below does the same layer by layer (`layer_steps`), in the model's own dtype.

Batches of rows (see batch.py): every row has its own start position. A pass feeds each row its own tokens;
keys and values are written at each row's own positions, and token i of row b sees positions <= start_b + i
only. Slots past a row's valid length may hold anything (rejected drafts, padding): they are never attended,
because the next pass that reaches them writes them first. Padding positions past the model's limit (the
PyTorch path pads rows to the longest feed) all write to one scratch slot beyond it.

The arithmetic mirrors transformers' `WhisperDecoderLayer` (queries scaled before attention, pre-norm
residual blocks, GELU feed-forward), so its greedy tokens match `generate()`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..core.argmax import CertifiedArgmax
from ..core.projection import project_rows, row_blocked
from ..errors import ModelError

WEIGHT_FORMATS = ("float32", "bfloat16", "float16", "int8", "int8-vnni")
SLOT_MULTIPLE = 16  # the kernels read keys 16 at a time


def _padded(count: int) -> int:
    return -(-count // SLOT_MULTIPLE) * SLOT_MULTIPLE


@dataclass
class KVCache:
    """Self-attention keys [batch, heads, slots / 16, head_dim, 16] (blocks of 16 keys transposed: the kernels
    score 16 keys per load, reading memory in order) and values [batch, heads, slots, head_dim] per layer; slots
    hold positions 0..max_positions-1, the scratch slot for padding, then padding to a multiple of 16.
    Cross-attention keys [batch, heads, encoder slots / 16, head_dim, 16] and values [batch, heads,
    encoder_length, head_dim], computed once from the encoder output; in int8 (a drafter's, native kernels only)
    with a scale per key [batch, heads, encoder slots] and per value [batch, heads, encoder_length]."""

    self_keys: list[torch.Tensor]
    self_values: list[torch.Tensor]
    cross_keys: list[torch.Tensor]
    cross_values: list[torch.Tensor]
    max_positions: int
    cross_key_scales: list[torch.Tensor] | None = None
    cross_value_scales: list[torch.Tensor] | None = None

    @property
    def batch_size(self) -> int:
        return self.self_keys[0].shape[0]

    @property
    def slots(self) -> int:
        return self.self_keys[0].shape[2] * SLOT_MULTIPLE

    @property
    def encoder_length(self) -> int:
        return self.cross_values[0].shape[2]

    def keep(self, rows: torch.Tensor, memo: dict) -> None:
        """Keep only the batch rows `rows` (slot numbers, on any device), in place. Tensors shared with other caches
        (a drafter reads the main model's cross-attention states) are compacted once per `memo`, so they stay
        shared."""
        if id(self) in memo:
            return
        memo[id(self)] = self
        self._native_view = None
        for states in (self.self_keys, self.self_values, self.cross_keys, self.cross_values,
                       self.cross_key_scales or [], self.cross_value_scales or []):
            for index, tensor in enumerate(states):
                if id(tensor) not in memo:  # the old tensor stays in memo so its id is not reused meanwhile
                    memo[id(tensor)] = (tensor, tensor.index_select(0, _on(rows, tensor.device, memo)))
                states[index] = memo[id(tensor)][1]

    def copy_positions(self, moves: list[tuple[int, int, int, int]]) -> None:
        """For each (source, destination, begin, end): row destination's self-attention keys and values at
        positions begin..end-1 become row source's (keys move in whole blocks of 16; the destination's other
        positions in those blocks must be equal or unused). All moves read before any writes."""
        for keys, values in zip(self.self_keys, self.self_values):
            blocks = [keys[source, :, begin // SLOT_MULTIPLE: _padded(end) // SLOT_MULTIPLE].clone()
                      for source, _, begin, end in moves]
            rows = [values[source, :, begin:end].clone() for source, _, begin, end in moves]
            for (_, destination, begin, end), block, row in zip(moves, blocks, rows):
                keys[destination, :, begin // SLOT_MULTIPLE: _padded(end) // SLOT_MULTIPLE] = block
                values[destination, :, begin:end] = row


def _on(rows: torch.Tensor, device: torch.device, memo: dict) -> torch.Tensor:
    """`rows` on `device`, copied there once per keep (memo)."""
    if rows.device == device:
        return rows
    key = ("rows", str(device))
    if key not in memo:
        memo[key] = rows.to(device)
    return memo[key]


def decoder_parts(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(decoder, proj_out) of a WhisperForConditionalGeneration or a decoder-only WhisperForCausalLM."""
    inner = model.model
    decoder = inner.decoder
    return decoder, model.proj_out


def native_decoder_unavailable(model: nn.Module) -> str | None:
    """None when the native kernels can run `model`'s decoder, else why not."""
    from ..native import kernels, unavailable_reason
    from .native_decoder import supported

    if kernels() is None:
        return f"native kernels unavailable ({unavailable_reason()})"
    return supported(decoder_parts(model)[0])


class WhisperDecoderRunner:
    """Runs the first `num_layers` layers of a Whisper decoder (all by default) and the output projection.

    With fewer layers than the model has, this is the early-exit (LayerSkip-style) drafter: the same
    weights, cut short, then the final layer norm and vocabulary projection. `weights` is the storage format
    of the linear layers on the native kernels (None: float32 on a CPU, the model's own dtype elsewhere);
    activations, attention and sums are float32 whatever it is. `kv_dtype` is that of the self-attention keys
    and values the native kernels keep (default: bfloat16 for bfloat16 weights, else float32), `cross_dtype`
    that of the cross-attention keys and values, computed once per window (default: kv_dtype; in bfloat16
    they are also projected in bfloat16). `native=False` forces the PyTorch path.
    """

    def __init__(self, model: nn.Module, num_layers: int | None = None, weights: str | None = None,
                 kv_dtype: torch.dtype | None = None, cross_dtype: torch.dtype | None = None,
                 native: bool | None = None):
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
        if weights is not None and weights not in WEIGHT_FORMATS:
            raise ModelError(f"unknown weight format '{weights}': choose one of {', '.join(WEIGHT_FORMATS)}")
        self.native = None
        why_not = native_decoder_unavailable(model) if native is not False else "the PyTorch path was asked for"
        if why_not is None:
            from ..native import kernels
            from .native_decoder import NativeDecoder

            self.weights = weights or "float32"
            self.native = NativeDecoder(kernels(), self.decoder, self.proj_out, self.layers, self.weights,
                                        getattr(model, "weights_key", None))
            self.dtype = torch.float32  # of inputs and outputs; the storage format is internal
            self.kv_dtype = kv_dtype or (torch.bfloat16 if self.weights == "bfloat16" else torch.float32)
            self.cross_dtype = cross_dtype or self.kv_dtype
        else:
            if native is None and self.device.type == "cpu":
                from ..native import announce_fallback

                announce_fallback(why_not)
            own = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}.get(weight.dtype)
            if weights not in (None, own):
                raise ModelError(f"decoder weights in {weights} need the native CPU kernels: {why_not}")
            self.weights = own
            self.dtype = self.kv_dtype = self.cross_dtype = weight.dtype
        # greedy choices without the full float32 projection (core/argmax.py); False: always the full logits
        self.certified_argmax = True
        self._certified: CertifiedArgmax | None = None

    # ------------------------------------------------------------------ caches

    def cross_attention_states(self, encoder_output: torch.Tensor, project=None) -> tuple[list, list]:
        """Keys and values of every used layer's cross-attention over the encoder output (computed once), in the
        cache's layout and cross dtype; `project(linears, states)`, when given, computes the projections instead,
        all in one call (the encoder's int8 products)."""
        compute = self.cross_dtype if self.native is not None else self.dtype
        compute = torch.float32 if compute == torch.int8 else compute  # new_cache quantizes them
        encoder_output = encoder_output.to(compute)
        batch, length, _ = encoder_output.shape
        linears = [linear for layer in self.layers for linear in (layer.encoder_attn.k_proj, layer.encoder_attn.v_proj)]
        projected = (project(linears, encoder_output) if project is not None
                     else [_linear(linear, encoder_output) for linear in linears])
        keys, values = [], []
        for key, value in zip(projected[0::2], projected[1::2]):
            key = key.view(batch, length, self.num_heads, self.head_dim)
            value = value.view(batch, length, self.num_heads, self.head_dim)
            blocks = torch.zeros(batch, self.num_heads, _padded(length), self.head_dim, dtype=compute,
                                 device=self.device)
            blocks[:, :, :length] = key.transpose(1, 2)
            keys.append(_key_blocks(blocks))
            values.append(value.transpose(1, 2).to(compute).contiguous())
        return keys, values

    def new_cache(self, encoder_output: torch.Tensor, cross_states: tuple[list, list] | None = None,
                  max_positions: int | None = None) -> KVCache:
        """A cache for a batch of utterances (one row each). `cross_states` lets a drafter reuse the main
        model's (converted to this runner's dtype when it differs)."""
        batch = encoder_output.shape[0]
        positions = min(max_positions or self.max_positions, self.max_positions)
        slots = _padded(positions + 1)
        cross_keys, cross_values = cross_states or self.cross_attention_states(encoder_output)
        cross_keys, cross_values = cross_keys[: self.num_layers], cross_values[: self.num_layers]
        scales = {}
        if self.cross_dtype == torch.int8:
            quantized_keys = [_int8_vectors(layer, lanes=SLOT_MULTIPLE) for layer in cross_keys]
            quantized_values = [_int8_vectors(layer, lanes=1) for layer in cross_values]
            cross_keys, cross_values = [pair[0] for pair in quantized_keys], [pair[0] for pair in quantized_values]
            scales = {"cross_key_scales": [scale.view(*layer.shape[:2], -1)
                                           for (layer, scale) in quantized_keys],
                      "cross_value_scales": [scale.view(*layer.shape[:3]) for (layer, scale) in quantized_values]}
        else:
            cross_keys = [keys.to(self.cross_dtype) for keys in cross_keys]
            cross_values = [values.to(self.cross_dtype) for values in cross_values]
        key_shape = (batch, self.num_heads, slots // SLOT_MULTIPLE, self.head_dim, SLOT_MULTIPLE)
        value_shape = (batch, self.num_heads, slots, self.head_dim)
        return KVCache(
            self_keys=[torch.zeros(key_shape, dtype=self.kv_dtype, device=self.device) for _ in self.layers],
            self_values=[torch.zeros(value_shape, dtype=self.kv_dtype, device=self.device) for _ in self.layers],
            cross_keys=list(cross_keys), cross_values=list(cross_values), max_positions=positions, **scales,
        )

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
        batch, length = token_ids.shape
        if isinstance(starts, int):
            starts = [starts] * batch
        if self.native is None:
            return self._torch_hidden_states(cache, token_ids, starts)
        rows = [row for row in range(batch) for _ in range(length)]
        positions = [start + index for start in starts for index in range(length)]
        hidden = self._native_hidden(cache, token_ids.reshape(-1).tolist(), rows, positions)
        return hidden.view(batch, length, -1)

    def feed_rows(self, cache: KVCache, feeds: list[list[int]], starts: list[int]) -> list[torch.Tensor]:
        """Feed row b `feeds[b]` at positions starts[b].. (rows with nothing to feed are left alone); the final
        hidden states [len(feeds[b]), width] of each row."""
        if len(feeds) != cache.batch_size:
            raise ValueError(f"{len(feeds)} rows fed to a cache of {cache.batch_size}")
        if self.native is not None:
            ids = [token for feed in feeds for token in feed]
            rows = [row for row, feed in enumerate(feeds) for _ in feed]
            positions = [start + index for feed, start in zip(feeds, starts) for index in range(len(feed))]
            hidden = self._native_hidden(cache, ids, rows, positions)
            return list(hidden.split([len(feed) for feed in feeds]))
        length = max(len(feed) for feed in feeds)
        padding = 0
        ids = [feed + [padding] * (length - len(feed)) if feed else [padding] * length for feed in feeds]
        row_starts = [start if feed else cache.max_positions for feed, start in zip(feeds, starts)]
        hidden = self._torch_hidden_states(cache, torch.tensor(ids, device=self.device), row_starts)
        return [hidden[row, :len(feed)] for row, feed in enumerate(feeds)]

    def _native_hidden(self, cache: KVCache, ids: list[int], rows: list[int], positions: list[int]) -> torch.Tensor:
        slots = [min(position, cache.max_positions) for position in positions]
        embedded = [min(position, self.max_positions - 1) for position in positions]
        return self.native.hidden(cache, ids, rows, embedded, slots, slots)

    def vocabulary_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """proj_out(hidden); on the PyTorch path several rows at once as weight @ hidden^T in blocks (see
        projection.py)."""
        batch, length, width = hidden.shape
        if self.native is not None:
            return self.native.logits(hidden.reshape(batch * length, width)).view(batch, length, -1)
        if batch * length == 1 or not row_blocked(self.proj_out):
            return self.proj_out(hidden)
        return project_rows(self.proj_out.weight, hidden.reshape(batch * length, width)).view(batch, length, -1)

    def greedy_choices(self, hidden: torch.Tensor, suppressed: torch.Tensor | None,
                       group_begins: list[int | None] | None = None) -> torch.Tensor:
        """argmax of the vocabulary logits of `hidden` [rows, width] with `suppressed` [rows, vocab] excluded; in
        rows with a group_begins entry, under the group rule too (LogitRules.group_begin), or -1 where only the
        full logits can settle it (the caller applies the rules to them)."""
        grouped = group_begins is not None and any(begin is not None for begin in group_begins)
        if self.native is not None and (self.certified_argmax or not self.native.exact):
            return self.native.greedy(hidden, suppressed, group_begins)
        if grouped:
            return torch.full((hidden.shape[0],), -1, dtype=torch.int64, device=hidden.device)
        if (self.native is None and self.certified_argmax and row_blocked(self.proj_out)
                and self.proj_out.weight.dtype == torch.float32):
            if self._certified is None:
                self._certified = CertifiedArgmax(self.proj_out.weight)
            return self._certified(hidden, suppressed)
        logits = self.vocabulary_logits(hidden[None])[0]
        if suppressed is not None:
            logits = logits.masked_fill(suppressed, -float("inf"))
        return logits.argmax(dim=-1)

    # ------------------------------------------------------------------ the PyTorch path, layer by layer

    def layer_steps(self, cache: KVCache, token_ids: torch.Tensor, starts: list[int]):
        """The PyTorch pass as a generator: yields (layer index, layer, hidden states entering it, attention
        context) before each layer and finally (None, None, final hidden states, context). A hook that needs
        a layer's own numbers (e.g. cross-attention probabilities) runs `self_attention`, `cross_attention` or
        `feed_forward` on them."""
        batch, length = token_ids.shape
        device = token_ids.device
        row_starts = torch.tensor(starts, device=device)
        position_ids = row_starts[:, None] + torch.arange(length, device=device)
        slots = position_ids.clamp_max(cache.max_positions)
        end = min(max(starts) + length - 1, cache.max_positions) + 1  # slots.max() + 1, without waiting for the device
        context = _Context(rows=torch.arange(batch, device=device)[:, None], slots=slots, end=end,
                           mask=(torch.arange(end, device=device) <= position_ids[..., None])[:, None])
        positions = self.decoder.embed_positions.weight[position_ids.clamp_max(self.max_positions - 1)]
        hidden = self.decoder.embed_tokens(token_ids) + positions
        for index, layer in enumerate(self.layers):
            yield index, layer, hidden, context
            hidden = self.self_attention(cache, index, layer, hidden, context)
            hidden = self.cross_attention(cache, index, layer, hidden)[0]
            hidden = self.feed_forward(layer, hidden)
        yield None, None, self.decoder.layer_norm(hidden), context

    def _torch_hidden_states(self, cache: KVCache, token_ids: torch.Tensor, starts: list[int]) -> torch.Tensor:
        for index, _, hidden, _ in self.layer_steps(cache, token_ids, starts):
            if index is None:
                return hidden
        raise AssertionError("unreachable")

    def _split_heads(self, states: torch.Tensor) -> torch.Tensor:
        batch, length, _ = states.shape
        return states.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def self_attention(self, cache: KVCache, index: int, layer, hidden: torch.Tensor, context: _Context):
        """hidden + self-attention block of layer `index`; writes this pass's keys and values to the cache."""
        batch, length, _ = hidden.shape
        attention = layer.self_attn
        normed = layer.self_attn_layer_norm(hidden)
        query = self._split_heads(attention.q_proj(normed) * self.scaling)
        keys = attention.k_proj(normed).view(batch, length, self.num_heads, self.head_dim)
        values = attention.v_proj(normed).view(batch, length, self.num_heads, self.head_dim)
        # advanced indices on the batch and slot dims put them first: [batch, n, heads, head_dim]
        blocks, lanes = context.slots // SLOT_MULTIPLE, context.slots % SLOT_MULTIPLE
        cache.self_keys[index].permute(0, 2, 4, 1, 3)[context.rows, blocks, lanes] = keys.to(self.kv_dtype)
        cache.self_values[index].permute(0, 2, 1, 3)[context.rows, context.slots] = values.to(self.kv_dtype)
        scores = query @ transposed_keys(cache.self_keys[index], context.end).to(query.dtype)
        scores = scores.masked_fill(~context.mask, -float("inf"))
        attended = scores.softmax(dim=-1) @ cache.self_values[index][:, :, :context.end].to(query.dtype)
        return hidden + attention.out_proj(attended.transpose(1, 2).reshape(batch, length, -1))

    def cross_attention(self, cache: KVCache, index: int, layer, hidden: torch.Tensor):
        """(hidden + cross-attention block of layer `index`, attention probabilities [batch, heads, n, frames])."""
        batch, length, _ = hidden.shape
        cross = layer.encoder_attn
        query = self._split_heads(cross.q_proj(layer.encoder_attn_layer_norm(hidden)) * self.scaling)
        frames = cache.encoder_length
        probabilities = (query @ transposed_keys(cache.cross_keys[index], frames).to(query.dtype)).softmax(dim=-1)
        attended = probabilities @ cache.cross_values[index].to(query.dtype)
        return hidden + cross.out_proj(attended.transpose(1, 2).reshape(batch, length, -1)), probabilities

    def feed_forward(self, layer, hidden: torch.Tensor) -> torch.Tensor:
        return hidden + layer.fc2(layer.activation_fn(layer.fc1(layer.final_layer_norm(hidden))))


def _linear(layer: nn.Linear, inputs: torch.Tensor) -> torch.Tensor:
    """layer(inputs) in the inputs' dtype (the layer's weights cast to it when they differ)."""
    if layer.weight.dtype == inputs.dtype:
        return layer(inputs)
    bias = layer.bias.to(inputs.dtype) if layer.bias is not None else None
    return torch.nn.functional.linear(inputs, layer.weight.to(inputs.dtype), bias)


def _int8_vectors(states: torch.Tensor, lanes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 values, float32 scales [blocks, lanes]) of `states` [..., dim, lanes] (float32 or bfloat16, contiguous):
    every vector along dim quantized symmetrically with its own scale (native kernels)."""
    from ..native import kernels

    states = states.contiguous()
    if states.dtype not in (torch.float32, torch.bfloat16):
        states = states.float()
    dim = states.shape[-2] if lanes > 1 else states.shape[-1]
    blocks = states.numel() // (dim * lanes)
    values = torch.empty(states.shape, dtype=torch.int8)
    scales = torch.empty(blocks, lanes)
    kernels().quantize_int8_vectors(states.data_ptr(), 0 if states.dtype == torch.float32 else 2, blocks, dim, lanes,
                                    values.data_ptr(), scales.data_ptr(), torch.get_num_threads())
    return values, scales


def _key_blocks(keys: torch.Tensor) -> torch.Tensor:
    """[batch, heads, slots, head_dim] keys (slots a multiple of 16) in the cache's block layout."""
    batch, heads, slots, head_dim = keys.shape
    return keys.view(batch, heads, slots // SLOT_MULTIPLE, SLOT_MULTIPLE, head_dim).transpose(3, 4).contiguous()


def transposed_keys(blocks: torch.Tensor, length: int) -> torch.Tensor:
    """The first `length` keys of a block-layout tensor as [batch, heads, head_dim, length]."""
    batch, heads, count, head_dim, lanes = blocks.shape
    used = -(-length // lanes)
    return blocks[:, :, :used].permute(0, 1, 3, 2, 4).reshape(batch, heads, head_dim, used * lanes)[..., :length]


@dataclass(frozen=True)
class _Context:
    """Where a PyTorch pass writes (rows [batch, 1], slots [batch, n]) and what each token sees (mask
    [batch, 1, n, end] over slots 0..end-1)."""

    rows: torch.Tensor
    slots: torch.Tensor
    end: int
    mask: torch.Tensor


class DecoderTarget:
    """A Whisper decoder and its cache as the engine's target: one sequence (`extend`) or a batch of rows, each
    at its own position (`extend_rows`).

    `record_hidden`: keep every position's final hidden state per row (the last pass that fed a position wrote
    it, so at the end they are those of the row's final tokens): a score pass then needs no decoder pass of its
    own. Only where a token's numbers do not depend on the rest of its pass (the native kernels), so that they
    are the bits a fresh pass over the final tokens gives."""

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
