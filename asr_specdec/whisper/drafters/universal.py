"""Universal assisted decoding: an assistant whose tokenizer differs from the main model's.

The drafter keeps its own token sequence: its own Whisper prompt (start, language/task when it is
multilingual, no-timestamps unless decoding with timestamps) followed by the main model's generated tokens
in its own vocabulary. Text crosses as text: each run of text tokens between timestamps is decoded with the
main tokenizer and re-encoded with the assistant's. Timestamps cross by their name (<|1.20|> is <|1.20|> in
both vocabularies, whatever its id). The draft comes back the same way; its first text run is re-encoded as
the continuation of the main model's current run, so that a word the main model has begun is finished in
its own tokens. No other special token crosses: each side has its own prompt, the assistant's end-of-text
becomes the main model's, and a draft stops at anything else. A main prompt conditioned on previous text
(<|startofprev|> ...) gives the assistant the same previous text, translated. In a batch, each row keeps
its own prompts and rules on both sides.
"""

from __future__ import annotations

import re

from ...core.drafter import Draft, DraftContext
from ...core.logits import Sampling
from ...core.model_drafter import ModelDrafter
from ...core.retokenize import continuation_tokens
from ...errors import ModelError
from ..runtime.decoder import DecoderTarget, WhisperDecoderRunner
from ..runtime.timestamps import TimestampRules
from ..runtime.tokens import WhisperTokens
from .assistant import same_encoder

TIMESTAMP_NAME = re.compile(r"<\|\d+\.\d\d\|>")


def timestamp_ids(tokenizer) -> dict[str, int]:
    """Timestamp token name -> id, e.g. '<|1.20|>' -> 50424."""
    return {name: id_ for name, id_ in tokenizer.get_added_vocab().items() if TIMESTAMP_NAME.fullmatch(name)}


MODE = "universal"


def build(context) -> UniversalDrafter:
    """A second model with its own tokenizer: drafts are carried across as text."""
    model, processor = context.assistant()
    tokenizer = context.options.assistant_tokenizer or (processor.tokenizer if processor is not None else None)
    if tokenizer is None:
        raise ModelError("universal mode needs the assistant's tokenizer: pass assistant_tokenizer=...")
    return UniversalDrafter(model, tokenizer, context.main_tokenizer, language=context.language or "en",
                            task=context.task, confidence_threshold=context.options.confidence_threshold,
                            main_model=context.main)


