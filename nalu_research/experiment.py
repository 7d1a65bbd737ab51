"""The experiment skeleton: the workflow every experiment shares, written once.

An experiment is a subclass of `Experiment` that supplies only its parts:

    # nalu_research/experiments/mystery_arithmetic.py: the module's name is
    # the experiment's (its backend, checkpoint folder and record).
    class Mystery(Experiment):
        '''The "mystery arithmetic" task ... (the first paragraph is its
        --help description).'''

        arguments = {"seed": 0, "epochs": 250,  # shared ones, with defaults
                     "learning_rate": 1e-3}

        def add_arguments(self, parser): ...    # its own arguments
        def prepare(self, args, session): ...   # its task and data
        def runs(self, args): ...               # the runs: (model, seed)...
        def train(self, args, run, session): ...# one run -> its row(s)
        def report(self, args, rows): ...       # its table, printed
        def record(self, args, rows): ...       # what its record adds
        def plot(self, args, rows, plt): ...    # its figure (--png), or None
        def exports(self, args, rows): ...      # models to export and serve

    def main(argv=None):
        return Mystery().main(argv)

and `Experiment.main` does the rest, in this order (`Experiment.main`): parse
the shared and own arguments (each shared one declared once, in
`nalu_research.arguments`, with its type), create the strategy (before
TensorFlow runs anything), train every run of `runs` with a progress line
per run and its checkpoint folder (`Session.checkpoint`), print the table,
then under the chief write the record (`record_of`: command, commit, backend,
library versions, arguments, seeds, budget, every run's row, times, and what
`record` adds) and the plot, export and serve (`nalu_research.serving`,
written once), and finally delete the runs' checkpoints (or keep them, with
`--keep-checkpoint`).

Why a base class with hooks, not a function taking callbacks: the parts of
one experiment share its task and data (`prepare` keeps them on `self`), and
a base class is how Keras's own families share a workflow (keras-hub's
`Task` owns compile defaults, presets and saving; a task supplies its
backbone and preprocessor). A hook an experiment does not need keeps the
default here, which does nothing or the common thing.

What an experiment declares decides which shared groups it has:
`arguments` (the shared arguments), `record_path` (`--json`, and `--png`
where it overrides `plot`; None: no record), `checkpoints` (`--strategy`,
`--checkpoint-dir`, `--keep-checkpoint`, `--tensorboard`, and
`--checkpoint-every` with `checkpoint_every`), `export_path` (`--export-dir`
and `--no-export`).
"""

import argparse
import dataclasses
import datetime
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from nalu_research import arguments as shared
from nalu_research import runs
from nalu_research.backends import import_tensorflow_quietly
from nalu_research.monitoring import (
    add_output_arguments,
    input_file,
    png_path,
    pyplot,
    save_json,
    save_png,
    tensorboard,
)
from nalu_research.serving import can_export, export_and_serve

# The packages whose versions a record carries.
VERSIONED = ("keras", "tensorflow", "jax", "torch", "numpy")


