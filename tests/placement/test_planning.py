"""`plan()`: the search against brute force over every build and split of a small space, each placed by
`IPUConfig.placement()` as `place` places it; the best config validates and places as planned; the base config is
never faster; the request's bounds; the frontier; the plan as data and as text."""

import itertools
import json
import warnings

import pytest

from optimum_ipu_ext import IPUConfig, plan
from optimum_ipu_ext.errors import InvalidSettingError, PlacementError
from optimum_ipu_ext.placement.planning import pareto, replica_sizes
from support.placement_fixtures import BERT_BASE

# a BERT whose builds on 4 IPUs at 512 tokens fit, are tight or do not fit as the split, the replicas and the
# optimizer's place change
MODEL = dict(BERT_BASE, architectures=["BertForPreTraining"], hidden_size=1536, intermediate_size=6144,
             num_hidden_layers=5, num_attention_heads=12)
LAYERS, IPUS, BATCH, LENGTH = 5, 4, 32, 512


def splits(layers, ipus):
    """Every `layers_per_ipu` of `layers` over `ipus` IPUs, each taking 0 or more."""
    for cuts in itertools.combinations(range(layers + ipus - 1), ipus - 1):
        bounds = (-1, *cuts, layers + ipus - 1)
        yield [bounds[index + 1] - bounds[index] - 1 for index in range(ipus)]


def brute_force():
    """Every build of the space the plan searches, each with every split: {build: [placement, ...]}, the
    placements poptorch runs."""
    found = {}
    for ipus in replica_sizes(IPUS):
        replicas = IPUS // ipus
        for micro_batch in (1, 2, 4, 8, 16, 32):
            accumulation, remainder = divmod(BATCH, micro_batch * replicas)
            if remainder or not accumulation:
                continue
            for checkpoints, offchip in itertools.product((False, True), repeat=2):
                build = (ipus, micro_batch, checkpoints, offchip)
                for split in splits(LAYERS, ipus):
                    config = IPUConfig(ipus_per_replica=ipus, layers_per_ipu=split, replication_factor=replicas,
                                       gradient_accumulation_steps=accumulation,
                                       recompute_checkpoint_every_layer=checkpoints, optimizer_state_offchip=offchip,
                                       replicated_tensor_sharding=replicas > 1)
                    placement = config.placement(MODEL, micro_batch_size=micro_batch, sequence_length=LENGTH)
                    if not placement.problems:
                        found.setdefault(build, []).append(placement)
    return found


@pytest.fixture(scope="module")
def searched():
    return plan(MODEL, IPUS, global_batch_size=BATCH, sequence_length=LENGTH)


@pytest.fixture(scope="module")
def everything():
    return brute_force()


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
        "fits", "tight", "does not fit"}
    assert max(placement.time.samples_per_second for placements in everything.values()
               for placement in placements) > fastest


def test_each_build_s_split_is_its_fastest_that_fits_else_its_least_memory(searched, everything):
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


def test_the_builds_left_out_are_larger_micro_batches_never_faster_nor_smaller(searched, everything):
    """A larger micro-batch of a build the plan searched is left out: each of its splits is as slow or slower than
    the plan's candidate of the smaller one, or needs more memory than the smaller one's least."""
    listed = {key(candidate): candidate for candidate in searched.candidates}
    assert len(listed) == len(searched.candidates)
    left_out = [build for build in everything if build not in listed]
    assert left_out and all(build[1] > 1 for build in left_out)
    for ipus, micro_batch, checkpoints, offchip in left_out:
        smaller = listed[(ipus, 1, checkpoints, offchip)]
        for placement in everything[(ipus, micro_batch, checkpoints, offchip)]:
            if placement.fits:
                assert placement.time.samples_per_second <= smaller.samples_per_second * (1 + 1e-12)


def test_the_best_config_validates_and_places_as_planned(searched):
    best = searched.best
    saved = IPUConfig.from_dict(json.loads(best.ipu_config.to_json_string()))
    placement = saved.placement(MODEL, micro_batch_size=best.micro_batch_size, sequence_length=LENGTH)
    assert placement.verdict == "fits"
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
    within = [index for index, found in enumerate(candidates) if found.verdict in ("fits", "tight")]

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
    order = {"fits": 0, "tight": 1, "does not fit": 2}
    keys = [(order[found.verdict], found.largest_share if found.verdict == "does not fit"
             else -found.samples_per_second) for found in searched.candidates]
    assert keys == sorted(keys)
    assert [found.verdict for found in searched.candidates].count("does not fit") > 1


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
    assert lines[1] == (f"{len(verdicts)} builds searched: {verdicts.count('fits')} fit, {verdicts.count('tight')} "
                        f"tight, {verdicts.count('does not fit')} do not fit.")
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


@pytest.mark.parametrize("arguments, field, allowed", [
    ({"ipus": 3}, "ipus", "powers of two"),
    ({"ipus": 0}, "ipus", "positive whole numbers"),
    ({"ipus": True}, "ipus", "positive whole numbers"),
    ({"ipus": None}, "ipus", "give the IPUs (a power of two) or a pod"),
    ({"pod": "pod16"}, "ipus", "give the IPUs (a power of two) or a pod"),
    ({"ipus": None, "pod": "pod5"}, "pod", '"pod4", "pod16", "pod64"'),
    ({"global_batch_size": None}, "global_batch_size", "a training plan needs the samples of a step"),
    ({"global_batch_size": 0}, "global_batch_size", "positive whole numbers"),
    ({"global_batch_size": 2.5}, "global_batch_size", "positive whole numbers"),
    ({"inference": True}, "global_batch_size", "an inference plan takes no global batch"),
    ({"micro_batch_size": 0}, "micro_batch_size", "positive whole numbers"),
    ({"ipu": "mk1"}, "ipu", '"gc200", "bow"'),
    ({"reserve": 1.0}, "reserve", "from 0 to less than 1"),
])
def test_a_request_outside_what_it_allows_names_the_argument(arguments, field, allowed):
    request = dict({"ipus": IPUS, "global_batch_size": BATCH, "sequence_length": LENGTH}, **arguments)
    with pytest.raises(InvalidSettingError) as refused:
        plan(MODEL, **request)
    assert refused.value.field == field
    assert allowed in str(refused.value)


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
    assert factors == {(1, "does not fit"), (3, "fits"), (3, "does not fit")}  # 2 does not divide 50,265
    assert found.best.build["embedding_serialization_factor"] == 3
    assert found.best.ipu_config.embedding_serialization_factor == 3
    with pytest.raises(PlacementError) as refused:
        IPUConfig(embedding_serialization_factor=2).placement(ROBERTA)
    assert refused.value.problem.endswith("; the factors up to 16 that do: 1, 3, 5, 9, 15")


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
