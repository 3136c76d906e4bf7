"""The `layers_per_ipu` that makes the largest on-chip figure of a pipeline smallest.

Every parameter's IPU is either fixed (an embedding on IPU 0, a head on the last IPU) or that of one layer (the
layer itself, a module that runs after it, a norm placed with the last layer), so an IPU's memory is a function of
its fixed parameters plus those of a run of consecutive layers. Dynamic programming over the layers then finds the
smallest largest figure exactly, and among the splits that reach it, the closest to the config's (the least sum of
the differences per IPU; then the one with the fewest layers on the first IPUs).
"""

import functools
from typing import Callable, List, Sequence, Tuple

# `cost(ipu, first, end)`: the bytes IPU `ipu` holds when it takes layers `first` to `end - 1`
Cost = Callable[[int, int, int], int]


def best_split(layers: int, ipus: int, cost: Cost, current: Sequence[int],
               some_layer_within: int = 0) -> Tuple[List[int], int]:
    """The split of `layers` consecutive layers over `ipus` IPUs (each taking 0 or more) with the smallest largest
    `cost`, ties to the closest to `current`; and that largest cost. The first `some_layer_within` IPUs take at
    least one layer between them."""
    least = functools.lru_cache(maxsize=None)(lambda ipu, first: _least_largest(ipu, first, layers, ipus, cost,
                                                                                 least, some_layer_within))
    bound = least(0, 0)
    closest = functools.lru_cache(maxsize=None)(lambda ipu, first: _closest(ipu, first, layers, ipus, cost, bound,
                                                                           current, closest, some_layer_within))
    split, first = [], 0
    for ipu in range(ipus):
        target = closest(ipu, first)
        for count in _counts(ipu, first, layers, ipus, some_layer_within):
            rest = 0 if ipu == ipus - 1 else closest(ipu + 1, first + count)
            if cost(ipu, first, first + count) <= bound and abs(count - current[ipu]) + rest == target:
                split.append(count)
                first += count
                break
    return split, bound


_UNREACHABLE = float("inf")


def _counts(ipu: int, first: int, layers: int, ipus: int, some_layer_within: int) -> Sequence[int]:
    """The numbers of layers IPU `ipu` may take when the layers before `first` are placed: all the rest on the last."""
    if ipu == ipus - 1:
        counts: Sequence[int] = [layers - first]
    else:
        counts = range(layers - first + 1)
    if first == 0 and ipu == some_layer_within - 1:
        return [count for count in counts if count]
    return counts


def _least_largest(ipu, first, layers, ipus, cost, least, some_layer_within) -> float:
    return min((max(cost(ipu, first, first + count), 0 if ipu == ipus - 1 else least(ipu + 1, first + count))
                for count in _counts(ipu, first, layers, ipus, some_layer_within)), default=_UNREACHABLE)


def _closest(ipu, first, layers, ipus, cost, bound, current, closest, some_layer_within) -> float:
    return min((abs(count - current[ipu]) + (0 if ipu == ipus - 1 else closest(ipu + 1, first + count))
                for count in _counts(ipu, first, layers, ipus, some_layer_within)
                if cost(ipu, first, first + count) <= bound), default=_UNREACHABLE)


def distance(split: Sequence[int], current: Sequence[int]) -> int:
    return sum(abs(a - b) for a, b in zip(split, current))


def chosen(candidates: Sequence[Tuple[List[int], int]], current: Sequence[int]) -> Tuple[List[int], int]:
    """Of several (split, largest cost) results, the one `best_split` would choose among them."""
    return min(candidates, key=lambda found: (found[1], distance(found[0], current), found[0]))
