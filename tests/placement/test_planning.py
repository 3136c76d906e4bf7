"""`plan()`: the search against brute force over every build and split of a small space, each placed by
`IPUConfig.placement()` as `place` places it; the best config validates and places as planned; the base config is
never faster; the request's bounds; the frontier; the plan as data and as text."""

import itertools
import json
import warnings

import pytest

from optimum_ipu_ext import IPUConfig, plan
from optimum_ipu_ext.errors import PlacementError
from optimum_ipu_ext.placement import planning
from optimum_ipu_ext.placement.estimate.layer_runs import LayerRunCosts
from optimum_ipu_ext.placement.estimate.memory import Verdict, matmul_proportions
from optimum_ipu_ext.placement.models import architecture_of
from optimum_ipu_ext.placement.placer import cached_shapes, measure, placer_of
from optimum_ipu_ext.placement.planning import Candidate, pareto, ranked, replica_sizes
from optimum_ipu_ext.placement.source.model import read_model
from support.corpus import FULL_SIZE
from support.placement_fixtures import BERT_BASE, PLANNED_BERT
from support.placement_models import TINY_MODELS
from support.splits import compositions

MODEL = PLANNED_BERT
LAYERS, IPUS, BATCH, LENGTH = 5, 4, 32, 512


def brute_force(all_ipus=IPUS):
    """Every build of the space the plan searches on `all_ipus`, each with every split: {build: [placement, ...]},
    the placements poptorch runs; each build running as many steps a host call as its even split's time asks
    (`TimeModel.fewest_steps_per_call`, the plan's rule)."""
    found = {}
    for ipus in replica_sizes(all_ipus):
        replicas = all_ipus // ipus
        for micro_batch in (1, 2, 4, 8, 16, 32):
            accumulation, remainder = divmod(BATCH, micro_batch * replicas)
            if remainder or not accumulation:
                continue
            for checkpoints, offchip in itertools.product((False, True), repeat=2):
                build = (ipus, micro_batch, checkpoints, offchip)
                settings = dict(ipus_per_replica=ipus, replication_factor=replicas,
                                gradient_accumulation_steps=accumulation, recompute_checkpoint_every_layer=checkpoints,
                                optimizer_state_offchip=offchip, replicated_tensor_sharding=replicas > 1)
                even = IPUConfig(**settings, layers_per_ipu=[-1] * ipus).placer(
                    MODEL, micro_batch_size=micro_batch, sequence_length=LENGTH)
                even_time = even.place().time
                settings["device_iterations"] = even.configured.cost_model.time.fewest_steps_per_call(even_time)
                for split in compositions(LAYERS, ipus):
                    config = IPUConfig(**settings, layers_per_ipu=split)
                    placement = config.placement(MODEL, micro_batch_size=micro_batch, sequence_length=LENGTH)
                    if not placement.problems:
                        found.setdefault(build, []).append(placement)
    return found


# the plans are made again for each test (a third of a second), so that each test runs the search it checks; the
# brute force, which only places, is made once
@pytest.fixture
def searched():
    return plan(MODEL, IPUS, global_batch_size=BATCH, sequence_length=LENGTH)


@pytest.fixture(scope="module")
def everything():
    return brute_force()


# on 2 IPUs a replica's fastest split that fits is not the even one, and a faster split is tight
@pytest.fixture
def searched_on_two():
    return plan(MODEL, 2, global_batch_size=BATCH, sequence_length=LENGTH)


@pytest.fixture(scope="module")
def everything_on_two():
    return brute_force(2)


def key(candidate):
    build = candidate.build
    return (build["ipus_per_replica"], candidate.micro_batch_size, build["recompute_checkpoint_every_layer"],
            build["optimizer_state_offchip"])


def test_no_build_and_split_of_the_space_is_faster_than_the_best_and_fits(searched, everything):
    fitting = [placement for placements in everything.values() for placement in placements if placement.fits]
    fastest = max(placement.time.samples_per_second for placement in fitting)
    assert searched.best is searched.candidates[0]
    assert searched.best.placement.fits
    assert searched.best.samples_per_second == pytest.approx(fastest, rel=1e-12)
    # the space has builds of every verdict, and the best is not the fastest of all
    assert {placement.verdict for placements in everything.values() for placement in placements} == {
        Verdict.FITS, Verdict.TIGHT, Verdict.DOES_NOT_FIT}
    assert max(placement.time.samples_per_second for placements in everything.values()
               for placement in placements) > fastest


