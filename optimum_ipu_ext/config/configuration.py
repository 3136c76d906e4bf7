"""`IPUConfig`: optimum-graphcore's IPU configuration, extended to describe a whole PopTorch build."""

import os
from typing import Any, Dict, Optional, Sequence, Union

from huggingface_hub import CommitInfo

from ..errors import ConfigFileError, naming_source
from ..hub.card import PICTURE_NAME, CardAttachment
from ..hub.compat import load_arguments
from ..hub.load import HubSource, load_errors, load_promptly
from ..hub.push import push_config
from ..settings.files import dump, read_config_file, write_text_atomically
from ..settings.migration import migrate_and_warn
from ..settings.rules import check_keys
from ..settings.sources import PRESET, preset_file, resolve
from ..settings.table import EXTENSION_SETTINGS, VERSION_KEYS
from .base import BaseIPUConfig
from .bundled_base import transformers_defaults
from .mixin import SettingsMixin


class IPUConfig(SettingsMixin, BaseIPUConfig):
    """Configuration of PopTorch and PopART for training and inference on IPUs.

    Takes every argument of `optimum.graphcore.IPUConfig` (with the same defaults and validation) and
    the settings of `optimum_ipu_ext.settings.table.EXTENSION_SETTINGS`, which describe the rest of the
    `poptorch.Options` build. It is an `optimum.graphcore.IPUConfig` where optimum-graphcore imports, so
    it can be handed to `IPUTrainer`; elsewhere it keeps the same contract, for authoring and review.

    `replication_factor` (and `inference_replication_factor`) count the replicas of the whole job, as poprun's
    `--num-replicas` does. On one host they all run in this process. Under `poprun`, each instance builds its
    local share through PopDist; if the configured total disagrees with the number poprun launched, the build
    follows poprun and warns.

    Example:

    ```python
    >>> from optimum_ipu_ext import IPUConfig
    >>> config = IPUConfig.from_pretrained("configs/pipelined-2ipu.json", replication_factor=4)
    >>> print(config.options_plan())   # anywhere: the calls to_options() makes
    >>> opts = config.to_options()     # with the Poplar SDK: the poptorch.Options
    ```
    """

    def __init__(self, **kwargs):
        check_keys(kwargs)
        for name, setting in EXTENSION_SETTINGS.items():
            setattr(self, name, kwargs.pop(name) if name in kwargs else setting.default_value())
        super().__init__(**kwargs)
        # The bases keep the default list of their signature itself, and upstream's inference list is the training
        # one: each config gets its own, so editing one changes neither the other nor every later config.
        self.layers_per_ipu = list(self.layers_per_ipu)
        self.inference_layers_per_ipu = list(self.inference_layers_per_ipu)

    def to_options(self, for_inference: bool = False, compile_only: bool = False):
        """Builds the `poptorch.Options` of this configuration (needs the Poplar SDK).

        Under `poprun` (detected from the environment, as PopDist does), these are PopDist's
        `popdist.poptorch.Options` for this instance: its local replicas, process id and count and IPUs
        come from PopDist, every other setting is as on one host.

        Args:
            for_inference: build for inference rather than training.
            compile_only: compile for an offline IPU target, needing no IPU.

        Raises:
            PoplarSDKNotFoundError: poptorch (or, under poprun, popdist) is not installed; `options_plan()`
                works without them.
            RuntimeError: no IPU Mk2 is attached and `compile_only` is not set.
        """
        return self.options_plan(for_inference=for_inference, compile_only=compile_only).apply()

    def to_dict(self) -> Dict[str, Any]:
        """The configuration as a dictionary. Extension settings at their default are left out, so a config
        that uses none of them stays loadable by optimum-graphcore's own `IPUConfig`."""
        output = super().to_dict()
        for name, setting in EXTENSION_SETTINGS.items():
            if output.get(name) == setting.default:
                del output[name]
        return output

    @classmethod
    def from_dict(cls, config_dict: Dict[str, Any], **kwargs) -> "IPUConfig":
        """Builds a configuration from a dictionary; keyword arguments override its values."""
        return_unused_kwargs = kwargs.pop("return_unused_kwargs", False)
        # transformers' loaders pass these bookkeeping keywords along; they are not settings
        for internal in ("_from_auto", "_from_pipeline", "_commit_hash"):
            kwargs.pop(internal, None)
        config = cls(**{**config_dict, **kwargs})
        return (config, {}) if return_unused_kwargs else config

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Union[str, os.PathLike], **kwargs) -> "IPUConfig":
        """Loads a configuration from a JSON file, a directory holding `ipu_config.json`, a bundled preset
        (`"pipelined-2ipu"`, where no local path has that name) or a Hub repository.

        Keyword arguments are those of `transformers.PretrainedConfig.from_pretrained` (`revision`, `subfolder`,
        `cache_dir`, `force_download`, `local_files_only`, `token`, ...) and settings overriding the loaded
        values. `token` works with every supported transformers release (`use_auth_token` too). A file an earlier
        optimum-graphcore release wrote loads in 0.7.1's terms, with a `ConfigMigrationWarning` (a `FutureWarning`)
        per key it changes (docs/compatibility.md); `pod_type="pod16"` chooses the values of its per-pod-type
        settings (default: their "default").

        When the Hub is down or answers with server errors, the answer comes within seconds: the cached copy if
        there is one (with a logged warning), else a `HubUnavailableError`.

        Raises:
            HubError: the Hub repository, revision or file does not exist, cannot be read with the token
                given, or the Hub cannot be used and the cache has no copy. The message names the repository,
                the revision and what happened.
            ConfigFileError: the file is not a JSON object, or a local path (`x.json`, `./x`, `dir/`) does not
                exist or is a folder without `ipu_config.json`; nothing is asked of the Hub then.
            UnknownSettingError: the file has a key no release ever had.
            InvalidSettingError: `pod_type` is not a pod type, or a per-pod-type value has none for it.
        """
        pod_type = kwargs.pop("pod_type", None)
        if resolve(pretrained_model_name_or_path) == PRESET:
            if kwargs.get("revision"):
                raise ConfigFileError(str(pretrained_model_name_or_path), "a bundled preset; `revision` applies to "
                                      "Hub repositories")
            pretrained_model_name_or_path = preset_file(str(pretrained_model_name_or_path))
        source = HubSource.of(pretrained_model_name_or_path, cls.CONFIG_NAME, kwargs)
        arguments = load_arguments(kwargs)
        with load_errors(source):
            config_dict, overrides = load_promptly(
                source, lambda **extra: cls.get_config_dict(pretrained_model_name_or_path, **arguments, **extra)
            )
        loaded = str(source) if source else repr(str(pretrained_model_name_or_path))
        with naming_source(loaded):
            return cls.from_dict(migrate_and_warn(config_dict, loaded, pod_type), **overrides)

    @classmethod
    def _dict_from_json_file(cls, json_file: Union[str, os.PathLike]) -> Dict[str, Any]:
        return read_config_file(json_file)

    def save_pretrained(self, save_directory: Union[str, os.PathLike], push_to_hub: bool = False, **kwargs):
        """Writes `ipu_config.json` to `save_directory`, after checking the settings.

        With `push_to_hub=True`, then pushes the config as `push_to_hub` does, to `repo_id` (default: the name
        of `save_directory`); the other keyword arguments are those of `push_to_hub`.
        """
        self._validate_ipu_config()
        if not push_to_hub:
            return super().save_pretrained(save_directory, **kwargs)
        repo_id = kwargs.pop("repo_id", None) or os.path.basename(os.path.normpath(str(save_directory)))
        super().save_pretrained(save_directory)
        return self.push_to_hub(repo_id, **kwargs)

    def push_to_hub(
        self,
        repo_id: str,
        *,
        commit_message: Optional[str] = None,
        commit_description: Optional[str] = None,
        private: Optional[bool] = None,
        token: Union[str, bool, None] = None,
        revision: Optional[str] = None,
        create_pr: bool = False,
        tags: Sequence[str] = (),
        use_auth_token: Union[str, bool, None] = None,
        model: Any = None,
        architecture: Optional[str] = None,
        micro_batch_size: Optional[int] = None,
        sequence_length: Optional[int] = None,
        decoder_sequence_length: Optional[int] = None,
    ) -> CommitInfo:
        """Commits `ipu_config.json` and the model card (`README.md`) to the Hub repository `repo_id`, together.

        The repository is created if needed (private with `private=True`). Its model card is kept: the config's
        section of it is added, or replaced in place, and the metadata gains only what it lacks (`library_name`,
        the IPU tags and `tags`). The arguments are those of transformers' `push_to_hub`, on every supported
        release: `revision` is a branch (created if needed), `token` may also be given as `use_auth_token`.

        With `model` (as `placement()` takes it: a Hub id, a folder, a `PretrainedConfig` or a dict), the section
        also shows where the model goes on the config's IPUs: the picture of its placement
        (`ipu_config_placement.svg`, committed beside the card) and its table. `architecture`, `micro_batch_size`,
        `sequence_length` and `decoder_sequence_length` are the placement's, as `placement()` takes them. A push
        without `model` deletes a picture an earlier push committed.

        Returns:
            The client's `CommitInfo` (`commit_url`, `oid`, and `pr_url` with `create_pr=True`). When the repository
            already holds this config and card, nothing is committed: a warning says so, and `oid` is its head.

        Raises:
            HubVisibilityError: `private=True` and the repository exists and is public; nothing was uploaded.
            HubError: the push failed; the message names the repository and what happened.
            PlacementError: `model` cannot be placed on this config; nothing was uploaded.
            ValueError: a placement's option without `model`.
        """
        self._validate_ipu_config()
        arguments = dict(commit_message=commit_message, commit_description=commit_description, private=private,
                         token=token, revision=revision, create_pr=create_pr, tags=tags, use_auth_token=use_auth_token)
        given = next((value for value in (token, use_auth_token) if isinstance(value, str)), None)
        attachment = placement_attachment(self, repo_id, model, token=given, architecture=architecture,
                                          micro_batch_size=micro_batch_size, sequence_length=sequence_length,
                                          decoder_sequence_length=decoder_sequence_length)
        return push_config(self, repo_id, arguments, attachment).commit

    def to_json_string(self, use_diff: bool = True) -> str:
        """The configuration as JSON. With `use_diff`, transformers' own attributes are left out where they
        hold their default, as transformers does, without building default configs on every call."""
        config_dict = self.to_dict()
        if use_diff:
            defaults = transformers_defaults()
            config_dict = {
                key: value
                for key, value in config_dict.items()
                if key not in defaults or key in VERSION_KEYS or value != defaults[key]
            }
        return dump(config_dict)

    def to_json_file(self, json_file_path: Union[str, os.PathLike], use_diff: bool = True) -> None:
        """Writes the configuration as JSON, atomically: a failed write leaves any previous file intact."""
        write_text_atomically(json_file_path, self.to_json_string(use_diff=use_diff))


