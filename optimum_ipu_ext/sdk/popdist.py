"""Launches by `poprun` (Graphcore's multi-host launcher): how the replicas of a job are shared by its instances.

`poprun --num-replicas R --num-instances N` starts N instances of a program and gives each its share of the
R replicas through `POPDIST_*` environment variables, which PopDist (`popdist`, in the Poplar SDK) reads.
`PopDistLaunch.from_environment()` reads the same variables without the SDK, so a build can be planned on any
machine, and a `PopDistLaunch` written by hand previews one instance of a launch.
"""

import os
from dataclasses import dataclass
from typing import Mapping, Optional, Union

from ..errors import InvalidSettingError, SettingTypeError, warn

TOTAL_REPLICAS = "POPDIST_NUM_TOTAL_REPLICAS"
LOCAL_REPLICAS = "POPDIST_NUM_LOCAL_REPLICAS"
REPLICA_INDEX_OFFSET = "POPDIST_REPLICA_INDEX_OFFSET"


@dataclass(frozen=True)
class PopDistLaunch:
    """One instance of `poprun --num-replicas <num_replicas> --num-instances <num_instances>`.

    poprun divides the replicas evenly: instance `instance_index` runs `local_replicas` of them, from
    replica `replica_index_offset` on.

    Example:

    ```python
    >>> launch = PopDistLaunch(num_replicas=64, num_instances=4, instance_index=1)
    >>> launch.local_replicas, launch.replica_index_offset
    (16, 16)
    >>> print(config.options_plan(popdist=launch))   # the build of that instance, on any machine
    ```
    """

    num_replicas: int
    num_instances: int = 1
    instance_index: int = 0

    def __post_init__(self):
        for name in ("num_replicas", "num_instances", "instance_index"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise SettingTypeError(name, value, "an int")
        if self.num_replicas < 1:
            raise InvalidSettingError("num_replicas", self.num_replicas, "the job needs at least 1 replica")
        if self.num_instances < 1 or self.num_replicas % self.num_instances:
            raise InvalidSettingError(
                "num_instances", self.num_instances,
                f"poprun divides the replicas evenly, so it must divide `num_replicas={self.num_replicas}`",
            )
        if not 0 <= self.instance_index < self.num_instances:
            raise InvalidSettingError(
                "instance_index", self.instance_index, f"instances are numbered 0 to {self.num_instances - 1}"
            )

    @property
    def local_replicas(self) -> int:
        """The replicas this instance runs (PopDist's `getNumLocalReplicas()`)."""
        return self.num_replicas // self.num_instances

    @property
    def replica_index_offset(self) -> int:
        """The index of this instance's first replica in the job (PopDist's `getReplicaIndexOffset()`)."""
        return self.instance_index * self.local_replicas

    @classmethod
    def from_environment(cls, environ: Optional[Mapping[str, str]] = None) -> Optional["PopDistLaunch"]:
        """The launch this process is an instance of, read from poprun's variables as PopDist reads them;
        `None` outside a poprun launch. `environ` defaults to `os.environ`."""
        environ = os.environ if environ is None else environ
        if TOTAL_REPLICAS not in environ:
            return None
        total = _read(environ, TOTAL_REPLICAS, 1, minimum=1)
        local = _read(environ, LOCAL_REPLICAS, 1, minimum=1)
        offset = _read(environ, REPLICA_INDEX_OFFSET, 0, minimum=0)
        if total % local:
            raise InvalidSettingError(
                LOCAL_REPLICAS, environ[LOCAL_REPLICAS], f"it must divide {TOTAL_REPLICAS}={total}"
            )
        if offset % local or offset >= total:
            raise InvalidSettingError(
                REPLICA_INDEX_OFFSET, environ.get(REPLICA_INDEX_OFFSET),
                f"a multiple of {LOCAL_REPLICAS}={local} below {TOTAL_REPLICAS}={total}",
            )
        return cls(num_replicas=total, num_instances=total // local, instance_index=offset // local)

    def job_replicas(self, setting: str, configured: int) -> int:
        """poprun's number of replicas for the job, with a warning when the setting `setting=configured` differs."""
        if configured != self.num_replicas:
            warn(
                f"`{setting}={configured}` is the total number of replicas of the job, but poprun launched "
                f"{self.num_replicas} (`--num-replicas {self.num_replicas}`): building for poprun's "
                f"{self.num_replicas}, {self.local_replicas} on this instance."
            )
        return self.num_replicas

    def describe(self) -> str:
        """What `popdist.poptorch.Options` sets for this instance, in words."""
        return (
            f"instance {self.instance_index} of `poprun --num-replicas {self.num_replicas} --num-instances "
            f"{self.num_instances}`: popdist.poptorch.Options sets replicationFactor({self.local_replicas}), "
            f"Distributed.configureProcessId({self.instance_index}, {self.num_instances}) and the instance's IPUs"
        )


def resolve_launch(popdist: Union["PopDistLaunch", bool, None]) -> Optional[PopDistLaunch]:
    """The launch to build for: `popdist` itself, none when it is `False`, the detected one when it is `None`."""
    if popdist is None:
        return PopDistLaunch.from_environment()
    if popdist is False:
        return None
    if isinstance(popdist, PopDistLaunch):
        return popdist
    raise SettingTypeError(
        "popdist", popdist, "a PopDistLaunch (preview that instance), False (a single-host build) or None "
        "(detect the launch from the environment)"
    )


def _read(environ: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    text = environ.get(name)
    if text is None:
        return default
    if not text.isdecimal() or int(text) < minimum:
        raise InvalidSettingError(name, text, f"poprun sets it to an integer >= {minimum}")
    return int(text)
