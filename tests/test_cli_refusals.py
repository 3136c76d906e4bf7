"""`ipu-config` refusals that need no model: each one line naming the setting, its value and what is allowed."""

import pytest

from cli_helpers import run


@pytest.mark.parametrize("name", ["matmul_proportion", "inference_matmul_proportion"])
@pytest.mark.parametrize("value, shown", [("1.5", "1.5"), ("[0.1 1.01]", "[0.1, 1.01]")])
def test_a_memory_proportion_above_1_is_refused_with_its_range(capsys, tmp_path, name, value, shown):
    config = tmp_path / "ipu_config.json"
    config.write_text(f'{{"{name}": {shown}, "ipus_per_replica": 2}}')
    code, out, err = run(capsys, "validate", config)
    assert (code, out) == (1, f"{config}: `{name}={shown}` is invalid: numbers must be from 0 to 1.\n")
    code, out, err = run(capsys, "show", "pipelined-2ipu", "--set", f"{name}={value}")
    assert (code, out, err) == (1, "", f"ipu-config: error: --set: `{name}={shown}` is invalid: numbers must be from 0 "
                                       "to 1.\n")


def test_a_memory_proportion_of_1_is_allowed(capsys):
    assert run(capsys, "validate", "pipelined-2ipu", "--set", "matmul_proportion=1,inference_matmul_proportion=[0 1]")[0] == 0
