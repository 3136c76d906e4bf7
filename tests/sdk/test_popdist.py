"""The same config under poprun / PopDist: each instance builds its share, the rest as on one host.

Every build runs against the poptorch/popart doubles and the popdist double, inside the variables
poprun sets for one instance. Expected option states are written as data.
"""

import inspect
import json
import os
import re
import sys
import warnings

import pytest

from optimum_ipu_ext import InvalidSettingError, IPUConfig, PoplarSDKNotFoundError, SettingTypeError
from optimum_ipu_ext.sdk.popdist import PopDistLaunch
from support import PRESET, doubles
from support.builds import comparable
from support.doubles import installed
from support.expected_states import differences, seed_state
from support.poprun import poprun_environment

JOB_REPLICAS = 64

# `poprun --num-replicas 64 --ipus-per-replica 2 --num-instances N` with the preset's 2-IPU pipeline:
# the replicas of each instance, and the device PopDist selects for each instance (its 2 x local IPUs
# in the 128-IPU partition, numbered as gc-info numbers them).
INSTANCES = {
    1: {"local_replicas": 64, "ipu_ids": [254]},
    2: {"local_replicas": 32, "ipu_ids": [252, 253]},
    4: {"local_replicas": 16, "ipu_ids": [248, 249, 250, 251]},
    16: {"local_replicas": 4, "ipu_ids": list(range(224, 240))},
}

# Configs whose total disagrees with poprun's: (configured replicas, poprun --num-replicas, --num-instances,
# this instance, its local replicas, its device).
DISAGREEING = [
    (64, 16, 16, 5, 1, 37),  # 32 IPUs; devices of 2 IPUs are 32..47
    (1, 8, 2, 1, 4, 29),  # the preset's own replication_factor=1; 16 IPUs; devices of 8 IPUs are 28, 29
]

POPDIST_KEYS = {"replication_factor", "distributed_process_id", "num_distributed_processes", "ipu_id"}


def instance_state(replicas, local_replicas, instances, instance, ipu_id):
    """The preset's single-host state for `replicas`, with what PopDist sets for the instance."""
    expected = seed_state(replicas, optimizer_state_offchip=False)
    expected.update(
        replication_factor=local_replicas,
        distributed_process_id=instance,
        num_distributed_processes=instances,
        ipu_id=ipu_id,
    )
    return expected


def preset(**overrides):
    return IPUConfig.from_pretrained(PRESET, **overrides)


