"""The cost of an IPU holding a run of consecutive layers, for any split of a model's layers: what `--balance` and
`plan` weigh split after split, each IPU costed as a placement costs it (`cost.CostModel`).

Each parameter and each step goes to a fixed IPU (`layout.OnIPU`) or to the IPU of one layer (`layout.WithLayer`),
so an IPU's load is its fixed part plus that of its layers; each step is stashed as in the stage it runs in with
the even split (every IPU a stage).
"""

from typing import Dict, List, Optional, Tuple

from .balance import Cost
from .configured import ConfiguredModel
from .cost import CostModel, IPUCost, IPULoad
from .layout import OnIPU, layer_counts, origins, reference_layout
from .pipeline import UNCALLED, stages_of, work


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
        for name, sources in origins(configured.model, configured.architecture, configured.config,
                                     configured.settings, configured.for_inference, cut, list(parameters.shapes),
                                     parameters.aliases).items():
            frozen = name in configured.frozen
            for origin in sources:
                on_ipu = isinstance(origin, OnIPU)
                target = self.fixed[origin.ipu] if on_ipu else self.layer_prefix[origin.layer + 1]
                target[frozen] += parameters.elements(name)
                if not frozen:
                    largest, index = (self.fixed_largest, origin.ipu) if on_ipu else (self.layer_largest,
                                                                                       origin.layer)
                    largest[index] = max(largest[index], configured.updated_elements(name))
        for layer in range(layers):
            self.layer_prefix[layer + 1] = [self.layer_prefix[layer][0] + self.layer_prefix[layer + 1][0],
                                            self.layer_prefix[layer][1] + self.layer_prefix[layer + 1][1]]
        self._steps(cut)
        self._loads: Dict[Tuple[int, int, int], IPULoad] = {}  # by (IPU, first layer, end)
        self._costs: Dict[Tuple[int, int, int], IPUCost] = {}

    def _steps(self, cut: Optional[int]) -> None:
        """Each step's origin and the stage it runs in with the even split: `fixed_steps[ipu]` and
        `layer_steps[layer]`, as (position in the forward pass, stage) pairs, and `layer_stage[ipu]`."""
        configured = self.configured
        layout = reference_layout(configured.model, configured.architecture, configured.config, configured.settings,
                                  configured.for_inference, cut)
        self.forward = layout.forward
        self.stages = stages_of(layout, configured.execution)
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

    def with_cost_model(self, cost_model: CostModel) -> "LayerRunCosts":
        """The same runs costed by `cost_model` (a build of the same pipeline and parameters with the optimizer
        state elsewhere), the loads worked out so far shared."""
        runs = object.__new__(LayerRunCosts)
        runs.__dict__.update(self.__dict__)
        runs.cost_model = cost_model
        runs._costs = {}
        return runs

    def load(self, ipu: int, first: int, end: int) -> IPULoad:
        """What IPU `ipu` holds, keeps and computes taking layers `first` to `end - 1`."""
        key = (ipu, first, end)
        if key not in self._loads:
            configured = self.configured
            frozen = self.fixed[ipu][1] + self.layer_prefix[end][1] - self.layer_prefix[first][1]
            largest = max([self.fixed_largest[ipu], *self.layer_largest[first:end]])
            done = part = None
            steps = list(self.fixed_steps[ipu])
            stage = self.layer_stage.get(ipu)
            for layer in range(first, end):
                steps += [(position, stage) for position in self.layer_steps[layer]]
            if configured.generation is not None:
                part = configured.generation.load([self.forward[position] for position, _ in steps])
                done = part.work
            elif configured.step_costs is not None:
                grouped: Dict[Optional[int], List[int]] = {}
                for position, index in sorted(steps):
                    grouped.setdefault(index, []).append(position)
                done = work([(0 if index is None else self.stages[index].stash_depth,
                              [self.forward[position] for position in positions])
                             for index, positions in grouped.items()], configured.step_costs, configured.execution)
                done = done._replace(exchange_bytes=self._exchange_bytes(sorted(position for position, _ in steps)))
            self._loads[key] = IPULoad(self.trained(ipu, first, end), frozen, largest, done, part)
        return self._loads[key]

    def _exchange_bytes(self, positions: List[int]) -> int:
        """What an IPU running the steps at `positions` (ascending) receives a cycle: the input of each run of steps
        one after the other in its executor's forward pass, and in training the gradient of the run's output (as
        `pipeline.work` counts them by stage, the stages of any split being those runs)."""
        costs, training = self.configured.step_costs, self.configured.execution.training
        exchange = 0
        def joined(before: int, after: Optional[int]) -> bool:
            return after == before + 1 and self.forward[after].executor == self.forward[before].executor

        for index, position in enumerate(positions):
            cost = costs.get(self.forward[position].path, UNCALLED)
            if index == 0 or not joined(positions[index - 1], position):
                exchange += cost.input_bytes
            if training and not joined(position, positions[index + 1] if index + 1 < len(positions) else None):
                exchange += cost.output_bytes
        return exchange

    def cost(self, ipu: int, first: int, end: int) -> IPUCost:
        key = (ipu, first, end)
        if key not in self._costs:
            self._costs[key] = self.cost_model.ipu(self.load(ipu, first, end))
        return self._costs[key]

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
        return self.cost(ipu, first, end).on_chip_bytes

    def cycle_load(self, ipu: int, first: int, end: int) -> float:
        """What paces each pipeline cycle the IPU runs (`timing.IPUTime.cycle_load`)."""
        return self.cost(ipu, first, end).time.cycle_load

    def after_pipeline_seconds(self, ipu: int, first: int, end: int) -> float:
        """The IPU's weight update and gradients' sum after the pipeline."""
        return self.cost(ipu, first, end).time.after_pipeline_seconds

    @staticmethod
    def shifted(cost: Cost, cut: int, encoder: int) -> Cost:
        """`cost` of the decoder's IPUs and layers, numbered from the cut."""
        return lambda ipu, first, end: cost(ipu + cut, first + encoder, end + encoder)
