"""Reading one file only when it is a regular file within a stated size, and decoding it as UTF-8.

The file's type and size are checked before it is read, on the path and again on the opened file (so
a file swapped in between is caught), and the size once more while reading. A FIFO is never waited
on: the file is opened without blocking, then refused by its type. A device (``/dev/zero``), a
directory or a socket is refused the same way, so no input can hang the process or fill its memory.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

from syncer.bounded.problems import ReadProblem, problem
from syncer.errors import Problem

_OTHER_ENCODINGS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
_TYPES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _refused(mode: int, size: int, shown: str, max_bytes: int) -> Problem | None:
    if not stat.S_ISREG(mode):
        what = next((name for test, name in _TYPES if test(mode)), "not a file")
        return problem(ReadProblem.FILE_TYPE, f"not a regular file ({what})", shown)
    if size > max_bytes:
        return problem(ReadProblem.FILE_TOO_LARGE, f"{size} bytes, limit {max_bytes}", shown)
    return None


def check_file(path: Path, shown: str, max_bytes: int) -> Problem | None:
    """The problem ``read_bounded`` would find by the type and size of ``path`` (symlinks followed),
    without opening it: for a file another program reads (an SSH key, a kubeconfig)."""
    try:
        info = path.stat()
    except OSError as err:
        return problem(ReadProblem.FILE_TYPE, f"cannot read: {err.strerror or err}", shown)
    return _refused(info.st_mode, info.st_size, shown, max_bytes)


def read_bounded(path: Path, shown: str, max_bytes: int) -> bytes | Problem:
    """The bytes of ``path`` (symlinks followed), or the problem that it may not be read; ``shown``
    is how problems name the file."""
    try:
        info = path.stat()
        refused = _refused(info.st_mode, info.st_size, shown, max_bytes)
        if refused is not None:
            return refused
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        with open(fd, "rb") as stream:
            info = os.fstat(fd)
            refused = _refused(info.st_mode, info.st_size, shown, max_bytes)
            if refused is not None:
                return refused
            data = stream.read(max_bytes + 1)
    except OSError as err:
        return problem(ReadProblem.FILE_TYPE, f"cannot read: {err.strerror or err}", shown)
    if len(data) > max_bytes:
        return problem(ReadProblem.FILE_TOO_LARGE, f"more than {max_bytes} bytes", shown)
    return data


def decode(data: bytes, path: str) -> str | Problem:
    """The text of a file, or the problem that it is not UTF-8 (a UTF-8 byte order mark is kept)."""
    for bom, name in _OTHER_ENCODINGS:
        if data.startswith(bom):
            return problem(ReadProblem.ENCODING, f"{name} byte order mark: files must be UTF-8", path, 1, 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return problem(
            ReadProblem.ENCODING,
            f"not UTF-8: byte 0x{data[e.start]:02x} cannot be decoded",
            path,
            line,
            column,
        )


def read_text(path: Path, shown: str, max_bytes: int) -> str | Problem:
    """``read_bounded`` and ``decode`` in one."""
    data = read_bounded(path, shown, max_bytes)
    return data if isinstance(data, Problem) else decode(data, shown)
