"""`plan()`'s request and its base config: each argument outside what it allows refused in one message naming it and
its value; the base config placed and timed as the candidates are (its IPUs, replicas, micro-batch, build, weights
and reserve the plan's); a Hub model read with the token given."""

import json

import pytest

from optimum_ipu_ext import HubAccessDeniedError, IPUConfig, plan
from optimum_ipu_ext.errors import InvalidSettingError
from optimum_ipu_ext.placement.planning import INFERENCE_BUILD, TRAINING_BUILD, build_of, settings_of
from optimum_ipu_ext.settings.mode import Mode
from support.placement_fixtures import PLANNED_BERT
from support.placement_models import TINY_MODELS

MODEL = PLANNED_BERT
REQUEST = {"ipus": 4, "global_batch_size": 32, "sequence_length": 512}
MEMORY = 1472 * 624 * 1024  # bytes of an IPU's memory: 1,472 tiles of 624 KiB


@pytest.mark.parametrize("arguments, message", [
    ({"ipus": 3}, "`ipus=3` is invalid: allowed values are powers of two (1, 2, 4, ...), as IPU devices come."),
    ({"ipus": 0}, "`ipus=0` is invalid: allowed values are positive whole numbers."),
    ({"ipus": True}, "`ipus=true` is invalid: allowed values are positive whole numbers."),
    ({"ipus": None}, "`ipus=null` is invalid: give the IPUs (a power of two) or a pod, one of them."),
    ({"pod": "pod16"}, "`ipus=4` is invalid: give the IPUs (a power of two) or a pod, one of them."),
    ({"ipus": None, "pod": "pod5"}, '`pod="pod5"` is invalid: allowed values are "pod4", "pod16", "pod64", '
                                    '"pod128", "pod256", "pod512", "pod1024".'),
    ({"global_batch_size": None}, "`global_batch_size=null` is invalid: a training plan needs the samples of a "
                                  "step: a positive whole number, the micro-batch x gradient accumulation x "
                                  "replicas."),
    ({"global_batch_size": 0}, "`global_batch_size=0` is invalid: allowed values are positive whole numbers."),
    ({"global_batch_size": 2.5}, "`global_batch_size=2.5` is invalid: allowed values are positive whole numbers."),
    ({"inference": True}, "`global_batch_size=32` is invalid: an inference plan takes no global batch: it chooses "
                          "the replicas and the device iterations of each step."),
    ({"micro_batch_size": 0}, "`micro_batch_size=0` is invalid: allowed values are positive whole numbers."),
    ({"ipu": "mk1"}, '`ipu="mk1"` is invalid: allowed values are "gc200", "bow".'),
    ({"reserve": 1.0}, "`reserve=1.0` is invalid: allowed values are shares of an IPU's memory, from 0 to less "
                       "than 1."),
])
def test_a_request_outside_what_it_allows_is_refused_naming_the_argument_and_its_value(arguments, message):
    with pytest.raises(InvalidSettingError) as refused:
        plan(MODEL, **dict(REQUEST, **arguments))
    assert str(refused.value) == message
    assert refused.value.field == message[1:message.index("=")]


@pytest.mark.parametrize("mode, names", [(Mode.of(False), TRAINING_BUILD), (Mode.of(True), INFERENCE_BUILD)])
def test_a_build_is_read_from_and_written_to_the_settings_its_mode_reads(mode, names):
    """The embedding's factor is the training setting in both builds: upstream's models read it in both."""
    config = IPUConfig(ipus_per_replica=2, inference_ipus_per_replica=4, embedding_serialization_factor=2,
                       projection_serialization_factor=3, inference_projection_serialization_factor=4,
                       device_iterations=5, inference_device_iterations=6)
    build = build_of(vars(config), mode)
    assert tuple(build) == names
    assert (build["ipus_per_replica"], build["embedding_serialization_factor"],
            build["projection_serialization_factor"]) == ((4, 2, 4) if mode.is_inference else (2, 2, 3))
    if mode.is_inference:
        assert build["device_iterations"] == 6
    written = settings_of(build, mode)
    assert all(written[name] == getattr(config, name) for name in written)
    assert "embedding_serialization_factor" in written
    assert ("inference_ipus_per_replica" in written) is mode.is_inference