@dataclasses.dataclass
class Session:
    """What the skeleton gives an experiment's parts for one script run.

    Attributes:
        args: The parsed arguments.
        strategy: The `tf.distribute` strategy of `--strategy`, or None (the
            default strategy off TensorFlow; or no checkpoints group).
        checkpoints: The runs' checkpoint folders (`runs.Checkpoints`), or
            None when the experiment has no checkpoints group.
    """

    args: argparse.Namespace
    strategy: Any = None
    checkpoints: Any = None
    speed: dict = dataclasses.field(default_factory=dict)

    @property
    def chief(self):
        """Whether this process writes the run's files."""
        return runs.is_chief(self.strategy)

    def checkpoint(self, *parts):
        """The checkpoint folder of the run named by `parts` (removed, or
        kept, when the script finishes); None in a session without
        checkpoints (e.g. a test's `Session(args)`: `fit` then keeps none)."""
        return None if self.checkpoints is None else self.checkpoints(*parts)

    def callbacks(self, *parts):
        """The callbacks every run adds last: TensorBoard's, with
        `--tensorboard DIR`, in DIR/parts."""
        if getattr(self.args, "tensorboard", None) is None:
            return []
        return tensorboard(self.args, *parts)

    def run_engine(self, bench, key, folder=None, after_eval=None):
        """Trains the seed-batched engine's `bench` (a `StaticBenchmark`)
        for `args.iterations`, evaluating every `args.eval_every`: resumed
        from and checkpointed in its folder (`folder`, default `key`; `""`:
        the checkpoint folder itself), with
        a progress line, TensorBoard's scalars with `--tensorboard`, and its
        speed kept under `key` for the record (`ms_per_run_iteration`).
        Returns `bench.run`'s result."""
        from keras_nalu.training import Progress

        folder = str(key) if folder is None else folder
        log = self.callbacks(folder)
        iterations = self.args.iterations
        result = bench.run(
            iterations,
            eval_every=self.args.eval_every,
            checkpoint=self.checkpoint(folder),
            progress=Progress(iterations, unit="iteration", label=f"  {folder or key}"),
            on_eval=(lambda e: log[0].write(e["iteration"], bench.scalars(e)))
            if log
            else None,
            after_eval=after_eval,
        )
        if result["resumed_at"] is not None:
            print(f"  resumed from its checkpoint at iteration {result['resumed_at']}")
        self.speed[key] = result["ms_per_run_iteration"]
        print(
            f"  {result['seconds']:.0f} s of training, "
            f"{result['ms_per_run_iteration']:.4f} ms per run-iteration",
            flush=True,
        )
        return result

    def fit(self, *parts, what=None, continued_by=None, per_epoch=1, **kwargs):
        """`keras_nalu.training.fit(**kwargs)` for the run named by `parts`:
        on the session's strategy, checkpointed in its folder, its resume or
        divergence reported (`what` names it, default the parts), and a kept
        checkpoint holding more than asked an error on `continued_by` (e.g.
        "--steps", `per_epoch` of them an epoch)."""
        from keras_nalu.training import fit

        folder = self.checkpoint(*parts)
        with runs.exits_on_longer_checkpoint(
            continued_by or "--epochs", folder, per_epoch
        ):
            result = fit(strategy=self.strategy, checkpoint_dir=folder, **kwargs)
        runs.report(result, what or ", ".join(map(str, parts)))
        return result

    def fit_seed(
        self,
        *parts,
        seed,
        model_fn,
        x,
        y,
        what=None,
        optimizer_fn=None,
        config=None,
        callbacks=(),
        steps_per_execution=16,
    ):
        """One seed of a small model trained on `(x, y)` as a user writes it:
        `keras.utils.set_random_seed(seed)`, `model.fit` on the squared error
        for `args.epochs` epochs of batches of `args.batch_size` in a seeded
        order, Adam at `args.learning_rate` (or `optimizer_fn()`), silently;
        checkpointed as `fit` (its folder named by `parts` and the seed, its
        configuration `config` with the seed and the arguments that change
        the run). Returns `fit`'s result."""
        import keras

        from nalu_research.tasks import batches

        args = self.args
        keras.utils.set_random_seed(seed)
        changing = ("examples", "batch_size", "learning_rate", "backend")
        return self.fit(
            *parts,
            seed,
            what=what or " ".join(map(str, (*parts, "seed", seed))),
            model_fn=model_fn,
            data_fn=batches.shuffled_epochs(x, y, args.batch_size, seed),
            loss="mse",
            optimizer_fn=optimizer_fn
            or (lambda: keras.optimizers.Adam(args.learning_rate)),
            epochs=args.epochs,
            config={
                **(config or {}),
                "seed": seed,
                **{k: getattr(args, k) for k in changing if hasattr(args, k)},
            },
            steps_per_execution=runs.steps_per_execution(steps_per_execution),
            callbacks=list(callbacks),
            verbose=0,
        )


