"""`SettingsMixin`: what `IPUConfig` and `PlainIPUConfig` share on top of the core: checked assignment, the
rules, the options plan, the import of `poptorch.Options` and of poptorch's option files, the export to them."""

import os
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

from .._version import __version__
from ..errors import OutputExistsError, UnknownSettingError
from ..options.build import build_plan
from ..sdk.option_lines import options_file_text
from ..sdk.plan import OptionsPlan
from ..sdk.popdist import PopDistLaunch, resolve_launch
from ..settings.files import CONFIG_NAME, write_text_atomically
from ..settings.mode import INFERENCE, TRAINING, Mode
from ..settings.rules import check_rules, update_settings_from_string
from ..settings.table import BASE_SETTINGS, EXTENSION_SETTINGS, SETTINGS, TRANSFORMERS_KEYS

if TYPE_CHECKING:
    from ..options.option_file_import import Lines, PathOrPaths
    from ..placement.placement import Placement
    from ..placement.placer import Placer


class SettingsMixin:
    """What `IPUConfig` and `PlainIPUConfig` share: checked assignment, the rules, the options plan.

    Settings are checked against their rows when assigned and stored as they are, on either base class, so the
    core is the one validator (optimum-graphcore's own type checks never see a value the core refused).
    """

    SETTINGS = SETTINGS
    CONFIG_NAME = CONFIG_NAME

    def __setattr__(self, name: str, value: Any):
        setting = SETTINGS.get(name)
        if setting is not None:
            self.__dict__[name] = setting.check(value)
            return
        if not name.startswith("_") and name not in TRANSFORMERS_KEYS and not hasattr(type(self), name):
            raise UnknownSettingError(name, SETTINGS)
        super().__setattr__(name, value)

    @classmethod
    def from_options(cls, training: Any = None, inference: Any = None, **overrides: Any):
        """The config whose `to_options()` / `to_options(for_inference=True)` build the same options as the
        `poptorch.Options` `training` / `inference` (either or both): equal `toDict()`, execution strategy and
        relaxed optimizer checks, as `trainingModel` / `inferenceModel` see them (the default output mode resolved).

        `overrides` are settings: those the options cannot tell (`layers_per_ipu`, the serialization settings) and
        `ipus_per_replica` when memory proportions name more IPUs than a replica's pipeline has (the others are
        dropped, with a warning saying which). Needs poptorch, which made the options.

        Raises:
            UnsupportedOptionsError: naming every option no config rebuilds, at once.
        """
        from ..options.readback import import_options

        return import_options(cls, training, inference, overrides)

    @classmethod
    def from_options_file(cls, training: "PathOrPaths" = None, inference: "PathOrPaths" = None, **overrides: Any):
        """The config whose builds are the options poptorch's `Options().loadFromFile` makes of the option files
        `training` / `inference` (either or both): a path, or a list of paths applied in turn, as repeated
        `loadFromFile` calls apply them. Imported as `from_options` imports options; `overrides` as there.

        The files run as poptorch runs them, on the Poplar SDK's poptorch where it imports, else on the package's
        recorder (no SDK needed). They are Python: read only files you would run.

        Raises:
            OptionsFileError: a file is missing or not text, holds no call, or has a line poptorch refuses (a
                syntax error, an unknown method, a wrong call), named with its number.
            UnsupportedOptionsError: naming every option no config rebuilds, and the line that set it.
        """
        from ..options.option_file_import import import_option_sources, option_file_sources

        given = {TRAINING: training, INFERENCE: inference}
        sources = {mode: option_file_sources(mode, paths) for mode, paths in given.items() if paths is not None}
        return import_option_sources(cls, sources, overrides)

    @classmethod
    def from_options_lines(cls, training: "Lines" = None, inference: "Lines" = None, **overrides: Any):
        """As `from_options_file`, from the lines of an option file given as they are: a list of strings (the list
        a YAML config holds) or one string. Errors name the lines as `the training lines, line 3`."""
        from ..options.option_file_import import given_lines, import_option_sources

        given = {TRAINING: training, INFERENCE: inference}
        sources = {mode: [given_lines(lines, mode)] for mode, lines in given.items() if lines is not None}
        return import_option_sources(cls, sources, overrides)

    def to_options_file(
        self, path: Union[str, "os.PathLike[str]"], *, for_inference: bool = False, overwrite: bool = False,
        name: Optional[str] = None,
    ) -> str:
        """Writes the build of `to_options()` (`for_inference`: of `to_options(for_inference=True)`) as a poptorch
        option file, atomically: `poptorch.Options().loadFromFile(path)` builds options of the same state. For a
        plain `poptorch.Options`, not PopDist's (see `OptionsPlan.to_options_lines`). Returns the path.

        The header names the build, the config (`name`, e.g. where it was loaded from) and the package's version.
        An existing file is kept unless `overwrite`: an option file is often written by hand, and one overwritten by
        mistake is lost.

        Raises:
            OutputExistsError: `path` exists and `overwrite` is false.
        """
        path = str(os.fspath(path))
        if os.path.exists(path) and not overwrite:
            raise OutputExistsError(path, "pass overwrite=True")
        plan = self.options_plan(for_inference=for_inference, popdist=False)
        write_text_atomically(path, options_file_text(plan, for_inference, name, __version__))
        return path

    def _validate_ipu_config(self):
        """Checks that the settings agree with each other, in both modes."""
        check_rules(vars(self))
        return self

    def options_plan(
        self,
        for_inference: bool = False,
        compile_only: bool = False,
        popdist: Union[PopDistLaunch, bool, None] = None,
    ) -> OptionsPlan:
        """The `poptorch.Options` calls `to_options()` makes, as data. Needs no Poplar SDK.

        `print(config.options_plan())` shows them as the equivalent Python; `.to_dict()` as data and
        `.to_json_string()` as JSON.

        Args:
            for_inference: plan the inference build rather than the training one.
            compile_only: plan a build for an offline IPU target.
            popdist: the poprun launch to plan for. By default, the one this process is an instance of
                (read from the environment, as PopDist does), else a single-host build; a `PopDistLaunch`
                previews that instance of a launch, on any machine; `False` plans a single-host build.
        """
        settings = vars(self)
        check_rules(settings)
        return build_plan(settings, for_inference, compile_only, popdist=resolve_launch(popdist))

    def placement(
        self,
        model: Any,
        *,
        architecture: Optional[str] = None,
        for_inference: bool = False,
        fp32: bool = False,
        revision: Optional[str] = None,
        token: Optional[str] = None,
        micro_batch_size: Optional[int] = None,
        sequence_length: Optional[int] = None,
        decoder_sequence_length: Optional[int] = None,
        ipu: str = "gc200",
        reserve: Optional[float] = None,
        calibration: Any = None,
        generate: Any = False,
    ) -> "Placement":
        """Where optimum-graphcore 0.7.1's `parallelize()` puts `model` on this config's IPUs: the blocks, layers
        and parameters of each IPU, and the memory its parameters need as `IPUTrainer` builds the model. Needs no
        Poplar SDK, no weights and, for a local folder, neither torch nor transformers. `placer()` takes the same
        arguments and places other splits of the same model, or balances one.

        Args:
            model: a Hub model id, a local folder (its `config.json` and safetensors checkpoint, whose headers
                alone are read), a transformers `PretrainedConfig`, or the dict of a `config.json`. Without a
                safetensors checkpoint the sizes come from formulas of the config.
            architecture: the class to place (`"BertForQuestionAnswering"`), default the one `config.json` names.
            for_inference: place the inference build (the inference settings, `inference_parallelize_kwargs`;
                weights only).
            fp32: size the weights in fp32, as `IPUTrainer` with `fp32=True`.
            revision, token: for a Hub model.
            micro_batch_size, sequence_length, decoder_sequence_length: the micro-batch to count the activations,
                the pipeline's stashes and the FLOPs for; any of them given counts them (`micro_batch_size` then
                defaults to 1). `sequence_length`: tokens (default 128); Wav2Vec2/HuBERT: input samples at 16 kHz;
                Whisper: the feature extractor's frames; images: refused, the size is the config's `image_size`.
                `decoder_sequence_length`: an encoder-decoder's decoder tokens (default: the encoder's).
            ipu: the IPU generation a step is timed on: `"gc200"` (IPU-M2000) or `"bow"` (Bow-2000).
            reserve: the share of each IPU's memory kept for what is not counted (code, exchange buffers,
                temporaries), default 0.25; the verdict is "fits" where every IPU's on-chip figure leaves it.
            calibration: the time model's constants: the path of a file `ipu-config calibrate` wrote, or a
                `Calibration`; default the file the environment variable `OPTIMUM_IPU_EXT_CALIBRATION` names, else the
                constants shipped in the package.
            generate: place the generation build as upstream's pipelines generate with it (implies
                `for_inference`): `parallelize(for_generation=True, use_cache=True, **inference_parallelize_kwargs)`,
                the encoder and the decoder on IPUs of their own, each decoder layer's KV cache on its IPU, one
                decoder step's FLOPs; True, or what generate() is called with: `{"batch_size": 4, "num_beams": 1,
                "max_length": 448}` (a KV cache is made for them). A config whose inference kwargs give
                `for_generation` is placed as a generation build as they are, `micro_batch_size` its batch and
                `decoder_sequence_length` its `max_length`.

        Raises:
            PlacementError: where optimum-graphcore refuses this config for this model (`ArchitectureError` for an
                architecture with no pipelined version).
            InvalidSettingError: for an `ipu`, a `reserve` or a `generate` outside what they allow.
            CalibrationFileError: for a calibration file that cannot be read, naming the file and the key.
            ModelFileError: for a missing or malformed `config.json` or safetensors header, naming the file.
            HubError: where the Hub cannot give the model's files.
        """
        return self.placer(model, architecture=architecture, for_inference=for_inference, fp32=fp32,
                           revision=revision, token=token, micro_batch_size=micro_batch_size,
                           sequence_length=sequence_length, decoder_sequence_length=decoder_sequence_length, ipu=ipu,
                           reserve=reserve, calibration=calibration, generate=generate).place()

    def placer(
        self,
        model: Any,
        *,
        architecture: Optional[str] = None,
        for_inference: bool = False,
        fp32: bool = False,
        revision: Optional[str] = None,
        token: Optional[str] = None,
        micro_batch_size: Optional[int] = None,
        sequence_length: Optional[int] = None,
        decoder_sequence_length: Optional[int] = None,
        ipu: str = "gc200",
        reserve: Optional[float] = None,
        calibration: Any = None,
        generate: Any = False,
    ) -> "Placer":
        """The engine that places `model` under this config (the arguments are `placement()`'s), the model read
        once: `place()` gives the config's placement, `place(layers_per_ipu)` that of another split, and
        `balanced(placement, objective)` that of the split balancing the pipeline ("memory": the smallest largest
        on-chip figure; "time": the slowest IPU fastest among the splits that fit).

        Raises:
            As `placement()`.
        """
        from ..placement.hardware import RESERVE
        from ..placement.placer import model_placer

        return model_placer(vars(self), model, architecture, for_inference, fp32, revision, token,
                            (micro_batch_size, sequence_length, decoder_sequence_length), ipu,
                            RESERVE if reserve is None else reserve, calibration, generate)

    def batch_size_factor(
        self, for_inference: bool = False, per_instance: bool = False, popdist: Union[PopDistLaunch, bool, None] = None
    ) -> int:
        """The factor from the micro batch size to the combined batch size: replicas x gradient accumulation
        steps x device iterations (inference: replicas x device iterations).

        The replicas are those of the whole job, or with `per_instance=True` those of this instance, which are
        what its `poptorch.DataLoader` batches. On one host both are the configured replicas; under poprun they
        are poprun's total and this instance's share. `popdist` is as for `options_plan()`.
        """
        launch = resolve_launch(popdist)
        mode = Mode.of(for_inference)
        settings = mode.view(vars(self))
        if launch is None:
            replicas = settings["replication_factor"]
        else:
            replicas = launch.local_replicas if per_instance else launch.num_replicas
        accumulation = 1 if mode.is_inference else self.gradient_accumulation_steps
        return replicas * accumulation * settings["device_iterations"]

    def non_default_settings(self) -> Dict[str, Tuple[Any, Any]]:
        """`{name: (value, default)}` for every setting whose value differs from a default config's
        (optimum-graphcore 0.7.1's defaults)."""
        default = type(self)()
        return {
            name: (getattr(self, name), getattr(default, name))
            for name in SETTINGS
            if getattr(self, name) != getattr(default, name)
        }

    update_from_string = update_settings_from_string

    def settings_dict(self) -> Dict[str, Any]:
        """The settings as saved: every base setting, and the extension settings that are not at their default
        (so a config that uses none of them stays loadable by optimum-graphcore's own `IPUConfig`)."""
        saved = {name: getattr(self, name) for name in BASE_SETTINGS}
        for name, setting in EXTENSION_SETTINGS.items():
            value = getattr(self, name)
            if value != setting.default:
                saved[name] = value
        return saved
