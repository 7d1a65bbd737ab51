"""Training-step benchmark: milliseconds per training step on each backend.

Three models, each built by its experiment's own code at the experiment's
default settings and trained as the experiment trains it (`model.fit`, the
same loss, optimizer, batches and steps per compiled call):

- demo: the demo's NALU model (2 inputs -> `NALU(1)`, `demo.build_model`),
  batches of 64 from a `tf.data.Dataset`, 16 steps per compiled call;
- number words: Embedding -> LSTM -> NALU (`models.number_words.
  build_side_by_side`, size 32, its 3 seeds side by side in one model), the
  whole training set (169 numbers) at every step from a `tf.data.Dataset`,
  every step of a `fit` call in one compiled call;
- program evaluation: the LSTM-configured recurrent NALU
  (`program_evaluation.build_model`, size 32, 5 time steps), batches of 64
  fresh programs from a `FreshBatches` PyDataset, one step per call.

And the seed-batched engine (`nalu_research.seed_batched`, which
`units_benchmark` runs): NALU-NALU on a*b, batches of 128 of 100 inputs,
with 25 and with 150 runs in one program, timed over `--steps` iterations of
`StaticBenchmark`'s compiled loop and given in ms per run-iteration (a step's
time divided by its runs). Issue 13 measured a PyTorch loop of the same
NALU-NALU over 25 seeds at 0.165 ms per run-iteration, and the former
TensorFlow-only engine at 0.137 (30 runs) and 0.088 (150 runs).

Keras fixes its backend per process, so one worker process per backend (this
Python, `KERAS_BACKEND` set) builds the three models and warms them up with
two `fit` calls (compilation; not timed), then waits. In each of `--rounds`
rounds the backends take turns, one at a time (tensorflow, jax, torch,
tensorflow, ...), each timing one `fit` call of `--steps` steps per model;
the table gives the median over the rounds and the ratios of TensorFlow's
time to the others' (above 1: the other backend is faster). A second table
gives the seconds of each model's first, compiling `fit` call. The torch
backend runs one step per call (its Keras trainer takes no
`steps_per_execution`).

    python examples/step_benchmark.py
    python examples/step_benchmark.py --backends tensorflow jax --rounds 5
    python examples/step_benchmark.py --quick   # a smoke run
"""

import datetime
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nalu_research.arguments import Shared, positive_int
from nalu_research.backends import BACKENDS, INSTALL
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table

MODELS = {
    "demo": "demo NALU",
    "number_words": "number words",
    "program_evaluation": "program evaluation",
    "engine_25": "seed-batched NALU-NALU, 25 runs (per run-iteration)",
    "engine_150": "seed-batched NALU-NALU, 150 runs (per run-iteration)",
}
QUICK = {"rounds": 1, "steps": 4}
# Untimed fit calls per model before the rounds: the first compiles, the
# second still ran slower than the later ones (TensorFlow: 4x) when measured.
WARM_UP = 2
SHORT = {"tensorflow": "tf", "jax": "jax", "torch": "torch"}
# Marks the worker's protocol lines on its standard output.
MARK = "step-benchmark: "


# The worker: one backend, the three models.


def _demo(steps):
    import keras

    from nalu_research.experiments import demo
    from nalu_research.runs import steps_per_execution
    from nalu_research.tasks.batches import shuffled_epochs

    args = demo.Demo().parse_args([])
    x, y = demo.sample("a*b", steps * args.batch_size, demo.TRAIN_RANGE, seed=0)
    model = demo.build_model("a*b", "NALU (paper)")
    model.compile(
        optimizer=keras.optimizers.Adam(args.learning_rate),
        loss="mse",
        steps_per_execution=steps_per_execution(min(demo.STEPS_PER_EXECUTION, steps)),
    )
    return model, shuffled_epochs(x, y, args.batch_size, seed=0)(0)


def _number_words(steps):
    import keras
    import tensorflow as tf

    from nalu_research.experiments.number_words import NumberWordsExperiment
    from nalu_research.models.number_words import build_side_by_side
    from nalu_research.runs import steps_per_execution
    from nalu_research.tasks.number_words import NumberWords

    args = NumberWordsExperiment().parse_args([])
    _, ids, y = NumberWords(seed=args.seed).split("train")
    seeds = list(range(args.seed + 1, args.seed + 1 + args.seeds))
    model, _ = build_side_by_side("nalu", max(args.sizes), seeds)
    model.compile(
        optimizer=keras.optimizers.Adam(args.learning_rates[0]),
        loss=[args.loss] * len(seeds),
        steps_per_execution=steps_per_execution(min(args.eval_every, steps)),
    )
    return model, tf.data.Dataset.from_tensors((ids, (y,) * len(seeds))).repeat(steps)


