"""Benchmark: the static arithmetic task over many seeds, measured two ways.

Every (operation, seed) is a run of its own (the seed fixes the slices, the
initial weights and the batches), and all runs of one model train in a single
compiled program (`nalu_research.seed_batched`). The protocol is Madsen &
Johansen's (2020): x in R^100, slices of 25 overlapping in 12, train and
interpolate on U[1, 2], extrapolate on U[2, 6], fresh batches of 128, Adam lr
1e-3. For each run the evaluation with the lowest interpolation MSE is kept.

Reported: the paper's scale (test MSE relative to the run's own random
initialization, x100; median over seeds, the paper's Table 1 beside it), the
success rate by the strict criterion (extrapolation MSE below that of a solution
whose weights are off by 1e-5, simulated) with its Wilson 95% interval, the
median iteration at which extrapolation was first solved, and the training
speed in ms per run-iteration.

Each model's runs are checkpointed after every evaluation (`--checkpoint-dir`);
run the same command again after an interruption and it resumes, with the
results of an uninterrupted run. The runs are independent, so
`--strategy multi-worker` splits the seeds over the hosts of `TF_CONFIG` (seed
`s` trains on worker `s mod n`) and gathers their results on every worker with
a collective, without a shared filesystem; the chief writes them. On one host
the runs of a model are one batched graph that already uses every core, so
`--strategy mirrored` trains them as `default` does.

    python examples/units_benchmark.py --quick
    python examples/units_benchmark.py --seeds 25 --iterations 50000
    python examples/units_benchmark.py --from-json a.json b.json  # merged

A target is one of the paper's operations (`--operations`) or any expression
of the inputs a and b (`--target "2*a - b"`, parsed by SymPy), and a model
may use a unit of the user's own: `--import my_units` imports the module
`my_units` (from the current folder or `sys.path`), so that a unit it
registers as `"my_units>Power"` is named in a model, `"nau-my_units>Power"`:

    python examples/units_benchmark.py --import my_units \
        --models nau 'nau-my_units>Power' --target "2*a - b" --target "a**2*b"
"""

import argparse
import importlib
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

from nalu_research.arguments import (
    Shared,
    argument_type,
    learning_rate,
    positive_float,
)
from nalu_research.engine_model import MODELS
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.runs import gather_json, worker_index
from nalu_research.tasks import (
    MADSEN_JOHANSEN_SOLVED_BY,
    PAPER_TABLE_1,
    StaticArithmetic,
    wilson_bars,
)
from nalu_research.tasks.metrics import rate, solved_at_cell, solved_by
from nalu_research.tasks.static_arithmetic import TARGETS, parse_target

QUICK = {
    "operations": list(TARGETS),
    "models": ["linear", "relu6", "nac", "nalu"],
    "seeds": 5,
    "iterations": 20_000,
}
NAMES = {
    "linear": "Linear",
    "relu6": "ReLU6",
    "nac": "NAC",
    "nalu": "NALU",
    "nau": "NAU",
    "nmu": "NAU-NMU",
    "nmru": "NAU-NMRU",
    "realnpu": "NAU-RealNPU",
    "inalu": "iNALU",
}
# --signed: inputs of both signs, extrapolation on both sides of the training range.
SIGNED = {
    "interpolation_range": (-2.0, 2.0),
    "extrapolation_range": ((-6.0, -2.0), (2.0, 6.0)),
}
# --two-inputs: the simple task of Heim et al.'s NPU paper, a = x_0 and b = x_1
# (slices of one input, no overlap), trained on their U[0.1, 2] and
# extrapolated to U[2, 4]; with --signed on U[-2, 2] and U[-4, -2] u U[2, 4].
TWO_INPUTS = {
    "input_size": 2,
    "subset_ratio": 0.5,
    "overlap_ratio": 0.0,
    "interpolation_range": (0.1, 2.0),
    "extrapolation_range": (2.0, 4.0),
}
TWO_INPUTS_SIGNED = {
    **TWO_INPUTS,
    "interpolation_range": (-2.0, 2.0),
    "extrapolation_range": ((-4.0, -2.0), (2.0, 4.0)),
}


