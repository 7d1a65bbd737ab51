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

from keras_nalu import INALU
from keras_nalu.training import Progress
from nalu_research.arguments import Shared, add_selection, positive_float
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.seed_batched import InaluProtocol, StaticBenchmark
from nalu_research.tasks import mistry_threshold, wilson_interval
from nalu_research.tasks.static_arithmetic import (
    MISTRY_RANGES,
    SYMBOLS,
    TWO_INPUTS_TASK,
    describe_range,
)

OPERATIONS = ("add", "sub", "mul", "div")
ADAM_EPSILON = 1e-8  # PyTorch's, their optimizer's
# Their sparsity schedule of the NAU family (`--regualizer-scaling-start
# 20000 --regualizer-scaling-end 35000`) at their strengths.
NAU_PENALTY = [0.01, 20_000, 35_000]
NMU_PENALTY = [10.0, 20_000, 35_000]
# The NPU's L1 weight (`--regualizer-beta-start/-end`, growing 10-fold every
# 10,000 iterations): theirs for mul, and for div; add and sub (which they
# do not run the NPU on) take mul's.
NPU_L1 = {"add": [1e-7, 1e-5], "sub": [1e-7, 1e-5], "mul": [1e-7, 1e-5],
          "div": [1e-9, 1e-7]}  # fmt: skip


def nac_range(fan_in=2, fan_out=1):
    """Their NAC's initial range `r` (stable_nalu `nac_w_optimal_r`): `W_hat`
    and `M_hat` ~ U[-r, r] with `max(fan_in + fan_out, 5)` times the variance
    of `tanh(W_hat) * sigmoid(M_hat)` equal to 2, found by bisection."""
    from scipy.optimize import bisect

    def variance(r):
        return (1 - np.tanh(r) / r) * (r - np.tanh(r / 2)) / (2 * r)

    fan = max(fan_in + fan_out, 5)
    return float(bisect(lambda r: fan * variance(r) - 2, 1e-6, 10))


def _uniform(r):
    return {"class_name": "RandomUniform", "config": {"minval": -r, "maxval": r}}


def _normal(mean):
    return {"class_name": "RandomNormal", "config": {"mean": mean, "stddev": 0.2}}


