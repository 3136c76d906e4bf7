"""The cost of an IPU holding a run of consecutive layers, for any split of a model's layers: what `--balance` and
`plan` weigh split after split, each IPU costed as a placement costs it (`cost.CostModel`).

Each parameter and each step goes to a fixed IPU (`layout.OnIPU`) or to the IPU of one layer (`layout.WithLayer`),
so an IPU's load is its fixed part plus that of its layers; each step is stashed as in the stage it runs in with
the even split (every IPU a stage). A model's layers mostly repeat one another: an IPU with nothing fixed on it is
costed once for each sequence of kinds of layers it may take (`LayerRunCosts.kinds`), wherever the run starts and
whichever such IPU takes it, its stash scaled to its stage's depth.
"""

import itertools
from typing import Dict, Hashable, List, NamedTuple, Optional, Sequence, Tuple

from .balance import Cost
from .configured import ConfiguredModel
from .cost import CostModel, IPUCost, IPULoad
from .layout import Layout, OnIPU, layer_counts, origins, reference_layout
from .pipeline import UNCALLED, PipelineWork, stages_of, work
from .timing import IPUTime, StepTime


class Weighed(NamedTuple):
    """What the balance weighs of an IPU holding a run of layers: its on-chip bytes and its time (None: not
    timed)."""

    on_chip_bytes: int
    time: Optional[IPUTime]