def task_arguments(args):
    """The `StaticArithmetic` arguments of `--signed` and `--two-inputs`."""
    if args.two_inputs:
        return TWO_INPUTS_SIGNED if args.signed else TWO_INPUTS
    return SIGNED if args.signed else {}


def display_name(model):
    """The model's name in tables: `NAMES`, or its units' class names (its
    name, for a unit of a module not imported: `--from-json`)."""
    from nalu_research.engine_model import unit_class, unit_kinds

    if model in NAMES:
        return NAMES[model]
    try:
        kinds = unit_kinds(model)
    except ValueError:
        return model
    return model if kinds is None else "-".join(unit_class(k).__name__ for k in kinds)


def symbol(operation):
    """How tables write a target: "a*b", or its expression ("2*a - b")."""
    return parse_target(operation).symbol


def _target(name, value):
    return parse_target(value, name).name


# `--target`: an expression of a and b (or a name of TARGETS), as its name.
target_name = argument_type(_target, str)


def _nmu_center(text):
    """`--nmu-center`: a number in [0.25, 0.75] (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.25 <= value <= 0.75:
        raise argparse.ArgumentTypeError(
            f"expected a number in [0.25, 0.75], got {text!r}"
        )
    return value


class _LayerOption(argparse.Action):
    """`--layer-option KIND ARGUMENT VALUE`, VALUE read as JSON as it is
    parsed (the kind and argument are checked once the modules of `--import`
    are imported: `check_models`). Gathered into `args.layer_options`,
    `{kind: {argument: value}}`; the triples stay in `args.layer_option`."""

    def __call__(self, parser, namespace, values, option_string=None):
        kind, argument, value = values
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parser.error(
                f"--layer-option {kind} {argument}: VALUE must be JSON (true, "
                f'1e-3, "name"), got {value!r}'
            )
        options = dict(namespace.layer_options or {})
        options[kind] = {**options.get(kind, {}), argument: parsed}
        namespace.layer_options = options
        namespace.layer_option = [*(namespace.layer_option or []), list(values)]


def import_modules(parser, modules):
    """Imports each module of `--import`, from the current folder first (as
    `python -c` would) or `sys.path`, so that the units it registers with
    Keras can be named; a module that fails to import is an argument error."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for module in modules or ():
        try:
            importlib.import_module(module)
        except Exception as error:  # what importing the user's module raised
            parser.error(
                f"argument --import: could not import {module!r} "
                f"({type(error).__name__}: {error}); expected a module in the "
                f"current folder ({os.getcwd()}) or on sys.path"
            )


def check_models(parser, args):
    """Checks `--models` and `--layer-option` (after `--import`): each model
    one of the engine's, each layer option's kind a unit, and each layer
    built with its options (the layer checks its arguments)."""
    from nalu_research.engine_model import configured_unit, unit_class, unit_kinds

    for model in args.models or ():
        try:
            unit_kinds(model)
        except ValueError as error:
            parser.error(f"argument --models: {error}")
    for kind in args.layer_options or {}:
        if unit_class(kind) is None:
            from nalu_research.engine_model import LAYERS  # imports Keras

            parser.error(
                f"--layer-option: unknown layer kind {kind!r}, expected one of "
                f"{', '.join(LAYERS)} or a registered 'package>Name' (a unit "
                "of your own: --import its module)"
            )
        try:
            configured_unit(kind, 1, args.layer_options)
        except (TypeError, ValueError) as error:
            parser.error(f"--layer-option: {error}")


