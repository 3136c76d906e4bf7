"""The `layers_per_ipu` that makes the largest per-IPU cost of a pipeline smallest.

Every step's IPU is either fixed (an embedding on IPU 0, a head on the last IPU) or that of one layer (the layer
itself, a module that runs after it, a norm placed with the last layer), so an IPU's cost is a function of its fixed
part plus that of a run of consecutive layers. Dynamic programming over the layers then finds the smallest largest
cost exactly, and among the splits that reach it, the closest to the config's (the least sum of the differences per
IPU; then the one with the fewest layers on the first IPUs). Splits can be restricted to those keeping other costs
within bounds (`Splits.within`): the time objective looks for the shortest slowest cycle among the splits that fit.
"""

from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

# `cost(ipu, first, end)`: the cost of IPU `ipu` when it takes layers `first` to `end - 1`
Cost = Callable[[int, int, int], int]

UNREACHABLE = float("inf")


class Splits:
    """The splits of `layers` consecutive layers over `ipus` IPUs: IPU i takes `least[i]` layers or more (default
    0), the first `some_layer_within` IPUs at least one between them, and each IPU's `limits` (cost, bound), which
    `within` adds, stay within their bounds. `growing`: costs that never fall as an IPU takes more layers (an IPU's
    memory); an IPU's runs past its first over a bound are over it too, and past its first as large as the least
    largest cost found from there on they cannot lower it, so they are not costed (`counts`, `least_largest`)."""

    def __init__(self, layers: int, ipus: int, some_layer_within: int = 0, least: Sequence[int] = (),
                 growing: Sequence[Cost] = ()):
        self.layers = layers
        self.ipus = ipus
        self.some_layer_within = some_layer_within
        self.least = tuple(least) or (0,) * ipus
        self.growing = tuple(growing)
        # set by `within`: the limits, and the same splits without the last limit, whose counts these filter
        self.limits: Tuple[Tuple[Cost, float], ...] = ()
        self._wider: Optional[Splits] = None
        self._counts: Dict[Tuple[int, int], List[int]] = {}
        self._least: Dict[Tuple[Cost, int, int], float] = {}
        self._closest: Dict[Tuple[Tuple[int, ...], int, int], float] = {}

    def within(self, cost: Cost, bound: float) -> "Splits":
        """The same splits, restricted to those where every IPU's `cost` is at most `bound`."""
        narrower = Splits(self.layers, self.ipus, self.some_layer_within, self.least, self.growing)
        narrower.limits, narrower._wider = (*self.limits, (cost, bound)), self
        return narrower

    def counts(self, ipu: int, first: int) -> List[int]:
        """The numbers of layers IPU `ipu` may take when the layers before `first` are placed (all the rest on the
        last IPU)."""
        key = (ipu, first)
        if key not in self._counts and self._wider is not None:
            cost, bound = self.limits[-1]
            growing = cost in self.growing
            kept = []
            for count in self._wider.counts(ipu, first):
                if cost(ipu, first, first + count) <= bound:
                    kept.append(count)
                elif growing:
                    break
            self._counts[key] = kept
        if key not in self._counts:
            least = self.least[ipu]
            if ipu == self.ipus - 1:
                counts = [self.layers - first] if self.layers - first >= least else []
            else:
                counts = list(range(least, self.layers - first - sum(self.least[ipu + 1:]) + 1))
            if first == 0 and ipu == self.some_layer_within - 1:
                counts = [count for count in counts if count]
            self._counts[key] = counts
        return self._counts[key]

    def runs(self) -> Iterator[Tuple[int, int, int]]:
        """(IPU, first layer, end) of each run of layers an IPU may take after the IPUs before it took the layers
        before: every run of every split, and none that no IPU before reaches."""
        reached = {0}
        for ipu in range(self.ipus):
            following = set()
            for first in sorted(reached):
                for count in self.counts(ipu, first):
                    yield ipu, first, first + count
                    following.add(first + count)
            reached = following

    def least_largest(self, cost: Cost, ipu: int = 0, first: int = 0) -> float:
        """The smallest largest `cost` of the IPUs from `ipu` on, the layers before `first` placed (UNREACHABLE:
        no split)."""
        key = (cost, ipu, first)
        if key not in self._least:
            growing = cost in self.growing
            least = UNREACHABLE
            for count in self.counts(ipu, first):
                own = cost(ipu, first, first + count)
                if growing and own >= least:
                    break  # an IPU taking more costs no less: no split from here is smaller
                least = min(least, max(own, self._rest_largest(cost, ipu, first + count)))
            self._least[key] = least
        return self._least[key]

    def _rest_largest(self, cost: Cost, ipu: int, first: int) -> float:
        return 0 if ipu == self.ipus - 1 else self.least_largest(cost, ipu + 1, first)

    def closest(self, current: Sequence[int]) -> Optional[List[int]]:
        """The split closest to `current`, ties to the one with the fewest layers on the first IPUs (None: no
        split)."""
        current = tuple(current)
        if self._distance(current, 0, 0) == UNREACHABLE:
            return None
        split, first = [], 0
        for ipu in range(self.ipus):
            target = self._distance(current, ipu, first)
            count = next(count for count in self.counts(ipu, first)
                         if abs(count - current[ipu]) + self._rest(current, ipu, first + count) == target)
            split.append(count)
            first += count
        return split

    def _rest(self, current: Tuple[int, ...], ipu: int, first: int) -> float:
        return 0 if ipu == self.ipus - 1 else self._distance(current, ipu + 1, first)

    def _distance(self, current: Tuple[int, ...], ipu: int, first: int) -> float:
        key = (current, ipu, first)
        if key not in self._closest:
            self._closest[key] = min((abs(count - current[ipu]) + self._rest(current, ipu, first + count)
                                      for count in self.counts(ipu, first)), default=UNREACHABLE)
        return self._closest[key]