@pytest.mark.parametrize("space", ["", "_on_two"])
def test_each_build_s_split_is_its_fastest_that_fits_else_its_least_memory(space, request):
    searched, everything = (request.getfixturevalue(name + space) for name in ("searched", "everything"))
    for candidate in searched.candidates:
        placements = everything[key(candidate)]
        fitting = [placement for placement in placements if placement.fits]
        if fitting:
            assert candidate.samples_per_second == pytest.approx(
                max(placement.time.samples_per_second for placement in fitting), rel=1e-12)
            assert candidate.placement.fits
        else:
            least = min(max(ipu.on_chip_bytes for ipu in placement.ipus) for placement in placements)
            assert max(ipu.on_chip_bytes for ipu in candidate.placement.ipus) == least


def test_every_micro_batch_is_searched_up_to_the_first_of_which_no_build_fits(searched, everything):
    """A larger micro-batch may be faster (its matrix products run nearer their peak, its operations' fixed costs
    are shared by more samples): each is searched, up to the first no build of a replica size fits (a larger one
    keeps more, and fits no better)."""
    listed = {key(candidate): candidate for candidate in searched.candidates}
    assert len(listed) == len(searched.candidates)
    for ipus in replica_sizes(IPUS):
        sizes = sorted({build[1] for build in listed if build[0] == ipus})
        assert sizes == [1 << power for power in range(len(sizes))]
        fitting = [any(placement.fits for build, placements in everything.items() if build[:2] == (ipus, size)
                       for placement in placements) for size in sizes]
        assert fitting[:-1] == [True] * (len(sizes) - 1)
        assert {build for build in everything if build[0] == ipus and build[1] <= sizes[-1]} == {
            build for build in listed if build[0] == ipus}
    assert max(candidate.micro_batch_size for candidate in searched.candidates) > 1


