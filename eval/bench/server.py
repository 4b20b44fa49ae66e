"""Server load benchmark: 1, 4, 8 and 16 concurrent clients sending the shared clips to the transcription server,
with dynamic batching, with batching off, and one request at a time; throughput, latency, every answer checked.

    python -m eval.bench.server [--clients 1,4,8,16] [--requests 24] [--repeats 1] [--max-batch-size 8]

Starts three servers on loopback ports (`python -m asr_specdec.serve`, the same model and mode each): batched
(`--max-batch-size 8`), unbatched (`--max-batch-size 1`: windows decoded one by one, requests still admitted
concurrently) and one-at-a-time (`--max-batch-size 1 --max-concurrent 1`). Each measurement is `--requests`
requests (the clips in turn) from N clients in a closed loop, each client sending its next request when its last
one is answered. The three servers are measured in turn within every round (the order rotates), so the ratios
compare runs taken side by side. Every answer's text is compared with the clip's solo transcript (each clip sent
alone to the one-at-a-time server first). The run stops by itself; `--time-limit` bounds it (what was measured is
still reported). Prints a Markdown table and the ratios at each client count; writes JSON and the servers' logs
to `--output`. Next to wall-clock throughput it reports audio seconds per second of the server's CPU time,
which other programs sharing the machine disturb far less.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .cli import bench_parser
from .harness import add_common_flags, manifest_entries, timed

SERVERS = {
    "batched": [],  # the server's own --max-batch-size, set below
    "unbatched": ["--max-batch-size", "1"],
    "one-at-a-time": ["--max-batch-size", "1", "--max-concurrent", "1"],
}
START_TIMEOUT = 300.0


@dataclass
class Clip:
    name: str
    data: bytes
    seconds: float


@dataclass
class Measurement:
    server: str
    clients: int
    round: int
    requests: int = 0
    wall_seconds: float = 0.0
    audio_seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)  # clips whose answer differed from their solo transcript
    failed: list[str] = field(default_factory=list)  # clips whose request failed
    mean_batch_rows: float | None = None
    server_cpu_seconds: float | None = None

    @property
    def audio_per_cpu_second(self) -> float | None:
        return self.audio_seconds / self.server_cpu_seconds if self.server_cpu_seconds else None

    @property
    def throughput(self) -> float:
        return self.audio_seconds / self.wall_seconds if self.wall_seconds else 0.0

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))] if ordered else 0.0


class Server:
    """One `python -m asr_specdec.serve` process on a free loopback port; its output goes to a log file."""

    def __init__(self, name: str, options: list[str], logs: Path):
        self.name = name
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "asr_specdec.serve", "--host", "127.0.0.1", "--port", str(self.port),
                   *options]
        self.log_path = logs / f"server-{name}.log"
        self.log = self.log_path.open("w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, deadline: float) -> None:
        import httpx

        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the {self.name} server exited; see {self.log_path}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the {self.name} server did not start within {START_TIMEOUT:.0f} s; see {self.log_path}")

    def cpu_seconds(self) -> float | None:
        """CPU time the server process (and the ffmpeg it waited for) has used: unlike wall time, other
        programs on the machine do not change it much. None where /proc is missing."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def batch_counts(self) -> dict:
        import httpx

        return httpx.get(self.url + "/health", timeout=10).json()["batches"]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


def serve_options(main: str, mode: str | None = None, language: str | None = None,
                  threads: int | None = None) -> list[str]:
    """The serve command's options for a model, and a mode, a language and a thread count where given (None: the
    server's own)."""
    return ["--main", main, *(["--mode", mode] if mode else []), *(["--language", language] if language else []),
            *(["--threads", str(threads)] if threads else [])]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def posted(client, url: str, clip: Clip, **form) -> dict:
    """The server's JSON answer to `clip` sent for transcription with `form`'s fields (response_format, ...)."""
    response = client.post(url + "/v1/audio/transcriptions", data={"model": "whisper-1", **form},
                           files={"file": (clip.name, clip.data)}, timeout=600)
    response.raise_for_status()
    return response.json()