def load_saved(records, paths, parser):
    """The saved `records` (read from `paths`) merged into one result
    (models side by side)."""
    merged = None
    for saved, path in zip(records, paths, strict=True):
        saved["arguments"].setdefault("signed", False)
        saved["arguments"].setdefault("two_inputs", False)
        saved["arguments"].setdefault("first_seed", 0)
        if merged is None:
            merged = saved
            continue
        ours, theirs = merged["arguments"], saved["arguments"]
        for name in ("seeds", "first_seed", "iterations", "signed", "two_inputs"):
            if ours[name] != theirs[name]:
                parser.error(
                    f"--from-json files differ in {name}: {ours[name]} in "
                    f"{paths[0]}, {theirs[name]} in {path}"
                )
        ours["models"] += [m for m in theirs["models"] if m not in ours["models"]]
        ours["operations"] += [
            op for op in theirs["operations"] if op not in ours["operations"]
        ]
        merged["runs"] += saved["runs"]
        merged["ms_per_run_iteration"].update(saved["ms_per_run_iteration"])
        merged["wall_seconds"] += saved["wall_seconds"]
    return merged


def cell(value):
    return "nan" if value is None or not np.isfinite(value) else f"{value:.3g}"


def tables(results, args):
    """The markdown tables, as a list of lines."""
    by = {}
    for r in results:
        by.setdefault((r["operation"], r["model"]), []).append(r)

    def table(title, cell_of):
        rows = [
            [symbol(op), *(cell_of(by[op, m], op, m) for m in args.models)]
            for op in args.operations
        ]
        header = ["op", *(display_name(m) for m in args.models)]
        return ["", title, "", *markdown_table(header, rows)]

    def paper_scale(split, index):
        def cell_of(runs, op, model):
            paper = PAPER_TABLE_1.get(model, {}).get(op)
            paper = None if args.signed or args.two_inputs else paper
            ours = cell(np.median([r[f"{split}_paper"] for r in runs]))
            return ours + (f" ({paper[index]})" if paper else "")

        return cell_of

    lines = []
    for index, split in enumerate(("interpolation", "extrapolation")):
        lines += table(
            f"Median {split} error on the paper's scale (paper's Table 1 in "
            "brackets; 0 is exact, 100 is the random initialization):",
            paper_scale(split, index),
        )
    lines += table(
        "Success rate by the strict criterion, with its Wilson 95% interval:",
        lambda runs, op, model: rate(runs),
    )
    lines += table(
        "Median iteration at which extrapolation was first solved (among the "
        "runs that solved it), and the median sparsity error of the first "
        "layer (the largest distance of a weight to the nearest of its unit's "
        "exact values; for {-1, 0, 1}, max(min(|W|, |1 - |W||))):",
        lambda runs, op, model: solved_at_cell(runs),
    )
    marks = sorted({n for n in SOLVED_BY if n <= args.iterations} | {args.iterations})
    lines += [
        "",
        "Fraction of seeds solved by iteration N (extrapolation first "
        "below the threshold; Madsen & Johansen's published fraction of "
        "100 seeds in brackets):",
        "",
    ]
    rows = []
    for model in args.models:
        for op in args.operations:
            runs = by[op, model]
            theirs = MADSEN_JOHANSEN_SOLVED_BY.get(model, {}).get(op, {})
            cells = [
                f"{solved_by(runs, n):.2f}"
                + (f" ({theirs[n]:.2f})" if n in theirs else "")
                for n in marks
            ]
            rows.append([f"{display_name(model)}, {symbol(op)}", *cells])
    return lines + markdown_table(["model, op", *(f"{n:,}" for n in marks)], rows)


# The iterations at which the solved-by table reports.
SOLVED_BY = (10_000, 50_000, 200_000, 1_000_000, 2_000_000, 5_000_000)


def _sum_of(inputs):
    """`x3` or `x53 + ... + x77`: the inputs of a slice."""
    if inputs.stop - inputs.start == 1:
        return f"x{inputs.start}"
    return f"x{inputs.start} + ... + x{inputs.stop - 1}"


