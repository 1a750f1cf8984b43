"""TensorRT INT8 calibration caches: write and read them, name the version and algorithm their header carries, and
say whether a cache matches the TensorRT and calibrator about to use it.

Standard library only. The format, as TensorRT writes it (``write_calibration_cache``) and reads it back:

* a header line ``TRT-<version code>-<algorithm>``: ``TRT-8601-EntropyCalibration2`` from TensorRT 8.6.1,
  ``TRT-100700-MinMaxCalibration`` from 10.7.0 (reference log F19, from
  https://github.com/ultralytics/ultralytics/pull/24368). The code is major*1000 + minor*100 + patch up to 9.x (four
  digits) and major*10000 + minor*100 + patch from 10.0 (six digits), as in trtexec's version banner;
* one line per tensor, ``<tensor name>: <scale>``, the scale written as the eight hex digits of its big-endian IEEE
  float32 bits (``data: 3c008912``).

The version in the header is that of the TensorRT that wrote the cache
(https://github.com/NVIDIA/retinanet-examples/issues/261); TensorRT skips a cache it finds incompatible
(https://github.com/NVIDIA/TensorRT/issues/1378). A file that is empty, cut short, written by a version code that is
none, or is no cache at all is a :class:`CalibrationCacheError` whose message names the file.
"""
from __future__ import annotations

import re
import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping

# Header algorithm names seen in real caches, and the calibrator that writes each (harness knob -> name).
CALIBRATOR_ALGORITHMS = {"entropy2": "EntropyCalibration2", "minmax": "MinMaxCalibration"}
KNOWN_ALGORITHMS = tuple(CALIBRATOR_ALGORITHMS.values())
# Majors whose TensorRT writes this format: 5 to 10 (11.0 removed calibration with implicit quantization).
OLDEST_MAJOR, NEWEST_MAJOR = 5, 10
INT8_MAX = 127

_HEADER = re.compile(r"^TRT-(?P<code>[^-\s]+)-(?P<algorithm>\S+)$")
_ENTRY = re.compile(r"^(?P<name>.+): (?P<bits>[0-9a-fA-F]{8})$")
_HEADER_MENTION = re.compile(r"\bTRT-(?P<code>\d{4,6})-(?P<algorithm>[A-Za-z]\w*Calibration\w*)")


class CalibrationCacheError(ValueError):
    """A calibration cache that cannot be read; the message names the file and what is wrong with it."""


@dataclass(frozen=True)
class CalibrationCache:
    """A calibration cache: the version and algorithm of its header and its per-tensor scales."""

    path: str
    version: str  # "8.6.1"
    code: str  # "8601", as the header spells it
    algorithm: str
    scales: Mapping[str, float]

    @property
    def header(self) -> str:
        return f"TRT-{self.code}-{self.algorithm}"


@dataclass(frozen=True)
class CacheCheck:
    """How a cache's header compares with the TensorRT version and calibrator about to use it."""

    file: str
    header: str
    written_by: str
    algorithm: str
    running: str
    calibrator_algorithm: str | None
    version_matches: bool
    algorithm_matches: bool | None  # None: the calibrator's algorithm is not known

    @property
    def mismatches(self) -> tuple[str, ...]:
        found = []
        if not self.version_matches:
            found.append("version")
        if self.algorithm_matches is False:
            found.append("algorithm")
        return tuple(found)

    def describe(self) -> str:
        """One sentence saying what the cache is and whether it fits."""
        text = (f"calibration cache {self.file} was written by TensorRT {self.written_by} with the {self.algorithm} "
                f"algorithm (header {self.header}); this is TensorRT {self.running}")
        if self.calibrator_algorithm:
            text += f" with a calibrator of the {self.calibrator_algorithm} algorithm"
        if not self.mismatches:
            return text + ": they match"
        return text + f": the {' and the '.join(self.mismatches)} differ"

    def to_dict(self) -> dict:
        return {**asdict(self), "mismatches": list(self.mismatches), "description": self.describe()}


