"""`placement/balance.py`: the search for the split whose largest per-IPU cost is smallest, against a brute force
over every split on random costs (several objectives, bounds and parts, an encoder-decoder cut, included); its
restrictions, its ties and the distance between splits, on costs written out.

The balance of real placements (`--balance memory|time`): test_pipeline_balance.py and test_placement_models.py."""

import itertools
import operator
import random

import pytest

from optimum_ipu_ext.placement.estimate import balance
from support.splits import compositions


def figures(cost, split):
    return [cost(ipu, sum(split[:ipu]), sum(split[:ipu + 1])) for ipu in range(len(split))]


def best_split(layers, ipus, cost, current, some_layer_within=0):
    """The split of `layers` over `ipus` IPUs with the smallest largest `cost`, ties to the closest to `current`, the
    first `some_layer_within` IPUs taking a layer between them; and that largest cost."""
    split, bounds = balance.best_of([balance.Section(balance.Splits(layers, ipus, some_layer_within), (cost,),
                                                     current)])
    return split, bounds[0]


def brute_force_split(layers, ipus, cost, current, some_layer_within=0):
    """Of every split (the first `some_layer_within` IPUs taking a layer between them), the one with the smallest
    largest cost, then the closest to `current`, then the least; with that cost."""
    return min(((split, max(figures(cost, split))) for split in compositions(layers, ipus)
                if some_layer_within == 0 or sum(split[:some_layer_within])),
               key=lambda found: (found[1], balance.distance(found[0], current), found[0]))


@pytest.mark.parametrize("seed", range(40))
def test_the_best_split_of_any_costs_is_the_brute_force_s(seed):
    generator = random.Random(seed)
    layers, ipus = generator.randint(1, 7), generator.randint(1, 4)
    fixed = [generator.choice([0, 0, 5, 30]) for _ in range(ipus)]
    weights = [generator.choice([1, 2, 10]) for _ in range(layers)]
    current = generator.choice(compositions(layers, ipus))
    some_layer_within = generator.choice([0, 0, 1, 2, 3, 4])

    def cost(ipu, first, end):
        return fixed[ipu] + sum(weights[first:end])

    assert (best_split(layers, ipus, cost, current, some_layer_within=some_layer_within)
            == brute_force_split(layers, ipus, cost, current, some_layer_within))


@pytest.mark.parametrize("seed", range(40))
def test_the_best_split_of_a_cost_declared_growing_is_the_brute_force_s(seed):
    """A cost that never falls as an IPU takes more layers (random_cost's, as an IPU's memory) is costed only up to
    the first run as large as the least largest found, and the first over a bound: the same split."""
    generator = random.Random(seed)
    layers, ipus = generator.randint(1, 7), generator.randint(1, 4)
    cost = random_cost(generator, ipus, layers)
    current = generator.choice(compositions(layers, ipus))
    some_layer_within = generator.choice([0, 0, 1, 2, 3, 4])
    splits = balance.Splits(layers, ipus, some_layer_within, growing=(cost,))
    split, bounds = balance.best_of([balance.Section(splits, (cost,), current)])
    assert (split, bounds[0]) == brute_force_split(layers, ipus, cost, current, some_layer_within)


def test_the_first_ipus_take_a_layer_between_them_not_each():
    def cost(ipu, first, end):
        return [0, 0, 9][ipu] + (end - first) * 10
    assert best_split(2, 3, cost, [0, 2, 0]) == ([1, 1, 0], 10)
    assert best_split(1, 3, cost, [0, 1, 0], some_layer_within=2) == ([0, 1, 0], 10)
    assert best_split(1, 3, cost, [0, 0, 1], some_layer_within=2) == ([0, 1, 0], 10)
    assert best_split(1, 3, cost, [0, 0, 1], some_layer_within=1) == ([1, 0, 0], 10)
    assert best_split(1, 3, cost, [0, 0, 1]) == ([0, 1, 0], 10)


def test_of_equally_good_and_close_splits_the_one_with_fewer_layers_first_is_chosen():
    assert balance.chosen([([2, 1], 5), ([1, 2], 5), ([3, 0], 4)], [2, 1]) == ([3, 0], 4)
    assert balance.chosen([([2, 1], 5), ([1, 2], 5), ([0, 3], 6)], [0, 0]) == ([1, 2], 5)


def random_cost(generator, ipus, layers):
    fixed = [generator.choice([0, 0, 5, 30]) for _ in range(ipus)]
    weights = [generator.choice([1, 2, 10]) for _ in range(layers)]
    return lambda ipu, first, end: fixed[ipu] + sum(weights[first:end])


