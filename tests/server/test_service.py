"""One request's window decoder: its windows reach the batcher under its ticket, with OpenAI's prompt as the
previous text of the first window and of every window conditioned on the text before it."""

from __future__ import annotations

from asr_specdec.core.logits import Sampling
from asr_specdec.server.batcher import Ticket
from asr_specdec.server.service import RequestDecoder
from asr_specdec.whisper.runtime.pipeline import Window


class RecordingBatcher:
    def __init__(self):
        self.calls = []

    def decode(self, pipeline, windows, speculation, generator, ticket):
        self.calls.append((pipeline, windows, speculation, generator, ticket))
        return [f"row {index}" for index in range(len(windows))]


def test_the_prompt_goes_first_on_the_first_window_and_on_conditioned_ones():
    batcher, ticket, pipeline, speculation = RecordingBatcher(), Ticket(), object(), object()
    decoder = RequestDecoder(batcher, pipeline, ticket, [11, 12])
    assert decoder([Window(None, task="translate")], speculation, None) == ["row 0"]
    decoder([Window(None, previous=[13])], speculation, None)  # a window conditioned on the text before it
    decoder([Window(None)], speculation, None)  # a later window without conditioning
    assert [call[1][0].previous for call in batcher.calls] == [[11, 12], [11, 12, 13], None]
    assert batcher.calls[0][1][0].task == "translate"
    assert all(call[0] is pipeline and call[2] is speculation and call[4] is ticket for call in batcher.calls)


def test_without_a_prompt_windows_pass_unchanged():
    batcher = RecordingBatcher()
    windows = [Window(None, previous=[5]), Window(None)]
    RequestDecoder(batcher, object(), Ticket(), [])(windows, None, None)
    assert batcher.calls[0][1] == windows


def test_greedy_windows_go_without_the_runs_generator_so_that_they_can_share_batches():
    batcher, generator = RecordingBatcher(), object()
    decoder = RequestDecoder(batcher, object(), Ticket(), [])
    decoder([Window(None)], None, generator)  # a first, greedy try of a run that may sample later (fallback)
    sampled = Window(None, sampling=Sampling(do_sample=True, temperature=0.4))
    decoder([sampled, sampled], None, generator)  # a fallback retry: sampled rows keep the run's generator
    decoder([Window(None), sampled], None, generator)  # one sampled row: the decode draws from the generator
    assert [call[3] for call in batcher.calls] == [None, generator, generator]