def recipes():
    """`{key: recipe}`: each unit with the settings of Mistry et al.'s script
    for it (the `StaticBenchmark` arguments, and `description`, what it is
    and where it differs from theirs), then the package's own recipes.
    """
    nac_init = {"w_hat_initializer": _uniform(nac_range()),
                "m_hat_initializer": _uniform(nac_range())}  # fmt: skip
    inalu_init = {
        "w_hat_initializer": _normal(0.88), "m_hat_initializer": _normal(0.5),
        "mul_w_hat_initializer": _normal(0.88), "mul_m_hat_initializer": _normal(0.5),
        "gate_initializer": _normal(0.0),
    }  # fmt: skip
    npu = {"learning_rate": 5e-3, "regularization": None, "l1": NPU_L1}
    npu_text = (
        "Adam 5e-3; their L1 of every weight, its weight 1e-7 growing 10-fold "
        "every 10,000 iterations to 1e-5 (div: 1e-9 to 1e-7); W_re glorot "
        "uniform, gate 0.5. Unlike theirs (unclipped), ours clips W to "
        "[-1, 1] in the forward pass and after each update."
    )
    return {
        "nac": {"model": "single-nac", "name": "NAC+", "regularization": None,
                "layer_options": {"nac": nac_init},
                "description": "Adam 1e-3; W_hat, M_hat ~ U[-r, r] with their "
                "r (nac_w_optimal_r); no penalty, no clipping."},
        "nacmul": {"model": "single-nac", "name": "NAC*", "regularization": None,
                   "layer_options": {"nac": {**nac_init, "multiplicative": True}},
                   "description": "Their MNAC --nac-mul normal: the NAC in log "
                   "space, exp(log(|x| + 1e-7) @ W) (NAC(multiplicative="
                   "True)); the NAC's init, Adam 1e-3, no penalty."},
        "nalu": {"model": "single-nalu", "name": "NALU", "regularization": None,
                 "layer_options": {"nalu": nac_init},
                 "description": "Adam 1e-3; one NAC for both paths, its init "
                 "as the NAC's; the gate glorot uniform; no penalty."},
        # Their penalty counts from their iteration 10,001 (`epoch_i >
        # 10000`), our update step 10,002.
        "inalu": {"model": "single-inalu", "name": "iNALU", "clipvalue": 0.1,
                  "regularization": [4.0, 10_002, 10_002], "penalty_gate": True,
                  "inalu_protocol": True,
                  "layer_options": {"inalu": inalu_init},
                  "description": "Adam 1e-3, gradients clipped to 0.1 by value; "
                  "init N(0.88 / 0.5 / 0, 0.2); their penalty 0.05 * sum of "
                  "mean(relu(20 - |w|)) after iteration 10,000 (4 x ours), "
                  "only while the run's last interpolation MSE is below 1; "
                  "their reinitialisation (InaluProtocol), a run re-drawn at "
                  "the evaluation before the iteration theirs would (at most "
                  "990 earlier), Adam's state kept. Without their penalty's "
                  "term on the gate."},
        "nau": {"model": "single-nau", "name": "NAU", "regularization": NAU_PENALTY,
                "description": "Adam 1e-3; W ~ U[-0.5, 0.5] clipped to [-1, 1]; "
                "penalty 0.01 ramped in from 20,000 to 35,000."},
        "nmu": {"model": "single-nmu", "name": "NMU", "regularization": NMU_PENALTY,
                "description": "Adam 1e-3; W ~ U[0.25, 0.75] clipped to [0, 1]; "
                "penalty 10 ramped in from 20,000 to 35,000."},
        "npu": {"model": "single-npu", "name": "NPU", **npu,
                "layer_options": {"npu": {"kernel_initializer": "glorot_uniform"}},
                "description": npu_text + " W_im starts at 0."},
        "realnpu": {"model": "single-realnpu", "name": "RealNPU", **npu,
                    "layer_options": {
                        "realnpu": {"kernel_initializer": "glorot_uniform"}},
                    "description": npu_text},
        "nmru": {"model": "single-nmru", "name": "NMRU", "learning_rate": 1e-2,
                 "clipnorm": 1.0, "regularization": NMU_PENALTY,
                 "layer_options": {"nmru": {"sign_retrieval": True}},
                 "description": "Their SignNMRU (nalm-division sltr-in2.sh): "
                 "Adam 1e-2, gradient norm clipped to 1, penalty 10 ramped in "
                 "from 20,000 to 35,000."},
        # The package's own recipes.
        "nau-centered": {"model": "single-nau", "name": "NAU centered",
                         "regularization": NAU_PENALTY,
                         "layer_options": {"nau": {"centered_gradient": True}},
                         "description": "Ours: the NAU's recipe, its gradient "
                         "taken of the batch-centered inputs."},
        "nmu-center": {"model": "single-nmu", "name": "NMU center 0.75",
                       "regularization": NMU_PENALTY, "nmu_center": 0.75,
                       "description": "Ours: the NMU's recipe, started on "
                       "U[0.5, 1] (NMUUniform center 0.75)."},
        "nmru-unsigned": {"model": "single-nmru", "name": "NMRU unsigned",
                          "learning_rate": 1e-2, "clipnorm": 1.0,
                          "regularization": NMU_PENALTY,
                          "description": "The NMRU as the package makes it by "
                          "default (no sign retrieval: it multiplies the signed "
                          "values and their reciprocals), by the NMRU's recipe "
                          "above: what the sign retrieval changes."},
        "realnpu-ours": {"model": "single-realnpu", "name": "RealNPU (ours)",
                         "learning_rate": 5e-3, "regularization": "default",
                         "description": "Ours as the package ships it: W "
                         "clipped, the NAU's penalty on W and the gate, 10 "
                         "ramped in from 20,000 to 35,000; Adam 5e-3."},
    }  # fmt: skip


