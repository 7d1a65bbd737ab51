"""Train one model per seed, all seeds in one compiled program.

The static arithmetic task of Madsen & Johansen (2020): every seed draws its own
pair of slices, its own initial weights and its own stream of fresh batches, and
the models of all seeds train side by side along a leading seed axis.

One source of truth: the engine reads everything a layer defines from the
layer. A benchmark resolves its model once (`EngineModel`): its configured
layers, one per position (`keras_nalu.NAU`, ..., or a user's registered
unit, with the benchmark's layer options; `keras.layers.Dense` for the
MLPs), and every part of the engine reads those layers: the math is each
unit's `math` on the runs' stacked weights, the penalty its `penalty` on
its `penalty_schedule`, the sparsity error its `effective_weights` against
its `exact_values`, and a run's Keras model (`keras_model`) is a copy of
them. A seed's initial weights are those of a copy of the layers built for
that seed, every random initializer the layers create their weights with
drawing from one `keras.random.SeedGenerator(seed)`; the clipping after
each update is the layers' own weight constraint; and the optimizer is
`keras.optimizers.Adam` (its learning rate a number or a Keras
learning-rate schedule), whose update is elementwise, so each seed's slice of a
stacked weight trains exactly as it would alone, and a seed that diverges to
NaN does not touch the others.

The loop runs on any Keras backend (`keras.ops`, and Keras's optimizer applied
statelessly), compiled by the backend's own compiler: `jax.jit`,
`tf.function(jit_compile=True)` (XLA), or eagerly on torch. The batches are
drawn inside the compiled loop by a counter-based hash of `(run, step,
element)` (`counter_uniform`), so a run's stream depends only on its seed and
target and on the step, never on the runs beside it, and a resumed run
draws the same batches. `StaticBenchmark.run` checkpoints through
`keras_nalu.checkpoints.Checkpoint`, the mechanism `keras_nalu.training.fit`
uses, with its resume policy (`Checkpoint.load_for`); on jax and torch
nothing here imports TensorFlow.
"""

import json
import logging
import time
import zlib

import keras
import numpy as np
from keras import ops

from keras_nalu import formulas, snap_weights, validation
from keras_nalu import ops as nalu_ops
from keras_nalu.checkpoints import Checkpoint
from keras_nalu.gradients import compiled, value_and_grad
from nalu_research.engine_model import (  # noqa: F401 (the engine's names)
    HIDDEN,
    LAYERS,
    MLP_ACTIVATIONS,
    MODELS,
    UNIT_MODELS,
    EngineModel,
    forward,
    layer_weights,
    model_name,
    unit_kinds,
)
from nalu_research.recipe import Recipe, l1_beta
from nalu_research.streams import counter_uniform, stream_id
from nalu_research.tasks.metrics import mistry_threshold, paper_scale, success_threshold
from nalu_research.tasks.static_arithmetic import (
    TARGETS,
    StaticArithmetic,
    check_range,
    parse_target,
)

logger = logging.getLogger(__name__)


def _ranges(value, task_kwargs):
    """`{key: (interpolation, extrapolation)}` of the `ranges` argument: a
    sequence of pairs (keyed by index) or a dict (JSON keys: int or str),
    each interpolation range one interval."""
    expected = (
        "None, a sequence of (interpolation, extrapolation) pairs or a dict "
        "{key: (interpolation, extrapolation)} (int or str keys), each "
        "interpolation range one interval (low, high), each extrapolation "
        "range an interval or a union of them"
    )
    given = {
        k for k in ("interpolation_range", "extrapolation_range") if k in task_kwargs
    }
    if given:
        raise ValueError(
            f"Received ranges and {', '.join(sorted(given))}, expected one of "
            "them: `ranges` holds the interpolation and extrapolation range of "
            f"each run. Received: ranges={value!r}"
        )
    items = value.items() if isinstance(value, dict) else None
    if items is None and isinstance(value, (list, tuple)):
        items = enumerate(value)
    try:
        found = {}
        for key, (interpolation, extrapolation) in items or ():
            if not isinstance(key, (int, str)) or isinstance(key, bool):
                raise ValueError(key)
            found[key] = (
                check_range("interpolation_range", interpolation),
                check_range("extrapolation_range", extrapolation, union=True),
            )
    except (TypeError, ValueError):
        found = {}
    if not found:
        raise validation.invalid("ranges", expected, value)
    return found