def formula_lines(results, args):
    """Per model and operation: how many runs snapped to exact weights that
    were verified, and the first such run's formula beside its task."""
    lines = []
    for model in args.models:
        for op in args.operations:
            runs = [r for r in results if r["model"] == model and r["operation"] == op]
            exact = [r for r in runs if r.get("formula")]
            if not runs or "formula" not in runs[0]:
                continue
            name = f"{display_name(model)}, {symbol(op)}"
            line = f"- {name}: {len(exact)}/{len(runs)} snapped"
            if exact:
                seed = exact[0]["seed"]
                task = StaticArithmetic(op, seed=seed, **task_arguments(args))
                line += (
                    f"; seed {exact[0]['seed']} (a = {_sum_of(task.a_slice)}, "
                    f"b = {_sum_of(task.b_slice)}): `{exact[0]['formula']}`"
                )
            lines.append(line)
    if lines:
        lines = [
            "",
            "Runs whose weights snapped to exact values verified on "
            "held-out and extrapolation data (keras_nalu.snap_weights), "
            "and a formula (keras_nalu.formulas):",
            "",
            *lines,
        ]
    return lines


def plot(results, args, plt):
    """The success rates per model and target, and the fraction of seeds solved
    by each iteration (a figure)."""
    fig, (ax, curve) = plt.subplots(
        1, 2, figsize=(11, 3.5), gridspec_kw={"width_ratios": [3, 2]}
    )
    width = 0.8 / len(args.models)
    for j, m in enumerate(args.models):
        rates, errors = wilson_bars(
            [r for r in results if r["model"] == m and r["operation"] == op]
            for op in args.operations
        )
        x = np.arange(len(args.operations)) + j * width
        ax.bar(x, rates, width, yerr=errors, capsize=2, label=display_name(m))
    ax.set_xticks(np.arange(len(args.operations)) + width * (len(args.models) - 1) / 2)
    ax.set_xticklabels([symbol(op) for op in args.operations])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate")
    ax.set_title(
        f"Static task{' (signed inputs)' if args.signed else ''}"
        f"{', two inputs' if args.two_inputs else ''}, {args.seeds} seeds"
        f"{f' from {args.first_seed}' if args.first_seed else ''}, "
        f"{args.iterations} iterations (strict criterion, Wilson 95%)",
        fontsize=9,
    )
    ax.legend(fontsize=8, ncol=len(args.models))
    # Fraction of seeds solved by each iteration, ours as lines, Madsen &
    # Johansen's published points as markers of the same color.
    steps = np.unique(
        [0, args.iterations] + [r["solved_at"] for r in results if r["solved_at"]]
    )
    for m in args.models:
        for op in args.operations:
            runs = [r for r in results if r["model"] == m and r["operation"] == op]
            if not any(r["solved_at"] is not None for r in runs):
                continue
            label = f"{display_name(m)} {symbol(op)}"
            (line,) = curve.step(
                steps, [solved_by(runs, n) for n in steps], where="post", label=label
            )
            theirs = MADSEN_JOHANSEN_SOLVED_BY.get(m, {}).get(op, {})
            shown = {n: v for n, v in theirs.items() if n <= args.iterations}
            if shown:
                curve.plot(
                    list(shown),
                    list(shown.values()),
                    "o",
                    color=line.get_color(),
                    label=f"{label}, M&J",
                )
    curve.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
    curve.set_xlabel("iteration")
    curve.set_ylabel("fraction of seeds solved")
    curve.set_ylim(-0.02, 1.05)
    curve.set_title("Solved by iteration", fontsize=9)
    if curve.get_legend_handles_labels()[0]:
        curve.legend(fontsize=7)
    fig.tight_layout()
    return fig