def _program_evaluation(steps):
    from nalu_research.experiments import program_evaluation
    from nalu_research.tasks.batches import FreshBatches
    from nalu_research.tasks.program_evaluation import ProgramEvaluation

    args = program_evaluation.ProgramEvaluationExperiment().parse_args([])
    generator = ProgramEvaluation(args.task)
    model = program_evaluation.build_model(
        "nalu", args.size, generator.steps, not args.untied
    )
    model.compile(
        optimizer=program_evaluation.make_optimizer(args, args.steps), loss=args.loss
    )
    return model, FreshBatches(generator, args.batch_size, steps, seed=args.seed + 1)


def _engine(runs):
    """The seed-batched engine (`nalu_research.seed_batched`) on NALU-NALU a*b,
    `runs` runs in one program: `train(steps)` and the runs, so that the
    table gives ms per run-iteration."""

    def build(steps):
        from nalu_research.seed_batched import StaticBenchmark

        bench = StaticBenchmark("nalu", "mul", range(runs), eval_size=16)
        return (lambda: bench._train_chunk(steps)), runs

    return build


def _fit(builder):
    """A `model.fit` builder as `(train, 1)`: one call of `steps` steps."""

    def build(steps):
        model, data = builder(steps)
        return (lambda: model.fit(data, epochs=1, shuffle=False, verbose=0)), 1

    return build


BUILDERS = {
    "demo": _fit(_demo),
    "number_words": _fit(_number_words),
    "program_evaluation": _fit(_program_evaluation),
    "engine_25": _engine(25),
    "engine_150": _engine(150),
}


def _send(message):
    print(MARK + json.dumps(message), flush=True)


def worker(settings):
    """A backend's process: builds and compiles the models, says it is ready,
    then times one `fit` call per model for each `time` line on its input."""
    import keras

    settings = json.loads(settings)
    steps = settings["steps"]
    runs, first_call = {}, {}
    for name in settings["models"]:
        keras.utils.set_random_seed(0)
        train, _ = runs[name] = BUILDERS[name](steps)
        for i in range(WARM_UP):
            start = time.perf_counter()
            train()
            if i == 0:
                first_call[name] = time.perf_counter() - start
    _send({"backend": keras.backend.backend(), "first_call_s": first_call})
    for line in sys.stdin:
        if line.strip() != "time":
            break
        times = {}
        for name, (train, per) in runs.items():
            start = time.perf_counter()
            train()
            times[name] = 1000 * (time.perf_counter() - start) / steps / per
        _send(times)


class Worker:
    """The process of one backend, driven through its standard streams."""

    def __init__(self, backend, settings):
        self.backend = backend
        self.log = tempfile.TemporaryFile("w+")
        code = (
            "import sys; from nalu_research.experiments.step_benchmark import "
            "worker; worker(sys.argv[1])"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, json.dumps(settings)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env={**os.environ, "KERAS_BACKEND": backend},
        )
        ready = self.receive()
        if ready["backend"] != backend:
            self.fail(f"it runs on {ready['backend']}")
        self.first_call = ready["first_call_s"]

    def receive(self):
        for line in self.process.stdout:
            if line.startswith(MARK):
                return json.loads(line[len(MARK) :])
        self.fail("it exited")

    def time(self):
        self.process.stdin.write("time\n")
        self.process.stdin.flush()
        return self.receive()

    def fail(self, what):
        self.close()
        self.log.seek(0)
        raise RuntimeError(
            f"The {self.backend} worker failed ({what}):\n{self.log.read()[-3000:]}"
        )

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def measure(args):
    """`({model: {backend: [ms per step of each round]}}, {model: {backend:
    seconds of the first fit call}})`. The workers start one after another
    (each compiles alone), then take turns in rounds."""
    settings = {"steps": args.steps, "models": args.models}
    workers = []
    try:
        for backend in args.backends:
            print(f"Starting the {backend} worker (builds and compiles)...", flush=True)
            workers.append(Worker(backend, settings))
        times = {name: {b: [] for b in args.backends} for name in args.models}
        first_call = {
            name: {w.backend: w.first_call[name] for w in workers}
            for name in args.models
        }
        for round_ in range(args.rounds):
            for worker_ in workers:
                for name, ms in worker_.time().items():
                    times[name][worker_.backend].append(ms)
            print(f"Round {round_ + 1} of {args.rounds} done.", flush=True)
    finally:
        for worker_ in workers:
            worker_.close()
    return times, first_call