class LayerRunCosts:
    """The load and the cost of an IPU holding a run of layers, for any split (in a generation build, any whose
    encoder takes `cut` IPUs) of `configured`'s layers, costed by `cost_model` (default: its own)."""

    def __init__(self, configured: ConfiguredModel, cut: Optional[int], cost_model: Optional[CostModel] = None):
        self.configured = configured
        self.cost_model = cost_model or configured.cost_model
        ipus = configured.settings[configured.mode.setting("ipus_per_replica")]
        layers = sum(layer_counts(configured.architecture, configured.config).values())
        self.fixed = [[0, 0] for _ in range(ipus)]  # [trained, frozen] parameters placed on each IPU
        self.layer_prefix = [[0, 0] for _ in range(layers + 1)]  # of the layers before each, as prefix sums
        # the elements of the largest trained tensor the update takes, of each IPU's fixed part and of each layer
        self.fixed_largest = [0] * ipus
        self.layer_largest = [0] * layers
        parameters = configured.parameters
        layout = reference_layout(configured.model, configured.architecture, configured.config, configured.settings,
                                  configured.for_inference, cut)
        for name, sources in origins(layout, list(parameters.shapes), parameters.aliases).items():
            frozen, elements, updated = configured.sizes[name]
            for origin in sources:
                on_ipu = isinstance(origin, OnIPU)
                target = self.fixed[origin.ipu] if on_ipu else self.layer_prefix[origin.layer + 1]
                target[frozen] += elements
                if not frozen:
                    largest, index = (self.fixed_largest, origin.ipu) if on_ipu else (self.layer_largest,
                                                                                       origin.layer)
                    largest[index] = max(largest[index], updated)
        for layer in range(layers):
            self.layer_prefix[layer + 1] = [self.layer_prefix[layer][0] + self.layer_prefix[layer + 1][0],
                                            self.layer_prefix[layer][1] + self.layer_prefix[layer + 1][1]]
        self._steps(layout)
        self.kinds = self._kinds()
        self._loads: Dict[Tuple[int, int, int], IPULoad] = {}  # by (IPU, first layer, end)
        # of an IPU running its layers alone, stashing for one micro-batch, by the kinds of its layers (`_alike_cost`)
        self._alike_loads: Dict[Tuple[int, ...], IPULoad] = {}
        self._alike_costs: Dict[Tuple[int, ...], IPUCost] = {}
        self._alike_weighed_runs: Dict[Tuple[int, Tuple[int, ...]], Weighed] = {}  # by (IPU, the kinds of its layers)
        self._weighed: Dict[Tuple[int, int, int], Weighed] = {}  # by (IPU, first layer, end)

    def _steps(self, layout: Layout) -> None:
        """Each step's origin and the stage it runs in with the even split (whose `layout` any split's steps have the
        origins of): `fixed_steps[ipu]` and `layer_steps[layer]`, as (position in the forward pass, stage) pairs, and
        `layer_stage[ipu]`."""
        self.forward = layout.forward
        self.stages = stages_of(layout, self.configured.execution)
        stage_of = {}
        for index, stage in enumerate(self.stages):
            for step in stage.steps:
                stage_of[id(step)] = index
        self.fixed_steps: List[List[Tuple[int, int]]] = [[] for _ in range(layout.ipus)]
        self.layer_steps: Dict[int, List[int]] = {}
        self.layer_stage: Dict[int, int] = {}
        for position, step in enumerate(layout.forward):
            if isinstance(step.origin, OnIPU):
                self.fixed_steps[step.origin.ipu].append((position, stage_of[id(step)]))
            else:
                self.layer_steps.setdefault(step.origin.layer, []).append(position)
                self.layer_stage.setdefault(step.ipu, stage_of[id(step)])

    def _kinds(self) -> Optional[Tuple[int, ...]]:
        """A number for each layer, the same for layers alike in all a run's load reads of them: their parameters, the
        cost of each of their steps, which of those steps follow one another in the forward pass, and whether the
        next layer's first step follows their last. None where some layer runs no step with itself (its IPU is
        fixed) or its steps do not all come before the next layer's: a run's steps are then not its layers' one after
        the other; and in a generation build, whose IPUs are each costed with their part of it (`load`)."""
        layers = len(self.layer_largest)
        positions = [self.layer_steps.get(layer) for layer in range(layers)]
        if self.configured.generation is not None or not all(positions) or any(
                before[-1] > after[0] for before, after in zip(positions, positions[1:])):
            return None
        costs = self.configured.step_costs or {}
        kinds: Dict[Hashable, int] = {}
        found = []
        for layer, steps in enumerate(positions):
            parts = (self.layer_prefix[layer + 1][0] - self.layer_prefix[layer][0],
                     self.layer_prefix[layer + 1][1] - self.layer_prefix[layer][1], self.layer_largest[layer])
            forward = [self.forward[position] for position in steps]
            kind = (parts, tuple((costs.get(step.path, UNCALLED), step.layer is None) for step in forward),
                    tuple(self._joined(before, after) for before, after in zip(steps, steps[1:])),
                    layer + 1 < layers and self._joined(steps[-1], positions[layer + 1][0]))
            found.append(kinds.setdefault(kind, len(kinds)))
        return tuple(found)

    def _layers_alone(self, ipu: int) -> bool:
        """Whether IPU `ipu` runs its layers alone, one after the other: no step or parameter is fixed there, and
        each layer's steps come before the next layer's."""
        return self.kinds is not None and not self.fixed_steps[ipu] and not any(self.fixed[ipu])

    def _joined(self, before: int, after: Optional[int]) -> bool:
        """Whether the step at position `after` follows that at `before` in its executor's forward pass."""
        return after == before + 1 and self.forward[after].executor == self.forward[before].executor

    def with_cost_model(self, cost_model: CostModel) -> "LayerRunCosts":
        """The same runs costed by `cost_model` (a build of the same pipeline and parameters with the optimizer
        state elsewhere), the loads worked out so far shared."""
        runs = object.__new__(LayerRunCosts)
        runs.__dict__.update(self.__dict__)
        runs.cost_model = cost_model
        runs._alike_costs, runs._alike_weighed_runs, runs._weighed = {}, {}, {}
        return runs

    def load(self, ipu: int, first: int, end: int) -> IPULoad:
        """What IPU `ipu` holds, keeps and computes taking layers `first` to `end - 1`."""
        run = (ipu, first, end)
        if run not in self._loads:
            steps = sorted(self._steps_of(ipu, first, end))
            generation = self.configured.generation
            if generation is not None:
                part = generation.load([self.forward[position] for position, _ in steps])
                self._loads[run] = self._load(ipu, first, end, part.work)._replace(generation=part)
            else:
                done = None if self.configured.step_costs is None else self._work(steps)
                self._loads[run] = self._load(ipu, first, end, done)
        return self._loads[run]

    def _load(self, ipu: int, first: int, end: int, done: Optional[PipelineWork]) -> IPULoad:
        """The load of IPU `ipu` taking layers `first` to `end - 1` and doing `done`."""
        frozen = self.fixed[ipu][1] + self.layer_prefix[end][1] - self.layer_prefix[first][1]
        largest = max([self.fixed_largest[ipu], *self.layer_largest[first:end]])
        return IPULoad(self.trained(ipu, first, end), frozen, largest, done)

    def _steps_of(self, ipu: int, first: int, end: int) -> List[Tuple[int, Optional[int]]]:
        """The steps IPU `ipu` runs taking layers `first` to `end - 1`: its fixed steps and those of the layers, each
        as (position in the forward pass, stage)."""
        steps = list(self.fixed_steps[ipu])
        stage = self.layer_stage.get(ipu)
        for layer in range(first, end):  # none of its own where the layer's IPU is fixed
            steps += [(position, stage) for position in self.layer_steps.get(layer, ())]
        return steps

    def _work(self, steps: List[Tuple[int, Optional[int]]]) -> PipelineWork:
        """The work of an IPU running `steps` (ascending), each in its stage."""
        grouped: Dict[Optional[int], List[int]] = {}
        for position, index in steps:
            grouped.setdefault(index, []).append(position)
        return self._stages_work([(self._depth(index), positions) for index, positions in grouped.items()])

    def _alike_cost(self, ipu: int, first: int, end: int) -> IPUCost:
        """The cost of IPU `ipu`, which runs its layers alone, taking layers `first` to `end - 1` in a stage that
        stashes for one micro-batch: the same for every such IPU and every run of the same kinds of layers, so it
        is worked out once for each (the load once for every cost model)."""
        kinds = self.kinds[first:end]
        if kinds not in self._alike_costs:
            if kinds not in self._alike_loads:
                positions = [position for layer in range(first, end) for position in self.layer_steps[layer]]
                done = (None if self.configured.step_costs is None
                        else self._stages_work([(1, positions)] if positions else []))
                self._alike_loads[kinds] = self._load(ipu, first, end, done)
            self._alike_costs[kinds] = self.cost_model.ipu(self._alike_loads[kinds])
        return self._alike_costs[kinds]

    def _depth(self, stage: Optional[int]) -> int:
        """The micro-batches stage `stage` of the even split stashes for (None: the IPU runs none: 0)."""
        return 0 if stage is None else self.stages[stage].stash_depth

    def _stages_work(self, stages: List[Tuple[int, List[int]]]) -> PipelineWork:
        """`pipeline.work` of `stages`, each (stash depth, the positions of its steps in the forward pass), but
        what the IPU receives each cycle, counted over the runs of steps of all."""
        configured = self.configured
        done = work([(depth, [self.forward[position] for position in positions]) for depth, positions in stages],
                    configured.step_costs, configured.execution)
        return done._replace(exchange_bytes=self._exchange_bytes(sorted(position for _, positions in stages
                                                                        for position in positions)))

    def _exchange_bytes(self, positions: List[int]) -> int:
        """What an IPU running the steps at `positions` (ascending) receives a cycle: the input of each run of steps
        one after the other in its executor's forward pass, and in training the gradient of the run's output (as
        `pipeline.work` counts them by stage, the stages of any split being those runs)."""
        costs, training = self.configured.step_costs, self.configured.execution.training
        exchange = 0
        for index, position in enumerate(positions):
            cost = costs.get(self.forward[position].path, UNCALLED)
            if index == 0 or not self._joined(positions[index - 1], position):
                exchange += cost.input_bytes
            if training and not self._joined(position, positions[index + 1] if index + 1 < len(positions) else None):
                exchange += cost.output_bytes
        return exchange

    def weighed(self, ipu: int, first: int, end: int) -> Weighed:
        """What the balance weighs of IPU `ipu` taking layers `first` to `end - 1`."""
        run = (ipu, first, end)
        found = self._weighed.get(run)
        if found is None:
            if self._layers_alone(ipu):
                found = self._alike_weighed(ipu, first, end)
            else:
                cost = self.cost_model.ipu(self.load(ipu, first, end))
                found = Weighed(cost.on_chip_bytes, cost.time)
            self._weighed[run] = found
        return found

    def _alike_weighed(self, ipu: int, first: int, end: int) -> Weighed:
        """`weighed` of IPU `ipu`, which runs its layers alone in one stage: that stage stashes for its depth of
        micro-batches what it stashes for one, and no other figure depends on the depth, so its cost is that of the
        same kinds of layers stashing for one (`_alike_cost`), the stash scaled; worked out once for each IPU and
        kinds of layers."""
        key = (ipu, self.kinds[first:end])
        if key not in self._alike_weighed_runs:
            cost = self._alike_cost(ipu, first, end)
            if cost.work is not None:
                depth = self._depth(self.layer_stage.get(ipu))
                cost = cost._replace(work=cost.work._replace(stash_bytes=depth * cost.work.stash_bytes))
            self._alike_weighed_runs[key] = Weighed(cost.on_chip_bytes, cost.time)
        return self._alike_weighed_runs[key]

    def step(self, split: Sequence[int], cycles: Optional[int]) -> StepTime:
        """The step of `split`, each IPU timed as its run (a split whose IPUs run the stages of the even split, as
        the even split itself does), in `cycles` (None: not pipelined)."""
        ends = list(itertools.accumulate(split))
        return self.cost_model.time.step([self.weighed(ipu, end - count, end).time
                                          for ipu, (count, end) in enumerate(zip(split, ends))], cycles)

    def trained(self, ipu: int, first: int, end: int) -> int:
        """The trained parameters of IPU `ipu` holding layers `first` to `end - 1`."""
        return self.fixed[ipu][0] + self.layer_prefix[end][0] - self.layer_prefix[first][0]

    def least_layers(self) -> List[int]:
        """The layers each IPU takes at least: where the stash is counted, one on an IPU no fixed step runs on, so
        that every IPU runs a stage, as in the even split whose stash depths the costs take (else none)."""
        execution = self.configured.execution
        counted = self.configured.step_costs is not None and execution.training and execution.pipelined
        return [int(counted and not steps) for steps in self.fixed_steps]

    # the costs `balance` weighs, as functions of a run

    def on_chip_bytes(self, ipu: int, first: int, end: int) -> int:
        return self.weighed(ipu, first, end).on_chip_bytes

    def cycle_load(self, ipu: int, first: int, end: int) -> float:
        """What paces each pipeline cycle the IPU runs (`timing.IPUTime.cycle_load`)."""
        return self.weighed(ipu, first, end).time.cycle_load

    def after_pipeline_seconds(self, ipu: int, first: int, end: int) -> float:
        """The IPU's weight update and gradients' sum after the pipeline."""
        return self.weighed(ipu, first, end).time.after_pipeline_seconds

    @staticmethod
    def shifted(cost: Cost, cut: int, encoder: int) -> Cost:
        """`cost` of the decoder's IPUs and layers, numbered from the cut."""
        return lambda ipu, first, end: cost(ipu + cut, first + encoder, end + encoder)
