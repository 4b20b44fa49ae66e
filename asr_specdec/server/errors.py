"""Every error the server returns, in OpenAI's shape, mapped to HTTP codes in this one place.

`{"error": {"message": ..., "type": ..., "param": ..., "code": ...}}`: 4xx for what the client can fix, 5xx
for the server's own trouble. A bug is a 500 with one line; its traceback goes to the server log only.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..errors import AudioError, OptionError, SpecdecError
from .access_log import note

log = logging.getLogger("asr_specdec.server")

# OpenAI's error types by status; anything else 4xx is an invalid request, 5xx a server error
_TYPES = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_error",
          503: "server_error", 504: "server_error"}


class ApiError(Exception):
    """An answer that is an error: status, one-line message, and OpenAI's `param` / `code`."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None,
                 headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.headers = headers or {}

    @property
    def type(self) -> str:
        return _TYPES.get(self.status, "invalid_request_error" if self.status < 500 else "server_error")

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def from_exception(error: BaseException) -> ApiError:
    """The ApiError for anything raised while serving a request (a bug becomes a one-line 500)."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, AudioError):
        return ApiError(400, str(error), param="file", code="invalid_audio")
    if isinstance(error, OptionError):  # the request's field names are the options' Python names
        return ApiError(400, str(error), param=error.option, code="invalid_value")
    if isinstance(error, SpecdecError):
        return ApiError(400, str(error), code="invalid_request")
    log.error("unexpected error while serving a request", exc_info=error)
    return ApiError(500, f"internal server error ({type(error).__name__}); the server log has the details",
                    code="internal_error")


def _validation_error(error: RequestValidationError) -> ApiError:
    """FastAPI's parsing errors (missing fields, a number that is not one) as one 400 naming the fields."""
    problems = [(_field(problem), problem) for problem in error.errors()]
    missing = [name for name, problem in problems if problem.get("type") == "missing"]
    if missing:
        listed = ", ".join(f"'{name}'" for name in missing)
        return ApiError(400, f"missing required field{'s' if len(missing) > 1 else ''} {listed} (send "
                             "multipart/form-data)", param=missing[0], code="missing_field")
    name, problem = problems[0] if problems else (None, {})
    return ApiError(400, f"invalid value for '{name}': {problem.get('msg', 'invalid')}", param=name,
                    code="invalid_value")


def _field(problem: dict) -> str | None:
    location = [str(part) for part in problem.get("loc", ()) if part not in ("body", "query", "header")]
    return location[0] if location else None


def install_error_handlers(app: FastAPI) -> None:
    def answer(request: Request, error: ApiError):
        note(request, error=error.code)
        return error.response()

    async def api_error(request: Request, error: ApiError):
        return answer(request, error)

    async def validation(request: Request, error: RequestValidationError):
        return answer(request, _validation_error(error))

    async def http_error(request: Request, error: HTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code)
        return answer(request, ApiError(error.status_code, str(error.detail), code=code, headers=error.headers))

    async def anything(request: Request, error: Exception):
        return answer(request, from_exception(error))

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(SpecdecError, anything)
    app.add_exception_handler(Exception, anything)
