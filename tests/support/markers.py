"""Markers the test modules share."""

from pathlib import Path

import pytest

# mutmut runs the tests in a copy of the repository, `mutants/`, where each mutated function is called through a
# trampoline: a warning's line is the trampoline's there, not the caller's
NOT_UNDER_MUTMUT = pytest.mark.skipif(Path(__file__).parents[2].name == "mutants",
                                      reason="under mutmut, its trampolines stand between caller and warning")