def summarize(times, first_call, backends):
    """Medians, TensorFlow's ratios to the other backends, the fastest."""
    results = {}
    for name, by_backend in times.items():
        medians = {b: statistics.median(by_backend[b]) for b in backends}
        ratios = {}
        if "tensorflow" in medians:
            for b in backends:
                if b != "tensorflow":
                    ratios[f"tensorflow/{b}"] = medians["tensorflow"] / medians[b]
        results[name] = {
            "ms_per_step": medians,
            "rounds": by_backend,
            "ratios": ratios,
            "fastest": min(medians, key=medians.get),
            "first_call_s": first_call[name],
        }
    return results


def print_table(results, backends):
    others = [b for b in BACKENDS if b != "tensorflow"]
    header = [f"{b} ms" for b in BACKENDS] + [f"tf/{SHORT[b]} ratio" for b in others]
    rows = []
    for name, result in results.items():
        medians, ratios = result["ms_per_step"], result["ratios"]
        cells = [f"{medians[b]:.3g}" if b in medians else "-" for b in BACKENDS]
        cells += [
            f"{ratios[f'tensorflow/{b}']:.3g}" if f"tensorflow/{b}" in ratios else "-"
            for b in others
        ]
        rows.append([MODELS[name], *cells, result["fastest"]])
    print()
    print("\n".join(markdown_table(["model", *header, "fastest"], rows)))
    print(
        "\nMilliseconds per training step (the seed-batched rows: per "
        "run-iteration), median over the rounds; a ratio above 1 means the "
        "other backend is faster than TensorFlow."
    )
    rows = []
    for name, result in results.items():
        first = result["first_call_s"]
        cells = [f"{first[b]:.2f}" if b in first else "-" for b in BACKENDS]
        rows.append([MODELS[name], *cells])
    print()
    header = ["model", *(f"{b} first call s" for b in BACKENDS)]
    print("\n".join(markdown_table(header, rows)))
    print(
        "\nSeconds of the first fit call of each model (the same steps, and "
        "the compilation), paid once per model built: an experiment that "
        "builds many models pays it each time."
    )


class StepBenchmark(Experiment):
    # Its --help description is the module docstring's first paragraph. One
    # run: the backends' worker processes, interleaved over the rounds
    # (`measure`); the record keeps each model's medians and rounds.

    arguments = {
        "models": Shared.all_of(MODELS, "the models timed (default: all of them)"),
        "steps": 64,
    }
    record_path = "results/step_benchmark.json"

    def add_arguments(self, parser):
        installed = [b for b in BACKENDS if importlib.util.find_spec(b) is not None]
        parser.add_argument(
            "--backends",
            nargs="+",
            choices=BACKENDS,
            default=installed,
            help="the backends measured (default: those installed, %(default)s)",
        )
        parser.add_argument(
            "--rounds",
            type=positive_int,
            default=5,
            help="interleaved rounds; the median is reported (default %(default)s)",
        )
        parser.add_argument(
            "--quick",
            action="store_true",
            help=f"a smoke run: {QUICK['rounds']} round of {QUICK['steps']} steps "
            "(the --steps of a timed fit call)",
        )

    def check_arguments(self, args, parser):
        if args.quick:
            args.rounds, args.steps = QUICK["rounds"], QUICK["steps"]
        for backend in args.backends:
            if importlib.util.find_spec(backend) is None:
                parser.error(
                    f"argument --backends: {backend!r} is not installed here: "
                    f"{INSTALL[backend]}"
                )
        args.backends = list(dict.fromkeys(args.backends))  # once each, in order
        args.models = [m for m in MODELS if m in args.models]  # once each, in order

    def prepare(self, args, session):
        print(
            f"ms per model.fit step on {', '.join(args.backends)}: {args.rounds} "
            f"interleaved round(s) of {args.steps} steps per model, after "
            f"{WARM_UP} untimed fit calls (compilation).\n",
            flush=True,
        )

    def train(self, args, run, session):
        """Every model on every backend, interleaved: a row per model."""
        times, first_call = measure(args)
        self.results = summarize(times, first_call, args.backends)
        return [{"model": name, **result} for name, result in self.results.items()]

    def report(self, args, rows):
        print_table(self.results, args.backends)
        print(f"\nMeasured in {self.elapsed():.0f} s.")

    def record(self, args, rows):
        return {
            "date": datetime.date.today().isoformat(),
            "settings": {
                k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
            },
            "models": self.results,
        }


def main(argv=None):
    return StepBenchmark().main(argv)


if __name__ == "__main__":
    sys.exit(main())