def version_code(version: str) -> str:
    """The header code of a TensorRT version: "8601" for "8.6.1", "100700" for "10.7.0" (later parts ignored)."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]]
    major, minor, patch = (parts + [0, 0, 0])[:3]
    if not OLDEST_MAJOR <= major <= NEWEST_MAJOR or patch > 99 or minor > (9 if major < 10 else 99):
        raise ValueError(f"TensorRT {version} has no calibration cache version code (majors {OLDEST_MAJOR} to "
                         f"{NEWEST_MAJOR} write caches)")
    return f"{major}{minor}{patch:02d}" if major < 10 else f"{major}{minor:02d}{patch:02d}"


def version_from_code(code: str) -> str | None:
    """"8.6.1" from "8601", "10.7.0" from "100700"; None when ``code`` is no TensorRT version code."""
    if not code.isdigit():
        return None
    if len(code) == 4 and OLDEST_MAJOR <= int(code[0]) <= 9:
        return f"{int(code[0])}.{int(code[1])}.{int(code[2:])}"
    if len(code) == 6 and 10 <= int(code[:2]) <= NEWEST_MAJOR:
        return f"{int(code[:2])}.{int(code[2:4])}.{int(code[4:])}"
    return None


def headers_in_text(text: str) -> list[CalibrationCache]:
    """The cache headers a text such as a build log names ("Writing Calibration Cache for calibrator:
    TRT-100700-MinMaxCalibration"), as caches without scales, in order; a header of no version code is left out."""
    found = []
    for mention in _HEADER_MENTION.finditer(text):
        version = version_from_code(mention.group("code"))
        if version is not None:
            found.append(CalibrationCache("(named in the text)", version, mention.group("code"),
                                          mention.group("algorithm"), {}))
    return found


def scale_of_range(amax: float) -> float:
    """The INT8 scale of a tensor whose largest absolute value is ``amax`` (symmetric: amax / 127; a tensor that is
    all zeros gets the scale of [-1, 1])."""
    return (float(amax) or 1.0) / INT8_MAX


def write_cache(path: str | Path, version: str, algorithm: str, scales: Mapping[str, float]) -> CalibrationCache:
    """Write a cache in TensorRT's format with the header of ``version`` and ``algorithm``; return what was written."""
    code = version_code(version)
    lines = [f"TRT-{code}-{algorithm}"]
    for name, scale in scales.items():
        if not name or "\n" in name:
            raise ValueError(f"calibration cache {path}: tensor name {name!r} cannot be written on one line")
        lines.append(f"{name}: {struct.pack('>f', float(scale)).hex()}")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return read_cache(path)


def read_cache(path: str | Path) -> CalibrationCache:
    """Read a cache file; a :class:`CalibrationCacheError` naming the file when it is not a usable cache."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise CalibrationCacheError(f"calibration cache {path}: cannot be read: {err.strerror or err}") from err
    return parse_cache(data, str(path))


def parse_cache(data: bytes, source: str) -> CalibrationCache:
    """The cache in ``data``; ``source`` (a file name) is what error messages name."""
    where = f"calibration cache {source}"
    if not data:
        raise CalibrationCacheError(f"{where}: the file is empty (0 bytes); a cache holds a TRT-<version>-<algorithm> "
                                    "header and one line per tensor")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CalibrationCacheError(f"{where}: not a TensorRT calibration cache: it is binary, not text (a cache is a "
                                    "text header TRT-<version>-<algorithm> and 'tensor: hex' lines)") from None
    lines = text.split("\n")
    header = _HEADER.match(lines[0].rstrip("\r"))
    if header is None:
        raise CalibrationCacheError(f"{where}: not a TensorRT calibration cache: its first line {lines[0][:80]!r} is "
                                    "no TRT-<version code>-<algorithm> header")
    code, algorithm = header.group("code"), header.group("algorithm")
    version = version_from_code(code)
    if version is None:
        raise CalibrationCacheError(
            f"{where}: header {lines[0]!r} names no TensorRT version: {code!r} is not a version code (four digits "
            f"for {OLDEST_MAJOR}.x to 9.x, e.g. 8601, six from 10.0, e.g. 100700; no TensorRT from 11.0 writes "
            "calibration caches)"
        )
    ends_with_newline = text.endswith("\n")
    body = [line.rstrip("\r") for line in lines[1:]]
    if ends_with_newline:
        body = body[:-1]  # the empty piece after the final newline
    if not body:
        raise CalibrationCacheError(f"{where}: cut short: the header {lines[0]!r} is followed by no tensor scale")
    scales = {}
    for number, line in enumerate(body, start=2):
        entry = _ENTRY.match(line)
        if entry is None:
            last = number == len(body) + 1
            state = "cut short" if last and not ends_with_newline else "damaged"
            raise CalibrationCacheError(f"{where}: {state}: line {number} {line[:80]!r} is not '<tensor>: <8 hex "
                                        "digits>'")
        scales[entry.group("name")] = struct.unpack(">f", bytes.fromhex(entry.group("bits")))[0]
    return CalibrationCache(source, version, code, algorithm, scales)


def check_cache(cache: CalibrationCache, running_version: str, calibrator: str | None) -> CacheCheck:
    """Compare ``cache`` with the TensorRT version about to read it and the calibrator knob ("entropy2", "minmax")."""
    running = ".".join(str(int(p)) for p in (re.findall(r"\d+", running_version)[:3] + ["0", "0"])[:3])
    expected = CALIBRATOR_ALGORITHMS.get(calibrator)  # None for no calibrator or an unknown one
    return CacheCheck(
        file=cache.path, header=cache.header, written_by=cache.version, algorithm=cache.algorithm, running=running,
        calibrator_algorithm=expected, version_matches=cache.version == running,
        algorithm_matches=None if expected is None else cache.algorithm == expected,
    )


def after_build(path: str | Path, handed: bytes | None) -> dict:
    """What a build did with the cache file at ``path``, given the bytes handed to it (None: no cache was handed).

    ``used``: the file is as it was (TensorRT read it and did not calibrate); ``written``: TensorRT calibrated and wrote
    a cache (``header`` says which version); ``none``: there is no cache file. A file the build left unreadable is
    ``unreadable`` with the reason.
    """
    path = Path(path)
    if not path.exists():
        return {"state": "none", "file": str(path)}
    data = path.read_bytes()
    if handed is not None and data == handed:
        return {"state": "used", "file": str(path)}
    try:
        cache = parse_cache(data, str(path))
    except CalibrationCacheError as err:
        return {"state": "unreadable", "file": str(path), "reason": str(err)}
    return {"state": "written", "file": str(path), "header": cache.header, "written_by": cache.version,
            "tensors": len(cache.scales)}
