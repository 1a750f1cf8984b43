"""Release numbers as tuples that order as TensorRT's and Polygraphy's releases do."""
from __future__ import annotations


def version_tuple(version: str) -> tuple[int, ...]:
    """(0, 49, 26) from "0.49.26"; a part that does not start with digits ends the tuple ("9.2.0.post12" -> 9, 2, 0)."""
    numbers = []
    for part in version.split("."):
        digits = len(part) - len(part.lstrip("0123456789"))
        if not digits:
            break
        numbers.append(int(part[:digits]))
    return tuple(numbers)
