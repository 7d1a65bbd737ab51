"""Mistry, Farrahi & Hare's benchmark: every unit, two inputs, nine ranges.

"A Primer for Neural Arithmetic Logic Modules" (JMLR 2022; their code,
bmistry4/nalm-benchmark, lfs_batch_jobs/single_layer_task/benchmarking/
single_layer_benchmark.sh): one module learns `a + b`, `a - b`, `a * b` or
`a / b` of its two inputs (`a = x[0]`, `b = x[1]`; `TWO_INPUTS_TASK`) on each
of the nine interpolation -> extrapolation ranges `MISTRY_RANGES`, 25 seeds,
50,000 iterations of batches of 128, evaluated every 1,000 on 10,000
examples per split. A run succeeds when its extrapolation MSE at the
evaluation with the lowest interpolation MSE is below their simulated
threshold (`nalu_research.tasks.mistry_threshold`) of epsilon 1e-5, and of
1e-4 beside it (their threshold generator's at its latest commit).

Each unit trains by the recipe their script gives it (`RECIPES`: learning
rate, penalty schedule, L1, gradient clipping, initializers; the package's
own recipes beside them), on every operation, range and seed at once: one
compiled program per unit (`nalu_research.seed_batched`, its `ranges`),
checkpointed after every evaluation (run the same command again after an
interruption and it resumes). The report is a table per operation, range x
unit, `k/N [Wilson 95%]` with the best unit of each range in bold, and a
heat map.

    python examples/mistry_benchmark.py                     # every unit, 900 runs each
    python examples/mistry_benchmark.py --units nau nmu --ranges 0 6 --seeds 2 \\
        --iterations 2000
    python examples/mistry_benchmark.py --paper-cells       # their cells, and ours

Beside the successes, a second table per operation gives, over the
successful runs alone as theirs does, the median first iteration solved
and the median sparsity error at the best step (theirs: the weights W of
the unit, `their_sparsity`).
"""

import numpy as np

from nalu_research.arguments import Shared, add_selection, positive_float
from nalu_research.experiment import Experiment
from nalu_research.experiments.mistry_benchmark.protocol import (
    InaluProtocol,
    their_sparsity,
)
from nalu_research.experiments.mistry_benchmark.recipes import (  # noqa: F401
    OPERATIONS,
    PAPER_OPS,
    RECIPES,
    nac_range,
)
from nalu_research.experiments.mistry_benchmark.tables import (  # noqa: F401
    _label,
    best_units,
    cell_runs,
    cells,
    plot,
    runs_of,
    successes,
    tables,
)
from nalu_research.tasks import mistry_threshold
from nalu_research.tasks.static_arithmetic import MISTRY_RANGES, TWO_INPUTS_TASK


def operations(key, args):
    """The operations the recipe `key` trains on: the arguments', with
    `--paper-cells` those of them in its `PAPER_OPS`."""
    if not args.paper_cells:
        return list(args.operations)
    return [op for op in args.operations if op in PAPER_OPS.get(key, ())]


def benchmark(key, args):
    """The `StaticBenchmark` of the recipe `key` on its `operations`, the
    arguments' ranges and seeds, judged at the first `--epsilon`."""
    from nalu_research.seed_batched import StaticBenchmark

    epsilon = args.epsilon[0]
    return StaticBenchmark(
        RECIPES[key].model,
        operations(key, args),
        range(args.first_seed, args.first_seed + args.seeds),
        RECIPES[key].recipe,
        eval_size=args.eval_size,
        ranges={index: MISTRY_RANGES[index] for index in args.ranges},
        threshold=lambda task: mistry_threshold(task, epsilon),
        **TWO_INPUTS_TASK,
    )


# `--ranges`: indices of `MISTRY_RANGES`.
RANGES = list(range(len(MISTRY_RANGES)))


