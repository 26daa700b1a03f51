"""Reading one file: only a regular file within its size is read; anything else is a problem naming it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from syncer.bounded.files import read_bounded, read_text
from syncer.bounded.problems import ReadProblem
from syncer.errors import Problem


def read_within(path: Path, max_bytes: int, seconds: float = 5.0) -> bytes | Problem:
    """``read_bounded`` on a thread that may not outlive ``seconds`` (a FIFO must not hang a test)."""
    result: list[bytes | Problem] = []
    reader = threading.Thread(
        target=lambda: result.append(read_bounded(path, "f.yaml", max_bytes)), daemon=True
    )
    reader.start()
    reader.join(seconds)
    assert not reader.is_alive(), f"reading {path} still waits after {seconds} s"
    return result[0]


def test_a_regular_file_and_a_symlink_to_one_are_read(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_bytes(b"a: 1\n")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "f.yaml")

    assert read_within(tmp_path / "f.yaml", 5) == b"a: 1\n"
    assert read_within(tmp_path / "link.yaml", 5) == b"a: 1\n"


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")

    found = read_within(tmp_path / "pipe", 1024)

    assert isinstance(found, Problem)
    assert (found.kind, found.message, str(found.location)) == (
        ReadProblem.FILE_TYPE,
        "not a regular file (a FIFO)",
        "f.yaml",
    )


@pytest.mark.parametrize(
    ("device", "what"), [("/dev/zero", "a character device"), ("/dev/null", "a character device")]
)
def test_a_device_is_refused_before_a_byte_is_read(device: str, what: str) -> None:
    found = read_within(Path(device), 1024)

    assert isinstance(found, Problem)
    assert (found.kind, found.message) == (ReadProblem.FILE_TYPE, f"not a regular file ({what})")


def test_a_directory_is_refused(tmp_path: Path) -> None:
    found = read_within(tmp_path, 1024)

    assert isinstance(found, Problem)
    assert (found.kind, found.message) == (ReadProblem.FILE_TYPE, "not a regular file (a directory)")


def test_a_file_over_the_limit_is_refused_by_its_size(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_bytes(b"x" * 11)

    found = read_within(tmp_path / "f.yaml", 10)

    assert isinstance(found, Problem)
    assert (found.kind, found.message) == (ReadProblem.FILE_TOO_LARGE, "11 bytes, limit 10")
    assert read_within(tmp_path / "f.yaml", 11) == b"x" * 11


def test_a_missing_file_is_a_problem_naming_it(tmp_path: Path) -> None:
    found = read_within(tmp_path / "absent.yaml", 10)

    assert isinstance(found, Problem)
    assert (found.kind, found.message) == (ReadProblem.FILE_TYPE, "cannot read: No such file or directory")


def test_text_that_is_not_utf8_is_a_located_problem(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_bytes(b"a: 1\nb: \xff\n")

    found = read_text(tmp_path / "f.yaml", "f.yaml", 100)

    assert isinstance(found, Problem)
    assert (found.kind, str(found.location)) == (ReadProblem.ENCODING, "f.yaml:2:4")