def brute_force_of_parts(shapes, costs, limit):
    """Of every combination of each part's splits (`shapes`: (layers, ipus, some_layer_within, the least layers of
    each IPU, current, its costs)), those keeping each IPU's `limit` cost within its bound: the best by the largest
    of each cost in turn, then the distance to the config's split, then the split."""
    choices = [[split for split in compositions(layers, ipus) if all(map(operator.ge, split, least))
                and (not within or sum(split[:within]))] for layers, ipus, within, least, _, _ in shapes]
    found = []
    for combination in itertools.product(*choices):
        parts = list(zip(shapes, combination))
        if limit is not None and any(value > limit[1] for (*_, own), split in parts
                                     for value in figures(own[limit[0]], split)):
            continue
        largest = tuple(max(value for (*_, own), split in parts for value in figures(own[index], split))
                        for index in range(len(costs)))
        split = [count for each in combination for count in each]
        current = [count for shape in shapes for count in shape[4]]
        found.append((largest, balance.distance(split, current), split))
    return min(found, default=None)


@pytest.mark.parametrize("seed", range(60))
def test_the_best_of_several_costs_parts_and_bounds_is_the_brute_force_s(seed):
    generator = random.Random(seed)
    objectives = generator.randint(1, 2)
    shapes = []
    for part in range(generator.randint(1, 2)):
        layers, ipus = generator.randint(1, 6), generator.randint(1, 3)
        least = tuple(int(generator.random() < 0.4) for _ in range(ipus))
        within = generator.choice([0, 0, 1, 2]) if part else 0
        costs = tuple(random_cost(generator, ipus, layers) for _ in range(objectives + 1))  # the last: a bound's
        shapes.append((layers, ipus, within, least, generator.choice(compositions(layers, ipus)), costs))
    bound = generator.choice([None, 20, 40, 60])
    parts = []
    for layers, ipus, within, least, current, costs in shapes:
        splits = balance.Splits(layers, ipus, within, least)
        if bound is not None:
            splits = splits.within(costs[-1], bound)
        parts.append(balance.Section(splits, costs[:objectives], current))
    split, largest = balance.best_of(parts)
    expected = brute_force_of_parts(shapes, range(objectives), None if bound is None else (objectives, bound))
    if expected is None:
        assert split is None
    else:
        assert (largest, split) == (expected[0], expected[2])


def test_a_split_beyond_every_bound_is_none():
    splits = balance.Splits(2, 2).within(lambda ipu, first, end: 10 * (end - first), 5)
    assert splits.counts(0, 0) == [0] and splits.counts(1, 0) == []
    assert balance.best_of([balance.Section(splits, (lambda ipu, first, end: 0,), [1, 1])]) == (None,
                                                                                            (balance.UNREACHABLE,))


def test_each_ipu_takes_at_least_the_layers_asked():
    assert balance.Splits(3, 2, least=(1, 1)).counts(0, 0) == [1, 2]
    assert balance.Splits(3, 2, least=(1, 1)).counts(1, 3) == []
    assert balance.Splits(3, 2).counts(0, 0) == [0, 1, 2, 3]
    assert balance.Splits(4, 3, least=(0, 2, 1)).counts(0, 0) == [0, 1]
    assert balance.Splits(4, 3, least=(0, 2, 1)).counts(1, 0) == [2, 3]
    assert balance.Splits(4, 3, least=(1, 0, 0)).counts(0, 0) == [1, 2, 3, 4]


# --- the search's parts, on costs written out ----------------------------------------------------------------------


def layer_count(ipu, first, end):
    """An IPU's cost: its number of layers."""
    return end - first


def nothing(ipu, first, end):
    return 0


def ten_a_layer_on_ipu_0(ipu, first, end):
    return 10 * (end - first) if ipu == 0 else 0


def test_the_distance_between_splits_is_the_sum_of_their_differences_per_ipu():
    assert balance.distance([3, 0, 1], [1, 2, 1]) == 4
    assert balance.distance([2, 2], [2, 2]) == 0


def test_a_growing_cost_is_not_asked_past_the_first_run_as_large_as_the_least_found_nor_over_a_bound():
    asked = []

    def counted(ipu, first, end):
        asked.append((ipu, first, end))
        return end - first

    # IPU 0 taking 0, 1, 2 layers: largest 4, 3, 2; taking 3 costs 3 >= 2 already, so 4 is not asked
    assert balance.Splits(4, 2, growing=(counted,)).least_largest(counted) == 2
    assert (0, 0, 3) in asked and (0, 0, 4) not in asked and (1, 4, 4) not in asked
    asked.clear()
    assert balance.Splits(4, 2, growing=(counted,)).within(counted, 2).counts(0, 0) == [0, 1, 2]
    assert (0, 0, 3) in asked and (0, 0, 4) not in asked
    asked.clear()
    assert balance.Splits(4, 2).least_largest(counted) == 2  # not declared growing: every run asked
    assert (0, 0, 4) in asked


