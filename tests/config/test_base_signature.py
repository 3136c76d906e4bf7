"""The base classes' constructors take optimum-graphcore's settings in the order and with the defaults of their rows
(`BASE_SETTINGS`): the bundled base's hand-written signature, and optimum-graphcore 0.7.1's own where it is the base
in use (the IPU-host stack)."""

import inspect

import pytest

from optimum_ipu_ext.config import bundled_base
from optimum_ipu_ext.config.base import BaseIPUConfig
from optimum_ipu_ext.settings.table import BASE_SETTINGS

# Read from `**kwargs` by optimum-graphcore 0.7.1's constructor, and so by the bundled one
READ_FROM_KWARGS = ("execute_encoder_on_cpu_for_generation",)


@pytest.mark.parametrize("base", [bundled_base.IPUConfig, BaseIPUConfig], ids=["bundled", "in use"])
def test_the_constructor_takes_the_rows_in_order_with_their_defaults(base):
    parameters = list(inspect.signature(base.__init__).parameters.values())
    first, last = parameters[0], parameters[-1]
    assert [first.name, last.name, last.kind] == ["self", "kwargs", inspect.Parameter.VAR_KEYWORD]
    given = [(parameter.name, parameter.default) for parameter in parameters[1:-1]]
    rows = [(name, setting.default) for name, setting in BASE_SETTINGS.items() if name not in READ_FROM_KWARGS]
    assert given == rows


def test_the_setting_read_from_kwargs_is_a_row_with_its_default():
    config = bundled_base.IPUConfig()
    assert [config.execute_encoder_on_cpu_for_generation] == [BASE_SETTINGS[name].default for name in READ_FROM_KWARGS]
