"""Joining a Ray cluster by address, with one line that names what is wrong: nothing listens there, it is no Ray
head, the head wants a token this process does not send (or sends a wrong one), or it runs another Ray or Python.

Before `ray.init` the head is asked, through Ray's own GCS client, who it is: that answers in about a second, where
`ray.init` retries a refused token or a wrong address for 20 s and logs each try. A head on this machine
(a loopback address) is joined as Ray joins a local cluster it finds by itself:
- Ray turns on token authentication for a local cluster when a token exists (~/.ray/auth_token, RAY_AUTH_TOKEN or
  RAY_AUTH_TOKEN_PATH), and `ray start --head` does so on a machine where any Ray has made one; a driver given an
  explicit address does not, so it is turned on here when the head asks for it and this machine has a token.
- Ray rewrites 127.0.0.1 to this machine's network address, where a head started on loopback only
  (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 ray start --head --node-ip-address 127.0.0.1`) does not listen; when the head
  says its node address is a loopback one, the driver keeps loopback too.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import platform
import socket
import threading
from collections.abc import Callable, Iterator

from .errors import EvalError

# Ray retries an unreachable or wrong address for minutes; a user who typed a wrong --address wants one line now
REACH_SECONDS = 5
JOIN_SECONDS = 25
TOKEN_HELP = ("Ray reads the token from RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH names, or ~/.ray/auth_token; "
              "`ray get-auth-token` on the head prints it")


def host_and_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a GCS address HOST:PORT; None for "auto", Ray Client (ray://) and anything else Ray resolves."""
    if address == "auto" or address.startswith("ray://"):
        return None
    host, _, port = address.rpartition(":")
    return (host.strip("[]"), int(port)) if host and port.isdigit() else None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_reachable(address: str) -> None:
    """Refuse at once an address whose host takes no connection (Ray Client and "auto" are Ray's to resolve)."""
    host_port = address.removeprefix("ray://").rsplit(":", 1)
    if address == "auto" or len(host_port) != 2 or not host_port[1].isdigit():
        return
    try:
        socket.create_connection((host_port[0], int(host_port[1])), timeout=REACH_SECONDS).close()
    except OSError as error:
        raise EvalError(f"cannot reach a Ray head at {address}: {error.strerror or error} (start one with "
                        "`ray start --head` and pass its address, e.g. HEAD:6379 or ray://HEAD:10001)") from None


def within(seconds: float, address: str, call: Callable[[], object]) -> object:
    """Run `call`, giving up after `seconds`: an address that answers but is not a Ray head keeps Ray retrying for
    minutes. The abandoned attempt is a daemon thread. Ray's own errors are returned, not raised, for the caller to
    name."""
    outcome: dict = {}

    def attempt():
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: B036 (Ray raises SystemExit-like errors from its own threads)
            outcome["error"] = error

    thread = threading.Thread(target=attempt, name="ray-join", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise EvalError(f"could not join a Ray cluster at {address} within {seconds:g} s: is it the address of a "
                        "running Ray head (its GCS port, 6379 by default, or ray://HEAD:10001)?")
    if "error" in outcome:
        return outcome["error"]
    return outcome.get("value")


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:300] or type(error).__name__


def token_mode() -> bool:
    from ray._raylet import AuthenticationMode, get_authentication_mode

    return get_authentication_mode() == AuthenticationMode.TOKEN


def has_token() -> bool:
    from ray._raylet import AuthenticationTokenLoader

    return AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True)


def enable_local_token() -> bool:
    """Ray's rule for a local cluster: token authentication on when RAY_AUTH_MODE is unset and a token exists."""
    from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available

    logging.getLogger("ray._private.authentication").setLevel(logging.ERROR)  # its "enabled" notice is ours to give
    return maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def token_error(address: str) -> EvalError:
    if not token_mode():
        return EvalError(f"the Ray head at {address} requires a token (Ray's token authentication) and this process "
                         f"sends none: set RAY_AUTH_MODE=token here too; {TOKEN_HELP}")
    if not has_token():
        return EvalError(f"RAY_AUTH_MODE=token but this machine has no Ray token for the head at {address}: "
                         f"{TOKEN_HELP}")
    return EvalError(f"the Ray head at {address} refused this process's token (wrong token): {TOKEN_HELP}")


def ask_head(address: str) -> tuple[dict, str]:
    """The head's cluster metadata (Ray and Python versions) and its node address, from its GCS."""
    from ray._raylet import GcsClient

    client = GcsClient(address=address)
    raw = client.internal_kv_get(b"CLUSTER_METADATA", namespace=b"cluster", timeout=REACH_SECONDS)
    metadata = json.loads(raw) if raw else {}
    heads = [node.node_manager_address for node in client.get_all_node_info(timeout=REACH_SECONDS).values()
             if node.is_head_node]
    return metadata, heads[0] if heads else ""


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Ray's C++ client logs each refused or failed call on file descriptor 2; the one line saying why is ours."""
    saved = os.dup(2)
    with open(os.devnull, "wb") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def probe(address: str, seconds: float) -> tuple[dict, str]:
    from ray.exceptions import AuthenticationError

    if token_mode() and not has_token():  # Ray's client aborts the process on this
        raise token_error(address)
    with native_stderr_silenced():
        answer = within(seconds, address, lambda: ask_head(address))
        if isinstance(answer, AuthenticationError) and is_loopback(host_and_port(address)[0]) and not token_mode() \
                and enable_local_token():
            answer = within(seconds, address, lambda: ask_head(address))
    if isinstance(answer, AuthenticationError):
        raise token_error(address)
    if isinstance(answer, BaseException):
        raise EvalError(f"could not join a Ray cluster at {address}: {one_line(answer)}")
    return answer


def check_versions(address: str, metadata: dict) -> None:
    import ray

    theirs = (metadata.get("ray_version"), metadata.get("python_version"))
    ours = (ray.__version__, platform.python_version())
    if theirs[0] and theirs != ours:
        raise EvalError(f"the Ray head at {address} runs Ray {theirs[0]} on Python {theirs[1]}, this process Ray "
                        f"{ours[0]} on Python {ours[1]}: Ray joins only the same versions (install those here)")


def keep_loopback() -> None:
    """Ray maps a loopback address to this machine's network address unless clusters are off (its setting for
    Windows and macOS, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, read when Ray is imported: set here on the module)."""
    import ray._private.ray_constants as ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def join(ray, address: str, **init_arguments) -> None:
    """ray.init(address=address, ...) or one line saying why not."""
    check_reachable(address)
    parsed = host_and_port(address)
    if parsed:
        metadata, head_host = probe(address, JOIN_SECONDS)
        check_versions(address, metadata)
        if is_loopback(parsed[0]) and is_loopback(head_host):
            keep_loopback()
    error = within(JOIN_SECONDS, address, lambda: ray.init(address=address, **init_arguments))
    if isinstance(error, BaseException):
        raise EvalError(f"could not join a Ray cluster at {address}: {one_line(error)}")
