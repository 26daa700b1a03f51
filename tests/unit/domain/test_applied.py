from __future__ import annotations

import pytest
from jsonpatch import JsonPointer

from syncer.domain.applied import parse_pointer, pointer


@pytest.mark.parametrize(
    "path",
    [
        (),
        ("spec", "shards"),
        ("metadata", "annotations", "syncer.dev/applied-fields"),
        ("a~b", "~1/", ""),
        ("0",),
    ],
)
def test_pointers_are_rfc6901_and_read_back(path: tuple[str, ...]) -> None:
    assert pointer(path) == JsonPointer.from_parts(list(path)).path
    assert parse_pointer(pointer(path)) == path
