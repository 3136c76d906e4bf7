"""`plan(trials=K)` (`planning.choose_trials()`): the builds worth measuring to calibrate the time model. The best
first; then, among the builds that fit whose speed's range (the calibration's band) reaches the best's and that differ
from every trial taken in IPUs a replica, micro-batch or device iterations, each time the one whose step spends the
most other shares of its time on the constants' terms than its nearest trial (checked here against every such build,
placed and timed again); the best with one host call a step among them where it runs several. As data and with their
configs; none where nothing fits; refused for inference."""

import pytest

from optimum_ipu_ext import InvalidSettingError, IPUConfig, plan
from optimum_ipu_ext.placement.calibration import shares, timed_placement
from optimum_ipu_ext.placement.estimate.calibration_file import shipped_calibration
from optimum_ipu_ext.placement.planning import TRIAL_DISTANCE, TRIAL_WORDS
from support.placement_fixtures import PLANNED_BERT

MODEL = PLANNED_BERT
REQUEST = {"ipus": 4, "global_batch_size": 32, "sequence_length": 512}
CONSTANTS = tuple(getattr(shipped_calibration(), name)
                  for name in ("operation_cycles", "elementwise_cycles", "call_seconds"))
# RoBERTa-base's sizes (tests/full_size), SQuAD v2 at 384 tokens, a step of 256 sequences on 16 IPUs: the best build
# runs 16 optimizer steps a host call
ROBERTA = {"architectures": ["RobertaForQuestionAnswering"], "model_type": "roberta", "vocab_size": 50265,
           "max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-05, "pad_token_id": 1,
           "bos_token_id": 0, "eos_token_id": 2}


def dimensions(candidate):
    return (candidate.build["ipus_per_replica"], candidate.micro_batch_size, candidate.build["device_iterations"])


def spent(candidate):
    """The shares of `candidate`'s step its constants' terms take, its config placed and timed again."""
    placer = candidate.ipu_config.placer(MODEL, micro_batch_size=candidate.micro_batch_size,
                                         sequence_length=REQUEST["sequence_length"])
    return shares(timed_placement(placer), CONSTANTS)


def distance(first, second):
    return sum(abs(a - b) for a, b in zip(first, second))


@pytest.fixture(scope="module")
def found():
    return plan(MODEL, trials=4, **REQUEST)


def test_the_first_trial_is_the_best(found):
    best = found.trials[0]
    assert (best.rank, best.differs, best.candidate.build, best.candidate.micro_batch_size) == (
        1, (), found.best.build, found.best.micro_batch_size)
    assert [trial.name for trial in found.trials] == ["rank1-4x1-mb2-di8", "best-4x1-mb2-di1", "rank6-2x2-mb2-di8",
                                                      "rank2-4x1-mb1-di8"]


def test_each_trial_fits_reaches_the_best_s_speed_and_differs_from_those_before_it(found):
    lowest = found.best.placement.time.samples_per_second_range[0]
    for index, trial in enumerate(found.trials):
        assert trial.candidate.placement.fits
        assert trial.candidate.placement.time.samples_per_second_range[1] >= lowest
        assert all(dimensions(trial.candidate) != dimensions(earlier.candidate) for earlier in found.trials[:index])
        if trial.rank is not None:
            assert trial.candidate == found.candidates[trial.rank - 1]
        assert trial.shares == pytest.approx(spent(trial.candidate), rel=1e-9)


def test_each_trial_is_the_farthest_in_shares_from_its_nearest_trial_before_it(found):
    lowest = found.best.placement.time.samples_per_second_range[0]
    variant = found.trials[1].candidate  # the best with one host call a step
    eligible = [variant] + [candidate for candidate in found.candidates[1:] if candidate.placement.fits
                            and candidate.placement.time.samples_per_second_range[1] >= lowest]
    found_shares = {id(candidate): spent(candidate) for candidate in eligible}
    for index, trial in enumerate(found.trials[1:], start=1):
        earlier = found.trials[:index]
        nearest = min(distance(trial.shares, other.shares) for other in earlier)
        assert nearest >= TRIAL_DISTANCE
        for candidate in eligible:
            if all(dimensions(candidate) != dimensions(other.candidate) for other in earlier):
                assert min(distance(found_shares[id(candidate)], other.shares) for other in earlier) <= nearest


