"""The errors' shared helpers: one way to name the file or repository a refused setting came from."""

import pytest

from optimum_ipu_ext import ConfigFileError, InvalidSettingError
from optimum_ipu_ext.errors import naming_source


@pytest.mark.parametrize("error", [InvalidSettingError("seed", -1, "numbers must be >= 0"), TypeError("bad type"),
                                   ValueError("bad value")])
def test_a_refused_setting_names_its_source(error):
    with pytest.raises(type(error)) as raised:
        with naming_source("'cfg.json'"):
            raise error
    assert raised.value is error and str(error).endswith(" (loading 'cfg.json')")


def test_other_errors_pass_unchanged():
    error = ConfigFileError("cfg.json", "not valid JSON")
    with pytest.raises(ConfigFileError) as raised:
        with naming_source("'cfg.json'"):
            raise error
    assert str(raised.value) == "Cannot load the IPU config file 'cfg.json': not valid JSON."
    with naming_source("'cfg.json'"):
        pass
