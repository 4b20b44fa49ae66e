"""Serving one request: check it against the loaded model, read its audio, run the ordinary
`SpeculativeWhisper.transcribe` in a worker thread with its windows routed through the shared batcher, and
wait for it without blocking the event loop, until the answer, the time-out, the client's disconnection or the
server's shutdown (each of which cancels the work still queued)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from ..errors import SpecdecError
from ..whisper import load_audio
from ..whisper.options import for_model
from .access_log import note
from .batcher import Cancelled, Ticket, WindowBatcher
from .errors import ApiError, from_exception
from .forms import AudioRequest
from .limits import Admission, upload_too_large
from .responses import delta_event, done_event, server_sent_event
from .settings import ServerSettings
from .transcribers import Transcribers

SAMPLE_RATE = 16000
POLL_SECONDS = 0.1  # how often a waiting request looks for its client's disconnection
SHUTTING_DOWN = "the server is shutting down"
CLIENT_GONE = "the client disconnected"
TIMED_OUT = "timed out"


@dataclass
class Outcome:
    result: object  # TranscriptionResult
    telemetry: dict


class RequestDecoder:
    """One request's window decoder: its windows go to the shared batcher under its ticket. OpenAI's `prompt`
    becomes previous-text conditioning (<|startofprev|>), as openai-whisper's initial_prompt: before the first
    window, and before every later window that is conditioned on the text before it."""

    def __init__(self, batcher: WindowBatcher, pipeline, ticket: Ticket, prompt_tokens: list[int]):
        self.batcher, self.pipeline, self.ticket = batcher, pipeline, ticket
        self.prompt_tokens, self.first = prompt_tokens, True

    def __call__(self, windows, speculation, generator):
        if self.prompt_tokens:
            windows = [replace(window, previous=self.prompt_tokens + (window.previous or []))
                       if self.first or window.previous else window for window in windows]
        self.first = False
        # greedy rows draw nothing from the generator (a run's first try when the server has a fallback
        # ladder): without it they may share batches with other requests
        if not any(window.sampling.do_sample for window in windows):
            generator = None
        return self.batcher.decode(self.pipeline, windows, speculation, generator, self.ticket)


class TranscriptionService:
    def __init__(self, transcribers: Transcribers, batcher: WindowBatcher, settings: ServerSettings,
                 admission: Admission):
        self.transcribers, self.batcher, self.settings, self.admission = transcribers, batcher, settings, admission
        self.model_names = settings.served_names(transcribers.default.main_name)
        self.started = int(time.time())
        self._executor = ThreadPoolExecutor(max_workers=settings.max_queue + 1, thread_name_prefix="transcribe")
        self._slots = asyncio.Semaphore(settings.max_concurrent) if settings.max_concurrent else None
        self._tickets: set[Ticket] = set()
        self._tokenizer_lock = threading.Lock()

    @property
    def default(self):
        return self.transcribers.default

    def check(self, request: AudioRequest) -> None:
        """Raise ApiError for what this server cannot do for `request`, before any work is queued."""
        if request.model not in self.model_names:
            raise ApiError(404, f"model '{request.model}' does not exist here; this server serves "
                                f"{', '.join(self.model_names)}", param="model", code="model_not_found")
        tokens = self.default.tokens
        self.check_language(request.language)
        if request.mode is not None and request.mode not in self.transcribers.modes:
            raise ApiError(400, self.transcribers.refusal(request.mode), param="mode", code="invalid_value")
        limits = self.settings.limits  # this deployment's, at most the options' own
        for name in ("beam_size", "best_of", "num_draft_tokens", "diarize"):
            value = getattr(request, name)
            limits.check(name, None if isinstance(value, bool) else value)
        # the request's options as this model takes them (an English-only model cannot translate)
        for_model(request.options(self.default.options), tokens.multilingual, warn=False)
        if request.prompt is not None and tokens.start_of_prev is None:
            raise ApiError(400, "this model has no <|startofprev|> token, so it cannot take a prompt",
                           param="prompt", code="unsupported_value")

    def check_language(self, language: str | None) -> str | None:
        """The language a request's `language` decodes: refused unless the model knows it; an English-only model
        decodes English whatever is asked (whisper/options.py for_model)."""
        tokens = self.default.tokens
        if language is None or not tokens.multilingual:
            return "en" if language is not None else None
        try:
            tokens.language_token(language)
        except SpecdecError as error:
            raise ApiError(400, str(error), param="language", code="invalid_value") from None
        return language

    def track(self, ticket: Ticket) -> None:
        """Count `ticket` among the work that shutdown cancels."""
        self._tickets.add(ticket)

    def untrack(self, ticket: Ticket) -> None:
        self._tickets.discard(ticket)

    async def exclusive(self, function, ticket: Ticket):
        """`function()` on the decoding thread between batches (a live stream's update), awaited; Cancelled
        becomes the ticket's error (503 while shutting down)."""
        try:
            return await self._submit(self.batcher.call, function, ticket)
        except Cancelled as error:
            raise self._error(error, ticket) from None

    async def load(self, request: AudioRequest, deadline: float):
        """The upload's samples (decoded in a worker thread), within the size and duration limits."""
        if len(request.audio) > self.settings.max_upload_bytes:
            raise upload_too_large(self.settings.max_upload_mb)
        loop = asyncio.get_running_loop()
        try:
            samples = await asyncio.wait_for(self._submit(load_audio, request.audio),
                                             max(deadline - loop.time(), 0.001))
        except TimeoutError:
            raise ApiError(504, "reading the audio took longer than the request time-out", code="timeout") from None
        except SpecdecError as error:
            name = request.filename or "the upload"
            message = str(error).replace("audio bytes", name, 1)
            raise ApiError(400, message, param="file", code="invalid_audio") from None
        seconds = len(samples) / SAMPLE_RATE
        if seconds > self.settings.max_audio_seconds:
            raise ApiError(413, f"the audio lasts {seconds:.0f} s; this server takes at most "
                                f"{self.settings.max_audio_seconds:g} s", param="file", code="audio_too_long")
        return samples

    def deadline(self) -> float:
        return asyncio.get_running_loop().time() + self.settings.request_timeout

    async def transcribe(self, request: AudioRequest, samples, http_request, deadline: float) -> Outcome:
        ticket = Ticket()
        self._tickets.add(ticket)
        try:
            async with self._slot(ticket, http_request, deadline):
                future = self._submit(self._transcribe, request, samples, ticket, None)
                try:
                    result = await self._wait(future, ticket, http_request, deadline)
                except BaseException:  # the answer will not be read: queued windows are dropped
                    ticket.cancel(ticket.reason or CLIENT_GONE)
                    raise
                return Outcome(result, self._telemetry(result, ticket))
        except Cancelled as error:  # while waiting for a slot
            raise self._error(error, ticket) from None
        finally:
            self._tickets.discard(ticket)

    async def stream(self, request: AudioRequest, samples, http_request, deadline: float) -> AsyncIterator[str]:
        """Server-sent events: a `transcript.text.delta` per segment as soon as it is final, then
        `transcript.text.done`; an error after the stream started is an event with OpenAI's error body."""
        ticket = Ticket()
        self._tickets.add(ticket)
        loop = asyncio.get_running_loop()
        events: asyncio.Queue = asyncio.Queue()
        future = None
        try:
            async with self._slot(ticket, http_request, deadline):
                future = self._submit(self._transcribe, request, samples, ticket,
                                      lambda segment: loop.call_soon_threadsafe(events.put_nowait, segment))
                future.add_done_callback(lambda _: events.put_nowait(None))
                index = 0
                while (segment := await self._next_event(events, ticket, deadline)) is not None:
                    yield delta_event(index, segment)
                    index += 1
                result = future.result()
                yield done_event(result, self._telemetry(result, ticket))
        except Exception as error:
            failure = self._error(error, ticket)
            note(http_request, error=failure.code)
            yield server_sent_event(failure.body())
        finally:
            if future is None or not future.done():
                ticket.cancel(ticket.reason or CLIENT_GONE)
            self._tickets.discard(ticket)

    def drain(self, timeout: float) -> None:
        """Shutdown has begun: refuse new requests now, and after `timeout` seconds cancel those still running
        (they answer 503). Safe to call from a signal handler."""
        self.admission.draining = True
        timer = threading.Timer(timeout, self.cancel_all, [SHUTTING_DOWN])
        timer.daemon = True
        timer.start()

    def cancel_all(self, reason: str) -> None:
        for ticket in list(self._tickets):
            ticket.cancel(reason)

    def close(self) -> None:
        self.cancel_all(SHUTTING_DOWN)
        self.batcher.close(timeout=self.settings.shutdown_timeout)
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _submit(self, function, *args) -> asyncio.Future:
        """`function(*args)` in a worker thread. Whoever stops waiting for it (time-out, disconnection) leaves
        its outcome behind, so it is consumed here rather than reported as never retrieved."""
        future = asyncio.get_running_loop().run_in_executor(self._executor, function, *args)
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        return future

    def _transcribe(self, request: AudioRequest, samples, ticket: Ticket, on_segment):
        """The worker thread's part: the ordinary transcribe, its windows decoded by the shared batcher."""
        ticket.check()
        transcriber = self.transcribers.get(request.mode, request.num_draft_tokens)
        decoder = RequestDecoder(self.batcher, transcriber.pipeline, ticket,
                                 self._prompt_tokens(transcriber, request.prompt))
        audio = request.audio if request.diarize else samples  # diarizing: a stereo file's channels may be speakers
        return transcriber.transcribe(audio, options=request.options(transcriber.options), window_decoder=decoder,
                                      on_segment=on_segment)

    def _prompt_tokens(self, transcriber, prompt: str | None) -> list[int]:
        if not prompt:
            return []
        with self._tokenizer_lock:  # a fast tokenizer may not be entered by two threads when it changes settings
            return transcriber.processor.tokenizer.encode(" " + prompt.strip(), add_special_tokens=False)

    def _slot(self, ticket: Ticket, http_request, deadline: float):
        return _Slot(self._slots, ticket, http_request, deadline)

    async def _wait(self, future, ticket: Ticket, http_request, deadline: float):
        loop = asyncio.get_running_loop()
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                ticket.cancel(TIMED_OUT)
                raise self._error(Cancelled(TIMED_OUT), ticket)
            done, _ = await asyncio.wait({future}, timeout=min(POLL_SECONDS, remaining))
            if done:
                try:
                    return future.result()
                except Exception as error:
                    raise self._error(error, ticket) from None
            if await http_request.is_disconnected():
                ticket.cancel(CLIENT_GONE)
                raise self._error(Cancelled(CLIENT_GONE), ticket)
            if ticket.cancelled:  # the server is shutting down: the worker will stop at its next window
                raise self._error(Cancelled(ticket.reason), ticket)

    async def _next_event(self, events: asyncio.Queue, ticket: Ticket, deadline: float):
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            return await asyncio.wait_for(events.get(), max(remaining, 0.001))
        except TimeoutError:
            ticket.cancel(TIMED_OUT)
            raise Cancelled(TIMED_OUT) from None

    def _error(self, error: BaseException, ticket: Ticket) -> ApiError:
        if isinstance(error, Cancelled):
            reason = ticket.reason or str(error)
            if reason == TIMED_OUT:
                return ApiError(504, f"the request took longer than the server's time-out of "
                                     f"{self.settings.request_timeout:g} s", code="timeout")
            if reason == SHUTTING_DOWN:
                return ApiError(503, SHUTTING_DOWN, code="server_shutting_down",
                                headers={"Retry-After": str(self.settings.retry_after_seconds)})
            return ApiError(499, reason, code="client_closed_request")
        return from_exception(error)

    def _telemetry(self, result, ticket: Ticket) -> dict:
        return {"mode": result.mode, "main_model": result.main_model, "assistant_model": result.assistant_model,
                "tokens": result.tokens, "stats": result.stats.as_dict(), "batch_rows": ticket.batch_rows,
                "batch_wait_seconds": round(ticket.wait_seconds, 4)}


class _Slot:
    """A place among the requests transcribed at once (`max_concurrent`), waited for like the answer itself:
    until the deadline, the client's disconnection or shutdown."""

    def __init__(self, semaphore: asyncio.Semaphore | None, ticket: Ticket, http_request, deadline: float):
        self.semaphore, self.ticket, self.http_request, self.deadline = semaphore, ticket, http_request, deadline

    async def __aenter__(self):
        if self.semaphore is None:
            return
        loop = asyncio.get_running_loop()
        while True:
            self.ticket.check()
            remaining = self.deadline - loop.time()
            if remaining <= 0:
                self.ticket.cancel(TIMED_OUT)
                self.ticket.check()
            try:
                await asyncio.wait_for(self.semaphore.acquire(), min(POLL_SECONDS, remaining))
                return
            except TimeoutError:
                if await self.http_request.is_disconnected():
                    self.ticket.cancel(CLIENT_GONE)

    async def __aexit__(self, *exc_info):
        if self.semaphore is not None:
            self.semaphore.release()