def test_restricted_splits_keep_their_shape_and_add_the_bound():
    splits = balance.Splits(4, 2, some_layer_within=1, least=(1, 0))
    restricted = splits.within(layer_count, 2)
    shape = (restricted.layers, restricted.ipus, restricted.some_layer_within, restricted.least)
    assert shape == (4, 2, 1, (1, 0)) and balance.Splits(4, 2).least == (0, 0)
    assert restricted.limits == ((layer_count, 2),) and splits.limits == ()
    assert restricted.within(nothing, 0).limits == ((layer_count, 2), (nothing, 0))


@pytest.mark.parametrize("splits, ipu, first, counts", [
    (balance.Splits(3, 3, some_layer_within=1), 0, 0, [1, 2, 3]),  # the first IPU must take one
    (balance.Splits(3, 3, some_layer_within=2), 0, 0, [0, 1, 2, 3]),  # the second may take it for both
    (balance.Splits(3, 3, some_layer_within=2), 1, 0, [1, 2, 3]),  # it must, when the first took none
    (balance.Splits(3, 3, some_layer_within=2), 1, 1, [0, 1, 2]),
    (balance.Splits(3, 3), 2, 1, [2]),  # the last IPU takes the rest
    (balance.Splits(3, 3, least=(1, 1, 1)), 0, 0, [1]),  # leaving one for each other IPU
    (balance.Splits(3, 3).within(layer_count, 1), 0, 0, [0, 1]),
])
def test_the_counts_an_ipu_may_take(splits, ipu, first, counts):
    assert splits.counts(ipu, first) == counts


@pytest.mark.parametrize("splits", [balance.Splits(5, 3, least=(0, 1, 1)), balance.Splits(4, 3, some_layer_within=2),
                                    balance.Splits(5, 3).within(layer_count, 2)])
def test_the_runs_the_ipus_reach_are_every_split_s_and_those_the_ipus_before_reach(splits):
    runs = set(splits.runs())
    every = [split for split in compositions(splits.layers, splits.ipus)
             if all(count in splits.counts(ipu, sum(split[:ipu])) for ipu, count in enumerate(split))]
    assert {(ipu, sum(split[:ipu]), sum(split[:ipu + 1])) for split in every for ipu in range(splits.ipus)} <= runs
    for ipu, first, end in runs:  # the IPUs before took the layers before, each as many as it may
        assert end - first in splits.counts(ipu, first)
        assert any(all(count in splits.counts(before, sum(prefix[:before])) for before, count in enumerate(prefix))
                   for prefix in compositions(first, ipu)) if ipu else first == 0


def test_the_least_largest_cost_from_an_ipu_on():
    assert balance.Splits(5, 2).least_largest(layer_count) == 3
    assert balance.Splits(5, 2).least_largest(layer_count, 1, 2) == 3  # the last IPU takes the 3 left
    assert balance.Splits(5, 3).least_largest(layer_count, 1, 1) == 2
    assert balance.Splits(1, 2, least=(1, 1)).least_largest(layer_count) == balance.UNREACHABLE


@pytest.mark.parametrize("splits, current, closest", [
    (balance.Splits(4, 2), [4, 0], [4, 0]),
    (balance.Splits(4, 2).within(layer_count, 2), [4, 0], [2, 2]),
    (balance.Splits(2, 3).within(layer_count, 1), [2, 0, 0], [1, 0, 1]),  # [1, 1, 0] is as close: fewer first
    (balance.Splits(3, 2).within(layer_count, 1), [3, 0], None),  # no split
])
def test_the_closest_split_to_the_config_s(splits, current, closest):
    assert splits.closest(current) == closest


def test_the_same_splits_answer_each_cost_and_each_config_s_split_on_its_own():
    splits = balance.Splits(4, 2)
    assert [splits.least_largest(layer_count), splits.least_largest(ten_a_layer_on_ipu_0)] == [2, 0]
    assert [splits.closest([4, 0]), splits.closest([0, 4]), splits.closest((1, 3))] == [[4, 0], [0, 4], [1, 3]]


def test_a_second_cost_decides_between_splits_equal_in_the_first():
    part = balance.Section(balance.Splits(2, 2), (nothing, ten_a_layer_on_ipu_0), [2, 0])
    assert balance.best_of([part]) == ([0, 2], (0, 0))


