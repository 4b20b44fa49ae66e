"""The Whisper decoder on the native kernels (asr_specdec/native): its weights packed once in one storage
format, a pass over any set of tokens in one call, the vocabulary projection and the greedy choice.

Every token's numbers are computed the same way whatever else is in the pass (see decoder_kernels.c), so a
verification pass over a draft gives each position exactly the logits a one-token step would: speculative
output equals plain output bit for bit at every weight format, batches included. The greedy choice of an exact
format is certified (the argmax of the full product, without computing it all); that of the drafter's format
(int8-vnni) is a cheaper approximation: an int4 screen of the vocabulary, its best few rescored in int8
(draft_kernels.c).
"""

from __future__ import annotations

import ctypes
import weakref

import numpy as np
import torch
from torch import nn

from ...native import Cache, Layer, Model, capabilities
from ...native.packing import (
    PackedLinear,
    PackStore,
    argmax_error,
    float_activations,
    pack_linear,
    quantize_int8,
)
from ...native.threads import governor
from ...weights.mapped import let_go
from .decoder_backend import full_argmax

KV_FORMATS = {torch.float32: 0, torch.bfloat16: 2, torch.int8: 3}
DRAFT_STORAGES = ("int8-vnni",)  # products of int8 activations: for drafters, which need no exactness
DRAFT_CANDIDATES = 32  # tokens the drafter's int4 screen passes on to be scored by their int8 rows
# the group rule compares a log-sum-exp with a logit; closer than this, only the full logits settle it
GROUP_MARGIN = 1e-3
_SHARED_PACKS: dict[int, tuple[weakref.ref, dict]] = {}


def as_pointer(tensor: torch.Tensor | None) -> int | None:
    return tensor.data_ptr() if tensor is not None else None


def pointer_array(tensors: list[torch.Tensor]):
    return (ctypes.c_void_p * len(tensors))(*[tensor.data_ptr() for tensor in tensors])


def shared_pack(owner: torch.Tensor, tag: str, storage: str, build, store: PackStore, name: str) -> PackedLinear:
    """One packed copy per (weight, what, storage) in the process: the main model and a drafter sharing weights
    (early exit, the int8 vocabulary of the certified argmax and of the int8 drafter) share the packs. Else
    the copy `store` keeps on disk as `name`, else `build()` -> (weight, bias) packed now."""
    entry = _SHARED_PACKS.get(id(owner))
    if entry is None or entry[0]() is not owner:
        key = id(owner)
        entry = _SHARED_PACKS[key] = (weakref.ref(owner, lambda _: _SHARED_PACKS.pop(key, None)), {})
    per_owner = entry[1]
    if (tag, storage) not in per_owner:
        def packed():
            weight, bias = build()
            try:
                return pack_linear(weight, bias, storage)
            finally:
                let_go(weight, bias)  # read to pack: mapped pages go back to the file (read again if used)

        per_owner[(tag, storage)] = store.linear(name, packed)
    return per_owner[(tag, storage)]


def supported(decoder: nn.Module) -> str | None:
    """None when the kernels can run this decoder, else why not."""
    first = decoder.layers[0]
    width, heads = decoder.embed_tokens.weight.shape[1], first.self_attn.num_heads
    head_dim, ffn = width // heads, first.fc1.out_features
    if decoder.embed_tokens.weight.device.type != "cpu":
        return "the model is not on the CPU"
    if width % 16 or head_dim % 16 or head_dim > 128 or ffn % 16:
        return f"width {width}, head size {head_dim} and feed-forward size {ffn} must be multiples of 16"
    return None