class UnitsBenchmark(Experiment):
    # Its --help description is the module docstring's first paragraph.

    replays = (
        "print the tables and plot of saved runs instead of training "
        "(several files are merged: e.g. one per model)"
    )

    arguments = {
        "models": Shared(
            None,
            help=f"of {', '.join(MODELS)}, or 'nau-npu', 'single-npu', ... of any "
            "units, a user's as 'package>Name' ('nau-my_units>Power', with "
            "--import)",
        ),
        "seeds": Shared(
            None,
            help="seeds FIRST_SEED .. FIRST_SEED + N - 1 (default 25; 5 with --quick)",
        ),
        "first_seed": 0,
        "iterations": Shared(None, help="default 50,000; 20,000 with --quick"),
        "eval_every": 1000,
        "eval_size": 10_000,
        "learning_rate": Shared(1e-3, help="Adam's (default %(default)s)"),
        "learning_rate_drop": None,
        "clipnorm": Shared(
            None,
            help="bound each run's gradient norm, as PyTorch's clip_grad_norm_ "
            "(default: none)",
        ),
        "regularization": Shared(
            None, help="the units' penalty schedule (default: the layers' defaults)"
        ),
    }
    # `--json`'s default, with the suffixes of --signed and --two-inputs
    # (`check_arguments` sets it).
    record_path = "results/units_benchmark{_signed}{_two_inputs}.json"
    checkpoints = True
    run_unit = "model"
    seconds = None  # the saved runs' wall time (--from-json)

    def add_arguments(self, parser):
        parser.add_argument(
            "--operations",
            nargs="+",
            choices=list(TARGETS),
            help="the paper's operations (default: all, or none with --target)",
        )
        parser.add_argument(
            "--target",
            action="append",
            type=target_name,
            metavar="EXPRESSION",
            help="a target written as an expression of the inputs a and b, e.g. "
            "'2*a - b' (SymPy; functions sqrt, exp, log, abs, sin, cos, tanh); "
            "repeatable, after --operations' ones",
        )
        parser.add_argument(
            "--import",
            action="append",
            dest="imports",
            metavar="MODULE",
            help="import MODULE first (from the current folder or sys.path), so "
            "that the units it registers can be named in --models and "
            "--layer-option; repeatable",
        )
        parser.add_argument(
            "--quick",
            action="store_true",
            help="all operations; Linear, ReLU6, NAC, NALU; 5 seeds; 20,000 iterations",
        )
        parser.add_argument(
            "--layer-option",
            nargs=3,
            action=_LayerOption,
            metavar=("KIND", "ARGUMENT", "VALUE"),
            help="a constructor argument of the layers of one kind (nau, nmu, "
            "nmru, ...), VALUE as JSON; repeatable, e.g. --layer-option nau "
            "centered_gradient true",
        )
        parser.add_argument(
            "--adam-epsilon",
            type=positive_float,
            help="Adam's epsilon (default: Keras's, 1e-7; PyTorch's is 1e-8)",
        )
        parser.add_argument(
            "--nmu-center",
            type=_nmu_center,
            help="center of the NMU/NMRU initial weights (default: the layers' "
            "initializer, M&J's 0.5)",
        )
        parser.add_argument(
            "--signed",
            action="store_true",
            help="train on U[-2, 2], extrapolate on U[-6, -2] u U[2, 6]",
        )
        parser.add_argument(
            "--two-inputs",
            action="store_true",
            help="Heim et al.'s simple task: a = x_0, b = x_1, train on U[0.1, "
            "2], extrapolate on U[2, 4] (with --signed: U[-2, 2], U[-4, -2] u "
            "U[2, 4])",
        )
        parser.set_defaults(layer_options=None)

    def check_arguments(self, args, parser):
        import_modules(parser, args.imports)
        check_models(parser, args)
        if args.target:
            args.operations = list(
                dict.fromkeys([*(args.operations or []), *args.target])
            )
        if args.from_json:
            saved = args.saved = load_saved(args.records, args.from_json, parser)
            for name in (
                "operations",
                "models",
                "seeds",
                "first_seed",
                "iterations",
                "signed",
                "two_inputs",
            ):
                setattr(args, name, saved["arguments"][name])
            args.png = args.png or Path("results/units_benchmark_from_json.png")
        defaults = QUICK if args.quick else {**QUICK, "seeds": 25, "iterations": 50_000}
        for name, value in defaults.items():
            if getattr(args, name) is None:
                setattr(args, name, value)
        if args.json is None:
            signed = "_signed" if args.signed else ""
            two = "_two_inputs" if args.two_inputs else ""
            args.json = Path(f"results/units_benchmark{signed}{two}.json")

    def prepare(self, args, session):
        self.folders = []
        self.worker, self.workers = worker_index(session.strategy)
        # This worker's share of the seeds.
        first, last = args.first_seed, args.first_seed + args.seeds
        self.seeds = range(first + self.worker, last, self.workers)
        if not self.seeds:
            sys.exit(
                f"--seeds {args.seeds} leaves worker {self.worker} of "
                f"{self.workers} no seed: expected at least {self.workers} seeds"
            )

    def runs(self, args):
        return [(model,) for model in args.models]

    def train(self, args, run, session):
        """All the runs of one model, every target x seed of this worker, in
        one program; returns every worker's runs of the model."""
        from nalu_research.recipe import Recipe
        from nalu_research.seed_batched import StaticBenchmark

        (model,) = run
        recipe = Recipe(
            learning_rate=learning_rate(args.learning_rate, args.learning_rate_drop),
            regularization=args.regularization or "default",
            nmu_center=args.nmu_center,
            clipnorm=args.clipnorm,
            adam_epsilon=args.adam_epsilon,
            layer_options=args.layer_options,
        )
        bench = StaticBenchmark(
            model,
            args.operations,
            self.seeds,
            recipe,
            eval_size=args.eval_size,
            **task_arguments(args),
        )
        workers = self.workers
        share = f" of {args.seeds}, worker {self.worker} of {workers}"
        print(
            f"{display_name(model)}: {len(bench.runs)} runs "
            f"({len(args.operations)} operations x {len(self.seeds)} seeds"
            + (share if workers > 1 else "")
            + f"), {args.iterations} iterations",
            flush=True,
        )
        # Each worker trains its own seeds, so each checkpoints its own share
        # (nothing is replicated for a chief to write for the others).
        part = f"-worker{self.worker}of{workers}" if workers > 1 else ""
        folder = model.replace(">", "_") + part  # a user's 'package>Name'
        self.folders.append(session.checkpoint(folder))
        result = session.run_engine(bench, model, folder)
        rows = bench.summarize(result["history"])
        for row, formula in zip(rows, bench.exact_formulas(), strict=True):
            row["formula"] = formula
        # Every worker's runs and speed (a collective: each worker calls it).
        shares = gather_json(
            {"runs": rows, "ms": result["ms_per_run_iteration"]}, session.strategy
        )
        session.speed[model] = float(np.mean([share["ms"] for share in shares]))
        order = {op: i for i, op in enumerate(args.operations)}
        self.last = sorted(
            (r for share in shares for r in share["runs"]),
            key=lambda r: (order[r["operation"]], r["seed"]),
        )
        return self.last

    def replayed(self, args, records):
        self.session.speed.update(args.saved["ms_per_run_iteration"])
        self.seconds = args.saved["wall_seconds"]
        return args.saved["runs"]

    def run_name(self, run, row):
        return display_name(run[0])

    def progress(self, row):
        solved = sum(r["success"] for r in self.last)
        return {"solved": f"{solved}/{len(self.last)} runs"}

    def report(self, args, rows):
        print("\n".join(tables(rows, args) + formula_lines(rows, args)))
        print(
            "\nms per run-iteration (batch 128, all runs of a model in one "
            "program): "
            + ", ".join(
                f"{display_name(m)} {v:.4f}" for m, v in self.session.speed.items()
            )
        )
        seconds = self.seconds if args.from_json else self.elapsed()
        print(f"Wall time: {seconds:.0f} s.")

    def plot(self, args, rows, plt):
        return plot(rows, args, plt)

    def finish(self, args, rows):
        """Another worker's checkpoints (the chief's skeleton removes its
        own): each worker wrote its own share."""
        from keras_nalu.training import remove_checkpoint

        if not self.session.chief and not args.keep_checkpoint:
            for folder in self.folders:
                remove_checkpoint(folder)
            root = Path(args.checkpoint_dir)
            if root.is_dir() and not any(root.iterdir()):
                root.rmdir()


def main(argv=None):
    return UnitsBenchmark().main(argv)


if __name__ == "__main__":
    main()