class MistryBenchmark(Experiment):
    # Its --help description is the module docstring's first paragraph.

    arguments = {
        "seeds": Shared(25, help="seeds per range (default %(default)s)"),
        "first_seed": 0,
        "ranges": Shared(RANGES, choices=RANGES),
        "iterations": 50_000,
        "eval_every": 1000,
        "eval_size": 10_000,
    }
    record_path = "results/mistry_benchmark.json"
    checkpoints = True
    run_unit = "unit"

    def add_arguments(self, parser):
        add_selection(parser, "--units", RECIPES, "the units (recipes) trained")
        add_selection(parser, "--operations", OPERATIONS, "the operations")
        parser.add_argument(
            "--epsilon",
            type=positive_float,
            nargs="+",
            default=[1e-5, 1e-4],
            help="epsilons of the threshold, the first the one "
            "the table and plot show (default 1e-5 1e-4)",
        )
        parser.add_argument(
            "--paper-cells",
            action="store_true",
            help="train each unit only on the operations their figures run "
            "it on (their 23 unit x operation cells but G-NALU's: 19), our "
            "recipes on those of the unit they change; the NMRU on none",
        )

    def check_arguments(self, args, parser):
        for name in ("units", "operations", "ranges", "epsilon"):
            values = getattr(args, name)
            if len(set(values)) != len(values):
                parser.error(f"--{name} names a value twice: {values}")
        if any(e >= 1 for e in args.epsilon):
            parser.error(f"--epsilon takes numbers in (0, 1), got {args.epsilon}")

    def prepare(self, args, session):
        self.last = []
        for unit in args.units:
            print(f"{RECIPES[unit].name}: {RECIPES[unit].description}")

    def runs(self, args):
        return [(unit,) for unit in args.units if operations(unit, args)]

    def train(self, args, run, session):
        """Trains every operation, range and seed of the unit `run`; returns
        their cells (`cells`: a row per operation and range)."""
        (unit,) = run
        bench = benchmark(unit, args)
        print(f"{RECIPES[unit].name}: {len(bench.runs)} runs", flush=True)
        protocol = None
        if RECIPES[unit].inalu_protocol:
            protocol = InaluProtocol(args.iterations, args.eval_every)

        def after_eval(bench, history):
            # Theirs is logged in the forward pass of the evaluation's step:
            # of the weights evaluated, before any reinitialisation.
            history[-1]["their_sparsity"] = their_sparsity(bench)
            if protocol is not None:
                protocol(bench, history)

        result = session.run_engine(bench, unit, after_eval=after_eval)
        by_epsilon = {
            _label(epsilon): bench.summarize(
                result["history"],
                thresholds=[mistry_threshold(task, epsilon) for task in bench.tasks],
            )
            for epsilon in args.epsilon
        }
        reinitialized = np.zeros(len(bench.runs), int)
        sparsity = {}  # their sparsity error per evaluated iteration
        for entry in result["history"]:
            reinitialized[entry.get("reinitialized", [])] += 1
            sparsity[entry["iteration"]] = entry.get("their_sparsity")
        rows = []
        for i, run_row in enumerate(next(iter(by_epsilon.values()))):
            rows.append(
                {
                    "unit": unit,
                    "operation": run_row["operation"],
                    "range": run_row["range"],
                    "seed": run_row["seed"],
                    "success": {k: v[i]["success"] for k, v in by_epsilon.items()},
                    "solved_at": {k: v[i]["solved_at"] for k, v in by_epsilon.items()},
                    "threshold": {k: v[i]["threshold"] for k, v in by_epsilon.items()},
                    "iteration": run_row["iteration"],
                    "interpolation_mse": run_row["interpolation_mse"],
                    "extrapolation_mse": run_row["extrapolation_mse"],
                    # Theirs, at the best step (`iteration`).
                    "sparsity_error": None
                    if sparsity[run_row["iteration"]] is None
                    else sparsity[run_row["iteration"]][i],
                    "reinitializations": int(reinitialized[i]),
                }
            )
        self.last = rows
        return cells(rows)

    def run_name(self, run, row):
        return RECIPES[run[0]].name

    def progress(self, row):
        """The unit's runs solved at the first `--epsilon`."""
        wins = sum(next(iter(r["success"].values())) for r in self.last)
        return {"solved": f"{wins}/{len(self.last)}"}

    def report(self, args, rows):
        print("\n".join(tables(runs_of(rows), args)))
        print(f"Wall time: {self.elapsed():.0f} s.")

    def record(self, args, rows):
        return {
            "recipes": {u: RECIPES[u].to_json(operations(u, args)) for u in args.units},
            "ranges": {index: MISTRY_RANGES[index] for index in args.ranges},
        }

    def plot(self, args, rows, plt):
        return plot(runs_of(rows), args, plt)


def main(argv=None):
    return MistryBenchmark().main(argv)
