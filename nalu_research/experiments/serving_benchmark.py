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

import inspect
import json
import tempfile
from pathlib import Path

import numpy as np

from nalu_research.arguments import positive_int
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.serving import in_fresh_process

LENGTHS = (10, 100, 1000, 10_000)
STATIC = ("dense", "nalu", "dense_xla", "nalu_xla")  # batch-1 and batch-1,024 models
RECURRENT = ("nalu_cell", "simple_rnn")


class ServingBenchmark(Experiment):
    """Serving benchmark: exported SavedModels of the units against plain
    Keras ones."""

    record_path = "results/serving_benchmark.json"

    def add_arguments(self, parser):
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

    def prepare(self, args, session):
        self.settings = {
            "requests": 50 if args.quick else args.requests,
            "rounds": 1 if args.quick else args.rounds,
            "seconds": 0.1 if args.quick else 1.0,
            "lengths": [10, 100] if args.quick else list(LENGTHS),
        }

    def train(self, args, run, session):
        """Exports the models, then times them in a fresh process that
        cannot import `keras_nalu` (TensorFlow only, as a server would)."""
        code = inspect.getsource(serve) + (
            "\nimport json, sys\nprint(json.dumps(serve(sys.argv[1], "
            f"json.loads(sys.argv[2]), {STATIC!r}, {RECURRENT!r})))"
        )
        with tempfile.TemporaryDirectory() as folder:
            export_models(folder)
            results = in_fresh_process(code, folder, json.dumps(self.settings))
        marginal = marginal_step_costs(results["us_per_step_batch_32"])
        return {**results, "marginal_us_per_step_batch_32": marginal}

    def report(self, args, rows):
        print_figures(rows[0])

    def record(self, args, rows):
        return {"settings": self.settings, **rows[0]}


def export_models(folder, seed=0):
    """Exports the six models into `folder`; returns their names."""
    import keras

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


def serve(models_dir, settings, static, recurrent):
    """Loads and times the SavedModels in `models_dir`: the `static` ones
    at batch 1 and 1,024, the `recurrent` ones at each length of `settings`.
    Runs in a fresh process without keras_nalu (`ServingBenchmark.train`
    sends it this function's source), so it imports what it uses itself."""
    import time
    from pathlib import Path

    import numpy as np
    import tensorflow as tf

    loaded = {
        name: tf.saved_model.load(str(Path(models_dir) / name))
        for name in (*static, *recurrent)
    }
    rng = np.random.default_rng(0)
    one = tf.constant(rng.uniform(1, 2, (1, 100)).astype("float32"))
    many = tf.constant(rng.uniform(1, 2, (1024, 100)).astype("float32"))
    sequences = {
        n: tf.constant(rng.uniform(0, 1, (32, n, 1)).astype("float32"))
        for n in settings["lengths"]
    }
    for name in static:  # warm up every input shape
        for x in (one, many):
            loaded[name].serve(x)
    for name in recurrent:
        for x in sequences.values():
            loaded[name].serve(x)

    latencies = {name: [] for name in static}
    throughput = {name: [] for name in static}
    per_step = {name: {n: [] for n in sequences} for name in recurrent}
    requests = settings["requests"] // settings["rounds"]
    for _ in range(settings["rounds"]):
        for name in static:
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


def print_figures(results):
    """Prints the figures of `results` (the row of `ServingBenchmark.train`),
    each as a ratio to its reference."""
    latency, rows = results["latency_ms"], results["rows_per_second"]
    steps = results["us_per_step_batch_32"]
    marginal = results["marginal_us_per_step_batch_32"]
    table = [
        [
            name,
            f"{latency[name]['p50']:.3f} ms",
            f"{latency[name]['p99']:.3f} ms",
            f"{rows[name]:.3g}",
        ]
        for name in STATIC
    ]
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
    return ServingBenchmark().main(argv)