def test_a_training_build_runs_as_many_steps_a_call_as_keep_the_calls_within_their_share(searched):
    """The fewest steps a call (a power of two) keeping each call's cost within 5 % of a step of its even split."""
    steps = set()
    for candidate in searched.candidates:
        build = dict(candidate.build, layers_per_ipu=[-1] * candidate.build["ipus_per_replica"], device_iterations=1)
        del build["matmul_proportion"]
        even = IPUConfig(**build).placement(MODEL, micro_batch_size=candidate.micro_batch_size,
                                            sequence_length=LENGTH).time
        chosen = candidate.build["device_iterations"]
        call = even.calibration.call_seconds
        rest = even.step_seconds - call
        assert call / chosen <= 0.05 * (rest + call / chosen)
        assert chosen == 1 or call / (chosen // 2) > 0.05 * (rest + call / (chosen // 2))
        steps.add(chosen)
    assert len(steps) > 1


def test_the_best_config_validates_and_places_as_planned(searched):
    best = searched.best
    saved = IPUConfig.from_dict(json.loads(best.ipu_config.to_json_string()))
    placement = saved.placement(MODEL, micro_batch_size=best.micro_batch_size, sequence_length=LENGTH)
    assert placement.verdict == Verdict.FITS
    assert placement.to_dict() == best.placement.to_dict()
    assert (saved.ipus_per_replica * saved.replication_factor, saved.layers_per_ipu) == (
        IPUS, list(best.placement.layers_per_ipu))
    assert best.micro_batch_size * saved.gradient_accumulation_steps * saved.replication_factor == BATCH
    assert saved.matmul_proportion == best.build["matmul_proportion"]
    assert all(0.1 <= share <= 0.6 for share in saved.matmul_proportion)


def test_the_base_config_is_placed_and_timed_alike_and_is_never_faster():
    base = IPUConfig(ipus_per_replica=4, layers_per_ipu=[2, 1, 1, 1], gradient_accumulation_steps=32,
                     embedding_serialization_factor=1, executable_cache_dir="./cache")
    found = plan(MODEL, IPUS, global_batch_size=BATCH, sequence_length=LENGTH, base=base)
    reference = found.reference
    assert reference.ipu_config is base
    assert reference.placement.to_dict() == base.placement(MODEL, micro_batch_size=1,
                                                           sequence_length=LENGTH).to_dict()
    assert found.best.samples_per_second >= reference.samples_per_second
    assert found.best.ipu_config.executable_cache_dir == "./cache"  # the base's other settings are kept
    # a base on other IPUs, or whose batch is not the plan's, is not timed
    assert plan(MODEL, IPUS, global_batch_size=64, sequence_length=LENGTH, base=base).reference.micro_batch_size == 2
    assert plan(MODEL, IPUS, global_batch_size=48, sequence_length=LENGTH, base=base).reference is None
    assert plan(MODEL, 8, global_batch_size=BATCH, sequence_length=LENGTH, base=base).reference is None


def test_the_frontier_holds_the_candidates_no_other_beats_in_both_speed_and_memory(searched):
    candidates = searched.candidates
    frontier = set(searched.pareto)
    assert list(searched.pareto) == pareto(candidates)
    within = [index for index, found in enumerate(candidates) if found.verdict in (Verdict.FITS, Verdict.TIGHT)]

    def beaten(index):
        return any(candidates[other].samples_per_second >= candidates[index].samples_per_second
                   and candidates[other].largest_share <= candidates[index].largest_share
                   and (candidates[other].samples_per_second, candidates[other].largest_share)
                   != (candidates[index].samples_per_second, candidates[index].largest_share)
                   for other in within)

    assert frontier and frontier <= set(within)
    assert all(not beaten(index) for index in frontier)
    assert all(beaten(index) or any((candidates[index].samples_per_second, candidates[index].largest_share)
                                    == (candidates[other].samples_per_second, candidates[other].largest_share)
                                    for other in frontier) for index in set(within) - frontier)
    speeds = [candidates[index].samples_per_second for index in searched.pareto]
    assert speeds == sorted(speeds, reverse=True)


def test_candidates_are_ranked_fits_then_tight_fastest_first_then_the_nearest_to_fitting(searched):
    order = {Verdict.FITS: 0, Verdict.TIGHT: 1, Verdict.DOES_NOT_FIT: 2}
    keys = [(order[found.verdict], found.largest_share if found.verdict == Verdict.DOES_NOT_FIT
             else -found.samples_per_second) for found in searched.candidates]
    assert keys == sorted(keys)
    assert [found.verdict for found in searched.candidates].count(Verdict.DOES_NOT_FIT) > 1


def test_the_plan_as_data_is_json_and_holds_each_candidate_s_config_and_placement(searched):
    data = json.loads(json.dumps(searched.to_dict()))
    assert (data["model"], data["architecture"], data["build"], data["ipus"], data["ipu"]) == (
        "the model config", "BertForPreTraining", "training", 4, "gc200")
    assert (data["global_batch_size"], data["sequence_length"], data["pareto"]) == (
        BATCH, LENGTH, list(searched.pareto))
    first = data["candidates"][0]
    best = searched.best
    assert first["ipu_config"] == best.ipu_config.to_dict()
    assert first["placement"] == best.placement.to_dict()
    assert (first["samples_per_second"], first["verdict"], first["fits"], first["micro_batch_size"]) == (
        best.samples_per_second, "fits", True, best.micro_batch_size)
    assert {name: first[name] for name in ("ipus_per_replica", "replication_factor", "layers_per_ipu",
                                           "gradient_accumulation_steps")} == {
        name: getattr(best.ipu_config, name) for name in ("ipus_per_replica", "replication_factor",
                                                          "layers_per_ipu", "gradient_accumulation_steps")}


def test_the_plan_as_text_names_the_best_and_lists_the_candidates(searched):
    text = str(searched)
    lines = text.splitlines()
    assert lines[0] == "the model config: BertForPreTraining on 4 GC200 IPUs, global batch 32, sequence length 512"
    verdicts = [found.verdict for found in searched.candidates]
    assert lines[1] == (f"{len(verdicts)} builds searched: {verdicts.count(Verdict.FITS)} fit, "
                        f"{verdicts.count(Verdict.TIGHT)} tight, {verdicts.count(Verdict.DOES_NOT_FIT)} do not fit.")
    best = searched.best
    assert lines[3].startswith(f"Best: {best.build['ipus_per_replica']} IPUs x {best.build['replication_factor']}, "
                               f"micro-batch {best.micro_batch_size}")
    assert f"{best.samples_per_second:,.1f} samples a second" in lines[3]
    rows = [line for line in lines if line.lstrip().startswith(("1 ", "2 ", "3 "))]
    assert len(rows) == 3 and f"{best.samples_per_second:,.1f}" in rows[0]


def test_an_inference_plan_chooses_the_replicas_and_the_device_iterations():
    found = plan(MODEL, IPUS, sequence_length=LENGTH, inference=True)
    assert {candidate.build["ipus_per_replica"] for candidate in found.candidates} == {1, 2, 4}
    for candidate in found.candidates:
        stages = candidate.placement.schedule.stages
        iterations = candidate.build["device_iterations"]
        assert candidate.ipu_config.inference_device_iterations == iterations
        assert iterations / (iterations + stages - 1) >= 0.9
        assert iterations == 1 or (iterations / 2) / (iterations / 2 + stages - 1) < 0.9
        assert candidate.ipu_config.inference_replication_factor * candidate.ipu_config.inference_ipus_per_replica \
            == IPUS
    pipelined = [candidate for candidate in found.candidates if candidate.build["ipus_per_replica"] == 4]
    assert {(candidate.placement.schedule.stages, candidate.build["device_iterations"]) for candidate in pipelined} \
        == {(5, 64)}  # the heads on IPU 0 again: 32 / 36 is short of 90 %
    assert "gradient_accumulation_steps" not in found.to_dict()["candidates"][0]
    assert str(found).splitlines()[0].endswith("on 4 GC200 IPUs, inference, sequence length 512")


def test_a_batch_no_build_runs_is_refused_with_what_to_change():
    with pytest.raises(PlacementError) as refused:
        plan(MODEL, IPUS, global_batch_size=1, sequence_length=LENGTH)
    assert refused.value.problem == ("no build runs on 4 IPUs for this batch: give more IPUs, or a global batch "
                                     "size that the replicas and the pipeline's stages divide")


def test_a_pod_names_its_ipus_and_a_micro_batch_given_is_the_only_one_searched():
    found = plan(MODEL, pod="pod4", global_batch_size=BATCH, sequence_length=LENGTH, micro_batch_size=2)
    assert found.request.ipus == 4
    assert {candidate.micro_batch_size for candidate in found.candidates} == {2}


def test_plan_warns_of_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan(MODEL, 2, global_batch_size=8, sequence_length=128)


def test_a_checkpoint_s_headers_are_read_once_for_the_whole_search(tmp_path, monkeypatch):
    from optimum_ipu_ext.config import planning
    from optimum_ipu_ext.placement.source import model as source
    from support.placement_fixtures import bert_shapes, write_checkpoint

    config = dict(MODEL, architectures=["BertForMaskedLM"], num_hidden_layers=2)
    folder = write_checkpoint(tmp_path / "bert", bert_shapes(config), config)
    reads = []
    read_model = source.read_model

    def counted(*arguments):
        found = read_model(*arguments)

        def tensors():
            reads.append(found.name)
            return found.tensors()

        return found._replace(tensors=tensors)

    monkeypatch.setattr(source, "read_model", counted)
    found = planning.plan(folder, 2, global_batch_size=8, sequence_length=128)
    assert len(found.candidates) > 4 and reads == [folder]


# roberta-large's vocabulary of 50,265 rows with a wider hidden size: on one IPU only a serialized embedding fits
ROBERTA = dict(BERT_BASE, model_type="roberta", architectures=["RobertaForQuestionAnswering"], vocab_size=50265,
               hidden_size=1536, intermediate_size=6144, num_hidden_layers=2, num_attention_heads=16,
               max_position_embeddings=514, type_vocab_size=1, pad_token_id=1)


def test_a_vocabulary_is_serialized_where_nothing_fits_without_by_the_least_factor_dividing_it():
    found = plan(ROBERTA, 1, global_batch_size=16, sequence_length=128)
    factors = {(candidate.build["embedding_serialization_factor"], candidate.verdict)
               for candidate in found.candidates}
    assert factors == {(1, Verdict.DOES_NOT_FIT), (3, Verdict.FITS), (3, Verdict.DOES_NOT_FIT)}  # 2 does not divide
    assert found.best.build["embedding_serialization_factor"] == 3
    assert found.best.ipu_config.embedding_serialization_factor == 3
    with pytest.raises(PlacementError) as refused:
        IPUConfig(embedding_serialization_factor=2).placement(ROBERTA)
    assert refused.value.problem.endswith("; the factors up to 16 that do: 1, 3, 5, 9, 15")


def test_a_vocabulary_is_not_serialized_where_a_build_fits_without():
    found = plan(ROBERTA, 4, global_batch_size=16, sequence_length=128)
    factors = {}
    for candidate in found.candidates:
        factors.setdefault(candidate.build["ipus_per_replica"], set()).add(
            (candidate.build["embedding_serialization_factor"], candidate.placement.fits))
    # replicas of 1 and 2 IPUs fit unserialized; a replica of 4 only with the vocabulary cut, by 3, the least factor
    # dividing 50,265
    assert factors == {1: {(1, False), (1, True)}, 2: {(1, True)}, 4: {(1, False), (3, False), (3, True)}}
    inference = plan(ROBERTA, 2, sequence_length=128, inference=True)  # its stages counted unserialized too
    assert {candidate.build["embedding_serialization_factor"] for candidate in inference.candidates} == {1}
    assert {candidate.build["ipus_per_replica"] for candidate in inference.candidates} == {1, 2}


def test_a_projection_split_over_ipus_is_serialized_where_nothing_fits_without():
    """mt5-small on 4 IPUs: its untied LM head, split over the IPUs, fits only cut by a factor; the least that fits."""
    found = plan(str(FULL_SIZE / "mt5-small"), 4, global_batch_size=128, sequence_length=128,
                 decoder_sequence_length=128)
    least = {}
    for candidate in found.candidates:
        build = candidate.build
        assert build["embedding_serialization_factor"] == build["projection_serialization_factor"]
        if candidate.placement.fits:
            group = (build["ipus_per_replica"], candidate.micro_batch_size)
            least[group] = min(least.get(group, 99), build["projection_serialization_factor"])
    # each replica size and micro-batch fits only cut, by the least factor that fits it: on 2 IPUs a larger batch
    # needs more; the larger micro-batches fit with none
    assert least == {(2, 1): 4, (2, 2): 8, (4, 1): 4, (4, 2): 4}
    for candidate in found.candidates:
        group = (candidate.build["ipus_per_replica"], candidate.micro_batch_size)
        assert candidate.build["projection_serialization_factor"] in (1, least.get(group, 1))
    assert (found.best.build["projection_serialization_factor"], found.best.micro_batch_size) == (8, 2)


@pytest.mark.parametrize("lengths, problem", [
    ({"decoder_sequence_length": 64}, "decoder_sequence_length"),
    ({"sequence_length": 0}, "sequence_length"),
])
def test_lengths_the_model_does_not_take_are_refused_as_placement_refuses_them(lengths, problem):
    request = dict({"global_batch_size": BATCH, "sequence_length": LENGTH}, **lengths)
    with pytest.raises(PlacementError) as refused:
        plan(MODEL, IPUS, **request)
    with pytest.raises(PlacementError) as placed:
        IPUConfig().placement(MODEL, micro_batch_size=1, **{"sequence_length": LENGTH, **lengths})
    assert str(refused.value) == str(placed.value) and problem in str(refused.value)


def test_the_two_ipu_space_holds_what_the_split_search_must_see_past(everything_on_two, searched_on_two):
    """Of a pipeline of 2 IPUs with the state off chip, the even split does not fit, the fastest that fits is
    another, and a faster one still is tight: the plan takes the fastest that fits."""
    placements = everything_on_two[(2, 1, True, True)]
    even = next(placement for placement in placements if list(placement.layers_per_ipu) == [3, 2])
    fastest = max(placements, key=lambda placement: placement.time.samples_per_second)
    fitting = max((placement for placement in placements if placement.fits),
                  key=lambda placement: placement.time.samples_per_second)
    assert not even.fits and fastest.verdict == Verdict.TIGHT
    candidate = next(found for found in searched_on_two.candidates if key(found) == (2, 1, True, True))
    assert list(candidate.placement.layers_per_ipu) == list(fitting.layers_per_ipu) == [1, 4]


def test_each_replica_size_is_searched_with_and_without_checkpoints_and_with_the_state_on_and_off_chip(searched):
    """Sharded where there are replicas, unserialized where a build fits without, at each micro-batch searched."""
    found = {key(candidate) for candidate in searched.candidates}
    assert len(found) == len(searched.candidates)
    for ipus, micro_batch in {build[:2] for build in found}:
        assert {build[2:] for build in found if build[:2] == (ipus, micro_batch)} == set(
            itertools.product((False, True), (False, True)))
    for candidate in searched.candidates:
        build, replicas = candidate.build, IPUS // candidate.build["ipus_per_replica"]
        assert (build["replication_factor"], build["gradient_accumulation_steps"]) == (
            replicas, BATCH // (replicas * candidate.micro_batch_size))
        assert build["replicated_tensor_sharding"] is (replicas > 1)
        assert build["embedding_serialization_factor"] == build["projection_serialization_factor"] == 1


def test_the_split_costs_of_a_pipeline_are_worked_out_once_for_both_places_of_the_optimizer_state(monkeypatch):
    made = []

    class Counted(LayerRunCosts):
        def __init__(self, configured, cut, cost_model=None):
            settings = configured.settings
            made.append((settings["ipus_per_replica"], settings["recompute_checkpoint_every_layer"],
                         configured.shape.micro_batch_size))
            super().__init__(configured, cut, cost_model)

    monkeypatch.setattr(planning, "LayerRunCosts", Counted)
    found = plan(MODEL, IPUS, global_batch_size=BATCH, sequence_length=LENGTH)
    assert sorted(made) == sorted({(candidate.build["ipus_per_replica"],
                                    candidate.build["recompute_checkpoint_every_layer"], candidate.micro_batch_size)
                                   for candidate in found.candidates})
    assert len(found.candidates) == 2 * len(made)


def placed_twice(micro_batch):
    """The same build with 16 and with 32 micro-batches a step: the same memory, the second faster."""
    return [Candidate({"gradient_accumulation_steps": steps}, micro_batch,
                      IPUConfig(ipus_per_replica=4, layers_per_ipu=[0, 2, 2, 1], gradient_accumulation_steps=steps)
                      .placement(MODEL, micro_batch_size=micro_batch, sequence_length=LENGTH))
            for steps in (16, 32)]


@pytest.mark.parametrize("micro_batch, verdict", [(1, Verdict.FITS), (16, Verdict.DOES_NOT_FIT)])
def test_of_builds_as_large_the_faster_ranks_first_and_alone_is_on_the_frontier(micro_batch, verdict):
    slower, faster = placed_twice(micro_batch)
    assert (slower.verdict, faster.verdict) == (verdict, verdict)
    assert not slower.placement.problems and not faster.placement.problems
    assert slower.largest_share == faster.largest_share
    assert faster.samples_per_second > slower.samples_per_second
    assert ranked([slower, faster]) == [faster, slower]
    assert pareto([slower, faster]) == ([1] if verdict == Verdict.FITS else [])


def test_a_candidate_the_search_found_is_data_without_a_config():
    candidate = placed_twice(1)[0]
    data = candidate.to_dict()
    assert data["ipu_config"] is None
    assert data["placement"] == candidate.placement.to_dict()
    assert (data["gradient_accumulation_steps"], data["micro_batch_size"], data["verdict"]) == (16, 1, "fits")


@pytest.mark.parametrize("on_chip, proportions", [
    # 1 - on chip / memory - half the reserve's 0.25, between 0.1 and 0.6, to a hundredth
    ([0, 275, 333, 600, 700, 875], [0.6, 0.6, 0.54, 0.28, 0.18, 0.1]),
])
def test_each_ipu_s_matmul_proportion_is_what_its_counted_memory_leaves_but_half_the_reserve(on_chip, proportions):
    assert matmul_proportions(on_chip, 1000, 250) == proportions


def test_the_plan_as_data_names_the_memory_and_the_reserve_its_verdicts_take(searched):
    data = searched.to_dict()
    assert (data["micro_batch_size"], data["ipu_memory_bytes"], data["reserve_bytes"]) == (
        None, 1472 * 624 * 1024, round(0.25 * 1472 * 624 * 1024))
    assert plan(MODEL, IPUS, global_batch_size=BATCH, sequence_length=LENGTH, micro_batch_size=2,
                reserve=0.1).to_dict()["reserve_bytes"] == round(0.1 * 1472 * 624 * 1024)


@pytest.mark.parametrize("replicas, offchip", [(1, True), (2, False), (2, True)])
def test_the_time_a_split_is_weighed_by_is_the_step_place_times_for_it(replicas, offchip):
    """The search weighs a split by its cycles x its slowest IPU's cycle + the largest of the IPUs' seconds after the
    pipeline (the weight update, the gradients' sum); with the host's part that is `place`'s step, split by split."""
    source = read_model(MODEL)
    row = architecture_of(source.name, source.config)
    config = IPUConfig(ipus_per_replica=2, replication_factor=replicas, layers_per_ipu=[-1, -1],
                       gradient_accumulation_steps=4, optimizer_state_offchip=offchip,
                       replicated_tensor_sharding=replicas > 1)
    placer = placer_of(source.name, row, source.config, vars(config), cached_shapes(source), False, False,
                       measure(source.name, (1, LENGTH, None), False))
    costs = LayerRunCosts(placer.configured, None)
    even = placer.place()
    scale = placer.configured.cost_model.time.cycle_scale(even.schedule.cycles)
    other = costs.after_pipeline_seconds
    assert max(other(ipu, 0, LAYERS) for ipu in (0, 1)) > 0
    for first in range(1, LAYERS):  # every split giving each IPU a layer: the stages of the even split
        runs = [(0, 0, first), (1, first, LAYERS)]
        weighed = scale * max(costs.cycle_load(*run) for run in runs) + max(other(*run) for run in runs)
        step = placer.place([first, LAYERS - first]).time
        assert weighed + step.host_seconds == pytest.approx(step.step_seconds, rel=1e-12)


def test_a_build_running_more_steps_a_call_is_the_same_build_with_those_device_iterations():
    source = read_model(MODEL)
    config = IPUConfig(ipus_per_replica=2, layers_per_ipu=[-1, -1], gradient_accumulation_steps=4)
    configured = placer_of(source.name, architecture_of(source.name, source.config), source.config, vars(config),
                           cached_shapes(source), False, False, measure(source.name, (1, LENGTH, None), False)
                           ).configured
    more = configured.with_steps_per_call(4)
    assert more.settings == {**configured.settings, "device_iterations": 4}
    assert more.cost_model.time.job == configured.cost_model.time.job._replace(steps_per_call=4)
    assert more.cost_model.memory == configured.cost_model.memory


def test_a_model_whose_layers_parallelize_places_itself_keeps_its_split():
    lxmert = dict(TINY_MODELS["LxmertForQuestionAnswering"].config, architectures=["LxmertForQuestionAnswering"])
    found = plan(lxmert, 4, global_batch_size=32, sequence_length=16)
    even = IPUConfig(ipus_per_replica=4).placement(lxmert, micro_batch_size=1, sequence_length=16)
    assert {tuple(candidate.build["layers_per_ipu"]) for candidate in found.candidates} == {
        tuple(even.layers_per_ipu)}


def test_a_generation_build_s_encoder_and_decoder_are_split_as_place_balances_them_for_time():
    t5 = dict(TINY_MODELS["T5ForConditionalGeneration"].config, architectures=["T5ForConditionalGeneration"],
              num_layers=6, num_decoder_layers=6)
    base = IPUConfig(inference_parallelize_kwargs={"for_generation": True})
    found = plan(t5, 4, sequence_length=32, decoder_sequence_length=8, inference=True, base=base)
    splits = {candidate.build["ipus_per_replica"]: candidate.build["layers_per_ipu"]
              for candidate in found.candidates}
    assert splits == {2: [6, 6], 4: [6, 2, 2, 2]}
    for candidate in found.candidates:
        assert candidate.ipu_config.placement(t5, for_inference=True, micro_batch_size=1, sequence_length=32,
                                              decoder_sequence_length=8).to_dict() == candidate.placement.to_dict()


@pytest.mark.parametrize("value, field, needs", [("wide", "hidden_size", "a whole number"),
                                                  ("5", "num_hidden_layers", "a whole number")])
def test_a_config_json_value_of_the_wrong_kind_is_refused_as_placement_refuses_it(value, field, needs):
    with pytest.raises(PlacementError) as refused:
        plan(dict(MODEL, **{field: value}), IPUS, global_batch_size=BATCH, sequence_length=LENGTH)
    assert str(refused.value) == (f'Cannot place the model config: its config.json gives `{field}` "{value}", and the '
                                  f"placement needs {needs}.")


def test_a_checkpoint_missing_a_layer_is_refused_as_placement_refuses_it(tmp_path):
    from support.placement_fixtures import bert_shapes, write_checkpoint

    config = dict(MODEL, architectures=["BertForMaskedLM"], num_hidden_layers=2)
    shapes = {name: shape for name, shape in bert_shapes(config).items() if ".layer.1." not in name}
    folder = write_checkpoint(tmp_path / "bert", shapes, config)
    with pytest.raises(PlacementError) as refused:
        plan(folder, 2, global_batch_size=8, sequence_length=128)
    with pytest.raises(PlacementError) as placed:
        IPUConfig().placement(folder)
    assert str(refused.value) == str(placed.value)
    assert "holds no parameter of `bert.encoder.layer.1`" in str(refused.value)


@pytest.mark.parametrize("model, lengths", [
    (dict(TINY_MODELS["T5ForConditionalGeneration"].config, architectures=["T5ForConditionalGeneration"]),
     {"sequence_length": 32, "decoder_sequence_length": 8}),
    (dict(TINY_MODELS["ViTForImageClassification"].config, architectures=["ViTForImageClassification"]), {}),
])
@pytest.mark.parametrize("fp32", [False, True])
def test_each_candidate_is_placed_for_the_lengths_and_the_weights_asked_as_its_config_places(model, lengths, fp32):
    found = plan(model, 2, global_batch_size=8, fp32=fp32, **lengths)
    for candidate in found.candidates:
        assert candidate.placement.to_dict() == candidate.ipu_config.placement(
            model, fp32=fp32, micro_batch_size=candidate.micro_batch_size, **lengths).to_dict()


def test_a_pipelined_inference_build_takes_its_fastest_split():
    base = IPUConfig(inference_execution_strategy="pipelined")
    found = plan(MODEL, IPUS, sequence_length=LENGTH, inference=True, base=base)
    candidate = next(found for found in found.candidates if found.build["ipus_per_replica"] == IPUS)
    assert candidate.placement.schedule.cycles is not None
    speeds = []
    for split in compositions(LAYERS, IPUS):
        config = IPUConfig(inference_execution_strategy="pipelined", inference_ipus_per_replica=IPUS,
                           inference_layers_per_ipu=split,
                           inference_device_iterations=candidate.build["device_iterations"])
        placement = config.placement(MODEL, for_inference=True, micro_batch_size=1, sequence_length=LENGTH)
        if placement.fits:
            speeds.append(placement.time.samples_per_second)
    assert candidate.samples_per_second == pytest.approx(max(speeds), rel=1e-12)
    assert list(candidate.placement.layers_per_ipu) != [2, 1, 1, 1]  # not the even split
