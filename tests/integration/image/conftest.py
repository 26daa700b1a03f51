"""One image for every image test of the pytest run (tests/integration/image/kit.py)."""

from __future__ import annotations

import pytest

from tests.integration.image.kit import Image, build_image


@pytest.fixture(scope="session")
def image() -> Image:
    return build_image()