def transcribe(client, url: str, clip: Clip) -> str:
    return posted(client, url, clip)["text"]


def run_load(server: Server, clips: list[Clip], references: dict[str, str], clients: int, requests: int,
             round_index: int) -> Measurement:
    """`requests` requests (the clips in turn) from `clients` closed-loop clients."""
    import httpx

    measurement = Measurement(server.name, clients, round_index)
    before, cpu_before = server.batch_counts(), server.cpu_seconds()
    next_index, lock = [0], threading.Lock()

    def client_loop() -> None:
        with httpx.Client() as client:
            while True:
                with lock:
                    index = next_index[0]
                    next_index[0] += 1
                if index >= requests:
                    return
                clip = clips[index % len(clips)]
                try:
                    text, latency = timed(transcribe, client, server.url, clip)
                except httpx.HTTPError as error:
                    with lock:
                        measurement.failed.append(f"{clip.name}: {error}")
                    continue
                with lock:
                    measurement.latencies.append(latency)
                    measurement.audio_seconds += clip.seconds
                    measurement.requests += 1
                    if text != references[clip.name]:
                        measurement.wrong.append(clip.name)

    def all_clients() -> None:
        threads = [threading.Thread(target=client_loop) for _ in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    measurement.wall_seconds = timed(all_clients)[1]
    after, cpu_after = server.batch_counts(), server.cpu_seconds()
    if cpu_before is not None and cpu_after is not None:
        measurement.server_cpu_seconds = cpu_after - cpu_before
    batches = after["batches"] - before["batches"]
    measurement.mean_batch_rows = (after["rows"] - before["rows"]) / batches if batches else None
    return measurement


def read_clip(path: Path) -> Clip:
    from asr_specdec.whisper import load_audio

    data = path.read_bytes()
    return Clip(path.name, data, len(load_audio(data)) / 16000)


def load_clips(folder: Path) -> list[Clip]:
    return [read_clip(folder / entry["audio"]) for entry in manifest_entries(folder)]


def table(measurements: list[Measurement]) -> list[str]:
    lines = ["| clients | server | round | requests | wall s | audio s / s | p50 latency s | p95 latency s | "
             "server CPU s | audio s / CPU s | mean batch rows | answers equal to solo |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in measurements:
        rows = "" if m.mean_batch_rows is None else f"{m.mean_batch_rows:.2f}"
        cpu = "" if m.server_cpu_seconds is None else f"{m.server_cpu_seconds:.1f}"
        efficiency = "" if m.audio_per_cpu_second is None else f"{m.audio_per_cpu_second:.2f}"
        correct = f"{m.requests - len(m.wrong)}/{m.requests}" + (f", {len(m.failed)} failed" if m.failed else "")
        lines.append(f"| {m.clients} | {m.server} | {m.round + 1} | {m.requests} | {m.wall_seconds:.1f} | "
                     f"{m.throughput:.2f} | {m.percentile(0.5):.2f} | {m.percentile(0.95):.2f} | {cpu} | "
                     f"{efficiency} | {rows} | {correct} |")
    return lines


def ratios(measurements: list[Measurement]) -> list[str]:
    """Batched over the others, per client count, from summed times of the same rounds: throughput (audio
    seconds per wall second) and efficiency (audio seconds per second of the server's CPU time)."""
    lines = []
    for clients in sorted({m.clients for m in measurements}):
        wall, cpu = {}, {}
        for name in SERVERS:
            runs = [m for m in measurements if m.clients == clients and m.server == name]
            if runs:
                wall[name] = sum(m.audio_seconds for m in runs) / sum(m.wall_seconds for m in runs)
                if all(m.server_cpu_seconds for m in runs):
                    cpu[name] = sum(m.audio_seconds for m in runs) / sum(m.server_cpu_seconds for m in runs)
        for label, values in (("throughput", wall), ("audio per CPU second", cpu)):
            if "batched" in values and len(values) > 1:
                parts = [f"{values['batched'] / value:.2f}x {name}" for name, value in values.items()
                         if name != "batched"]
                lines.append(f"{clients} clients: batched {label} = " + ", ".join(parts))
    return lines


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.server")
    add_common_flags(parser, repeats_help="rounds over every client count and server", threads=None,
                     threads_help="torch threads of each server")
    parser.add_argument("--mode", default=None, help="drafting mode (default: the server's own)")
    parser.add_argument("--language", default=None, help="e.g. en (default: detected per request)")
    parser.add_argument("--clients", default="1,4,8,16")
    parser.add_argument("--requests", type=int, default=24, help="requests per measurement")
    parser.add_argument("--max-batch-size", type=int, default=8, help="of the batched server")
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--time-limit", type=float, default=3600.0, help="seconds; stop measuring after this")
    parser.add_argument("--output", default="bench-results/server")
    args = parser.parse_args(argv)
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    clients = [int(value) for value in args.clients.split(",")]
    names = [name for name in args.servers.split(",") if name]
    unknown = set(names) - set(SERVERS)
    if unknown or "one-at-a-time" not in names:
        print(f"error: --servers takes {', '.join(SERVERS)} and needs one-at-a-time (for the solo transcripts)",
              file=sys.stderr)
        return 2
    clips = load_clips(Path(args.audio))
    print(f"{len(clips)} clips, {sum(clip.seconds for clip in clips):.1f} s of audio; {args.requests} requests per "
          f"measurement; clients {clients}; {args.repeats} round(s); {os.cpu_count()} CPUs", flush=True)
    deadline = time.monotonic() + args.time_limit
    servers: dict[str, Server] = {}
    measurements: list[Measurement] = []
    try:
        for name in names:
            extra = ["--max-batch-size", str(args.max_batch_size)] if name == "batched" else SERVERS[name]
            options = serve_options(args.main, args.mode, args.language, args.threads)
            servers[name] = Server(name, [*options, "--max-queue", "64", *extra], output)
        for server in servers.values():
            server.wait_ready(time.monotonic() + START_TIMEOUT)
        import httpx

        with httpx.Client() as client:
            references = {clip.name: transcribe(client, servers["one-at-a-time"].url, clip) for clip in clips}
            for server in servers.values():  # warm-up: first requests pay one-off allocation costs
                transcribe(client, server.url, clips[0])
        # progress on stderr: stdout is the report (the README region), which has the whole table at the end
        print("solo transcripts taken; measuring", file=sys.stderr, flush=True)
        for round_index in range(args.repeats):
            for count in clients:
                order = names[round_index % len(names):] + names[: round_index % len(names)]
                for name in order:
                    if time.monotonic() > deadline:
                        raise TimeoutError
                    measurement = run_load(servers[name], clips, references, count, args.requests, round_index)
                    measurements.append(measurement)
                    print(table([measurement])[-1], file=sys.stderr, flush=True)
    except TimeoutError:
        print(f"time limit of {args.time_limit:.0f} s reached: reporting what was measured", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted: reporting what was measured", file=sys.stderr)
    finally:
        for server in servers.values():
            server.stop()
    measurements.sort(key=lambda m: (m.clients, names.index(m.server), m.round))
    report = ["", *table(measurements), "", *ratios(measurements)]
    print("\n".join(report))
    (output / "server.md").write_text("\n".join(report) + "\n")
    (output / "server.json").write_text(json.dumps([{**asdict(m), "throughput": m.throughput} for m in measurements],
                                                   indent=2))
    wrong = sum(len(m.wrong) + len(m.failed) for m in measurements)
    print(f"\nevery answer equal to its solo transcript: {'yes' if not wrong else f'NO ({wrong} differ or failed)'}")
    return 0 if not wrong else 1


if __name__ == "__main__":
    raise SystemExit(main())
