"""Benchmarks: scripts that time our decoding against each other and against other systems, side by side and
interleaved in one run, and print ratios (`python -m eval.bench` lists them)."""