def test_a_trial_says_what_it_differs_from_the_best_in(found):
    best = found.trials[0].candidate
    for trial in found.trials[1:]:
        candidate = trial.candidate
        values = {"ipus_per_replica": (candidate.build["ipus_per_replica"], best.build["ipus_per_replica"]),
                  "micro_batch_size": (candidate.micro_batch_size, best.micro_batch_size),
                  "device_iterations": (candidate.build["device_iterations"], best.build["device_iterations"])}
        assert trial.differs == tuple(f"{TRIAL_WORDS[name]} {mine} (the best's {its})"
                                      for name, (mine, its) in values.items() if mine != its)
    assert [trial.differs for trial in found.trials[1:]] == [("device iterations 1 (the best's 8)",),
                                                             ("IPUs a replica 2 (the best's 4)",),
                                                             ("micro-batch 1 (the best's 2)",)]


def test_the_trials_as_data_and_their_configs(found):
    data = found.to_dict()["trials"]
    assert [trial["name"] for trial in data] == [trial.name for trial in found.trials]
    assert [trial["rank"] for trial in data] == [1, None, 6, 2]
    assert data[2]["differs"] == list(found.trials[2].differs)
    assert data[2]["shares"] == dict(zip(("operation_cycles", "elementwise_cycles", "call_seconds"),
                                         found.trials[2].shares))
    assert data[2]["samples_per_second"] == found.trials[2].candidate.samples_per_second
    for trial in found.trials:
        config = trial.candidate.ipu_config
        assert isinstance(config, IPUConfig)
        assert config.layers_per_ipu == trial.candidate.build["layers_per_ipu"]
        assert config.placement(MODEL, micro_batch_size=trial.candidate.micro_batch_size,
                                sequence_length=512).time.step_seconds == pytest.approx(
            trial.candidate.placement.time.step_seconds)
    assert plan(MODEL, **REQUEST).to_dict()["trials"] == []


def test_fewer_trials_where_fewer_builds_differ():
    assert [trial.rank for trial in plan(MODEL, trials=1, **REQUEST).trials] == [1]
    assert [trial.rank for trial in plan(MODEL, trials=2, **REQUEST).trials] == [1, None]
    many = plan(MODEL, trials=50, **REQUEST).trials
    assert 4 < len(many) < 50
    assert len({dimensions(trial.candidate) for trial in many}) == len(many)


def test_the_best_with_one_host_call_a_step_is_weighed_where_it_runs_several():
    found = plan(ROBERTA, ipus=16, global_batch_size=256, sequence_length=384, trials=2)
    best, variant = found.trials
    assert best.candidate.build["device_iterations"] == 16
    assert (variant.rank, variant.name, variant.differs) == (
        None, "best-2x8-mb8-di1", ("device iterations 1 (the best's 16)",))
    assert variant.candidate.build == dict(best.candidate.build, device_iterations=1)
    assert variant.candidate.placement.layers_per_ipu == best.candidate.placement.layers_per_ipu
    assert variant.candidate.ipu_config.device_iterations == 1
    call = CONSTANTS[2]
    assert variant.candidate.placement.time.host_seconds - best.candidate.placement.time.host_seconds == \
        pytest.approx(call - call / 16)


def test_no_trial_where_nothing_fits():
    assert plan(MODEL, ipus=1, global_batch_size=32, sequence_length=512, trials=3).trials == ()


@pytest.mark.parametrize("arguments, message", [
    ({"trials": -1}, "`trials=-1` is invalid: allowed values are whole numbers from 0."),
    ({"trials": True}, "`trials=true` is invalid: allowed values are whole numbers from 0."),
    ({"trials": 2, "inference": True, "global_batch_size": None},
     "`trials=2` is invalid: an inference plan has no trials: calibrate fits training runs."),
])
def test_trials_outside_what_they_allow_are_refused(arguments, message):
    with pytest.raises(InvalidSettingError) as refused:
        plan(MODEL, **dict(REQUEST, **arguments))
    assert str(refused.value) == message


def test_a_best_of_one_host_call_a_step_has_no_such_twin():
    found = plan(MODEL, ipus=4, global_batch_size=1024, sequence_length=512, trials=3)
    assert [trial.name for trial in found.trials] == ["rank1-2x2-mb4-di1", "rank12-4x1-mb1-di1", "rank9-4x1-mb2-di1"]


def test_a_build_whose_speed_cannot_reach_the_best_s_is_no_trial():
    """With a calibration of no error, a build is sure to be slower than the best: none is a trial, not even the best
    with one host call a step."""
    from optimum_ipu_ext.placement.estimate.timing import Calibration

    exact = Calibration(*CONSTANTS)
    found = plan(MODEL, trials=4, calibration=exact, **REQUEST)
    assert [trial.rank for trial in found.trials] == [1]
    widened = plan(MODEL, trials=4, calibration=exact._replace(band=(-0.5, 0.5)), **REQUEST)
    assert [trial.rank for trial in widened.trials] == [1, None, 6, 2]