def build_recording_warnings(config, **to_options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opts = config.to_options(**to_options)
    return opts, [str(warning.message) for warning in caught]


# --- each instance builds its share ---------------------------------------------------------


@pytest.mark.parametrize("instances", sorted(INSTANCES))
def test_each_instance_builds_its_share(poprun, instances):
    config = preset(replication_factor=JOB_REPLICAS)
    local_replicas, ipu_ids = INSTANCES[instances]["local_replicas"], INSTANCES[instances]["ipu_ids"]
    for instance in range(instances):
        with poprun(poprun_environment(JOB_REPLICAS, instances, instance)):
            opts, warned = build_recording_warnings(config)
            assert type(opts).__module__ == "popdist.poptorch"
        wanted = instance_state(JOB_REPLICAS, local_replicas, instances, instance, ipu_ids[instance])
        assert differences(comparable(opts), wanted) == {}, instance
        assert warned == []


@pytest.mark.parametrize("instances", [2, 16])
def test_only_what_popdist_sets_differs_from_the_single_host_build(poprun, instances):
    config = preset(replication_factor=JOB_REPLICAS, optimizer_state_offchip=True, device_iterations=4)
    with poprun({}):
        single_host = comparable(config.to_options())
    with poprun(poprun_environment(JOB_REPLICAS, instances, instances - 1)):
        instance = comparable(config.to_options())
    assert set(differences(instance, single_host)) == POPDIST_KEYS


@pytest.mark.parametrize("configured, launched, instances, instance, local_replicas, ipu_id", DISAGREEING)
def test_a_total_that_disagrees_follows_poprun_and_warns_once(
    poprun, configured, launched, instances, instance, local_replicas, ipu_id
):
    config = preset(replication_factor=configured)
    with poprun(poprun_environment(launched, instances, instance)):
        opts, warned = build_recording_warnings(config)
    assert differences(comparable(opts), instance_state(launched, local_replicas, instances, instance, ipu_id)) == {}
    assert len(warned) == 1
    assert f"`replication_factor={configured}`" in warned[0] and f"--num-replicas {launched}" in warned[0]


def test_inference_builds_from_the_inference_settings(poprun):
    config = IPUConfig(layers_per_ipu=[1, 1], inference_layers_per_ipu=[2], inference_replication_factor=8)
    with poprun(poprun_environment(8, 4, 3, ipus_per_replica=1)):
        opts, warned = build_recording_warnings(config, for_inference=True)
    recorded = comparable(opts)
    # 8 IPUs: devices of 2 IPUs (2 replicas x 1 IPU) are 8..11
    assert {key: recorded[key] for key in POPDIST_KEYS} == {
        "replication_factor": 2,
        "distributed_process_id": 3,
        "num_distributed_processes": 4,
        "ipu_id": 11,
    }
    assert recorded["_execution_strategy"]["type"] == "ShardedExecution"
    assert warned == []


def test_compile_only_builds_under_poprun_too(poprun):
    with poprun(poprun_environment(4, 2, 1)):
        recorded = comparable(preset(replication_factor=4).to_options(compile_only=True))
    assert (recorded["connection_type"], recorded["ipu_version"], recorded["replication_factor"]) == (2, 2, 2)


# --- outside a launch nothing changes -------------------------------------------------------


def test_outside_a_launch_the_build_is_the_single_host_one(poprun):
    with poprun({}):
        opts = preset(replication_factor=JOB_REPLICAS).to_options()
    assert type(opts) is doubles.poptorch.Options
    assert differences(comparable(opts), seed_state(JOB_REPLICAS, False)) == {}


def test_under_poprun_without_popdist_the_error_names_popdist(poprun, monkeypatch):
    with poprun(poprun_environment(4, 2, 0)), monkeypatch.context() as patch:
        patch.setitem(sys.modules, "popdist", None)
        with pytest.raises(PoplarSDKNotFoundError, match="`popdist`") as raised:
            preset(replication_factor=4).to_options()
    assert raised.value.name == "popdist"


# --- batch arithmetic -----------------------------------------------------------------------


@pytest.mark.parametrize("instances", sorted(INSTANCES))
def test_batch_size_factor_is_what_the_instance_and_the_job_process(poprun, instances):
    config = preset(replication_factor=JOB_REPLICAS, device_iterations=2)
    with poprun(poprun_environment(JOB_REPLICAS, instances, instances - 1)):
        opts = config.to_options()
        per_instance = config.batch_size_factor(per_instance=True)
        whole_job = config.batch_size_factor()
    # what the instance's poptorch.DataLoader takes per step, and all the instances together
    processed = opts.replication_factor * opts.Training.gradient_accumulation * opts.device_iterations
    assert (per_instance, whole_job) == (processed, processed * opts.Distributed.numProcesses)
    assert (per_instance, whole_job) == (INSTANCES[instances]["local_replicas"] * 128 * 2, 64 * 128 * 2)


def test_batch_size_factor_follows_poprun_and_is_the_configured_one_elsewhere(poprun):
    config = preset(replication_factor=64, inference_replication_factor=2, inference_device_iterations=3)
    launch = PopDistLaunch(num_replicas=16, num_instances=4, instance_index=2)
    assert config.batch_size_factor(popdist=launch) == 16 * 128
    assert config.batch_size_factor(per_instance=True, popdist=launch) == 4 * 128
    assert config.batch_size_factor(True, popdist=launch) == 16 * 3
    assert config.batch_size_factor(True, per_instance=True, popdist=launch) == 4 * 3
    with poprun({}):
        assert config.batch_size_factor() == config.batch_size_factor(per_instance=True) == 64 * 128
        assert config.batch_size_factor(for_inference=True) == 2 * 3
    with poprun(poprun_environment(16, 4, 2)):
        assert config.batch_size_factor() == 16 * 128
        assert config.batch_size_factor(popdist=False) == 64 * 128


# --- reviewing a multi-host build on a laptop -----------------------------------------------


def test_options_plan_previews_an_instance_without_the_sdk(monkeypatch):
    for module in ("poptorch", "popart", "popdist"):
        monkeypatch.setitem(sys.modules, module, None)
    config = preset(replication_factor=JOB_REPLICAS)
    plan = config.options_plan(popdist=PopDistLaunch(num_replicas=64, num_instances=4, instance_index=1))
    data = json.loads(json.dumps(plan.to_dict()))
    assert data["options"] == {
        "new": "popdist.poptorch.Options", "args": [], "kwargs": {"ipus_per_replica": 2}, "chain": []
    }
    assert data["notes"] == [
        "instance 1 of `poprun --num-replicas 64 --num-instances 4`: popdist.poptorch.Options sets "
        "replicationFactor(16), Distributed.configureProcessId(1, 4) and the instance's IPUs"
    ]
    single_host = config.options_plan(popdist=False)
    assert [call for call in single_host.calls if call.method != "replicationFactor"] == list(plan.calls)
    lines = str(plan).splitlines()
    assert lines[:5] == ["import popart", "import popdist.poptorch", "import poptorch", "",
                         "opts = popdist.poptorch.Options(ipus_per_replica=2)"]
    assert lines[5].startswith("# instance 1 of `poprun --num-replicas 64 --num-instances 4`")


def test_inference_plan_takes_the_inference_ipus_per_replica():
    config = IPUConfig(
        layers_per_ipu=[1, 1], inference_layers_per_ipu=[2], replication_factor=8, inference_replication_factor=8
    )
    launch = PopDistLaunch(num_replicas=8, num_instances=2)
    training, inference = (config.options_plan(mode, popdist=launch).options for mode in (False, True))
    assert (training.kwargs, inference.kwargs) == ((("ipus_per_replica", 2),), (("ipus_per_replica", 1),))


def test_the_detected_plan_is_the_previewed_one_and_prints_as_python_that_builds_it(poprun):
    config = preset(replication_factor=JOB_REPLICAS, save_initializers_to_file=True)
    with poprun(poprun_environment(JOB_REPLICAS, 4, 2)):
        plan = config.options_plan()
        assert plan == config.options_plan(popdist=PopDistLaunch(num_replicas=64, num_instances=4, instance_index=2))
        namespace = {}
        exec(compile(str(plan), "<plan>", "exec"), namespace)
        printed = comparable(namespace["opts"])
        assert differences(printed, comparable(plan.apply())) == {}
        expected = dict(instance_state(JOB_REPLICAS, 16, 4, 2, 250), saveInitializersToFile="<temporary file>")
        assert differences(printed, expected) == {}
        assert config.options_plan(popdist=False).options.path == "poptorch.Options"


@pytest.mark.parametrize("value", [True, "popdist", {"num_replicas": 4}])
def test_popdist_argument_is_checked(value):
    with pytest.raises(SettingTypeError, match="popdist"):
        IPUConfig().options_plan(popdist=value)


# --- detecting a launch, as PopDist does ----------------------------------------------------


@pytest.mark.parametrize("instances", sorted(INSTANCES))
def test_launch_is_read_from_poprun_variables(instances):
    for instance in range(instances):
        launch = PopDistLaunch.from_environment(poprun_environment(JOB_REPLICAS, instances, instance))
        assert launch == PopDistLaunch(num_replicas=64, num_instances=instances, instance_index=instance)
        assert (launch.local_replicas, launch.replica_index_offset) == (
            INSTANCES[instances]["local_replicas"],
            instance * INSTANCES[instances]["local_replicas"],
        )


def test_no_launch_without_poprun_variables(poprun):
    assert PopDistLaunch.from_environment({}) is None
    assert PopDistLaunch.from_environment({"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "1"}) is None
    with poprun({}):
        assert PopDistLaunch.from_environment() is None
    with poprun(poprun_environment(8, 2, 1)):
        assert PopDistLaunch.from_environment() == PopDistLaunch(num_replicas=8, num_instances=2, instance_index=1)


@pytest.mark.parametrize(
    "environment, variable",
    [
        ({"POPDIST_NUM_TOTAL_REPLICAS": "sixty-four"}, "POPDIST_NUM_TOTAL_REPLICAS"),
        ({"POPDIST_NUM_TOTAL_REPLICAS": "0"}, "POPDIST_NUM_TOTAL_REPLICAS"),
        ({"POPDIST_NUM_TOTAL_REPLICAS": "64", "POPDIST_NUM_LOCAL_REPLICAS": "3"}, "POPDIST_NUM_LOCAL_REPLICAS"),
        ({"POPDIST_NUM_TOTAL_REPLICAS": "64", "POPDIST_NUM_LOCAL_REPLICAS": "-4"}, "POPDIST_NUM_LOCAL_REPLICAS"),
        (dict(POPDIST_NUM_TOTAL_REPLICAS="64", POPDIST_NUM_LOCAL_REPLICAS="16", POPDIST_REPLICA_INDEX_OFFSET="8"),
         "POPDIST_REPLICA_INDEX_OFFSET"),
        (dict(POPDIST_NUM_TOTAL_REPLICAS="64", POPDIST_NUM_LOCAL_REPLICAS="16", POPDIST_REPLICA_INDEX_OFFSET="64"),
         "POPDIST_REPLICA_INDEX_OFFSET"),
    ],
)
def test_inconsistent_poprun_variables_are_named(environment, variable):
    with pytest.raises(InvalidSettingError) as raised:
        PopDistLaunch.from_environment(environment)
    assert raised.value.field == variable and raised.value.value == environment[variable]


@pytest.mark.parametrize(
    "kwargs, field, error",
    [
        ({"num_replicas": 0}, "num_replicas", InvalidSettingError),
        ({"num_replicas": 64, "num_instances": 3}, "num_instances", InvalidSettingError),
        ({"num_replicas": 64, "num_instances": 0}, "num_instances", InvalidSettingError),
        ({"num_replicas": 64, "num_instances": 4, "instance_index": 4}, "instance_index", InvalidSettingError),
        ({"num_replicas": 64, "num_instances": 4, "instance_index": -1}, "instance_index", InvalidSettingError),
        ({"num_replicas": 64.0}, "num_replicas", SettingTypeError),
        ({"num_replicas": 64, "num_instances": True}, "num_instances", SettingTypeError),
    ],
)
def test_launch_is_validated(kwargs, field, error):
    with pytest.raises(error) as raised:
        PopDistLaunch(**kwargs)
    assert raised.value.field == field


# --- the popdist double is strict and follows PopDist -----------------------------------------

# Parameters of the real popdist functions (PopDist Python API reference) and of popdist.poptorch.Options,
# which Graphcore's code calls with no argument or with `ipus_per_replica=`.
REAL_SIGNATURES = {
    "poptorch.Options.__init__": "(self, ipus_per_replica=None)",
    "isPopdistEnvSet": "()",
    "getNumTotalReplicas": "()",
    "getNumLocalReplicas": "()",
    "getNumIpusPerReplica": "()",
    "getReplicaIndexOffset": "()",
    "getNumInstances": "()",
    "getInstanceIndex": "()",
    "getDeviceId": "(ipusPerReplica=0)",
}


@pytest.fixture
def popdist(poprun):
    with poprun(poprun_environment(8, 4, 2)):
        import popdist.poptorch

        yield popdist


def plain_signature(function) -> str:
    signature = inspect.signature(function)
    parameters = [parameter.replace(annotation=parameter.empty) for parameter in signature.parameters.values()]
    return str(signature.replace(parameters=parameters, return_annotation=signature.empty))


def test_popdist_has_the_real_names_and_signatures(popdist):
    functions = {name: member for name, member in vars(popdist).items() if inspect.isfunction(member)}
    signatures = {name: plain_signature(function) for name, function in functions.items() if not name.startswith("_")}
    signatures["poptorch.Options.__init__"] = plain_signature(popdist.poptorch.Options.__init__)
    assert signatures == REAL_SIGNATURES


def test_popdist_reads_poprun_variables(popdist):
    answers = {name: getattr(popdist, name)() for name in REAL_SIGNATURES if "." not in name}
    assert answers == {
        "isPopdistEnvSet": True,
        "getNumTotalReplicas": 8,
        "getNumLocalReplicas": 2,
        "getNumIpusPerReplica": 2,
        "getReplicaIndexOffset": 4,
        "getNumInstances": 4,
        "getInstanceIndex": 2,
        "getDeviceId": 26,
    }


def test_device_ids_are_those_of_graphcores_poprun_tutorial(poprun):
    # poprun --num-replicas 8 --num-instances 4 --ipus-per-replica 2: instances 0..3 get devices 24..27
    devices = []
    for instance in range(4):
        with poprun(poprun_environment(8, 4, instance)):
            import popdist

            devices.append(popdist.getDeviceId())
    assert devices == [24, 25, 26, 27]


def test_outside_a_launch_popdist_options_are_one_process_with_one_replica(poprun):
    with poprun({}):
        import popdist.poptorch

        opts = popdist.poptorch.Options(ipus_per_replica=2)
        assert not popdist.isPopdistEnvSet()
    assert (opts.Distributed.processId, opts.Distributed.numProcesses, opts.replication_factor) == (0, 1, 1)
    assert not opts.exists("ipu_id")


@pytest.mark.parametrize(
    "call, method",
    [
        (lambda opts: opts.useIpuId(1), "useIpuId"),
        (lambda opts: opts.replicationFactor(1), "replicationFactor"),
        (lambda opts: opts.Distributed.disable(), "Distributed.disable"),
        (lambda opts: opts.Distributed.setEnvVarNames("A", "B"), "Distributed.setEnvVarNames"),
        (lambda opts: opts.Distributed.configureProcessId(1), "Distributed.configureProcessId"),
    ],
)
def test_popdist_options_refuse_what_popdist_sets(popdist, call, method):
    opts = popdist.poptorch.Options(ipus_per_replica=2)
    with pytest.raises(RuntimeError, match=re.escape(f"Cannot call `{method}` with popdist.poptorch.Options")):
        call(opts)


def test_popdist_refuses_what_it_does_not_know(poprun):
    with poprun(dict(poprun_environment(8, 4, 2), POPDIST_UNIFORM_REPLICAS_PER_INSTANCE="0")):
        import popdist

        with pytest.raises(RuntimeError, match="uniform number of replicas per instance"):
            popdist.getInstanceIndex()
    with poprun(poprun_environment(8, 4, 2, ipus_per_replica=3)):
        with pytest.raises(ValueError, match="2\\^n IPUs"):
            popdist.getDeviceId()


@pytest.mark.parametrize("name", ["getNumReplicas", "getInstanceId", "Options"])
def test_unknown_popdist_name_raises_attribute_error(popdist, name):
    with pytest.raises(AttributeError):
        getattr(popdist, name)


def test_import_popdist_does_not_load_its_poptorch_submodule(poprun):
    for _ in range(2):  # and each block starts afresh
        with poprun({}):
            import popdist

            assert not hasattr(popdist, "poptorch")
            import popdist.poptorch

            assert issubclass(popdist.poptorch.Options, sys.modules["poptorch"].Options)


def test_without_popdist_environment_popdist_is_not_installed():
    with installed(hardware_version=2):
        with pytest.raises(ImportError):
            import popdist  # noqa: F401


def test_installed_sets_poprun_variables_for_the_block_only(monkeypatch):
    monkeypatch.setenv("POPDIST_NUM_TOTAL_REPLICAS", "128")
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "2")
    monkeypatch.delenv("OMPI_COMM_WORLD_RANK", raising=False)
    names = ("POPDIST_NUM_TOTAL_REPLICAS", "POPDIST_NUM_LOCAL_REPLICAS", "OMPI_COMM_WORLD_RANK")
    with installed(popdist_environment={"POPDIST_NUM_TOTAL_REPLICAS": "8", "OMPI_COMM_WORLD_RANK": "1"}):
        inside = [os.environ.get(name) for name in names]
    assert inside == ["8", None, "1"]
    assert [os.environ.get(name) for name in names] == ["128", "2", None]
    assert "popdist" not in sys.modules and "popdist.poptorch" not in sys.modules


@pytest.mark.parametrize(
    "environment, error",
    [
        ({"POPDIST_TOTAL_REPLICAS": "8"}, ValueError),
        ({"POPDIST_NUM_TOTAL_REPLICAS": 8}, TypeError),
        ([("POPDIST_NUM_TOTAL_REPLICAS", "8")], TypeError),
    ],
)
def test_installed_rejects_what_poprun_does_not_set(environment, error):
    with pytest.raises(error, match="popdist_environment"):
        with installed(popdist_environment=environment):
            pass
