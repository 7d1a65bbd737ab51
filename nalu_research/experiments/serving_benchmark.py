"""Serving benchmark: exported SavedModels of the units against plain Keras ones.

Exports, with `keras_nalu.export_saved_model`, a NALU model of the static task
(100 -> NALU(2) -> NALU(1)) beside a Dense model of the same shape, each also
with its serving function compiled by XLA (`jit_compile=True`), and a
NALUCell sequence model (1 -> RNN(NALUCell(2)) -> NAC(1)) beside a SimpleRNN
model of the same shape. It then serves them in a fresh process that cannot
import `keras_nalu` (TensorFlow only, as a server would), measuring in
interleaved rounds so that both models of a pair see the same machine load:

- latency of one request of batch 1 (p50 and p99),
- throughput at batch 1,024 (rows per second),
- the recurrent models' cost per time step at lengths 10 to 10,000, and the
  marginal cost of a step between consecutive lengths (the call's fixed cost
  removed).

Every figure is printed as a ratio to its reference, measured in the same run.

    python examples/serving_benchmark.py
    python examples/serving_benchmark.py --quick   # a smoke run
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

LENGTHS = (10, 100, 1000, 10_000)
STATIC = ("dense", "nalu", "dense_xla", "nalu_xla")  # batch-1 and batch-1,024 models


def parse_args(argv=None):
    serving = "--serve" in (sys.argv[1:] if argv is None else argv)
    if serving:  # the fresh serving process, which must not import keras_nalu
        positive_int = int  # and is given --serve only
    else:
        from nalu_research.cli import add_backend_argument, positive_int
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--requests",
        type=positive_int,
        default=2000,
        help="batch-1 requests per model (default 2,000)",
    )
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=5,
        help="interleaved rounds of measurement (default 5)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="few requests and lengths up to 100: a smoke run",
    )
    parser.add_argument("--json", default="results/serving_benchmark.json")
    parser.add_argument(
        "--serve", nargs=2, metavar=("MODELS_DIR", "SETTINGS"), help=argparse.SUPPRESS
    )  # the fresh serving process
    if not serving:
        add_backend_argument(parser, "serving_benchmark")
    return parser.parse_args(argv)


def export_models(folder, seed=0):
    """Exports the six models into `folder`; returns their names."""
    import keras
    import numpy as np

    from keras_nalu import NAC, NALU, NALUCell, export_saved_model

    keras.utils.set_random_seed(seed)
    models = {
        "nalu": keras.Sequential([keras.Input((100,)), NALU(2), NALU(1)]),
        "dense": keras.Sequential(
            [keras.Input((100,)), keras.layers.Dense(2), keras.layers.Dense(1)]
        ),
        "nalu_cell": keras.Sequential(
            [keras.Input((None, 1)), keras.layers.RNN(NALUCell(2)), NAC(1)]
        ),
        "simple_rnn": keras.Sequential(
            [keras.Input((None, 1)), keras.layers.SimpleRNN(2), keras.layers.Dense(1)]
        ),
    }
    rng = np.random.default_rng(seed)
    names = []
    for name, model in models.items():
        static = name in STATIC
        shape = (4, 100) if static else (4, 7, 1)
        sample = rng.uniform(1, 2, shape).astype("float32")
        for jit_compile in (False, True) if static else (False,):
            names.append(name + ("_xla" if jit_compile else ""))
            export_saved_model(
                model, Path(folder) / names[-1], sample, jit_compile=jit_compile
            )
    return names


def serve(models_dir, settings):
    """Runs in a process without keras_nalu: loads and times the SavedModels."""

    class BlockKerasNalu:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "keras_nalu":
                raise ImportError("keras_nalu must not be imported when serving")

    sys.meta_path.insert(0, BlockKerasNalu())
    import numpy as np
    import tensorflow as tf

    settings = json.loads(settings)
    loaded = {
        name: tf.saved_model.load(str(Path(models_dir) / name))
        for name in (*STATIC, "nalu_cell", "simple_rnn")
    }
    rng = np.random.default_rng(0)
    one = tf.constant(rng.uniform(1, 2, (1, 100)).astype("float32"))
    many = tf.constant(rng.uniform(1, 2, (1024, 100)).astype("float32"))
    sequences = {
        n: tf.constant(rng.uniform(0, 1, (32, n, 1)).astype("float32"))
        for n in settings["lengths"]
    }
    for name in STATIC:  # warm up every input shape
        for x in (one, many):
            loaded[name].serve(x)
    for name in ("nalu_cell", "simple_rnn"):
        for x in sequences.values():
            loaded[name].serve(x)

    latencies = {name: [] for name in STATIC}
    throughput = {name: [] for name in STATIC}
    per_step = {
        name: {n: [] for n in sequences} for name in ("nalu_cell", "simple_rnn")
    }
    requests = settings["requests"] // settings["rounds"]
    for _ in range(settings["rounds"]):
        for name in STATIC:
            serve_fn = loaded[name].serve
            for _ in range(requests):
                start = time.perf_counter()
                serve_fn(one).numpy()
                latencies[name].append(time.perf_counter() - start)
            start, rows = time.perf_counter(), 0
            while time.perf_counter() - start < settings["seconds"]:
                serve_fn(many).numpy()
                rows += 1024
            throughput[name].append(rows / (time.perf_counter() - start))
        for name in per_step:
            for n, x in sequences.items():
                start = time.perf_counter()
                loaded[name].serve(x).numpy()
                per_step[name][n].append((time.perf_counter() - start) / n)
    return {
        "latency_ms": {
            name: {
                "p50": 1000 * float(np.percentile(values, 50)),
                "p99": 1000 * float(np.percentile(values, 99)),
            }
            for name, values in latencies.items()
        },
        "rows_per_second": {
            name: float(np.median(values)) for name, values in throughput.items()
        },
        "us_per_step_batch_32": {
            name: {str(n): 1e6 * float(np.median(v)) for n, v in by_length.items()}
            for name, by_length in per_step.items()
        },
    }


def report(results):
    from nalu_research.monitoring import markdown_table

    latency, rows = results["latency_ms"], results["rows_per_second"]
    steps = results["us_per_step_batch_32"]
    table = [
        [name, f"{latency[name]['p50']:.3f} ms", f"{latency[name]['p99']:.3f} ms",
         f"{rows[name]:.3g}"]
        for name in STATIC
    ]  # fmt: skip
    header = ["model", "batch-1 p50", "batch-1 p99", "rows/s at batch 1,024"]
    print("\n".join(markdown_table(header, table)))

    def ratios(nalu, dense):
        return (
            f"batch-1 p50 {latency[nalu]['p50'] / latency[dense]['p50']:.2f}x, p99 "
            f"{latency[nalu]['p99'] / latency[dense]['p99']:.2f}x, cost per row at "
            f"batch 1,024 {rows[dense] / rows[nalu]:.2f}x"
        )

    print(
        f"\nNALU / Dense, both as Keras exports them: {ratios('nalu', 'dense')} "
        "(goal: within 1.5x)."
        f"\nNALU / Dense, both compiled by XLA: {ratios('nalu_xla', 'dense_xla')}."
        f"\nNALU compiled by XLA / Dense as Keras exports it: "
        f"{ratios('nalu_xla', 'dense')}."
        f"\nXLA speeds the NALU up {rows['nalu_xla'] / rows['nalu']:.2f}x and the "
        f"Dense {rows['dense_xla'] / rows['dense']:.2f}x at batch 1,024."
    )
    marginal = marginal_step_costs(steps)
    for title, values in (
        ("microseconds per time step, batch 32", steps),
        ("marginal microseconds per step, batch 32", marginal),
    ):
        columns = list(values["nalu_cell"])
        table = [
            [name, *(f"{values[name][c]:.2f}" for c in columns)]
            for name in ("simple_rnn", "nalu_cell")
        ]
        print("\n" + "\n".join(markdown_table([title, *columns], table)))
    lengths, spans = list(steps["nalu_cell"]), list(marginal["nalu_cell"])
    first, last = lengths[0], lengths[-1]
    cell = marginal["nalu_cell"]
    print(
        f"\nNALUCell cost per step at length {last} / at length {first}: "
        f"{steps['nalu_cell'][last] / steps['nalu_cell'][first]:.2f}x "
        f"(SimpleRNN: {steps['simple_rnn'][last] / steps['simple_rnn'][first]:.2f}x; "
        "the fixed cost of a call is spread over more steps); marginal cost of a "
        f"step, last span / first span: {cell[spans[-1]] / cell[spans[0]]:.2f}x; "
        f"NALUCell / SimpleRNN at length {last}: "
        f"{steps['nalu_cell'][last] / steps['simple_rnn'][last]:.2f}x."
    )


def marginal_step_costs(steps):
    """`{model: {"A-B": microseconds per step between lengths A and B}}`: the
    call's fixed cost cancels in the difference of the times per call."""
    marginal = {}
    for name, by_length in steps.items():
        lengths = [int(n) for n in by_length]
        marginal[name] = {
            f"{a}-{b}": (by_length[str(b)] * b - by_length[str(a)] * a) / (b - a)
            for a, b in zip(lengths[:-1], lengths[1:], strict=True)
        }
    return marginal


def main(argv=None):
    args = parse_args(argv)
    if args.serve:
        print(json.dumps(serve(*args.serve)))
        return
    settings = {
        "requests": 50 if args.quick else args.requests,
        "rounds": 1 if args.quick else args.rounds,
        "seconds": 0.1 if args.quick else 1.0,
        "lengths": [10, 100] if args.quick else list(LENGTHS),
    }
    with tempfile.TemporaryDirectory() as folder:
        export_models(folder)
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
        env.pop("PYTHONPATH", None)
        served = subprocess.run(
            [sys.executable, __file__, "--serve", folder, json.dumps(settings)],
            capture_output=True, text=True, env=env, cwd=folder,
        )  # fmt: skip
        if served.returncode != 0:
            sys.exit(f"The serving process failed:\n{served.stderr[-3000:]}")
    results = json.loads(served.stdout.strip().splitlines()[-1])
    report(results)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    results["marginal_us_per_step_batch_32"] = marginal_step_costs(
        results["us_per_step_batch_32"]
    )
    Path(args.json).write_text(json.dumps({"settings": settings, **results}, indent=1))
    print(f"Wrote {args.json}.")


if __name__ == "__main__":
    main()