class UniversalDrafter(ModelDrafter):
    name = "universal"

    def __init__(self, assistant_model, assistant_tokenizer, main_tokenizer, main_prompt_length: int | None = None,
                 language: str = "en", task: str = "transcribe", confidence_threshold: float = 0.0,
                 main_model=None):
        # main_prompt_length is accepted for compatibility: the rules' begin index gives the prompt length
        super().__init__(confidence_threshold)
        assistant_model.eval()
        # an assistant whose encoder is the main one reads the main encoder output (computed at the main
        # model's compute type) instead of running a float32 copy that near-ties could tell apart; an encoder
        # the drafter never runs is not kept (loaded by name, it is freed)
        self.shares_encoder = main_model is not None and same_encoder(main_model, assistant_model)
        self.encoder = None if self.shares_encoder else assistant_model.model.encoder
        self.runner = WhisperDecoderRunner(assistant_model)
        self.assistant_tokenizer = assistant_tokenizer
        self.main_tokenizer = main_tokenizer
        self.tokens = WhisperTokens.from_model(assistant_model)
        self.language_id = self.tokens.language_token(language) if self.tokens.multilingual else None
        self.task = task
        main_ids, assistant_ids = timestamp_ids(main_tokenizer), timestamp_ids(assistant_tokenizer)
        self.to_assistant = {main_ids[name]: assistant_ids[name] for name in main_ids.keys() & assistant_ids.keys()}
        self.to_main = {assistant: main for main, assistant in self.to_assistant.items()}
        self.main_start_of_prev = main_tokenizer.convert_tokens_to_ids("<|startofprev|>")
        self.main_start = main_tokenizer.convert_tokens_to_ids("<|startoftranscript|>")

    def start(self, context: DraftContext) -> None:
        super().start(context)
        if self.shares_encoder:
            encoder_output = context.encoder_output.to(self.runner.dtype)
        else:
            features = context.input_features.to(self.runner.device, self.runner.dtype)
            encoder_output = self.encoder(features).last_hidden_state
        self.target = DecoderTarget(self.runner, self.runner.new_cache(encoder_output))
        self.timestamps = isinstance(context.rules, TimestampRules)
        # per batch row: (main prompt length, assistant prompt, assistant rules), from the first draft on
        self.rows: list[tuple[int, list[int], object]] = []

    def _begin(self, row: int, sequence: list[int]) -> tuple[int, list[int], object]:
        """The assistant's prompt for a row: its own start tokens, after the main prompt's previous text."""
        main_rules = self._rules(row)
        main_prompt = sequence[: main_rules.begin_index]
        previous = None
        if main_prompt and main_prompt[0] == self.main_start_of_prev and self.tokens.start_of_prev is not None:
            end = main_prompt.index(self.main_start) if self.main_start in main_prompt else len(main_prompt)
            previous = self._to_assistant(main_prompt[1:end])
        prompt = self.tokens.prompt(self.language_id, self.task, self.timestamps, previous or None)
        # the main rows' repetition rules, over what the assistant generates in its own vocabulary
        return len(main_prompt), prompt, self.tokens.rules(
            len(prompt), self.timestamps, repetition_penalty=main_rules.repetition_penalty,
            no_repeat_ngram_size=main_rules.no_repeat_ngram_size,
            max_timestamp_index=getattr(main_rules, "max_timestamp_index", None))

    def _to_assistant(self, main_tokens: list[int]) -> list[int] | None:
        """The main tokens in the assistant's vocabulary, or None when something cannot cross."""
        translated, run = [], []
        for token in [*main_tokens, None]:
            if token is not None and token < self.context.eos_token_id:
                run.append(token)
                continue
            if run:
                text = self.main_tokenizer.decode(run)
                if "\ufffd" in text:
                    return None  # a character split across tokens: nothing sensible to re-tokenize
                translated += self.assistant_tokenizer.encode(text, add_special_tokens=False)
                run = []
            if token is not None:
                if token not in self.to_assistant:
                    return None
                translated.append(self.to_assistant[token])
        return translated

    def _to_main(self, generated: list[int], proposed: list[int]) -> list[int]:
        """The assistant's draft in the main vocabulary, up to the first token that cannot cross."""
        current = len(generated)
        while current and generated[current - 1] < self.context.eos_token_id:
            current -= 1
        current_run = generated[current:]  # the main model's text since its last special token
        draft, run = [], []

        def cross_text() -> None:
            text = self.assistant_tokenizer.decode(run)
            text = text[: text.index("\ufffd")] if "\ufffd" in text else text
            tokens = None
            if not draft and current_run:
                tokens = continuation_tokens(self.main_tokenizer, current_run, self.main_tokenizer.decode(current_run),
                                             text)
            draft.extend(tokens if tokens is not None else self.main_tokenizer.encode(text, add_special_tokens=False))
            run.clear()

        for token in proposed:
            if token < self.tokens.end_of_text:
                run.append(token)
                continue
            if run:
                cross_text()
            if token == self.tokens.end_of_text:
                draft.append(self.context.eos_token_id)
                break
            if token not in self.to_main:
                break
            draft.append(self.to_main[token])
        else:
            if run:
                cross_text()
        return draft

    def draft(self, sequence: list[int], max_tokens: int) -> Draft:
        return self.draft_rows([sequence], [max_tokens])[0]

    def draft_rows(self, sequences: list[list[int]], max_tokens: list[int]) -> list[Draft]:
        if not self.rows:
            self.rows = [self._begin(row, sequence) for row, sequence in enumerate(sequences)]
        generated, assistant_sequences, limits = [], [], []
        for (prompt_length, assistant_prompt, _), sequence, limit in zip(self.rows, sequences, max_tokens):
            generated.append(sequence[prompt_length:])
            translated = self._to_assistant(generated[-1]) if limit > 0 else None
            assistant_sequences.append(assistant_prompt + translated if translated is not None else [])
            limits.append(limit if translated is not None else 0)
        # the assistant drafts greedily under its own rules, in its own vocabulary: deterministic drafts
        main_context, self.context = self.context, DraftContext(
            rules=self.rows[0][2], sampling=Sampling(), max_positions=self.target.max_positions,
            eos_token_id=self.tokens.end_of_text, row_rules=[rules for _, _, rules in self.rows])
        try:
            proposals = super().draft_rows(assistant_sequences, limits)
        finally:
            self.context = main_context
        return [Draft(tokens=self._to_main(row_generated, proposal.tokens)[:limit],
                      forward_passes=proposal.forward_passes)
                for row_generated, proposal, limit in zip(generated, proposals, max_tokens)]

    def keep(self, rows, memo: dict) -> None:
        if self.rows:
            self.rows = [self.rows[index] for index in rows.tolist()]
        super().keep(rows, memo)