RECIPES = recipes()
# The operations their figures run each unit on (csv_merger.r: their 23 unit
# x operation cells but G-NALU's 4, a unit the package does not have: 19),
# and our recipes on those of the unit they change; the NMRU (their
# nalm-division code) is in none.
PAPER_OPS = {
    "nac": ("add", "sub"), "nacmul": ("mul", "div"), "nalu": OPERATIONS,
    "inalu": OPERATIONS, "nau": ("add", "sub"), "nmu": ("mul",),
    "npu": ("mul", "div"), "realnpu": ("mul", "div"),
    "nau-centered": ("add", "sub"), "nmu-center": ("mul",),
    "realnpu-ours": ("mul", "div"),
}  # fmt: skip
# What a recipe may set, besides its model, name and description.
_ARGUMENTS = ("learning_rate", "regularization", "clipnorm", "clipvalue", "l1",
              "layer_options", "nmu_center", "penalty_gate")  # fmt: skip


def operations(key, args):
    """The operations the recipe `key` trains on: the arguments', with
    `--paper-cells` those of them in its `PAPER_OPS`."""
    if not args.paper_cells:
        return list(args.operations)
    return [op for op in args.operations if op in PAPER_OPS.get(key, ())]


# Their sparsity error reads the weights W (their tags ending in
# `W/sparsity_error`, `W_real/...`, `W_im/...`): ours by these names.
SPARSE_WEIGHTS = ("kernel", "mul_kernel", "imaginary_kernel")


def their_sparsity(bench):
    """Per run, the sparsity error as Mistry et al. report it: their
    `max(min(|W|, |1 - |W||))` of each weight W of the unit (the NPU's real
    and imaginary, the iNALU's additive and multiplicative kernels; not the
    gates), the largest of them, but the iNALU's the mean of its two paths
    (their `sparsity_error` tags and reader)."""
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


def benchmark(key, args):
    """The `StaticBenchmark` of the recipe `key` on its `operations`, the
    arguments' ranges and seeds, judged at the first `--epsilon`."""
    recipe = RECIPES[key]
    settings = {name: recipe[name] for name in _ARGUMENTS if name in recipe}
    settings.setdefault("learning_rate", 1e-3)
    if "l1" in settings:
        settings["l1"] = {op: settings["l1"][op] for op in operations(key, args)}
    epsilon = args.epsilon[0]
    return StaticBenchmark(
        recipe["model"],
        operations(key, args),
        range(args.first_seed, args.first_seed + args.seeds),
        eval_size=args.eval_size,
        adam_epsilon=ADAM_EPSILON,
        ranges={index: MISTRY_RANGES[index] for index in args.ranges},
        threshold=lambda task: mistry_threshold(task, epsilon),
        **settings,
        **TWO_INPUTS_TASK,
    )


def _label(epsilon):
    return f"{epsilon:g}"


def cell_runs(rows, unit, operation, index):
    return [r for r in rows if (r["unit"], r["operation"], r["range"]) ==
            (unit, operation, index)]  # fmt: skip


def best_units(rows, units, operation, index, epsilon):
    """The units with the most successes at `epsilon` on a cell, ties broken
    by the lower median solved-at; none when no unit succeeds."""
    label = _label(epsilon)
    scores = {}
    for unit in units:
        runs = cell_runs(rows, unit, operation, index)
        if not runs:  # not trained on this operation (--paper-cells)
            continue
        wins = sum(r["success"][label] for r in runs)
        at = [r["solved_at"][label] for r in runs if r["success"][label]]
        scores[unit] = (wins, -float(np.median(at)) if at else -np.inf)
    if not scores:
        return set()
    top = max(scores.values())
    return set() if top[0] == 0 else {u for u, s in scores.items() if s == top}


# A run's figures, kept per seed in the record's cells.
# (The interpolation MSE, which only chose the best step, is left out.)
PER_SEED = ("seed", "success", "solved_at", "iteration", "extrapolation_mse",
            "sparsity_error", "reinitializations")  # fmt: skip
BY_EPSILON = ("success", "solved_at")


def _short(value):
    """A float kept to 3 significant digits (the record's size: 10,800 runs)."""
    return value if not isinstance(value, float) else float(f"{value:.3g}")