def test_a_base_config_of_two_replicas_is_timed_at_the_micro_batch_its_batch_leaves():
    base = IPUConfig(ipus_per_replica=2, replication_factor=2, layers_per_ipu=[1, 4], gradient_accumulation_steps=8,
                     replicated_tensor_sharding=True)
    found = plan(MODEL, **REQUEST, base=base, reserve=0.1)
    reference = found.reference
    placed = base.placement(MODEL, micro_batch_size=2, sequence_length=512, reserve=0.1)
    assert reference.micro_batch_size == 2  # 32 samples = 2 x 8 x 2
    assert reference.placement.to_dict() == placed.to_dict()
    assert reference.placement.reserve_bytes == round(0.1 * MEMORY)


def test_a_base_config_is_timed_with_the_weights_the_plan_sizes():
    base = IPUConfig(ipus_per_replica=4, layers_per_ipu=[2, 1, 1, 1], gradient_accumulation_steps=32)
    reference = plan(MODEL, **REQUEST, base=base, fp32=True).reference
    assert reference.placement.to_dict() == base.placement(MODEL, fp32=True, micro_batch_size=1,
                                                           sequence_length=512).to_dict()


@pytest.mark.parametrize("micro_batch", [None, 2])
def test_a_base_config_is_timed_in_an_inference_plan_as_its_inference_build(micro_batch):
    base = IPUConfig(ipus_per_replica=1, inference_ipus_per_replica=4, inference_layers_per_ipu=[2, 1, 1, 1],
                     inference_device_iterations=8)
    found = plan(MODEL, 4, sequence_length=512, inference=True, base=base, micro_batch_size=micro_batch)
    reference = found.reference
    assert reference.micro_batch_size == (micro_batch or 1)
    assert tuple(reference.build) == INFERENCE_BUILD
    assert (reference.build["ipus_per_replica"], reference.build["device_iterations"]) == (4, 8)
    assert reference.placement.to_dict() == base.placement(MODEL, for_inference=True, sequence_length=512,
                                                           micro_batch_size=micro_batch or 1).to_dict()
    assert reference.placement.to_dict()["build"] == "inference"


def test_a_hub_model_is_planned_with_the_token_given(hub_client, tiny_models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hub_client.create_repo("org/gated")
    hub_client.commit("org/gated", tiny_models["org/tiny-bert"])
    hub_client.gate("org/gated", granted_tokens=[hub_client.write_token])
    request = {"global_batch_size": 8, "sequence_length": 16}
    with pytest.raises(HubAccessDeniedError):
        plan("org/gated", 2, token=hub_client.read_token, **request)
    assert plan("org/gated", 2, token=hub_client.write_token, **request).model == "org/gated"


def test_a_base_config_s_splits_of_a_vocabulary_over_its_ipus_are_not_carried_to_other_builds():
    """Its splits are for its own 4 IPUs: each build cuts the vocabulary by its factors alone, and saves as a
    config that loads."""
    mt5 = dict(TINY_MODELS["MT5ForConditionalGeneration"].config, architectures=["MT5ForConditionalGeneration"])
    base = IPUConfig(ipus_per_replica=4, layers_per_ipu=[0, 2, 2, 0], projection_serialization_factor=None,
                     serialized_projection_splits_per_ipu=[0, 0, 1, 1])
    found = plan(mt5, 4, global_batch_size=16, sequence_length=16, base=base)
    assert {candidate.build["ipus_per_replica"] for candidate in found.candidates} == {1, 2, 4}
    for candidate in found.candidates:
        config = candidate.ipu_config
        assert config.serialized_projection_splits_per_ipu is config.serialized_embedding_splits_per_ipu is None
        assert IPUConfig.from_dict(json.loads(config.to_json_string())).to_dict() == config.to_dict()
    assert found.reference.build["serialized_projection_splits_per_ipu"] == [0, 0, 1, 1]
