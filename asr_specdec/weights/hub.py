"""The model hub as a source of weights: whether it is reachable, what looks like a hub id, and the one-line
error for a model that would not load from it or from a local directory."""

from __future__ import annotations

import os
import re
import socket
import threading
from urllib.parse import urlparse

from ..errors import ModelError

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def looks_like_path(spec: str) -> bool:
    # "owner/name" is a hub id even though it contains a slash
    return spec.startswith((".", "~", os.sep)) or not _HUB_ID.fullmatch(spec)


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the model hub accepts a TCP connection within `timeout` seconds (False when HF_HUB_OFFLINE)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}:
        return False
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    address = (endpoint.hostname, endpoint.port or (80 if endpoint.scheme == "http" else 443))
    connected = []

    def probe():
        try:
            socket.create_connection(address, timeout=timeout).close()
            connected.append(True)
        except OSError:
            pass

    # a thread, because name resolution ignores socket timeouts
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(connected)


def load_failure(what: str, location, local_only: bool, offline: str, error: Exception) -> ModelError:
    """One line for a model that would not load: from its local `location`, or (location None) from the hub."""
    reason = " ".join(str(error).split())[:300]
    if location is not None:
        return ModelError(f"could not load {what} from {location}: {reason}")
    hub_state = "the model hub is unreachable" if local_only else "the model hub could not provide it"
    return ModelError(f"could not load {what}: not {offline}, not a local directory, and {hub_state}: {reason}")
