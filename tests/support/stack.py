"""The stack the suite runs on, from `OPTIMUM_IPU_EXT_TEST_BASE`: which base class `optimum_ipu_ext.IPUConfig` must
build on (tests/conftest.py)."""

import os

import pytest

TEST_BASE = os.environ.get("OPTIMUM_IPU_EXT_TEST_BASE", "bundled")
if TEST_BASE not in ("bundled", "upstream"):
    raise pytest.UsageError(f"OPTIMUM_IPU_EXT_TEST_BASE={TEST_BASE!r}: allowed values are 'bundled', 'upstream'")
