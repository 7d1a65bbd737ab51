"""The Mistry benchmark's record rows (a row per cell), tables and heat map."""

import numpy as np

from nalu_research.experiments.mistry_benchmark.recipes import RECIPES
from nalu_research.monitoring import markdown_table
from nalu_research.tasks import wilson_interval
from nalu_research.tasks.static_arithmetic import MISTRY_RANGES, SYMBOLS, describe_range


def _label(epsilon):
    return f"{epsilon:g}"


def cell_runs(rows, unit, operation, index):
    return [
        r
        for r in rows
        if (r["unit"], r["operation"], r["range"]) == (unit, operation, index)
    ]


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
PER_SEED = (
    "seed",
    "success",
    "solved_at",
    "iteration",
    "extrapolation_mse",
    "sparsity_error",
    "reinitializations",
)
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
                "unit": row["unit"],
                "operation": row["operation"],
                "range": row["range"],
                "threshold": row["threshold"],
                **{
                    k: {e: [] for e in row[k]} if k in BY_EPSILON else []
                    for k in PER_SEED
                },
            }
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
                row[k] = (
                    {e: v[i] for e, v in cell[k].items()}
                    if k in BY_EPSILON
                    else cell[k][i]
                )
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
        lines += [
            "",
            f"{SYMBOLS[operation]}: solved at epsilon {label} "
            "(Wilson 95%; best per range in bold)",
            "",
        ]
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
                cells.append(
                    f"{f'**{count}**' if unit in best else count} "
                    f"[{low:.2f}, {high:.2f}]"
                )
            interpolation, extrapolation = MISTRY_RANGES[index]
            body.append(
                [
                    index,
                    describe_range(interpolation),
                    describe_range(extrapolation),
                    *cells,
                ]
            )
        names = [RECIPES[unit].name for unit in args.units]
        lines += markdown_table(
            ["range", "interpolation", "extrapolation", *names], body
        )
        lines += [
            "",
            f"{SYMBOLS[operation]}: median solved-at iteration / "
            "sparsity error at the best step, of the successful runs "
            f"(epsilon {label})",
            "",
        ]
        body = [
            [
                index,
                *(
                    successes(cell_runs(rows, unit, operation, index), label)
                    for unit in args.units
                ),
            ]
            for index in args.ranges
        ]
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
    fig, axes = plt.subplots(
        *grid, squeeze=False, figsize=size, sharex=True, layout="constrained"
    )
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
                ax.text(
                    j,
                    i,
                    str(wins),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if rates[i, j] < 0.5 else "black",
                )
        image = ax.imshow(rates, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(args.units)))
        ax.set_xticklabels(
            [RECIPES[u].name for u in args.units], rotation=60, ha="right", fontsize=7
        )
        ax.set_yticks(range(len(args.ranges)))
        ax.set_yticklabels(
            [describe_range(MISTRY_RANGES[i][0]) for i in args.ranges], fontsize=7
        )
        ax.set_title(SYMBOLS[operation], fontsize=9)
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.6, label="success rate")
    fig.suptitle(
        f"Solved out of {args.seeds} seeds, {args.iterations:,} iterations, "
        f"epsilon {label}",
        fontsize=9,
    )
    return fig