def cells(rows):
    """The runs' rows grouped by cell (unit, operation, range), each figure a
    list over the cell's seeds, `success` and `solved_at` one list per
    epsilon, and floats to 3 significant digits: the record's rows (a few
    hundred kilobytes for the whole grid, against megabytes with a row per
    run). `runs_of` gives the rows back."""
    grouped = {}
    for row in rows:
        key = (row["unit"], row["operation"], row["range"])
        if key not in grouped:
            grouped[key] = {
                "unit": row["unit"], "operation": row["operation"],
                "range": row["range"], "threshold": row["threshold"],
                **{k: {e: [] for e in row[k]} if k in BY_EPSILON else []
                   for k in PER_SEED},
            }  # fmt: skip
        cell = grouped[key]
        for k in PER_SEED:
            if k in BY_EPSILON:
                for e, value in row[k].items():
                    cell[k][e].append(value)
            else:
                cell[k].append(_short(row[k]))
    return list(grouped.values())


def runs_of(cells):
    """The rows, one per run, of the record's `cells`."""
    rows = []
    for cell in cells:
        for i in range(len(cell["seed"])):
            row = {k: cell[k] for k in ("unit", "operation", "range", "threshold")}
            for k in PER_SEED:
                row[k] = ({e: v[i] for e, v in cell[k].items()} if k in BY_EPSILON
                          else cell[k][i])  # fmt: skip
            rows.append(row)
    return rows


def tables(rows, args):
    """Per operation, the table of range x unit: successes at the first
    `--epsilon` out of the seeds, with their Wilson 95% interval, the best
    unit of each range in bold."""
    epsilon = args.epsilon[0]
    label = _label(epsilon)
    lines = []
    for operation in args.operations:
        lines += ["", f"{SYMBOLS[operation]}: solved at epsilon {label} "
                  "(Wilson 95%; best per range in bold)", ""]  # fmt: skip
        body = []
        for index in args.ranges:
            best = best_units(rows, args.units, operation, index, epsilon)
            cells = []
            for unit in args.units:
                runs = cell_runs(rows, unit, operation, index)
                if not runs:
                    cells.append("–")
                    continue
                wins = sum(r["success"][label] for r in runs)
                low, high = wilson_interval(wins, len(runs))
                count = f"{wins}/{len(runs)}"
                cells.append(f"{f'**{count}**' if unit in best else count} "
                             f"[{low:.2f}, {high:.2f}]")  # fmt: skip
            interpolation, extrapolation = MISTRY_RANGES[index]
            body.append([index, describe_range(interpolation),
                         describe_range(extrapolation), *cells])  # fmt: skip
        names = [RECIPES[unit]["name"] for unit in args.units]
        lines += markdown_table(["range", "interpolation", "extrapolation", *names],
                                body)  # fmt: skip
        lines += ["", f"{SYMBOLS[operation]}: median solved-at iteration / "
                  "sparsity error at the best step, of the successful runs "
                  f"(epsilon {label})", ""]  # fmt: skip
        body = [[index, *(successes(cell_runs(rows, unit, operation, index), label)
                          for unit in args.units)]
                for index in args.ranges]  # fmt: skip
        lines += markdown_table(["range", *names], body)
    return lines


def successes(runs, label):
    """`"solved-at / sparsity"`: the medians over the successful `runs` at
    the epsilon `label` (theirs: `converged.at` and the sparsity error of
    the solved runs alone); "–" when none succeeded."""
    won = [r for r in runs if r["success"][label]]
    if not won:
        return "–"
    at = np.median([r["solved_at"][label] for r in won])
    sparsity = [r["sparsity_error"] for r in won if r.get("sparsity_error") is not None]
    text = f"{at:,.0f}"
    return text + (f" / {np.median(sparsity):.2g}" if sparsity else "")