class StaticBenchmark:
    """Trains `model` on every `(operation, seed)` pair at once.

    Each pair is a run of its own: seed `s` fixes the task's slices, the
    initial weights and the batch stream, and a run's results do not depend
    on which other runs share the program (tested; up to float rounding, as
    batched kernels of other shapes round differently). The model is
    resolved once, into `engine_model` (an `EngineModel`: its configured
    layers), which every step, evaluation and export reads.

    Args:
        model: One of `MODELS`, or a model of any units (`unit_kinds`):
            `"nau-npu"`, `"single-npu"`, `"nau-my_units>Cube"`.
        operations: The targets of the task, each a name of
            `nalu_research.tasks.static_arithmetic.TARGETS` ("add", "sub",
            "mul", "div", "square", "sqrt") or an expression of the inputs
            `a` and `b` ("2*a - b"; `parse_target`), or one as a string.
        seeds: Sequence of integer seeds, each run for every operation.
        recipe: How the runs train (`nalu_research.recipe.Recipe`: learning
            rate, batch size, clipping, penalties, layer options), default
            `Recipe()`.
        eval_size: Examples per run in each of the fixed interpolation and
            extrapolation test sets.
        threshold: The extrapolation MSE below which a run counts as solved,
            or None for Madsen & Johansen's simulated threshold of each
            target (`nalu_research.tasks.success_threshold`), `"mistry"`
            for Mistry et al.'s (`nalu_research.tasks.mistry_threshold`,
            epsilon 1e-5), or a function of a run's task (a
            `StaticArithmetic`) to its threshold.
        ranges: None (every run on the task's ranges), or the ranges the
            runs train on, each as its own runs: a sequence of
            `(interpolation, extrapolation)` pairs, keyed by their index, or
            a dict `{key: (interpolation, extrapolation)}`. The runs are then
            `(operation, key, seed)` for every operation, range and seed,
            each drawing its batches from its own interpolation range and
            stream, with its own threshold; rows carry `range` (the key).
        **task_kwargs: Passed to `StaticArithmetic` (ranges, sizes). The
            interpolation range must be one interval (batches are drawn in
            the graph); the extrapolation range may be a union.
    """

    def __init__(
        self,
        model,
        operations,
        seeds,
        recipe=None,
        *,
        eval_size=10_000,
        threshold=None,
        ranges=None,
        **task_kwargs,
    ):
        if recipe is not None and not isinstance(recipe, Recipe):
            raise validation.invalid("recipe", "a Recipe or None", recipe)
        self.recipe = Recipe() if recipe is None else recipe
        unit_kinds(model)  # raises for an unknown model
        self.model = model
        operations = [operations] if isinstance(operations, str) else operations
        # Names, as before targets were expressions: checkpoints resume.
        operations = [parse_target(op, "operation").name for op in operations]
        seeds = [validation.non_negative_int("seeds", s) for s in seeds]
        if not operations or not seeds:
            raise ValueError(
                "Received no runs, expected at least one operation and one seed. "
                f"Received: operations={operations}, seeds={seeds}"
            )
        eval_size = validation.positive_int("eval_size", eval_size)
        self.ranges = None if ranges is None else _ranges(ranges, task_kwargs)
        self.l1 = self.recipe.l1_for(operations)
        self._make_tasks(operations, seeds, task_kwargs)
        self.thresholds = self._thresholds(threshold)
        # What a checkpoint must have been written for, in one place.
        self._config = {
            "model": model,
            "operations": operations,
            "seeds": seeds,
            "eval_size": eval_size,
            **task_kwargs,
            **self.recipe.config(operations),
        }
        if threshold is not None:  # a function's values, as JSON
            value = self.thresholds.tolist() if callable(threshold) else threshold
            self._config.update(threshold=value)
        if self.ranges is not None:
            self._config.update(ranges=[[k, *v] for k, v in self.ranges.items()])
        self.engine_model = EngineModel(
            model, self.input_size, self.recipe.layer_options, self.recipe.nmu_center
        )
        schedule = self.recipe.schedule()
        self.schedules = dict(self.engine_model.schedules)
        if schedule != "default":
            self.schedules = dict.fromkeys(self.schedules, schedule) if schedule else {}
        self._make_batches(operations)
        self.test_sets = {
            split: self._test_set(split, eval_size)
            for split in ("interpolation", "extrapolation")
        }
        self._make_weights()
        self.random_mse = self._evaluated()

    def _make_tasks(self, operations, seeds, task_kwargs):
        """The runs, `(operation, seed)` or `(operation, range, seed)`, and
        their tasks (`StaticArithmetic`), which fix the input size."""
        keys = [None] if self.ranges is None else list(self.ranges)
        self.runs = [
            (op, seed) if key is None else (op, key, seed)
            for op in operations
            for key in keys
            for seed in seeds
        ]
        self.tasks = []
        for run in self.runs:
            ranges = {}
            if self.ranges is not None:
                interpolation, extrapolation = self.ranges[run[1]]
                ranges = {
                    "interpolation_range": interpolation,
                    "extrapolation_range": extrapolation,
                }
            self.tasks.append(
                StaticArithmetic(run[0], seed=run[-1], **ranges, **task_kwargs)
            )
        self._operations = [run[0] for run in self.runs]
        self._seeds = [run[-1] for run in self.runs]
        self.input_size = self.tasks[0].input_size
        if np.ndim(self.tasks[0].interpolation_range) != 1:
            raise ValueError(
                "Received an invalid value for `interpolation_range`, expected "
                "one interval (low, high): batches are drawn in the graph. "
                f"Received: interpolation_range={task_kwargs['interpolation_range']}"
            )

    def _make_batches(self, operations):
        """What the compiled program draws each run's batches with: its
        slices' masks, its target, its stream, its range, its L1 weights."""
        masks = np.zeros((len(self.runs), self.input_size, 2), "float32")
        for i, task in enumerate(self.tasks):
            masks[i, task.a_slice, 0] = 1.0
            masks[i, task.b_slice, 1] = 1.0
        self._masks = ops.convert_to_tensor(masks)
        # Each run's target, picked in the graph among the paper's six and
        # the benchmark's others. (All six, as when they were the only
        # targets: XLA then compiles the program it compiled before, and a
        # run repeats its earlier results to the bit; on jax, computing only
        # the runs' own targets fused the step otherwise.)
        names = list(dict.fromkeys([*TARGETS, *operations]))
        self._targets_used = [parse_target(name) for name in names]
        index = [names.index(op) for op in self._operations]
        self._op_one_hot = ops.one_hot(np.array(index), len(names))[:, None, :]
        # A run's batch stream is keyed by its own (seed, target) alone, and
        # its interpolation range among `ranges`.
        self._streams = ops.convert_to_tensor(
            np.array(
                [
                    stream_id(
                        seed,
                        op,
                        None if self.ranges is None else task.interpolation_range,
                    )
                    for op, seed, task in zip(
                        self._operations, self._seeds, self.tasks, strict=True
                    )
                ],
                "int32",
            )
        )
        if self.ranges is None:  # one interval, numbers in the program
            self._low, self._high = self.tasks[0].interpolation_range
        else:
            lows, highs = np.array([t.interpolation_range for t in self.tasks]).T
            self._low = ops.convert_to_tensor(lows[:, None].astype("float32"))
            self._high = ops.convert_to_tensor(highs[:, None].astype("float32"))
        if self.l1 is not None:
            starts, ends = np.array([self.l1[op] for op in self._operations]).T
            self._l1_start = ops.convert_to_tensor(starts.astype("float32"))
            self._l1_end = ops.convert_to_tensor(ends.astype("float32"))

    def _make_weights(self):
        """The runs' stacked weights, Adam, the penalty gate and the
        compiled training and evaluation programs."""
        # Each trainable weight stacks the runs' Keras-initialized weights and
        # keeps the layer's constraint (NAU, NMU, NMRU: clipping to [low,
        # high]), which the optimizer applies after every update, as it does
        # for the layer. A weight the layers do not train stays as drawn, a
        # constant of the program (`constants`), passed to `math` as well.
        initial, like = self.engine_model.initial_weights(self._seeds)
        self.params, self.constants = {}, {}
        for name, weight in like.items():
            if weight.trainable:
                self.params[name] = keras.Variable(initial[name], name=name)
                self.params[name].constraint = weight.constraint
            else:
                self.constants[name] = ops.convert_to_tensor(initial[name])
        # Keras's Adam updates elementwise, so each run's slice of a stacked
        # weight moves exactly as it would alone. No `clipnorm` or
        # `global_clipnorm`: their norms would span the runs of a weight (clip
        # each run's gradient before `apply` if that is ever needed).
        recipe = self.recipe
        epsilon = (
            {} if recipe.adam_epsilon is None else {"epsilon": recipe.adam_epsilon}
        )
        self.optimizer = keras.optimizers.Adam(recipe.learning_rate, **epsilon)
        self.optimizer.build(list(self.params.values()))
        # The step counter is the optimizer's `iterations`: after t steps,
        # the next one draws batch t + 1.
        self._step_index = next(
            i
            for i, v in enumerate(self.optimizer.variables)
            if v is self.optimizer.iterations
        )
        self._variables = [*self.params.values(), *self.optimizer.variables]
        self.penalty_gate = None
        if recipe.penalty_gate:
            # After the optimizer's variables: the state the steps thread.
            self.penalty_gate = keras.Variable(
                np.ones(len(self.runs), "float32"),
                trainable=False,
                name="penalty_gate",
            )
            self._variables.append(self.penalty_gate)
        # JAX and torch train on values (Keras's stateless optimizer step;
        # on torch 2.6 times faster here than updating in place); Keras's
        # TensorFlow optimizer has no stateless step: it updates in place.
        self._stateless = keras.backend.backend() != "tensorflow"
        self._train = compiled(
            self._train_stateless if self._stateless else self._train_in_place
        )
        self._evaluate = compiled(self._mse)

    @property
    def step(self):
        """The steps trained so far (the optimizer's `iterations`)."""
        return int(ops.convert_to_numpy(self.optimizer.iterations))

    def effective_weights(self, layer=0):
        """`{name: array (runs, ...)}`: layer `layer`'s effective weights
        (its `effective_weights`) of the runs' current weights, as NumPy
        arrays; `{}` for an MLP."""
        if self.engine_model.kinds is None:
            return {}
        unit = self.engine_model.layers[layer]
        found = unit.effective_weights(layer_weights(self._weights(), layer))
        return {name: ops.convert_to_numpy(value) for name, value in found.items()}

    def reinitialize(self, runs, draw):
        """Re-draws the trainable weights of the runs of indices `runs`, as
        Mistry et al.'s iNALU reinitialisation does (`reset_parameters`):
        run `i` takes those of `engine_model.build` for a seed hashed from
        its own seed and `draw` (e.g. the iteration), so a resumed run draws
        the same. Adam's moments and step and the other runs are untouched,
        as in theirs."""
        indices = [int(i) for i in np.ravel(np.asarray(runs, dtype=np.int64))]
        if any(not 0 <= i < len(self.runs) for i in indices):
            raise ValueError(
                "Received an invalid value for `runs`, expected indices of runs "
                f"in [0, {len(self.runs)}). Received: runs={runs!r}"
            )
        draw = validation.non_negative_int("draw", draw)
        if not indices:
            return
        seeds = [
            zlib.crc32(f"reinitialize\0{self._seeds[i]}\0{draw}".encode()) % 2**31
            for i in indices
        ]
        drawn, _ = self.engine_model.initial_weights(seeds)
        for name, variable in self.params.items():
            values = ops.convert_to_numpy(variable).copy()
            values[indices] = drawn[name]
            variable.assign(values)

    def _thresholds(self, threshold):
        """Per run, its threshold (the `threshold` argument)."""
        if threshold is None or threshold == "mistry":
            simulate = success_threshold if threshold is None else mistry_threshold
            # It depends on the operation and the extrapolation range, not on
            # where the slices lie: once per operation and range.
            found = {}
            for op, task in zip(self._operations, self.tasks, strict=True):
                key = (op, repr(task.extrapolation_range))
                if key not in found:
                    found[key] = simulate(task)
            values = [
                found[op, repr(task.extrapolation_range)]
                for op, task in zip(self._operations, self.tasks, strict=True)
            ]
        elif callable(threshold):
            values = [
                validation.positive_float("threshold", threshold(task))
                for task in self.tasks
            ]
        else:
            if isinstance(threshold, str):
                raise validation.invalid(
                    "threshold",
                    "None, 'mistry', a positive number or a function of a task",
                    threshold,
                )
            value = validation.positive_float("threshold", threshold)
            values = [value] * len(self.runs)
        return np.array(values)

    def _targets(self, x):
        ab = nalu_ops.matmul(x, self._masks)  # (runs, batch, 2): a and b
        a, b = ab[..., :1], ab[..., 1:]
        every = ops.concatenate(
            [target.keras(a, b) for target in self._targets_used], axis=-1
        )
        # Select by `where`, not by multiplying: the other targets may be
        # NaN on signed inputs (sqrt) and NaN * 0 is NaN.
        chosen = ops.where(self._op_one_hot > 0, every, ops.zeros_like(every))
        return ops.sum(chosen, axis=-1, keepdims=True)

    def _test_set(self, split, size):
        x = np.stack(
            [
                task.sample(size, split, seed=(seed, 2**31 - 1))[0]
                for task, seed in zip(self.tasks, self._seeds, strict=True)
            ]
        )
        # Targets in float64 by the task itself, then float32.
        y = np.stack(
            [task.targets(one) for task, one in zip(self.tasks, x, strict=True)]
        )
        return ops.convert_to_tensor(x), ops.convert_to_tensor(y.astype("float32"))

    def _batch(self, step):
        """The fresh batch `(x, y)` of every run at step `step` (from 1)."""
        shape = (self.recipe.batch_size, self.input_size)
        x = counter_uniform(self._streams, step, shape, self._low, self._high)
        return x, self._targets(x)

    def _losses(self, params, step, gate=None):
        """Each run's loss `(runs,)` on batch `step`: its MSE plus its layers'
        scheduled penalties, each weighted `strength * ramp(step, start, end)`
        (and by the run's `gate`, the `penalty_gate`'s value, if given)."""
        x, y = self._batch(step)
        weights = {**self.constants, **params}
        error = self.engine_model.forward(weights, x, training=True) - y
        loss = ops.mean(ops.square(error), axis=(1, 2))
        for layer, (strength, start, end) in self.schedules.items():
            if strength > 0:  # as the layers: no penalty term at strength 0
                weight = strength * nalu_ops.ramp(step, start, end)
                if gate is not None:
                    weight = weight * gate
                loss += weight * self.engine_model.layer_penalty(weights, layer)
        if self.l1 is not None:
            every, growth = self.recipe.l1_every, self.recipe.l1_growth
            beta = l1_beta(step, self._l1_start, self._l1_end, every, growth)
            loss += beta * sum(
                ops.sum(ops.reshape(ops.abs(w), (w.shape[0], -1)), axis=1)
                for w in params.values()
            )
        return loss

    def _total_loss(self, params, step, gate=None):
        """The sum over runs of each run's loss (so each run's gradient is
        its own), of the weights `params`, a list in `self.params`' order."""
        params = dict(zip(self.params, params, strict=True))
        return ops.sum(self._losses(params, step, gate))

    def _clipped(self, grads):
        """`grads` (stacked over runs on axis 0) with each run's global norm
        scaled down to at most `clipnorm`, as `clip_grad_norm_` would scale
        that run's alone, then each element bounded by `clipvalue` (as
        `clip_grad_value_`, elementwise: per run by construction)."""
        clipnorm, clipvalue = self.recipe.clipnorm, self.recipe.clipvalue
        if clipnorm is not None:
            grads = self._norm_clipped(grads, clipnorm)
        if clipvalue is not None:
            grads = [ops.clip(g, -clipvalue, clipvalue) for g in grads]
        return grads

    def _norm_clipped(self, grads, clipnorm):
        squares = sum(
            ops.sum(ops.reshape(ops.square(g), (g.shape[0], -1)), axis=1) for g in grads
        )
        scale = ops.minimum(1.0, clipnorm / (ops.sqrt(squares) + 1e-6))
        return [
            g * ops.reshape(scale, (-1,) + (1,) * (len(g.shape) - 1)) for g in grads
        ]

    def _train_stateless(self, values, steps):
        """`steps` steps from `values` (the params', then the optimizer's
        variables', then the `penalty_gate`'s if there is one), returning the
        new values: pure, as `jax.jit` needs."""
        count = len(self.params)
        end = count + len(self.optimizer.variables)
        loss_and_grad = value_and_grad(self._total_loss)

        def one_step(_, values):
            params, optimizer_values = values[:count], values[count:end]
            gates = values[end:]  # the gate, which the steps do not change
            step = optimizer_values[self._step_index] + 1
            grads = self._clipped(loss_and_grad(params, step, *gates)[1])
            params, optimizer_values = self.optimizer.stateless_apply(
                optimizer_values, grads, params
            )
            return [*params, *optimizer_values, *gates]

        return ops.fori_loop(0, steps, one_step, values)

    def _train_in_place(self, steps):
        """`steps` steps updating the variables (TensorFlow)."""
        variables = list(self.params.values())
        loss_and_grad = value_and_grad(self._total_loss)

        gates = () if self.penalty_gate is None else (self.penalty_gate.value,)

        def one_step(i, unused):
            step = self.optimizer.iterations + 1
            values = [v.value for v in variables]
            grads = self._clipped(loss_and_grad(values, step, *gates)[1])
            self.optimizer.apply(grads, variables)
            return unused

        ops.fori_loop(0, steps, one_step, 0)

    def _train_chunk(self, steps):
        """Trains `steps` steps and waits for them (the backend may run ahead)."""
        if self._stateless:
            values = self._train([v.value for v in self._variables], steps)
            for variable, value in zip(self._variables, values, strict=True):
                variable.assign(value)
        else:
            self._train(steps)
        return self.step

    def _mse(self, params):
        weights = {**self.constants, **params}
        return {
            split: ops.mean(
                ops.square(self.engine_model.forward(weights, x) - y), axis=(1, 2)
            )
            for split, (x, y) in self.test_sets.items()
        }

    def _weights(self):
        """`{name: value}` of every weight the layers' math reads: the
        current trained ones and the constants."""
        return {**self.constants, **{k: v.value for k, v in self.params.items()}}

    def _evaluated(self):
        """`{split: per-run MSE}` of the current weights, as NumPy arrays."""
        mse = self._evaluate({k: v.value for k, v in self.params.items()})
        return {k: ops.convert_to_numpy(v) for k, v in mse.items()}

    def _restore(self, checkpoint, config):
        """Restores `checkpoint` if it was written for `config`; returns its
        JSON state, or None (no checkpoint, or one of another configuration
        that was not kept: training starts afresh). The resume policy is
        `keras_nalu.checkpoints.Checkpoint.load_for`'s, that of `fit`."""
        saved = checkpoint.load_for(config)
        if saved is None:
            return None
        values, _, state = saved
        layout = [(tuple(v.shape), str(v.dtype)) for v in self._variables]
        found = [(v.shape, str(v.dtype)) for v in values]
        if found != layout:
            raise ValueError(
                f"The checkpoint {checkpoint.path} does not hold this benchmark's "
                "weights and optimizer state; it was written by another model. "
                f"Delete it or use another checkpoint directory. (It holds "
                f"{found}; this benchmark has {layout}.)"
            )
        for variable, value in zip(self._variables, values, strict=True):
            variable.assign(value)
        return state

    def run(
        self,
        iterations,
        eval_every=1000,
        on_eval=None,
        checkpoint=None,
        progress=None,
        after_eval=None,
    ):
        """Trains `iterations` steps, evaluating at 0 and every `eval_every` steps.

        `on_eval(entry)` is called with each evaluation this call makes (an
        entry of the history; not those a resume restores), and `progress`, a
        `keras_nalu.training.Progress` of `iterations` steps, is updated with
        `progress_values(entry)`.

        `after_eval(bench, history)`, if given, is called after each
        evaluation this call makes (before `on_eval` and the checkpoint),
        with the history so far (after a resume, the restored history then
        this evaluation's entry): it may set the runs' `penalty_gate`,
        `reinitialize` runs, and add JSON-able keys to the last entry. A
        checkpoint does not record which hook trained it: resume with the
        same one.

        With `checkpoint` (a directory), the state of every run (weights,
        Adam's variables, the step) and the history so far are saved there
        after every evaluation by a `keras_nalu.checkpoints.Checkpoint` (one
        file, replaced atomically), and a later call with the same benchmark
        and arguments resumes from it: every batch is drawn from its step, so
        the result is that of an uninterrupted run. A checkpoint of another
        configuration is ignored (a warning is logged) and replaced, unless
        it was kept (`keras_nalu.checkpoints.Checkpoint.keep`): then it is
        refused (`Checkpoint.load_for`, the policy of `fit`).

        Returns a dict: `history` (iteration, per-run MSEs and first-layer
        sparsity error at every evaluation), `seconds` (training time, after
        compilation, including before a resume), `ms_per_run_iteration` and
        `resumed_at` (the iteration of the checkpoint resumed from, or None).

        Raises:
            ValueError: the checkpoint has this configuration but not this
                benchmark's variables, or it is a kept checkpoint of another
                configuration.
            keras_nalu.checkpoints.CheckpointInUseError: another run holds
                the checkpoint folder (it is this run's until `run` returns).
        """
        if checkpoint is not None:
            checkpoint = Checkpoint(checkpoint, argument="checkpoint")
        try:
            return self._run(
                iterations, eval_every, on_eval, checkpoint, progress, after_eval
            )
        finally:
            if checkpoint is not None:
                checkpoint.close()

    def _run(
        self, iterations, eval_every, on_eval, checkpoint, progress, after_eval=None
    ):
        """`run`, with its `keras_nalu.checkpoints.Checkpoint` or None."""
        iterations = validation.positive_int("iterations", iterations)
        eval_every = validation.positive_int("eval_every", eval_every)
        if checkpoint is not None:
            checkpoint.lock()  # before any work: a second run fails at once
        # Compile outside the timing: a chunk of no steps.
        self._train_chunk(0)
        history, seconds, done = [], 0.0, 0
        config = json.dumps(
            {**self._config, "iterations": iterations, "eval_every": eval_every},
            sort_keys=True,
        )
        saved = None
        if checkpoint is not None:
            checkpoint.check_writable()
            saved = self._restore(checkpoint, config)
        if saved is not None:
            seconds, done = saved["seconds"], saved["done"]
            history = [
                {k: np.asarray(v) if k in self.test_sets else v for k, v in e.items()}
                for e in saved["history"]
            ]
        while True:
            if saved is None or done > history[-1]["iteration"]:
                history.append(
                    {
                        "iteration": done,
                        **self._evaluated(),
                        "sparsity": self.engine_model.sparsity(self._weights()),
                    }
                )
                if after_eval is not None:
                    after_eval(self, history)
                if on_eval is not None:
                    on_eval(history[-1])
                if progress is not None:
                    progress.update(done, self.progress_values(history[-1]))
                if checkpoint is not None:
                    as_json = [
                        {
                            k: np.asarray(v).tolist() if k in self.test_sets else v
                            for k, v in entry.items()
                        }
                        for entry in history
                    ]
                    state = {
                        "history": as_json,
                        "seconds": seconds,
                        "done": done,
                        "config": config,
                    }
                    values = [ops.convert_to_numpy(v) for v in self._variables]
                    try:
                        checkpoint.save(values, state)
                    except OSError as error:  # e.g. a full disk: train on
                        logger.warning(
                            "Could not save the checkpoint of iteration %d in %s "
                            "(%s); the previous one stays, and training goes on.",
                            done,
                            checkpoint.directory,
                            error,
                        )
            if done >= iterations:
                break
            chunk = min(eval_every - done % eval_every, iterations - done)
            start = time.perf_counter()
            self._train_chunk(chunk)
            seconds += time.perf_counter() - start
            done += chunk
        return {
            "history": history,
            "seconds": seconds,
            "ms_per_run_iteration": 1000 * seconds / iterations / len(self.runs),
            "resumed_at": None if saved is None else saved["done"],
        }

    def keras_model(self, index):
        """Run `index`'s model with its current weights, as a
        `keras.Sequential` of copies of the configured layers
        (`EngineModel.keras_model`)."""
        return self.engine_model.keras_model(self._weights(), index)

    def exact_formulas(self, size=1000):
        """Per run, the formula of its model snapped to exact weights
        (`keras_nalu.snap_weights`, verified within its default `rtol` on
        `size` fresh held-out and extrapolation examples of the run's task,
        drawn apart from the test sets), or None where snapping is refused
        (the run did not learn exact arithmetic) or for MLPs."""
        if self.engine_model.kinds is None:
            return [None] * len(self.runs)
        found = []
        for index, (task, seed) in enumerate(zip(self.tasks, self._seeds, strict=True)):
            positive = min(np.ravel(task.interpolation_range)) >= 0
            data = {}
            for split in ("interpolation", "extrapolation"):
                x, _ = task.sample(size, split, seed=(seed, 2**31 - 2))
                data[split] = (x, task.targets(x))
            try:
                snapped, _ = snap_weights(self.keras_model(index), data)
            except ValueError:
                found.append(None)
                continue
            found.append(formulas(snapped, positive=positive)[0])
        return found

    def solved(self, entry):
        """Per run, whether the extrapolation MSE of the evaluation `entry`
        (of `run()["history"]`) is below the run's threshold."""
        return np.asarray(entry["extrapolation"]) < self.thresholds

    def progress_values(self, entry):
        """What a progress line shows of the evaluation `entry`: the runs
        below their threshold now, the median and best extrapolation MSE."""
        extrapolation = np.asarray(entry["extrapolation"], dtype=np.float64)
        return {
            "solved": f"{int(np.sum(self.solved(entry)))}/{len(self.runs)} runs",
            "median extrapolation MSE": float(np.median(extrapolation)),
            "best": _best(extrapolation),
        }

    def scalars(self, entry):
        """`{tag: number}` of the evaluation `entry` for TensorBoard, per
        operation: the runs below their threshold, the median interpolation
        and extrapolation MSE and the best extrapolation MSE."""
        groups = np.array(
            [
                operation if self.ranges is None else f"{operation}/range{run[1]}"
                for operation, run in zip(self._operations, self.runs, strict=True)
            ]
        )
        solved = self.solved(entry)
        values = {}
        for operation in dict.fromkeys(groups):
            mine = groups == operation
            for split in self.test_sets:
                errors = np.asarray(entry[split], dtype=np.float64)[mine]
                values[f"{operation}/{split}_mse_median"] = float(np.median(errors))
            extrapolation = np.asarray(entry["extrapolation"], dtype=np.float64)
            # NaN when every run diverged: TensorBoardScalars skips it.
            values[f"{operation}/extrapolation_mse_best"] = _best(extrapolation[mine])
            values[f"{operation}/solved"] = int(np.sum(solved[mine]))
        return values

    def summarize(self, history, thresholds=None):
        """Per-run results by the strict criterion, from `run()["history"]`.

        A run is a success when its extrapolation MSE, at the evaluation with
        the lowest interpolation MSE, is below its threshold (the
        benchmark's, or `thresholds[i]` for run `i`: e.g. those of another
        epsilon); `solved_at` is the first evaluated iteration below it.
        """
        if thresholds is None:
            thresholds = self.thresholds
        thresholds = np.asarray(thresholds, dtype=np.float64)
        if thresholds.shape != (len(self.runs),):
            raise ValueError(
                "Received an invalid value for `thresholds`, expected None or "
                f"one number per run ({len(self.runs)}). Received: "
                f"thresholds={thresholds.tolist()!r}"
            )
        interp = np.array([h["interpolation"] for h in history])  # (evals, runs)
        extrap = np.array([h["extrapolation"] for h in history])
        iterations = np.array([h["iteration"] for h in history])
        best = np.argmin(np.where(np.isnan(interp), np.inf, interp), axis=0)
        results = []
        for i, run in enumerate(self.runs):
            operation, seed = run[0], run[-1]
            at = best[i]
            solved = np.nonzero(extrap[:, i] < thresholds[i])[0]
            sparsity = history[at]["sparsity"]
            results.append(
                {
                    "model": self.model,
                    "operation": operation,
                    "seed": seed,
                    "iteration": int(iterations[at]),
                    "interpolation_mse": float(interp[at, i]),
                    "extrapolation_mse": float(extrap[at, i]),
                    "interpolation_paper": float(
                        paper_scale(interp[at, i], self.random_mse["interpolation"][i])
                    ),
                    "extrapolation_paper": float(
                        paper_scale(extrap[at, i], self.random_mse["extrapolation"][i])
                    ),
                    "threshold": float(thresholds[i]),
                    "success": bool(extrap[at, i] < thresholds[i]),
                    "solved_at": int(iterations[solved[0]]) if solved.size else None,
                    "sparsity_error": None if sparsity is None else sparsity[i],
                    **({} if self.ranges is None else {"range": run[1]}),
                }
            )
        return results


def _best(errors):
    """The smallest finite value of `errors`, or NaN when none is finite."""
    finite = errors[np.isfinite(errors)]
    return float(finite.min()) if finite.size else float("nan")
