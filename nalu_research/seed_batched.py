"""Train one model per seed, all seeds in one compiled program.

The static arithmetic task of Madsen & Johansen (2020): every seed draws its own
pair of slices, its own initial weights and its own stream of fresh batches, and
the models of all seeds train side by side along a leading seed axis. The math
of NAC and NALU is `keras_nalu.ops` (the same functions the layers call), the
optimizer is Adam written out elementwise, so each seed trains exactly as it
would alone; a seed that diverges to NaN does not touch the others.

The loop is compiled with `tf.function` (TensorFlow backend): data are drawn
inside the graph from stateless seeds `(seed, step)`, so the stream depends
only on the seed and the step.
"""

import math
import time

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_nalu import ops as nalu_ops
from keras_nalu import training
from keras_nalu.initializers import NMUUniform
from keras_nalu.layers._sparse_unit import DEFAULT_SCHEDULE
from nalu_research import _checks
from nalu_research.tasks.metrics import paper_scale, sparsity_error, success_threshold
from nalu_research.tasks.static_arithmetic import OPERATIONS, StaticArithmetic

HIDDEN = 2

# Keras activations for the one-hidden-layer MLPs of Table 6, plus CReLU.
MLP_ACTIVATIONS = (
    "relu6",
    "softsign",
    "tanh",
    "sigmoid",
    "selu",
    "elu",
    "relu",
    "crelu",
    "linear",
)
# Each unit model is two layers, input -> HIDDEN -> 1, of these kinds.
UNIT_MODELS = {
    "nac": ("nac", "nac"),
    "nalu": ("nalu", "nalu"),
    "nau": ("nau", "nau"),
    "nmu": ("nau", "nmu"),
    "nmru": ("nau", "nmru"),
    "inalu": ("inalu", "inalu"),
}
MODELS = tuple(UNIT_MODELS) + MLP_ACTIVATIONS

# Clipping of the NAU-family kernels, as in the layers.
_BOUNDS = {"nau": (-1.0, 1.0), "nmu": (0.0, 1.0), "nmru": (0.0, 1.0)}

# The penalty schedules, `(strength, start, end)`: the layers' defaults.
SCHEDULES = {
    "nau": tuple(DEFAULT_SCHEDULE.values()),
    "nmu": tuple(DEFAULT_SCHEDULE.values()),
    "nmru": tuple(DEFAULT_SCHEDULE.values()),
    "inalu": (1.0, 20_000, 35_000),
}


def _uniform(rng, seeds, shape, center, limit):
    return rng.uniform(center - limit, center + limit, size=(seeds, *shape))


def _glorot(rng, seeds, fan_in, fan_out):
    return _uniform(
        rng, seeds, (fan_in, fan_out), 0.0, math.sqrt(6.0 / (fan_in + fan_out))
    )


def _init_layer(kind, rng, fan_in, fan_out, nmu_center=0.5):
    """One layer's initial weights, as the Keras layer's default initializers."""
    glorot_limit = math.sqrt(6.0 / (fan_in + fan_out))
    if kind in ("nac", "nalu"):
        names = ("w_hat", "m_hat") + (("gate",) if kind == "nalu" else ())
        return {name: _glorot(rng, 1, fan_in, fan_out) for name in names}
    if kind == "nau":  # NAUUniform
        return {
            "kernel": _uniform(rng, 1, (fan_in, fan_out), 0.0, min(0.5, glorot_limit))
        }
    if kind in ("nmu", "nmru"):  # NMUUniform, over 2 * fan_in rows for the NMRU
        rows = fan_in * (2 if kind == "nmru" else 1)
        limit = min(0.25, math.sqrt(6.0 / (rows + fan_out)))
        return {"kernel": _uniform(rng, 1, (rows, fan_out), nmu_center, limit)}
    names = ("w_hat", "m_hat", "mul_w_hat", "mul_m_hat")  # inalu
    weights = {name: _glorot(rng, 1, fan_in, fan_out) for name in names}
    return {**weights, "gate": np.zeros((1, fan_out))}