class Section(NamedTuple):
    """Layers balanced over IPUs of their own (all, or in a generation build the encoder's or the decoder's): their
    splits, the costs to make smallest in turn, and the config's split of them."""

    splits: Splits
    costs: Tuple[Cost, ...]
    current: Sequence[int]


def best_of(sections: Sequence[Section]) -> Tuple[Optional[List[int]], Tuple[float, ...]]:
    """The split (each part's, one after the other) with the smallest largest first cost over all the IPUs, then
    among those the smallest largest second cost, ...; ties to the closest to the config's. Returns it (None: no
    split) and those largest costs."""
    splits = [section.splits for section in sections]
    bounds = []
    for index in range(len(sections[0].costs)):
        bound = max(each.least_largest(section.costs[index]) for each, section in zip(splits, sections))
        bounds.append(bound)
        splits = [each.within(section.costs[index], bound) for each, section in zip(splits, sections)]
    found = [each.closest(section.current) for each, section in zip(splits, sections)]
    if any(split is None for split in found):
        return None, tuple(bounds)
    return [count for split in found for count in split], tuple(bounds)


def least_weighted_sum(splits: Splits, first: Cost, scale: float, second: Cost,
                       current: Sequence[int]) -> Tuple[Optional[List[int]], float]:
    """The split with the least `scale` x its largest `first` cost + its largest `second` cost, ties to the one with
    the smallest largest `first` cost, then to the closest to `current`; and that sum (None, UNREACHABLE: no split).

    Exact: for each bound on the largest `first` cost, from the least any split reaches up, the least largest
    `second` cost within it; the sum of a bound and its second is never less than that of the split reaching both,
    and the best split's largest `first` cost is one of the bounds. The bounds stop where `scale` x the bound alone
    reaches the best sum found. The bounds are the `first` costs of the runs the IPUs reach (`Splits.runs`), which
    hold every split's runs: a bound that is no split's largest `first` cost admits the splits, so the least
    second, of the largest smaller bound that is one, whose sum is no greater and which is tried first, ties going
    to the smaller bound."""
    values = sorted({first(*run) for run in splits.runs()})
    lowest = splits.least_largest(first)
    best, chosen = UNREACHABLE, None
    for bound in (value for value in values if value >= lowest):
        if scale * bound >= best:
            break
        within = splits.within(first, bound)
        total = scale * bound + within.least_largest(second)
        if total < best:
            best, chosen = total, within
    if chosen is None:
        return None, UNREACHABLE
    return chosen.within(second, chosen.least_largest(second)).closest(current), best


def distance(split: Sequence[int], current: Sequence[int]) -> int:
    return sum(abs(a - b) for a, b in zip(split, current))


def chosen(candidates: Sequence[Tuple[List[int], Tuple]], current: Sequence[int]) -> Tuple[List[int], Tuple]:
    """Of several (split, largest costs) results, the one `best_of` would choose among them."""
    return min(candidates, key=lambda found: (found[1], distance(found[0], current), found[0]))
