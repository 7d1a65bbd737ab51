"""The workers of `make gpu-check`, each run in a process of its own (`python
-m nalu_research.experiments.gpu_check.workers PART SETTINGS`, by
`gpu_check._spawn`) on the backend and device its environment sets: each
prints its result as one JSON line after `gpu_check.MARK`."""

import contextlib
import io
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import keras
import numpy as np

from keras_nalu import ops as nalu_ops
from nalu_research.experiments import demo
from nalu_research.experiments.anchor_split import initial_splits
from nalu_research.experiments.gpu_check import MARK
from nalu_research.recipe import Recipe
from nalu_research.seed_batched import StaticBenchmark

README = Path(__file__).resolve().parents[3] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)
ERROR = re.compile(r"^(\w+): .*relative error .*: median (\S+), max (\S+)$", re.M)


def _device_name():
    """The device Keras computes on in this worker, in words."""
    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        return f"{device.platform}: {device.device_kind}"
    import torch

    if torch.cuda.is_available():
        return f"cuda: {torch.cuda.get_device_name(0)}"
    return "cpu"


def _allow_tf32():
    """Allows TensorFloat-32 where the backend would by default (jax) or can
    be told to (torch), to see what it does to the units."""
    if keras.backend.backend() == "jax":
        nalu_ops.matmul = keras.ops.matmul  # JAX's default precision
    else:
        import torch

        torch.set_float32_matmul_precision("high")


def readme_worker(settings):
    """Runs the README's Python blocks; returns each unit's errors."""
    if settings["tf32"]:
        _allow_tf32()
    code = "\n\n".join(BLOCK.findall(README.read_text(encoding="utf-8")))
    printed = io.StringIO()
    start = time.perf_counter()
    # In a folder of its own: the README's example saves its model where it
    # runs (`nmu.keras`), which is not the checkout.
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(code, str(README), "exec"), {"__name__": "readme"})
        finally:
            os.chdir(here)
    errors = {
        name: {"median": float(median), "max": float(high)}
        for name, median, high in ERROR.findall(printed.getvalue())
    }
    return {
        "device": _device_name(),
        "errors": errors,
        "seconds": time.perf_counter() - start,
    }


def precision_worker(settings):
    """The largest relative error of two wide products against float64: the
    NAC's `x @ W` (an exact sum of inputs) and the NALU's log-space product
    `exp(log|x| @ W)`, `x` of `(4096, 256)` in [1, 10], `W` of `(256, 16)` in
    {-1, 0, 1} with 2 nonzeros per column, through `keras_nalu.ops`."""
    if settings["tf32"]:
        _allow_tf32()
    rng = np.random.default_rng(0)
    x = rng.uniform(1, 10, (4096, 256)).astype("float32")
    w = np.zeros((256, 16), "float32")
    for column in range(16):
        rows = rng.choice(256, 2, replace=False)
        w[rows, column] = rng.choice([-1.0, 1.0], 2)
    closed = np.full((256, 16), -30.0, "float32")  # the multiplicative path
    x64, w64 = x.astype("float64"), w.astype("float64")
    exact = {"NAC sum": x64 @ w64, "NALU product": np.exp(np.log(x64) @ w64)}
    got = {
        "NAC sum": nalu_ops.nac(x, w),
        "NALU product": nalu_ops.nalu(x, w, closed, epsilon=0.0),
    }
    errors = {}
    for name, value in got.items():
        value = keras.ops.convert_to_numpy(value).astype("float64")
        scale = np.maximum(np.abs(exact[name]), 1.0)
        errors[name] = float(np.max(np.abs(value - exact[name]) / scale))
    return {"device": _device_name(), "errors": errors}


def demo_worker(settings):
    """The demo's tasks (`nalu_research.experiments.demo`), without export;
    returns each row's extrapolation errors over the seeds."""
    if settings["tf32"]:
        _allow_tf32()
    folder = Path(tempfile.mkdtemp())
    argv = ["--seeds", str(settings["seeds"]), "--epochs", str(settings["epochs"])]
    argv += ["--json", str(folder / "demo.json"), "--no-export"]
    argv += ["--checkpoint-dir", str(folder / "checkpoints")]
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        demo.main(argv)
    results = json.loads((folder / "demo.json").read_text())
    return {
        "device": _device_name(),
        "rows": [
            {
                "task": row["task"],
                "model": row["model"],
                "extrapolation": row["extrapolation"],
                "interpolation": row["interpolation"],
            }
            for row in results["errors"]
        ],
        "solved_below": demo.SOLVED,
        "seconds": time.perf_counter() - start,
    }


def engine_worker(settings):
    """Milliseconds per run-iteration of the seed-batched engine: for each
    of its `models` and number of `runs`, the median of 3 timed chunks of
    `steps` iterations after one untimed (compiling) chunk."""
    timings = []
    for model in settings["models"]:
        for runs in settings["runs"]:
            keras.utils.set_random_seed(0)
            bench = StaticBenchmark(model, "mul", range(runs), eval_size=16)
            bench._train_chunk(settings["steps"])  # compiles
            seconds = []
            for _ in range(3):
                start = time.perf_counter()
                bench._train_chunk(settings["steps"])
                seconds.append(time.perf_counter() - start)
            ms = 1000 * sorted(seconds)[1] / settings["steps"] / runs
            timings.append({"model": model, "runs": runs, "ms_per_run_iteration": ms})
    return {"device": _device_name(), "timings": timings}


class _TimeUp(Exception):
    pass


def anchor_worker(settings):
    """The anchor run for `seconds` of training at most: returns how far it
    got and the strict results of each seed there."""
    keras.utils.set_random_seed(0)
    bench = StaticBenchmark(
        "nmu",
        "mul",
        range(settings["seeds"]),
        Recipe(regularization=tuple(settings["regularization"])),
        eval_size=settings["eval_size"],
    )
    splits = initial_splits(bench)
    history, start = [], time.perf_counter()

    def collect(entry):
        history.append(entry)
        if time.perf_counter() - start > settings["seconds"]:
            raise _TimeUp

    try:
        bench.run(settings["iterations"], settings["every"], on_eval=collect)
    except _TimeUp:
        pass
    seconds = time.perf_counter() - start
    runs = bench.summarize(history)
    return {
        "device": _device_name(),
        "iterations": history[-1]["iteration"],
        "seconds": seconds,
        "runs": [
            {
                **{k: run[k] for k in ("seed", "success", "solved_at")},
                "extrapolation_mse": run["extrapolation_mse"],
                "initial_split": split,
            }
            for run, split in zip(runs, splits, strict=True)
        ],
    }


WORKERS = {
    "precision": precision_worker,
    "readme": readme_worker,
    "demo": demo_worker,
    "engine": engine_worker,
    "anchor": anchor_worker,
}


def worker_main(part, settings):
    result = WORKERS[part](json.loads(settings))
    print(MARK + json.dumps(result, default=float), flush=True)


if __name__ == "__main__":
    worker_main(*sys.argv[1:])