def placement_attachment(config: Any, repo_id: str, model: Any, token: Optional[str] = None,
                         **options: Any) -> Optional[CardAttachment]:
    """What the model card's section shows of `model` placed on `config`: the picture of the placement (committed as
    `ipu_config_placement.svg`) and its table, for `push_config`; None without `model`.

    Args:
        config: the config pushed.
        repo_id (`str`): the repository, which the picture names as the config.
        model: as `placement()` takes it; None: nothing to show.
        token (`str`, *optional*): for a Hub model.
        options: `placement()`'s `architecture`, `micro_batch_size`, `sequence_length`, `decoder_sequence_length`.

    Raises:
        ValueError: an option given without `model`.
        PlacementError: `model` cannot be placed on `config`.
    """
    if model is None:
        given = {name: value for name, value in options.items() if value is not None}
        if given:
            name, value = next(iter(given.items()))
            raise ValueError(f"`{name}` is {value!r}, an option of the placement the model card shows, and `model` is "
                             "None: give `model` (a Hub id, a folder, a PretrainedConfig or a dict) too, or leave it")
        return None
    from ..placement.report.card import card_markdown
    from ..placement.report.placement_picture import placement_svg

    placement = config.placement(model, token=token, **options).to_dict()
    return CardAttachment(card_markdown(placement, PICTURE_NAME, repo_id),
                          {PICTURE_NAME: placement_svg(placement, repo_id).encode("utf-8")})
