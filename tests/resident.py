"""What this process holds of a file it maps, read from /proc/self/smaps (Linux)."""

from __future__ import annotations


def resident_kib(path) -> int:
    """Resident KiB of this process's mappings of `path`."""
    total, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:  # a mapping's header line
                inside = len(fields) > 5 and fields[5] == str(path)
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def resident_kib_of(tensors) -> int:
    """Resident KiB of this process's mappings that hold any of `tensors` (each mapping counted once)."""
    addresses = [tensor.data_ptr() for tensor in tensors]
    total, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
                start, end = (int(value, 16) for value in fields[0].split("-"))
                inside = any(start <= address < end for address in addresses)
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total