class NativeDecoder:
    """`weights_key` names the model's exact weights (lean_model.py sets it): packs are then kept on disk."""

    def __init__(self, library, decoder: nn.Module, proj_out: nn.Module, layers: list, storage: str,
                 weights_key: str | None = None):
        self.library, self.storage = library, storage
        self.governor = governor()  # the threads of each kernel call
        self._store = PackStore(weights_key, storage)
        # an exact int8 decoder's layers multiply int8 activations where that measured faster (capabilities()
        # .int8_layers): every token's numbers still independent of the pass, and a verification of k tokens no
        # longer bound by float32 multiply-adds; then stored as the drafters' int8-vnni packs (shared on disk and in
        # memory). The vocabulary stays int8 weights times float32 activations, for the logits' resolution.
        self.layer_storage = capabilities().int8_layers if storage == "int8" else storage
        self._layer_store = PackStore(weights_key, self.layer_storage) if self.layer_storage != storage else self._store
        if self._layer_store is not self._store:
            self._store.drop("layers.")  # a cache made when these layers were stored in `storage` (before 2026-12-06)
        first = layers[0]
        self.width = decoder.embed_tokens.weight.shape[1]
        self.heads, self.head_dim = first.self_attn.num_heads, first.self_attn.head_dim
        self._keep: list = []
        structs = (Layer * len(layers))()
        for index, layer in enumerate(layers):
            structs[index] = self._layer(index, layer, self.layer_storage)
        self._layer_store.save()
        self._layers = structs
        self.embed = self._float(decoder.embed_tokens.weight)
        self.positions = self._float(decoder.embed_positions.weight)
        norm = decoder.layer_norm
        self.model = Model(self.width, self.heads, self.head_dim, first.fc1.out_features, len(layers),
                           float(first.self_attn.scaling), float(norm.eps), self.embed.data_ptr(),
                           self.positions.data_ptr(), self._float(norm.weight).data_ptr(),
                           self._float(norm.bias).data_ptr(), structs)
        vocabulary = proj_out.weight
        self._vocabulary = vocabulary
        self.vocab_size = vocabulary.shape[0]
        self.exact = storage not in DRAFT_STORAGES
        self._vocab = None
        self.approx = None
        self.approx_norms = None
        screen = capabilities().fastest_int8
        # an int8 vocabulary is screened by its int8-vnni pack of the same values, which also gives its exact scores
        # (read with float32 activations, an int8 pack's bits): one copy on disk and in memory, not two
        one_copy = storage == "int8" and screen == "int8-vnni"
        if not self.exact:
            self._draft_vocabulary(vocabulary)
        elif not one_copy:
            self._vocab = shared_pack(vocabulary, "linear", storage, lambda: (vocabulary, None), self._store,
                                      "vocabulary")
        if self.exact and (storage != "int8" or screen == "int8-vnni"):
            # an int8 copy screens the vocabulary, the exact pack settles the rest (an int8 one too: int8 activations
            # stream its bytes faster than float32 ones, and a verification's rows cost int8 products). Its store is
            # kept (its tensors may map its file), and is the layers' own where they are int8-vnni: one file, one
            # writer, whose tensors stay those it mapped or spooled
            self._approx_store = self._layer_store if screen == self.layer_storage else PackStore(weights_key, screen)
            self.approx = shared_pack(vocabulary, "linear", screen, lambda: (vocabulary, None), self._approx_store,
                                      "vocabulary")
            if screen == "int8-vnni":  # its rows' norms bound what quantizing the activations changes
                self.approx_norms = self._approx_store.tensor(
                    "vocabulary.norms", lambda: (self.approx.row_norms() * (1 + 1e-5)).contiguous())
            if one_copy:
                self._vocab = float_activations(self.approx)
                self._store.drop("vocabulary")  # the int8 copy a cache made before 2026-12-07 kept here
                error_store = self._approx_store
            else:
                error_store = self._store
            self.error = error_store.tensor("vocabulary.argmax_error", lambda: argmax_error(self._vocab, self.approx))
            self._approx_store.save()
        self._store.save()
        let_go(vocabulary)  # read whole to pack; a step reads back only the rows of its tokens (the embedding)
        self._scratch = torch.empty(0)

    def _draft_vocabulary(self, vocabulary: torch.Tensor) -> None:
        """The drafter's vocabulary: an int4 screen of the rows centred on their mean (Whisper's output rows share
        a large common part, 87% of their energy in base, which would swamp int4's resolution; it adds the same
        to every score) and the rows in int8, row by row, for the screen's best few."""
        def centred():
            weight = vocabulary.detach().float()
            return weight - weight.mean(dim=0), None

        quantized: list = []  # built once for both tensors, when the store has neither

        def int8_rows(part: int) -> torch.Tensor:
            if not quantized:
                quantized.extend(quantize_int8(vocabulary.detach()))
            return quantized[part].contiguous()

        self.screen = shared_pack(vocabulary, "centred", "int4-vnni", centred, self._store, "vocabulary.screen")
        self.rows8 = self._store.tensor("vocabulary.rows8", lambda: int8_rows(0))
        self.rows8_scale = self._store.tensor("vocabulary.rows8_scale", lambda: int8_rows(1))

    @property
    def vocab(self) -> PackedLinear:
        """The whole vocabulary projection in this decoder's storage (a drafter builds it only to sample)."""
        if self._vocab is None:
            vocabulary = self._vocabulary
            self._vocab = shared_pack(vocabulary, "linear", self.storage, lambda: (vocabulary, None), self._store,
                                      "vocabulary")
            self._store.save()
        return self._vocab

    def _float(self, tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.detach()
        if tensor.dtype != torch.float32 or not tensor.is_contiguous():
            tensor = tensor.float().contiguous()
        self._keep.append(tensor)
        return tensor

    def _pack(self, linear: nn.Linear, storage: str, name: str) -> PackedLinear:
        packed = shared_pack(linear.weight, "linear", storage, lambda: (linear.weight, linear.bias), self._layer_store,
                             name)
        self._keep.append(packed)
        return packed

    def _fused_qkv(self, attention, storage: str, name: str) -> PackedLinear:
        """q, k and v projections as one [3 * width, width] layer (k has no bias)."""
        def build():
            weight = torch.cat([attention.q_proj.weight, attention.k_proj.weight, attention.v_proj.weight])
            bias = torch.cat([attention.q_proj.bias, torch.zeros_like(attention.q_proj.bias), attention.v_proj.bias])
            let_go(*(tensor for part in (attention.q_proj, attention.k_proj, attention.v_proj)
                     for tensor in (part.weight, part.bias)))
            return weight, bias

        packed = shared_pack(attention.q_proj.weight, "qkv", storage, build, self._layer_store, name)
        self._keep.append(packed)
        return packed

    def _layer(self, index: int, layer, storage: str) -> Layer:
        attention = layer.self_attn
        prefix = f"layers.{index}"
        norms = [self._float(tensor) for norm in (layer.self_attn_layer_norm, layer.encoder_attn_layer_norm,
                                                  layer.final_layer_norm) for tensor in (norm.weight, norm.bias)]
        qkv = self._fused_qkv(attention, storage, f"{prefix}.qkv")
        return Layer(norms[0].data_ptr(), norms[1].data_ptr(), qkv.struct,
                     self._pack(attention.out_proj, storage, f"{prefix}.self_out").struct, norms[2].data_ptr(),
                     norms[3].data_ptr(), self._pack(layer.encoder_attn.q_proj, storage, f"{prefix}.cross_q").struct,
                     self._pack(layer.encoder_attn.out_proj, storage, f"{prefix}.cross_out").struct,
                     norms[4].data_ptr(), norms[5].data_ptr(), self._pack(layer.fc1, storage, f"{prefix}.fc1").struct,
                     self._pack(layer.fc2, storage, f"{prefix}.fc2").struct)

    def cache_view(self, cache) -> Cache:
        """The kernels' view of `cache` (rebuilt after `keep` replaces its tensors)."""
        view = getattr(cache, "_native_view", None)
        if view is None:
            layers = len(self._layers)
            tensors = [cache.self_keys[:layers], cache.self_values[:layers], cache.cross_keys[:layers],
                       cache.cross_values[:layers]]
            if cache.cross_key_scales is not None:
                tensors += [cache.cross_key_scales[:layers], cache.cross_value_scales[:layers]]
            arrays = [pointer_array(group) for group in tensors]
            if cache.cross_key_scales is None:
                arrays += [None, None]
            cross_rows = None if cache.cross_rows is None else cache.cross_rows.to(torch.int32).contiguous()
            view = Cache(KV_FORMATS[cache.self_keys[0].dtype], KV_FORMATS[cache.cross_values[0].dtype], cache.slots,
                         cache.encoder_length,
                         cache.cross_keys[0].shape[2] * cache.cross_keys[0].shape[4], *arrays,
                         as_pointer(cross_rows))
            view._arrays = arrays, cross_rows  # keep the pointer arrays and the row map alive with the view
            cache._native_view = view
        return view

    def hidden(self, cache, ids: list[int], rows: list[int], positions: list[int], slots: list[int],
               limits: list[int]) -> torch.Tensor:
        """Final hidden states [tokens, width] of tokens sorted by batch row (see decoder_pass)."""
        count = len(ids)
        view = self.cache_view(cache)
        threads = self.governor.threads()
        needed = self.library.scratch_floats(ctypes.byref(self.model), ctypes.byref(view), count, threads)
        if self._scratch.numel() < needed:
            self._scratch = torch.empty(needed)
        table = np.array([ids, rows, positions, slots, limits], dtype=np.int32)
        hidden = torch.empty(count, self.width)
        pointer = table.ctypes.data
        status = self.library.decoder_pass(ctypes.byref(self.model), ctypes.byref(view), count, pointer,
                                           pointer + 4 * count, pointer + 8 * count, pointer + 12 * count,
                                           pointer + 16 * count, hidden.data_ptr(), self._scratch.data_ptr(), threads)
        if status != 0:
            raise RuntimeError(f"native decoder pass failed ({status})")
        return hidden

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden [rows, width] @ vocabulary^T as [rows, vocab]."""
        hidden = hidden.float().contiguous()
        logits = torch.empty(hidden.shape[0], self.vocab_size)
        self.library.linear_forward(ctypes.byref(self.vocab.struct), hidden.shape[0], hidden.data_ptr(), self.width,
                                    logits.data_ptr(), self.vocab_size, self.governor.threads())
        return logits

    def greedy(self, hidden: torch.Tensor, suppressed: torch.Tensor | None,
               group_begins: list[int | None] | None = None) -> torch.Tensor:
        """The greedy token per row of logits(hidden) with `suppressed` [rows, vocab] excluded, and under the group
        rule (see LogitRules.group_begin) in rows whose group_begins entry is not None. An exact format gives the
        token that the full logits give, without computing them all, or -1 in a row whose group rule is too close
        to call from partial scores (the caller settles it with the full logits); a drafter's format its
        approximation (see _draft_vocabulary)."""
        hidden = hidden.float().contiguous()
        rows = hidden.shape[0]
        if not self.exact:
            return self._draft_choices(hidden, suppressed, group_begins)
        if group_begins is not None and any(begin is not None for begin in group_begins):
            return self._grouped_choices(hidden, suppressed, group_begins)
        mask = suppressed.contiguous().view(torch.uint8) if suppressed is not None else None
        choices = torch.empty(rows, dtype=torch.int64)
        if self.approx is None:  # int8 weights: the product is cheap, take it whole
            scores = torch.empty(rows, self.vocab.struct.n_tiles * 64)
            self.library.argmax_rows(ctypes.byref(self.vocab.struct), rows, hidden.data_ptr(), self.width,
                                     as_pointer(mask), scores.data_ptr(), choices.data_ptr(),
                                     self.governor.threads())
            return choices
        scores = torch.empty(rows, self.approx.struct.n_tiles * 64)
        self.library.certified_argmax(ctypes.byref(self.approx.struct), ctypes.byref(self.vocab.struct), rows,
                                      hidden.data_ptr(), self.width, as_pointer(mask), self.error.data_ptr(),
                                      as_pointer(self.approx_norms), scores.data_ptr(), choices.data_ptr(),
                                      self.governor.threads())
        return choices

    def _draft_choices(self, hidden: torch.Tensor, suppressed: torch.Tensor | None,
                       group_begins: list[int | None] | None) -> torch.Tensor:
        rows = hidden.shape[0]
        mask = suppressed.contiguous().view(torch.uint8) if suppressed is not None else None
        begins = None
        if group_begins is not None and any(begin is not None for begin in group_begins):
            begins = torch.tensor([self.vocab_size if begin is None else begin for begin in group_begins],
                                  dtype=torch.int32)
        choices = torch.empty(rows, dtype=torch.int64)
        scores = torch.empty(rows, self.screen.struct.n_tiles * 64)
        self.library.draft_choice(ctypes.byref(self.screen.struct), self.rows8.data_ptr(), self.rows8_scale.data_ptr(),
                                  rows, hidden.data_ptr(), self.width, as_pointer(mask), as_pointer(begins),
                                  DRAFT_CANDIDATES, scores.data_ptr(), choices.data_ptr(), self.governor.threads())
        return choices

    def tile_logits(self, hidden: torch.Tensor, first_column: int, last_column: int | None = None) -> torch.Tensor:
        """Logits [rows, columns] of the 64-column tiles holding first_column..last_column (default: the last
        column), from the tile's first column on: the same bits as those columns of logits(hidden)."""
        hidden = hidden.float().contiguous()
        first_tile = first_column // 64
        last_tile = (self.vocab_size - 1 if last_column is None else last_column) // 64
        tiles = last_tile - first_tile + 1
        out = torch.empty(hidden.shape[0], tiles * 64)
        self.library.linear_tiles(ctypes.byref(self.vocab.struct), hidden.shape[0], hidden.data_ptr(), self.width,
                                  first_tile, tiles, out.data_ptr(), tiles * 64, self.governor.threads())
        return out

    def _grouped_choices(self, hidden: torch.Tensor, suppressed: torch.Tensor | None,
                         group_begins: list[int | None]) -> torch.Tensor:
        """Exact greedy choices under the group rule: the best allowed token below the group (certified), every
        group token's exact logit, and the rule's comparison of the group's log-sum-exp with the best token's
        logit; a row where the two are within GROUP_MARGIN of each other gets -1 (the rule on the full,
        normalised logits rounds differently from this comparison by far less, but not provably never)."""
        rows = hidden.shape[0]
        mask = suppressed if suppressed is not None else torch.zeros(rows, self.vocab_size, dtype=torch.bool)
        below = mask.clone()
        grouped = [row for row, begin in enumerate(group_begins) if begin is not None]
        for row in grouped:
            below[row, group_begins[row]:] = True
        best_below = self.greedy(hidden, below)
        choices = best_below.clone()
        first_column = min(group_begins[row] for row in grouped) // 64 * 64
        group_logits = self.tile_logits(hidden[grouped], first_column)  # every grouped row's in one call
        for index, row in enumerate(grouped):
            begin = group_begins[row]
            group = group_logits[index, begin - first_column: self.vocab_size - first_column]
            group = group.masked_fill(mask[row, begin:], -float("inf"))
            token = int(best_below[row])
            if bool(below[row].all()):
                token_logit = -float("inf")
            else:
                token_logit = float(self.tile_logits(hidden[row:row + 1], token, token)[0, token % 64])
            group_total = float(group.logsumexp(dim=0))
            group_best = float(group.max())
            if group_best == -float("inf"):
                continue  # every group token forbidden: the best token below stands
            if token_logit == -float("inf") or group_total > token_logit + GROUP_MARGIN:
                choices[row] = begin + int(group.argmax())
            elif group_total < token_logit - GROUP_MARGIN:
                choices[row] = begin + int(group.argmax()) if group_best > token_logit else token
            else:
                choices[row] = -1
        return choices


class NativeBackend:
    """The decoder backend (decoder_backend.py) on the native kernels: `decoder` (a NativeDecoder) runs a pass
    over any set of tokens of any rows in one call; keys in the kernels' blocks of 16."""

    name = "native"
    blocked = True
    batch_invariant = True
    shares_cross = True  # rows may read one copy of cross states (KVCache.cross_rows)
    dtype = torch.float32  # of inputs and outputs; the storage format is internal

    def __init__(self, decoder: NativeDecoder, max_positions: int, kv_dtype: torch.dtype | None,
                 cross_dtype: torch.dtype | None, cross_projected: torch.dtype | None = None):
        self.decoder, self.max_positions = decoder, max_positions
        self.native_decoder = decoder
        self.weights = decoder.storage
        self.kv_dtype = kv_dtype or (torch.bfloat16 if self.weights == "bfloat16" else torch.float32)
        self.cross_dtype = cross_dtype or self.kv_dtype
        # int8 cross states are projected (in float32 unless asked otherwise) and quantized by new_cache
        self.cross_compute = cross_projected or (torch.float32 if self.cross_dtype == torch.int8 else self.cross_dtype)

    def hidden_states(self, cache, token_ids: torch.Tensor, starts: list[int]) -> torch.Tensor:
        batch, length = token_ids.shape
        rows = [row for row in range(batch) for _ in range(length)]
        positions = [start + index for start in starts for index in range(length)]
        return self._hidden(cache, token_ids.reshape(-1).tolist(), rows, positions).view(batch, length, -1)

    def feed_rows(self, cache, feeds: list[list[int]], starts: list[int]) -> list[torch.Tensor]:
        ids = [token for feed in feeds for token in feed]
        rows = [row for row, feed in enumerate(feeds) for _ in feed]
        positions = [start + index for feed, start in zip(feeds, starts) for index in range(len(feed))]
        return list(self._hidden(cache, ids, rows, positions).split([len(feed) for feed in feeds]))

    def _hidden(self, cache, ids: list[int], rows: list[int], positions: list[int]) -> torch.Tensor:
        slots = [min(position, cache.max_positions) for position in positions]
        embedded = [min(position, self.max_positions - 1) for position in positions]
        return self.decoder.hidden(cache, ids, rows, embedded, slots, slots)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.decoder.logits(hidden)

    def greedy(self, hidden: torch.Tensor, suppressed: torch.Tensor | None, group_begins: list[int | None] | None,
               certified: bool) -> torch.Tensor:
        if certified or not self.decoder.exact:
            return self.decoder.greedy(hidden, suppressed, group_begins)
        return full_argmax(self, hidden, suppressed, group_begins)
