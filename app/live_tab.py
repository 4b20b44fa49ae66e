"""The Live tab: microphone chunks streamed into the library's StreamingTranscriber, one stream per recording
in the session's state; committed and tentative text and the speed-up of drafting from the last hypothesis.

Gradio runs a session's chunks one after another, so a chunk handler must never wait for a decode: it appends
the chunk's audio and returns at once, showing the latest update; the decodes run in the recording's own worker
thread, each covering all the audio appended since the last one (when decoding falls behind, updates coalesce
instead of queueing). Stop waits for the worker, then decodes the rest and commits all of it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from html import escape

import gradio as gr

from asr_specdec.errors import AudioError
from asr_specdec.whisper.live.streaming import StreamingTranscriber, StreamingUpdate

from .handlers import options_from, shown_to_user
from .messages import error_in_app_terms
from .service import TranscriptionService
from .views import table_html

RECORDING = "recording"  # the session's state between Record and the first chunk
WAITING = '<p class="live-text live-waiting">Press Record and speak: the text appears here as you talk.</p>'
NOTHING_HEARD = '<p class="live-text live-waiting">Nothing was heard: check that the microphone is on.</p>'
MIN_NEW_SECONDS = 0.5
IDLE_WORKER_SECONDS = 30.0  # a worker asked for nothing this long ends (a tab closed without Stop leaks nothing)


@dataclass
class LiveSession:
    stream: StreamingTranscriber
    lock: threading.Lock  # the decoder's: file requests on the same models wait while a chunk decodes
    last: StreamingUpdate | None = None
    decoded_seconds: float = 0.0  # audio received at the last decode
    shown: StreamingUpdate | None = None  # the update the page shows
    error: Exception | None = None  # what the worker's last decode raised, shown by the next chunk
    totals: dict = field(default_factory=lambda: {"tokens": 0, "passes": 0, "from_hypothesis": 0, "decodes": 0})
    _wanted: threading.Event = field(default_factory=threading.Event)
    _worker: threading.Thread | None = None
    _stopping: bool = False
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def request(self) -> None:
        """Ask the worker for an update (started if it is not running); returns at once."""
        with self._guard:
            if self._stopping:
                return
            self._wanted.set()
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="live-decoder", daemon=True)
                self._worker.start()

    def _work(self) -> None:
        while True:
            self._wanted.wait(IDLE_WORKER_SECONDS)
            with self._guard:  # requests set the event under the guard: none is lost between the two
                if self._stopping or not self._wanted.is_set():
                    self._worker = None
                    return
                self._wanted.clear()
            try:
                self.decode()
            except Exception as error:  # noqa: BLE001 - handed to the next chunk, which shows it
                self.error = error

    def stop_worker(self) -> None:
        """Let the worker finish the decode it is running, then end it; no decode starts after this."""
        with self._guard:
            self._stopping, worker = True, self._worker
            self._wanted.set()
        if worker is not None:
            worker.join()

    def decode(self, final: bool = False) -> StreamingUpdate | None:
        with self.lock:
            update = self.stream.finish() if final else self.stream.update()
        self.decoded_seconds = self.stream.received_seconds
        if update is not None:
            self.last = update
            if update.stats is not None:
                self.totals["tokens"] += update.stats.new_tokens
                self.totals["passes"] += update.stats.main_passes
                self.totals["decodes"] += 1
            if update.drafting is not None:
                self.totals["from_hypothesis"] += update.drafting.hypothesis_accepted
        return update


class LiveHandlers:
    def __init__(self, service: TranscriptionService):
        self.service = service

    def start(self):
        """A new recording: a new stream (made at its first chunk), the views cleared."""
        return RECORDING, WAITING, ""

    def chunk(self, session: LiveSession | str | None, audio, *decoding):
        """One chunk of microphone audio, (rate, samples) or None: (session, text, telemetry). A chunk that
        arrives after Stop (session None) is dropped: it must not start a stream of its own."""
        if audio is None or session is None:
            return session, gr.skip(), gr.skip()
        with shown_to_user():
            if session == RECORDING:
                session = self._session(decoding)
            rate, samples = audio
            try:
                session.stream.append(samples, sample_rate=rate)
            except AudioError as error:  # a bad chunk: said once, the stream goes on
                gr.Warning(error_in_app_terms(error))
                return session, gr.skip(), gr.skip()
            if session.error is not None:  # the worker's last decode failed: said here, once
                error, session.error = session.error, None
                raise error
            if session.stream.received_seconds - session.decoded_seconds >= MIN_NEW_SECONDS:
                session.request()  # decoded in the worker: this chunk does not wait for it
            update = session.last
            if update is None or update is session.shown:
                return session, gr.skip(), gr.skip()
            session.shown = update
            return session, live_text_html(update), live_telemetry_html(session)

    def stop(self, session: LiveSession | str | None):
        """Recording stopped: the rest decoded and everything committed; the stream is dropped."""
        if not isinstance(session, LiveSession):
            return None, NOTHING_HEARD, ""
        with shown_to_user():
            session.stop_worker()
            update = session.decode(final=True)
            if not update.committed.strip():
                return None, NOTHING_HEARD, live_telemetry_html(session)
            return None, live_text_html(update), live_telemetry_html(session)

    def _session(self, decoding: tuple) -> LiveSession:
        options, _ = options_from(*decoding)
        options, note = self.service.paired(options)
        if note:
            gr.Warning(note)
        asr, lock = self.service.decoder(options)
        return LiveSession(asr.stream(language=options.language), lock)


def live_text_html(update: StreamingUpdate) -> str:
    """Committed text, then the tentative rest greyed (it may still change)."""
    committed = f'<span class="committed">{escape(update.committed)}</span>' if update.committed else ""
    tentative = f' <span class="tentative">{escape(update.tentative)}</span>' if update.tentative else ""
    if not (committed or tentative):
        return '<p class="live-text live-waiting">Listening…</p>'
    return f'<p class="live-text">{committed}{tentative}</p>'


def live_telemetry_html(session: LiveSession) -> str:
    update, totals = session.last, session.totals
    if update is None:
        return ""
    rows = [["audio heard", f"{update.audio_seconds:.1f} s"],
            ["last decode", f"{update.decode_seconds:.2f} s of {update.buffer_seconds:.1f} s buffered audio"],
            ["committed text trails the audio by",
             "nothing committed yet" if update.lag_seconds is None else f"{update.lag_seconds:.1f} s"]]
    if totals["tokens"]:
        rows += [["tokens from the last hypothesis", f"{totals['from_hypothesis']} of {totals['tokens']}"],
                 ["main passes", f"{totals['passes']} for {totals['tokens']} tokens "
                                 f"({totals['tokens'] / max(totals['passes'], 1):.1f} tokens per pass; plain decoding "
                                 "needs one pass per token)"]]
    return table_html(["measure", "value"], rows)
