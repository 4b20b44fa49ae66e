"""What this process holds of the files it maps, read from /proc/self/smaps (Linux)."""

from __future__ import annotations


def _mappings():
    """(start, end, path or None, resident KiB) of each of this process's mappings."""
    mapping = None
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:  # a mapping's header line
                start, end = (int(value, 16) for value in fields[0].split("-"))
                mapping = (start, end, fields[5] if len(fields) > 5 else None)
            elif mapping is not None and fields[0] == "Rss:":
                yield (*mapping, int(fields[1]))


def resident_kib(path) -> int:
    """Resident KiB of this process's mappings of `path`."""
    return sum(kib for _, _, mapped, kib in _mappings() if mapped == str(path))


def resident_kib_of(tensors) -> int:
    """Resident KiB of this process's mappings that hold any of `tensors` (each mapping counted once)."""
    addresses = [tensor.data_ptr() for tensor in tensors]
    return sum(kib for start, end, _, kib in _mappings() if any(start <= address < end for address in addresses))