def init_params(model, seeds, input_size, nmu_center=0.5):
    """Initial weights of `model` for each seed of `seeds`, stacked on axis 0.

    The Keras default initializers of every layer used (Glorot-uniform
    kernels, zero biases and iNALU gates, Madsen & Johansen's for NAU, NMU
    and NMRU, whose `NMUUniform` center is `nmu_center`), drawn from each seed
    alone. Returns a dict of float32 arrays.
    """
    per_seed = [_init_one(model, input_size, seed, nmu_center) for seed in seeds]
    return {name: np.stack([p[name] for p in per_seed]) for name in per_seed[0]}


def _init_one(model, input_size, seed, nmu_center):
    rng = np.random.default_rng(seed)
    seeds = 1
    width = 2 * HIDDEN if model == "crelu" else HIDDEN
    if model in UNIT_MODELS:
        params = {}
        shapes = ((input_size, HIDDEN), (HIDDEN, 1))
        for layer, (kind, shape) in enumerate(
            zip(UNIT_MODELS[model], shapes, strict=True)
        ):
            for name, value in _init_layer(kind, rng, *shape, nmu_center).items():
                params[f"{name}_{layer}"] = value
    elif model in MLP_ACTIVATIONS:
        params = {
            "kernel_0": _glorot(rng, seeds, input_size, HIDDEN),
            "bias_0": np.zeros((seeds, HIDDEN)),
            "kernel_1": _glorot(rng, seeds, width, 1),
            "bias_1": np.zeros((seeds, 1)),
        }
    else:
        raise ValueError(
            f"Received an invalid value for `model`, expected one of {MODELS}. "
            f"Received: model={model!r}"
        )
    return {name: value[0].astype("float32") for name, value in params.items()}


def _nac_weights(params, layer, prefix=""):
    return nalu_ops.nac_weight(
        params[f"{prefix}w_hat_{layer}"], params[f"{prefix}m_hat_{layer}"]
    )


def _apply_layer(kind, params, layer, h, epsilon):
    if kind == "nac":
        return nalu_ops.nac(h, _nac_weights(params, layer))
    if kind == "nalu":
        w = _nac_weights(params, layer)
        return nalu_ops.nalu(h, w, params[f"gate_{layer}"], epsilon=epsilon)
    if kind == "inalu":
        return nalu_ops.inalu(
            h,
            _nac_weights(params, layer),
            _nac_weights(params, layer, "mul_"),
            params[f"gate_{layer}"][:, None, :],
            epsilon=epsilon,
        )
    kernel = params[f"kernel_{layer}"]
    if kind == "nmru":
        return nalu_ops.nmru(h, kernel, epsilon)
    return {"nau": nalu_ops.nau, "nmu": nalu_ops.nmu}[kind](h, kernel)


def forward(model, params, x, epsilon=nalu_ops.DEFAULT_EPSILON):
    """Outputs `(seeds, batch, 1)` of `model` for inputs `(seeds, batch, in)`."""
    if model in UNIT_MODELS:
        h = x
        for layer, kind in enumerate(UNIT_MODELS[model]):
            h = _apply_layer(kind, params, layer, h, epsilon)
        return h
    h = ops.matmul(x, params["kernel_0"]) + params["bias_0"][:, None, :]
    if model == "crelu":
        h = ops.concatenate([ops.relu(h), ops.relu(-h)], axis=-1)
    else:
        h = keras.activations.get(model)(h)
    return ops.matmul(h, params["kernel_1"]) + params["bias_1"][:, None, :]


def penalty(model, params):
    """The sum over layers of each unit's penalty, per seed: shape `(seeds,)`.

    The sparsity penalty of NAU, NMU and NMRU kernels, iNALU's penalty of its
    latent weights (averaged over the four), as the layers add them; 0 for the
    other models.
    """
    total = 0.0
    for layer, kind in enumerate(UNIT_MODELS.get(model, ())):
        if kind in _BOUNDS:
            kernel = ops.clip(params[f"kernel_{layer}"], *_BOUNDS[kind])
            total += nalu_ops.sparsity_penalty(kernel)
        elif kind == "inalu":
            names = ("w_hat", "m_hat", "mul_w_hat", "mul_m_hat")
            total += sum(
                nalu_ops.inalu_penalty(params[f"{n}_{layer}"]) for n in names
            ) / len(names)
    return total


def bounds(model):
    """`{param name: (low, high)}` of the parameters clipped after each update."""
    return {
        f"kernel_{layer}": _BOUNDS[kind]
        for layer, kind in enumerate(UNIT_MODELS.get(model, ()))
        if kind in _BOUNDS
    }