def plot(rows, args, plt):
    """A heat map per operation: ranges x units, the colour the success rate
    at the first `--epsilon`, the text the successes."""
    label = _label(args.epsilon[0])
    columns = min(2, len(args.operations))
    grid = (-(-len(args.operations) // columns), columns)
    panel = (1.6 + 0.45 * len(args.units), 0.6 + 0.3 * len(args.ranges))
    size = (panel[0] * grid[1] + 1.5, panel[1] * grid[0] + 1.8)
    fig, axes = plt.subplots(*grid, squeeze=False, figsize=size, sharex=True,
                             layout="constrained")  # fmt: skip
    for k, ax in enumerate(axes.flat[len(args.operations) :], len(args.operations)):
        ax.set_visible(False)  # and the panel above it shows the units
        axes.flat[k - columns].tick_params(axis="x", labelbottom=True)
    for ax, operation in zip(axes.flat, args.operations, strict=False):
        rates = np.zeros((len(args.ranges), len(args.units)))
        for i, index in enumerate(args.ranges):
            for j, unit in enumerate(args.units):
                runs = cell_runs(rows, unit, operation, index)
                if not runs:
                    rates[i, j] = np.nan  # not trained on it: blank
                    continue
                wins = sum(r["success"][label] for r in runs)
                rates[i, j] = wins / len(runs)
                ax.text(j, i, str(wins), ha="center", va="center", fontsize=7,
                        color="white" if rates[i, j] < 0.5 else "black")  # fmt: skip
        image = ax.imshow(rates, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(args.units)))
        ax.set_xticklabels([RECIPES[u]["name"] for u in args.units], rotation=60,
                           ha="right", fontsize=7)  # fmt: skip
        ax.set_yticks(range(len(args.ranges)))
        ax.set_yticklabels([describe_range(MISTRY_RANGES[i][0]) for i in args.ranges],
                           fontsize=7)  # fmt: skip
        ax.set_title(SYMBOLS[operation], fontsize=9)
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.6, label="success rate")
    fig.suptitle(f"Solved out of {args.seeds} seeds, {args.iterations:,} iterations, "
                 f"epsilon {label}", fontsize=9)  # fmt: skip
    return fig


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
        self.speed, self.last = {}, []
        for unit in args.units:
            print(f"{RECIPES[unit]['name']}: {RECIPES[unit]['description']}")

    def runs(self, args):
        return [(unit,) for unit in args.units if operations(unit, args)]

    def train(self, args, run, session):
        """Trains every operation, range and seed of the unit `run`; returns
        their cells (`cells`: a row per operation and range)."""
        (unit,) = run
        bench = benchmark(unit, args)
        print(f"{RECIPES[unit]['name']}: {len(bench.runs)} runs", flush=True)
        log = session.callbacks(unit)
        protocol = None
        if RECIPES[unit].get("inalu_protocol"):
            protocol = InaluProtocol(args.iterations, args.eval_every)

        def after_eval(bench, history):
            # Theirs is logged in the forward pass of the evaluation's step:
            # of the weights evaluated, before any reinitialisation.
            history[-1]["their_sparsity"] = their_sparsity(bench)
            if protocol is not None:
                protocol(bench, history)

        result = bench.run(
            args.iterations,
            eval_every=args.eval_every,
            checkpoint=session.checkpoint(unit),
            progress=Progress(args.iterations, unit="iteration", label=f"  {unit}"),
            on_eval=(lambda e: log[0].write(e["iteration"], bench.scalars(e)))
            if log
            else None,
            after_eval=after_eval,
        )
        self.speed[unit] = result["ms_per_run_iteration"]
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
        return RECIPES[run[0]]["name"]

    def progress(self, row):
        """The unit's runs solved at the first `--epsilon`."""
        wins = sum(next(iter(r["success"].values())) for r in self.last)
        return {"solved": f"{wins}/{len(self.last)}"}

    def report(self, args, rows):
        print("\n".join(tables(runs_of(rows), args)))
        print(f"Wall time: {self.elapsed():.0f} s.")

    def record(self, args, rows):
        return {
            "ms_per_run_iteration": self.speed,
            "wall_seconds": self.elapsed(),
            "recipes": {unit: RECIPES[unit] for unit in args.units},
            "ranges": {index: MISTRY_RANGES[index] for index in args.ranges},
        }

    def plot(self, args, rows, plt):
        return plot(runs_of(rows), args, plt)


def main(argv=None):
    return MistryBenchmark().main(argv)


if __name__ == "__main__":
    main()