def test_each_part_need_only_be_as_good_as_the_worst_part_and_is_then_closest_to_the_config_s():
    encoder = balance.Section(balance.Splits(2, 2), (layer_count,), [2, 0])
    decoder = balance.Section(balance.Splits(3, 1), (layer_count,), [3])
    assert balance.best_of([encoder, decoder]) == ([2, 0, 3], (3,))


# --- the least weighted sum: a step's time as FLOPs x cycles + the slowest other part -------------------------------


@pytest.mark.parametrize("seed", range(60))
def test_the_least_weighted_sum_of_two_largest_costs_is_the_brute_force_s(seed):
    generator = random.Random(seed)
    layers, ipus = generator.randint(1, 7), generator.randint(1, 4)
    least = tuple(int(generator.random() < 0.3) for _ in range(ipus))
    first, second, memory = (random_cost(generator, ipus, layers) for _ in range(3))
    scale = generator.choice([0.1, 1.0, 3.0, 25.0])
    bound = generator.choice([None, 20, 40, 80])
    current = generator.choice(compositions(layers, ipus))
    splits = balance.Splits(layers, ipus, least=least)
    if bound is not None:
        splits = splits.within(memory, bound)
    split, total = balance.least_weighted_sum(splits, first, scale, second, current)
    found = [(scale * max(figures(first, each)) + max(figures(second, each)), each)
             for each in compositions(layers, ipus) if all(map(operator.ge, each, least))
             and (bound is None or max(figures(memory, each)) <= bound)]
    if not found:
        assert (split, total) == (None, balance.UNREACHABLE)
        return
    best = min(value for value, _ in found)
    assert total == pytest.approx(best)
    assert scale * max(figures(first, split)) + max(figures(second, split)) == pytest.approx(best)
    assert split in [each for value, each in found]


def test_of_splits_of_the_same_least_weighted_sum_the_closest_to_the_config_s_is_chosen():
    splits = balance.Splits(3, 2)
    assert balance.least_weighted_sum(splits, layer_count, 1.0, nothing, [3, 0]) == ([2, 1], 2.0)
    assert balance.least_weighted_sum(splits, layer_count, 1.0, nothing, [0, 3]) == ([1, 2], 2.0)
    # a second cost against layers on IPU 0 outweighs the first: 1 x 3 + 0 beats 1 x 2 + 10
    assert balance.least_weighted_sum(splits, layer_count, 1.0, ten_a_layer_on_ipu_0, [3, 0]) == ([0, 3], 3.0)
    assert balance.least_weighted_sum(splits, layer_count, 20.0, ten_a_layer_on_ipu_0, [3, 0]) == ([1, 2], 50.0)


def test_of_splits_of_the_same_least_weighted_sum_the_one_with_the_smaller_largest_first_cost_is_chosen():
    def second(ipu, first, end):
        return {0: 1, 1: 2, 2: 2, 3: 1}[end - first]  # an IPU of 0 or 3 layers costs 1, of 1 or 2 layers 2

    splits = balance.Splits(3, 2)
    # largest first cost 2 ([1, 2], [2, 1]): 1 x 2 + 2 = 4; 3 ([0, 3], [3, 0]): 1 x 3 + 1 = 4, and [3, 0] is closer
    assert balance.least_weighted_sum(splits, layer_count, 1.0, second, [3, 0]) == ([2, 1], 4.0)
    assert balance.least_weighted_sum(splits, layer_count, 1.0, second, [0, 3]) == ([1, 2], 4.0)


def test_the_bounds_stop_where_the_scaled_bound_alone_reaches_the_best_sum():
    asked = []

    def second(ipu, first, end):
        asked.append(end - first)
        return end - first

    # largest first cost 1 ([1, 1]): 1 x 1 + 1 = 2; 2: 1 x 2 alone is 2 already, so its splits are not weighed
    assert balance.least_weighted_sum(balance.Splits(2, 2), layer_count, 1.0, second, [2, 0]) == ([1, 1], 2.0)
    assert asked and 2 not in asked  # no IPU of two layers was asked its second cost


def test_narrower_splits_filter_the_counts_of_the_wider_ones_by_their_own_bound():
    calls = []

    def counted(ipu, first, end):
        calls.append((ipu, first, end))
        return end - first

    wide = balance.Splits(4, 2).within(counted, 3)
    assert wide.counts(0, 0) == [0, 1, 2, 3]
    before = len(calls)
    narrow = wide.within(nothing, 0)
    assert narrow.counts(0, 0) == [0, 1, 2, 3] and len(calls) == before  # the bound already met is not asked again
    assert wide.within(layer_count, 2).counts(0, 0) == [0, 1, 2]
    assert narrow.limits == ((counted, 3), (nothing, 0))