def first_layer_weight(model, params):
    """The first layer's effective `W` per seed (NAC, NALU, NAU), else None."""
    kind = UNIT_MODELS.get(model, (None,))[0]
    if kind in ("nac", "nalu"):
        return _nac_weights(params, 0)
    if kind == "nau":
        return ops.clip(params["kernel_0"], -1.0, 1.0)
    return None


def _schedule(value):
    ok = isinstance(value, (tuple, list)) and len(value) == 3
    if ok:
        try:
            strength = _checks.non_negative_float("strength", value[0])
            start = _checks.non_negative_int("start", value[1])
            end = _checks.non_negative_int("end", value[2])
            ok = end >= start
        except ValueError:
            ok = False
    if not ok:
        raise ValueError(
            "Received an invalid value for `regularization`, expected None or "
            "(strength >= 0, start >= 0, end >= start) with integer steps. "
            f"Received: regularization={value!r}"
        )
    return strength, start, end


class StaticBenchmark:
    """Trains `model` on every `(operation, seed)` pair at once.

    Each pair is a run of its own: seed `s` fixes the task's slices, the
    initial weights and the batch stream, and a run's results do not depend
    on which other runs share the program (tested; up to float rounding, as
    batched kernels of other shapes round differently).

    Args:
        model: One of `MODELS`.
        operations: Operations of the task ("add", "sub", "mul", "div",
            "square", "sqrt"), or one of them as a string.
        seeds: Sequence of integer seeds, each run for every operation.
        batch_size: Fresh examples per step and run.
        learning_rate: Adam's learning rate.
        eval_size: Examples per run in each of the fixed interpolation and
            extrapolation test sets.
        regularization: `(strength, start, end)` of the units' penalty
            schedule (default: `SCHEDULES[model]`, the layers' defaults), or
            None for no penalty. Ignored by models without one.
        nmu_center: Center of the NMU and NMRU kernels' initial range
            (`keras_nalu.initializers.NMUUniform`).
        task_kwargs: Passed to `StaticArithmetic` (ranges, sizes). The
            interpolation range must be one interval (batches are drawn in
            the graph); the extrapolation range may be a union.
    """

    def __init__(
        self,
        model,
        operations,
        seeds,
        batch_size=128,
        learning_rate=1e-3,
        eval_size=10_000,
        regularization="default",
        nmu_center=0.5,
        **task_kwargs,
    ):
        if model not in MODELS:
            raise ValueError(
                f"Received an invalid value for `model`, expected one of {MODELS}. "
                f"Received: model={model!r}"
            )
        self.model = model
        self._config = {
            "model": model,
            "operations": operations,
            "seeds": list(seeds),
            "batch_size": batch_size,
            "learning_rate": learning_rate,
            "eval_size": eval_size,
            "regularization": regularization,
            "nmu_center": nmu_center,
            **task_kwargs,
        }
        operations = [operations] if isinstance(operations, str) else list(operations)
        seeds = [_checks.non_negative_int("seeds", s) for s in seeds]
        if not operations or not seeds:
            raise ValueError(
                "Received no runs, expected at least one operation and one seed. "
                f"Received: operations={operations}, seeds={seeds}"
            )
        self.batch_size = _checks.positive_int("batch_size", batch_size)
        self.learning_rate = _checks.positive_float("learning_rate", learning_rate)
        eval_size = _checks.positive_int("eval_size", eval_size)
        if regularization == "default":
            regularization = SCHEDULES.get(model)
        self.regularization = (
            None
            if regularization is None or model not in SCHEDULES
            else _schedule(regularization)
        )
        self._bounds = bounds(model)
        NMUUniform(center=nmu_center)  # validates it
        self.runs = [(op, seed) for op in operations for seed in seeds]
        self.tasks = [
            StaticArithmetic(op, seed=seed, **task_kwargs) for op, seed in self.runs
        ]
        self.input_size = self.tasks[0].input_size
        if np.ndim(self.tasks[0].interpolation_range) != 1:
            raise ValueError(
                "Received an invalid value for `interpolation_range`, expected "
                "one interval (low, high): batches are drawn in the graph. "
                f"Received: interpolation_range={task_kwargs['interpolation_range']}"
            )
        # The threshold depends on the operation, not on where the slices lie.
        thresholds = {op: success_threshold(self._task(op)) for op in operations}
        self.thresholds = np.array([thresholds[op] for op, _ in self.runs])
        masks = np.zeros((len(self.runs), self.input_size, 2), "float32")
        for i, task in enumerate(self.tasks):
            masks[i, task.a_slice, 0] = 1.0
            masks[i, task.b_slice, 1] = 1.0
        self._masks = tf.constant(masks)
        op_index = [list(OPERATIONS).index(op) for op, _ in self.runs]
        self._op_one_hot = tf.one_hot(op_index, len(OPERATIONS))[:, None, :]
        # A run's batch stream is keyed by its own (seed, operation) alone.
        self._stream_ids = tf.constant(
            [
                seed * len(OPERATIONS) + i
                for (_, seed), i in zip(self.runs, op_index, strict=True)
            ],
            dtype=tf.int64,
        )
        self.test_sets = {
            split: self._test_set(split, eval_size)
            for split in ("interpolation", "extrapolation")
        }
        initial = init_params(
            model, [seed for _, seed in self.runs], self.input_size, nmu_center
        )
        self.params = {k: tf.Variable(v, name=k) for k, v in initial.items()}
        self._moments = {
            k: (tf.Variable(tf.zeros_like(v)), tf.Variable(tf.zeros_like(v)))
            for k, v in initial.items()
        }
        self.step = tf.Variable(0, dtype=tf.int64)
        self._train = tf.function(self._train_steps)
        self._evaluate = tf.function(self._mse)
        self.random_mse = {k: v.numpy() for k, v in self._evaluate().items()}

    def _task(self, operation):
        return self.tasks[[op for op, _ in self.runs].index(operation)]

    def _targets(self, x):
        ab = tf.matmul(x, self._masks)  # (runs, batch, 2): a and b
        a, b = ab[..., :1], ab[..., 1:]
        every = tf.concat([f(a, b) for f in OPERATIONS.values()], axis=-1)
        # Select by `where`, not by multiplying: the other operations may be
        # NaN on signed inputs (sqrt) and NaN * 0 is NaN.
        chosen = tf.where(self._op_one_hot > 0, every, tf.zeros_like(every))
        return tf.reduce_sum(chosen, axis=-1, keepdims=True)

    def _test_set(self, split, size):
        x = np.stack(
            [
                task.sample(size, split, seed=(seed, 2**31 - 1))[0]
                for task, (_, seed) in zip(self.tasks, self.runs, strict=True)
            ]
        )
        # Targets in float64 by the task itself, then float32.
        y = np.stack(
            [task.targets(one) for task, one in zip(self.tasks, x, strict=True)]
        )
        return tf.constant(x), tf.constant(y.astype("float32"))

    def _batch(self, step):
        low, high = self.tasks[0].interpolation_range
        shape = (self.batch_size, self.input_size)
        keys = tf.stack([tf.fill([len(self.runs)], step), self._stream_ids], axis=1)
        x = tf.vectorized_map(
            lambda key: tf.random.stateless_uniform(shape, key, low, high), keys
        )
        return x, self._targets(x)

    def _losses(self, x, y):
        """Each run's loss `(runs,)`: its MSE plus its scheduled penalty."""
        error = forward(self.model, self.params, x) - y
        loss = tf.reduce_mean(tf.square(error), axis=[1, 2])
        if self.regularization is not None:
            strength, start, end = self.regularization
            weight = strength * nalu_ops.ramp(self.step, start, end)
            loss += weight * penalty(self.model, self.params)
        return loss

    def _train_steps(self, steps):
        beta_1, beta_2, eps = 0.9, 0.999, 1e-7
        names = list(self.params)
        for _ in tf.range(steps):
            self.step.assign_add(1)
            x, y = self._batch(self.step)
            with tf.GradientTape() as tape:
                # The sum over runs of each run's loss: independent gradients.
                loss = tf.reduce_sum(self._losses(x, y))
            grads = tape.gradient(loss, [self.params[n] for n in names])
            t = tf.cast(self.step, tf.float32)
            scale = self.learning_rate * tf.sqrt(1 - beta_2**t) / (1 - beta_1**t)
            for name, grad in zip(names, grads, strict=True):
                m, v = self._moments[name]
                m.assign(beta_1 * m + (1 - beta_1) * grad)
                v.assign(beta_2 * v + (1 - beta_2) * tf.square(grad))
                updated = self.params[name] - scale * m / (tf.sqrt(v) + eps)
                if name in self._bounds:
                    updated = tf.clip_by_value(updated, *self._bounds[name])
                self.params[name].assign(updated)

    def _mse(self):
        return {
            split: tf.reduce_mean(
                tf.square(forward(self.model, self.params, x) - y), axis=[1, 2]
            )
            for split, (x, y) in self.test_sets.items()
        }

    def run(self, iterations, eval_every=1000, on_eval=None, checkpoint=None):
        """Trains `iterations` steps, evaluating at 0 and every `eval_every` steps.

        With `checkpoint` (a file path), the state of every run (weights,
        Adam's moments, the step) and the history so far are saved there
        after every evaluation, atomically, and a later call with the same
        benchmark and arguments resumes from it: every batch is drawn from
        its step, so the result is that of an uninterrupted run.

        Returns a dict: `history` (iteration, per-run MSEs and first-layer
        sparsity error at every evaluation), `seconds` (training time, after
        compilation, including before a resume) and `ms_per_run_iteration`.
        """
        iterations = _checks.positive_int("iterations", iterations)
        eval_every = _checks.positive_int("eval_every", eval_every)
        # Compile outside the timing, without taking a step.
        self._train.get_concrete_function(tf.TensorSpec([], tf.int64))
        history, seconds, done = [], 0.0, 0
        variables = [
            self.step,
            *(self.params[k] for k in sorted(self.params)),
            *(m for k in sorted(self._moments) for m in self._moments[k]),
        ]
        config = {**self._config, "iterations": iterations, "eval_every": eval_every}
        saved = None
        if checkpoint is not None:
            saved = training.load_checkpoint(checkpoint, variables, config=config)
        if saved is not None:
            state = saved[0]
            seconds, done = state["seconds"], state["done"]
            history = [
                {k: np.asarray(v) if k in self.test_sets else v for k, v in e.items()}
                for e in state["history"]
            ]
            for entry in history if on_eval is not None else ():
                on_eval(entry)
        while True:
            if saved is None or done > history[-1]["iteration"]:
                w = first_layer_weight(self.model, self.params)
                history.append(
                    {
                        "iteration": done,
                        **{k: v.numpy() for k, v in self._evaluate().items()},
                        "sparsity": None
                        if w is None
                        else [sparsity_error(one) for one in ops.convert_to_numpy(w)],
                    }
                )
                if on_eval is not None:
                    on_eval(history[-1])
                if checkpoint is not None:
                    as_json = [
                        {k: np.asarray(v).tolist() if k in self.test_sets else v
                         for k, v in entry.items()}
                        for entry in history
                    ]  # fmt: skip
                    state = {"history": as_json, "seconds": seconds, "done": done}
                    training.save_checkpoint(
                        checkpoint, variables, state, config=config
                    )
            if done >= iterations:
                break
            chunk = min(eval_every - done % eval_every, iterations - done)
            start = time.perf_counter()
            self._train(tf.constant(chunk, tf.int64))
            seconds += time.perf_counter() - start
            done += chunk
        return {
            "history": history,
            "seconds": seconds,
            "ms_per_run_iteration": 1000 * seconds / iterations / len(self.runs),
        }

    def summarize(self, history):
        """Per-run results by the strict criterion, from `run()["history"]`.

        A run is a success when its extrapolation MSE, at the evaluation with
        the lowest interpolation MSE, is below the simulated threshold;
        `solved_at` is the first evaluated iteration below it.
        """
        interp = np.array([h["interpolation"] for h in history])  # (evals, runs)
        extrap = np.array([h["extrapolation"] for h in history])
        iterations = np.array([h["iteration"] for h in history])
        best = np.argmin(np.where(np.isnan(interp), np.inf, interp), axis=0)
        results = []
        for i, (operation, seed) in enumerate(self.runs):
            at = best[i]
            solved = np.nonzero(extrap[:, i] < self.thresholds[i])[0]
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
                    "threshold": float(self.thresholds[i]),
                    "success": bool(extrap[at, i] < self.thresholds[i]),
                    "solved_at": int(iterations[solved[0]]) if solved.size else None,
                    "sparsity_error": None if sparsity is None else sparsity[i],
                }
            )
        return results