class Experiment:
    """The base class of an experiment: the shared workflow (`main`), the
    parts an experiment overrides (see the module's docstring).

    Class attributes:
        name: The experiment's name: its key in
            `nalu_research.backends.DEFAULTS`, its checkpoint folder
            (results/checkpoints/NAME) and record's name. Default: the
            name of the module that defines it (`experiments/NAME.py`).
        arguments: The shared arguments it takes, `{name: default}` (names
            of `nalu_research.arguments.SHARED`; a default may be a
            `nalu_research.arguments.Shared` with its own help).
        record_path: Default of `--json` (`--png` beside it), or None for
            an experiment that writes no record; `""`: a record only when
            `--json` is given. Fields in braces are arguments, filled in
            after parsing (`"results/x_{task}.json"`); so in `export_path`.
        checkpoints: Whether it trains with checkpoints (the group of
            `nalu_research.arguments.add_training_arguments`).
        checkpoint_every: Default of `--checkpoint-every` (steps an epoch),
            for an experiment trained in steps; None: no such option.
        continued_by: The option that, given more, continues a kept run.
        export_path: Default of `--export-dir`, or None: no export.
        run_unit: What one run is called on the progress line.
        replays: The help of `--from-json FILE...`, or None: no replay. With
            it, `main` trains nothing: it prints the table (`report`) and
            draws the plot of the rows `replayed` gives from the files.
    """

    name: ClassVar[str] = ""
    arguments: ClassVar[dict[str, Any]] = {}
    record_path: ClassVar[str | None] = None
    checkpoints: ClassVar[bool] = False
    checkpoint_every: ClassVar[int | None] = None
    continued_by: ClassVar[str | None] = None
    export_path: ClassVar[str | None] = None
    run_unit: ClassVar[str] = "run"
    replays: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "name" not in vars(cls):  # its module's: experiments/NAME.py
            cls.name = cls.__module__.rpartition(".")[2]

    # ---- The parts an experiment supplies. ----

    def add_arguments(self, parser):
        """Adds the experiment's own arguments to `parser`."""

    def check_arguments(self, args, parser):
        """Checks what one argument's type cannot (e.g. two that exclude
        each other), calling `parser.error`."""

    def prepare(self, args, session):
        """Makes the task and data the runs share (kept on `self`) and
        prints what the runs are; called once, after the strategy."""

    def runs(self, args):
        """The runs, in order: each a tuple that names one (e.g. `(model,
        seed)`), passed to `train`. Default: one run, `()`."""
        return [()]

    def train(self, args, run, session):
        """Trains the run `run` and returns its row (a dict of JSON-able
        figures) or a list of rows (an engine that trains several seeds
        at once)."""
        raise NotImplementedError(f"{type(self).__name__} does not train")

    def progress(self, row):
        """What the progress line after a run shows of its last row."""
        return {}

    def run_name(self, run, row):
        """How the progress line after the run `run` names it (its last row
        `row`), e.g. "NAC" or "NAC, diverged"."""
        return ", ".join(str(part) for part in run) if run else None

    def report(self, args, rows):
        """Prints the results of all the runs (the table)."""

    def record(self, args, rows):
        """What the record adds to `record_of`'s fields (e.g. the paper's
        table beside ours); its keys win."""
        return {}

    @classmethod
    def plots(cls):
        """Whether the experiment draws a plot: it overrides `plot` (and then
        takes `--png`, which needs matplotlib)."""
        return cls.plot is not Experiment.plot

    def plot(self, args, rows, plt):
        """The figure of the results (a matplotlib figure), or None."""
        return None

    def exports(self, args, rows):
        """The models to export and serve (`nalu_research.serving.Export`)."""
        return []

    def served(self, args, served):
        """Prints what `export_and_serve` served (`{name: {"path",
        "served"}}`); returns what the record keeps of it."""
        return served

    def finish(self, args, rows):
        """Last words after the files are written (e.g. a hint)."""

    def replayed(self, args, records):
        """The rows of the saved `records` (`--from-json`, read; an
        experiment with `replays`), and what `report` needs of them kept on
        `self`. Default: their runs, one after the other."""
        return [row for record in records for row in record.get("runs", [])]

    def failed(self, args, rows):
        """Whether the runs found a failure: the script then exits with
        status 1 (after writing its files)."""
        return False

    def elapsed(self):
        """Seconds since `main` parsed the arguments: what a part reports as
        the script's time so far (e.g. "Trained in 12 s." in `report`)."""
        return time.perf_counter() - self.started

    # ---- The workflow. ----

    def parser(self):
        """The argument parser: the experiment's description, its own
        arguments, then the shared groups it declares."""
        doc = type(self).__doc__ or sys.modules[type(self).__module__].__doc__ or ""
        parser = argparse.ArgumentParser(
            description=doc.split("\n\n")[0],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self.add_arguments(parser)
        shared.add_shared(parser, self.arguments)
        if self.replays is not None:
            parser.add_argument(
                "--from-json",
                type=input_file,
                nargs="+",
                metavar="FILE",
                help=self.replays,
            )
        if self.record_path is not None:
            later = not self.record_path or "{" in self.record_path
            add_output_arguments(
                parser,
                None if later else self.record_path,
                shown_default=self.record_path or "none: no record",
                plot=self.plots(),
            )
        if self.record_path is not None or self.export_path is not None:
            parser.add_argument(
                "--keep-diverged",
                action="store_true",
                help="a run whose figures hold NaN still writes its record in "
                "place and exports (a diverged model can be the finding, e.g. "
                "the paper's NALU on MNIST sums); without it such a run writes "
                "NAME.diverged.json, exports nothing and exits with status 1",
            )
        if self.export_path is not None:
            parser.add_argument(
                "--export-dir",
                type=shared.SHARED["export_dir"]["type"],
                default=None if "{" in self.export_path else self.export_path,
                help=f"where the SavedModels go (default {self.export_path})",
            )
            parser.add_argument(
                "--no-export", action="store_true", help="export nothing"
            )
        if self.checkpoints:
            shared.add_training_arguments(
                parser,
                self.name,
                checkpoint_every=self.checkpoint_every,
                continued_by=self.continued_by,
            )
        shared.add_backend_argument(parser, self.name)
        return parser

    def parse_args(self, argv=None):
        """The checked arguments of `argv` (default `sys.argv[1:]`)."""
        parser = self.parser()
        args = parser.parse_args(argv)
        if "keras" not in sys.modules:  # imported from now on, on its backend
            os.environ["KERAS_BACKEND"] = args.backend
            if args.backend == "tensorflow":  # its start-up lines left out
                import_tensorflow_quietly()
        args.keep_diverged = getattr(args, "keep_diverged", False)
        if self.replays is not None and args.from_json:  # read, then checked
            args.records = [read_record(path, parser) for path in args.from_json]
        self.check_arguments(args, parser)
        if self.record_path and args.json is None:  # a default naming arguments
            args.json = Path(self.record_path.format(**vars(args)))
        if self.export_path is not None and args.export_dir is None:
            args.export_dir = self.export_path.format(**vars(args))
        if self.plots() and getattr(args, "json", None) is not None:
            args.png = png_path(args)
        return args

    def main(self, argv=None):
        """Runs the experiment on the command line `argv`. Keras (and
        TensorFlow, quietly, on its backend) is imported once argparse has
        parsed (`parse_args`), so that `--help` and a rejected value answer
        at once; `check_arguments` may import it."""
        args = self.parse_args(argv)
        started = self.started = time.perf_counter()
        session = self.session = Session(args)
        if self.replays is not None and args.from_json:
            return self.replay(args)
        from keras_nalu.training import Progress

        if self.checkpoints:
            session.strategy = runs.create_strategy(args)
            session.checkpoints = runs.Checkpoints(args, session.strategy)
        self.prepare(args, session)
        planned = list(self.runs(args))
        progress = Progress(len(planned), done=0, unit=self.run_unit)
        rows = []
        for done, run in enumerate(planned, 1):
            row = self.train(args, run, session)
            rows.extend(row if isinstance(row, list) else [row])
            if len(planned) > 1 or run:  # a lone run `()` has no line
                progress.update(
                    done, self.progress(rows[-1]), what=self.run_name(run, rows[-1])
                )
        self.report(args, rows)
        seconds = time.perf_counter() - started
        diverged = [] if args.keep_diverged else nan_places(rows)
        if diverged:
            print(
                f"{self.name}: the run diverged: NaN in "
                f"{', '.join(diverged[:5])}{', ...' if len(diverged) > 5 else ''}"
                " (--keep-diverged: write the record in place all the same)",
                file=sys.stderr,
            )
        if session.chief:
            self.write(args, rows, seconds, diverged=bool(diverged))
        if session.checkpoints is not None and not diverged:
            session.checkpoints.remove()  # done: no longer needed
        self.finish(args, rows)
        return 1 if diverged or self.failed(args, rows) else 0

    def replay(self, args):
        """`--from-json`: the table and plot of the saved records' rows
        (`replayed`); trains nothing, writes no record."""
        rows = self.replayed(args, args.records)
        self.report(args, rows)
        if self.plots() and getattr(args, "png", None) is not None:
            figure = self.plot(args, rows, pyplot())
            if figure is not None:
                save_png(figure, args.png)
                print(f"Wrote {args.png}.")
        self.finish(args, rows)
        return 1 if self.failed(args, rows) else 0

    def write(self, args, rows, seconds, diverged=False):
        """The chief's files: the record and plot, then the exports.

        A run that `diverged` exports nothing and writes its record beside
        the record path (`NAME.diverged.json`), never over an earlier one.
        """
        served = None
        exports = (
            self.exports(args, rows)
            if self.export_path is not None and not args.no_export and not diverged
            else []
        )
        if diverged and getattr(args, "json", None) is not None:
            args.json = args.json.with_name(f"{args.json.stem}.diverged.json")
            args.png = None
        if exports and can_export(f"the {self.name} models"):
            served = self.served(args, export_and_serve(exports, args.export_dir))
        if getattr(args, "json", None) is None:
            return  # no record (none, or not asked for)
        fields = self.record(args, rows)
        if self.session.speed:  # the engine's runs
            fields = {
                "ms_per_run_iteration": self.session.speed,
                "wall_seconds": self.elapsed(),
                **fields,
            }
        if served is not None:
            fields.setdefault("served", served)
        save_json(record_of(self, args, rows, seconds, fields), args.json)
        if self.plots() and args.png is not None:
            figure = self.plot(args, rows, pyplot())
            if figure is not None:
                save_png(figure, args.png)
                print(f"Wrote {args.png} and {args.json}.")
                return
        print(f"Wrote {args.json}.")


def read_record(path, parser):
    """The record (a JSON object with its `runs`) at `path`, or a parser
    error naming the file and what is wrong with it."""
    try:
        found = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        parser.error(f"--from-json: cannot read {path} as JSON ({error})")
    if not isinstance(found, dict):
        parser.error(f"--from-json: {path} is not a record (a JSON object)")
    return found


def nan_places(rows, limit=20):
    """Where `rows` hold NaN, as `run 3: extrapolation_mse` (at most
    `limit`): a diverged run's figures."""
    places = []

    def visit(value, where):
        if len(places) >= limit:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                visit(item, f"{where}.{key}" if where else str(key))
        elif isinstance(value, (list, tuple)):
            for item in value:
                visit(item, where)
        elif isinstance(value, np.ndarray) and value.dtype.kind in "fc":
            if np.isnan(value).any():
                places.append(where)
        elif isinstance(value, (float, np.floating)) and math.isnan(value):
            places.append(where)

    for index, row in enumerate(rows, 1):
        found = len(places)
        visit(row, "")
        places[found:] = [
            f"run {index}: {p}" if p else f"run {index}" for p in places[found:]
        ]
    return places


def record_of(experiment, args, rows, seconds, fields=None):
    """The record of a script run: what re-runs it and what it measured.

    `command` (the example and its arguments), `commit` (git's, with
    `+changes` when the tree had uncommitted changes), `backend`, `versions`
    (Python, the platform and `VERSIONED` packages), `cpu` (the processor
    and its instruction-set flags: float results can differ between CPUs
    with different vector units), `arguments` (every
    parsed argument), `seeds` and the budget (the arguments of those
    names), `runs` (every row), `seconds` (the wall time) and `finished`
    (UTC), then `fields`, which win.
    """
    import keras

    arguments = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    budget = ("steps", "epochs", "iterations", "updates", "batch_size")
    seeds = ("seed", "seeds", "first_seed", "runs")
    return {
        "experiment": experiment.name,
        "command": [f"examples/{experiment.name}.py", *sys.argv[1:]],
        "commit": commit(),
        "backend": keras.backend.backend(),
        "versions": versions(),
        "cpu": cpu(),
        "arguments": arguments,
        "seeds": {k: arguments[k] for k in seeds if k in arguments},
        "budget": {k: arguments[k] for k in budget if k in arguments},
        "runs": rows,
        "seconds": seconds,
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **(fields or {}),
    }


def commit():
    """The git commit of this checkout (`+changes` when the tree differs
    from it), or None outside a git checkout (or where git is not installed,
    e.g. the GPU machine of `make gpu-check`)."""
    root = Path(__file__).resolve().parents[1]

    def git(*command):
        return subprocess.run(
            ["git", *command], cwd=root, capture_output=True, text=True, check=False
        )

    try:
        head = git("rev-parse", "HEAD")
    except OSError:  # no git
        return None
    if head.returncode != 0:
        return None
    changed = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    return head.stdout.strip() + ("+changes" if changed else "")


def cpu():
    """`{"model", "cores", "TF_ENABLE_ONEDNN_OPTS", "flags"}` of this
    machine's processor (from /proc/cpuinfo; `platform.processor()` alone
    where there is none) and TensorFlow's oneDNN switch as the run had it."""
    found = {
        "model": platform.processor(),
        "cores": os.cpu_count(),
        # TensorFlow's oneDNN kernels (on by default on some CPUs): with them
        # off, the same seeds of number words train to other figures.
        "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "unset"),
        "flags": [],
    }
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return found
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and not found["flags"]:
            found["model"] = value.strip()
        if key.strip() == "flags":
            found["flags"] = sorted(value.split())
            break
    return found


def versions():
    """`{package: version}` of Python, the machine and `VERSIONED`."""
    found = {"python": platform.python_version(), "machine": platform.machine()}
    for package in VERSIONED:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found
