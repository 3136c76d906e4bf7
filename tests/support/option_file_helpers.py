"""What the option-file tests share: the state poptorch's own `loadFromFile` makes of files (run on the strict
doubles, which run them as poptorch 3.4 does), and the state of options as `trainingModel` / `inferenceModel` see
them."""

import sys
from pathlib import Path

from optimum_ipu_ext.sdk.plan import TempFile
from optimum_ipu_ext.settings.table import SETTINGS

from . import doubles
from .doubles import installed, state

ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted((ROOT / "configs").glob("*.json"))
EXAMPLE = ROOT / "examples" / "ipu-options.cfg"
MODES = ("training", "inference")
TEMP_FILE = "<a fresh temporary file>"


def seen(options, mode):
    """The state of `options` (the doubles' or the recorder's, that in use) as the model wrappers see it: on a clone
    whose default output mode is resolved (`Final` in training, `All` in inference); a temporary file drawn for the
    build (a fresh name each time) masked."""
    options = options.clone()
    if options.defaultOutputMode():
        output_modes = sys.modules["poptorch"].OutputMode  # of the poptorch in use: the doubles or the recorder
        options.outputMode(output_modes.All if mode == "inference" else output_modes.Final)
    result = state(options)
    if TempFile.drew(result.get("saveInitializersToFile", "")):
        result["saveInitializersToFile"] = TEMP_FILE
    return result


def loaded(mode, *paths):
    """What poptorch's `Options().loadFromFile` makes of the files `paths`, loaded in turn (on the doubles)."""
    with installed(hardware_version=2):
        options = doubles.poptorch.Options()
        for path in paths:
            assert options.loadFromFile(str(path)) is options
        return seen(options, mode)


def built(config, mode):
    """What `config.to_options()` builds for `mode` (on the doubles)."""
    for_inference = mode == "inference"
    with installed(hardware_version=2):
        if hasattr(config, "to_options"):
            return seen(config.to_options(for_inference=for_inference), mode)
        return seen(config.options_plan(for_inference=for_inference).build(), mode)  # PlainIPUConfig's build


def untold(config):
    """The settings of `config` that no option holds, as a user gives them to an import (`layers_per_ipu`, ...),
    and the sharding of the optimizer state where no build has replicas (one replica shards nothing either way)."""
    settings = {name: getattr(config, name) for name, setting in SETTINGS.items() if setting.sdk is None}
    if config.replication_factor == config.inference_replication_factor == 1:
        settings["replicated_tensor_sharding"] = config.replicated_tensor_sharding
    return settings
