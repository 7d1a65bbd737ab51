"""Mistry et al.'s protocol beside the engine: their iNALU's gated penalty
and reinitialisation (an `after_eval` hook of `StaticBenchmark.run`), and
their sparsity error."""

import numpy as np

# Their sparsity error reads the weights W (their tags ending in
# `W/sparsity_error`, `W_real/...`, `W_im/...`): ours by these names.
SPARSE_WEIGHTS = ("kernel", "mul_kernel", "imaginary_kernel")


def their_sparsity(bench):
    """Per run, the sparsity error as Mistry et al. report it: their
    `max(min(|W|, |1 - |W||))` of each weight W of the unit (the NPU's real
    and imaginary, the iNALU's additive and multiplicative kernels; not the
    gates), the largest of them, but the iNALU's the mean of its two paths
    (their `sparsity_error` tags and reader)."""
    from keras_nalu import INALU

    effective = bench.effective_weights()
    errors = []
    for name in SPARSE_WEIGHTS:
        if name in effective:
            w = np.abs(effective[name].reshape(len(bench.runs), -1))
            errors.append(np.max(np.minimum(w, np.abs(1 - w)), axis=1))
    if not errors:
        return None
    combine = np.mean if isinstance(bench.engine_model.layers[0], INALU) else np.max
    return combine(errors, axis=0).tolist()


def _half_statistics(values, counts, lengths):
    """For the list `np.repeat(values, counts)` cut to its first `L` items,
    for each `L` of `lengths`: the mean of its first `L // 2` items, and the
    mean and the (population) standard deviation of the rest. Arrays of
    `lengths`' shape, computed from the runs of equal values without
    expanding them."""
    bounds = np.concatenate([[0], np.cumsum(counts)])  # (segments + 1,)
    lengths = np.asarray(lengths)[:, None]
    half = lengths // 2

    def counted(low, high):  # each segment's items in [low, high): (checks, segs)
        return np.clip(
            np.minimum(bounds[1:], high) - np.maximum(bounds[:-1], low), 0, None
        )

    first = counted(0, half)
    second = counted(half, lengths)
    mean_first = (first * values).sum(1) / half[:, 0]
    mean_second = (second * values).sum(1) / (lengths - half)[:, 0]
    spread = (second * np.square(values - mean_second[:, None])).sum(1)
    return mean_first, mean_second, np.sqrt(spread / (lengths - half)[:, 0])


class InaluProtocol:
    """Mistry et al.'s iNALU protocol (their benchmark's `--reinit` and its
    gated penalty; experiments/single_layer_benchmark.py), as an
    `after_eval` hook of `StaticBenchmark.run` for a benchmark built with
    `penalty_gate=True`.

    - The penalty gate: their iNALU penalty counts only while the run's
      last logged interpolation MSE is below `gate_threshold` (and after
      iteration 10,000: the penalty schedule's part). At each evaluation
      each run's `penalty_gate` becomes 1 where its interpolation MSE is
      below `gate_threshold`, else 0 (NaN: 0).
    - Reinitialisation: theirs appends the last logged interpolation MSE
      to a list at every iteration and, every `interval` iterations once
      the list holds more than `max_stored` values, re-draws the weights
      when the mean of the list's first half is at most the mean plus the
      standard deviation of its second half and that mean is above
      `loss_threshold`, then empties the list (Adam's state untouched).
      The MSE changes only at evaluations, so at each evaluation the list
      each of their checks until the next one would see is known: this
      replays those checks, and a run whose check fires is reinitialised
      (`StaticBenchmark.reinitialize`, drawn by the iteration) at this
      evaluation, where theirs would at the firing iteration, up to
      `eval_every - interval` iterations later: the one difference. The
      list then holds what theirs holds after the reset (the stale MSE of
      the iterations left until the next evaluation).

    The last entry gets `"reinitialized"`: the runs reinitialised at it.
    The hook keeps each run's list; after a resume it replays the restored
    history (the same decisions, without touching the weights).

    Args:
        iterations: The iterations the benchmark trains (no check after).
        eval_every: Iterations between evaluations (`run`'s).
        interval: Iterations between two checks (`--reinit-epoch-interval`).
        max_stored: Values the list must exceed (`--reinit-max-stored-losses`).
        loss_threshold: `--reinit-loss-thr`.
        gate_threshold: The interpolation MSE below which the penalty counts.
        reinitialize: False for the gate alone.
    """

    def __init__(
        self,
        iterations,
        eval_every=1000,
        interval=10,
        max_stored=5000,
        loss_threshold=1.0,
        gate_threshold=1.0,
        reinitialize=True,
    ):
        from keras_nalu import validation

        self.iterations = validation.positive_int("iterations", iterations)
        self.eval_every = validation.positive_int("eval_every", eval_every)
        self.interval = validation.positive_int("interval", interval)
        self.max_stored = validation.non_negative_int("max_stored", max_stored)
        self.loss_threshold = float(loss_threshold)
        self.gate_threshold = float(gate_threshold)
        self.reinitialize = bool(reinitialize)
        self._lists = None  # per run, [values, counts] of its list
        self._seen = 0  # the history entries replayed

    def update(self, iteration, interpolation):
        """Adds the evaluation at `iteration` (per-run interpolation MSEs) to
        the runs' lists and replays their checks until the next evaluation;
        returns the mask of the runs whose check fired."""
        interpolation = np.asarray(interpolation, dtype=np.float64)
        if self._lists is None:
            self._lists = [[[], []] for _ in interpolation]
        stop = min(iteration + self.eval_every, self.iterations)
        fired = np.zeros(len(interpolation), bool)
        if iteration >= stop:
            return fired
        first = -(-max(iteration, 1) // self.interval) * self.interval
        checks = np.arange(first, stop, self.interval)  # their epochs checked
        for i, value in enumerate(interpolation):
            values, counts = self._lists[i]
            begin = iteration  # this value's first iteration in the list
            while self.reinitialize:
                stored = sum(counts)
                pending = checks[checks >= begin]
                due = pending[stored + pending - begin + 1 > self.max_stored]
                if not len(due):
                    break
                mean_first, mean_second, std_second = _half_statistics(
                    np.array([*values, value]),
                    np.array([*counts, stop - begin]),
                    stored + due - begin + 1,
                )
                hits = np.nonzero(
                    (mean_first <= mean_second + std_second)
                    & (mean_second > self.loss_threshold)
                )[0]
                if not hits.size:
                    break
                fired[i] = True  # emptied after that iteration's update
                values, counts, begin = [], [], int(due[hits[0]]) + 1
            if stop > begin:
                values.append(value)
                counts.append(stop - begin)
            self._lists[i] = [values, counts]
        return fired

    def __call__(self, bench, history):
        if bench.penalty_gate is None:
            raise ValueError(
                "Received a benchmark without a penalty gate, expected one built "
                "with `penalty_gate=True` for the InaluProtocol hook. Received: "
                f"penalty_gate={bench.penalty_gate!r}"
            )
        if self._seen != len(history) - 1:  # a resume: replay the history
            self._lists, self._seen = None, 0
            for entry in history[:-1]:
                self.update(entry["iteration"], entry["interpolation"])
        entry = history[-1]
        self._seen = len(history)
        interpolation = np.asarray(entry["interpolation"], dtype=np.float64)
        fired = self.update(entry["iteration"], interpolation)
        bench.penalty_gate.assign(
            (interpolation < self.gate_threshold).astype("float32")
        )
        runs = np.nonzero(fired)[0]
        bench.reinitialize(runs, entry["iteration"])
        entry["reinitialized"] = runs.tolist()
