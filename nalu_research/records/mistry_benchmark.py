"""Tables of docs/experiments/mistry-benchmark.md, from the record beside the
page."""

import argparse

from nalu_research.experiments.mistry_benchmark import (
    RECIPES,
    best_units,
    cell_runs,
    runs_of,
    tables,
)
from nalu_research.monitoring import markdown_table
from nalu_research.records import record
from nalu_research.tasks.static_arithmetic import MISTRY_RANGES, SYMBOLS, describe_range

RECORD = "experiments/mistry-benchmark/mistry_benchmark.json"


def _read(path):
    data = record(path)
    return data, argparse.Namespace(**data["arguments"]), runs_of(data["runs"])


def grid(operation, epsilon="1e-05", path=RECORD):
    """One operation's two tables: successes per range and unit (Wilson 95%,
    the best unit per range in bold), then the successful runs' median
    solved-at iteration and sparsity error, at `epsilon`."""
    data, args, runs = _read(path)
    args.operations = [operation]
    args.epsilon = [float(epsilon)]
    return "\n".join(tables(runs, args)).strip()


def best(epsilon="1e-05", path=RECORD):
    """Per range and operation, the best unit (most successes, then the
    earliest median solved-at) and its successes."""
    data, args, runs = _read(path)
    seeds = args.seeds
    lines = []
    for index in args.ranges:
        interpolation, extrapolation = MISTRY_RANGES[index]
        line = [index, describe_range(interpolation), describe_range(extrapolation)]
        for operation in args.operations:
            units = best_units(runs, args.units, operation, index, float(epsilon))
            if not units:
                line.append(f"none (0/{seeds})")
                continue
            wins = sum(
                r["success"][epsilon]
                for r in cell_runs(runs, sorted(units)[0], operation, index)
            )
            names = ", ".join(RECIPES[u].name for u in args.units if u in units)
            line.append(f"{names} ({wins}/{seeds})")
        lines.append(line)
    header = ["range", "interpolation", "extrapolation",
              *(SYMBOLS[o] for o in args.operations)]  # fmt: skip
    return "\n".join(markdown_table(header, lines))


def recipes(path=RECORD):
    """Each unit's recipe as the run had it, and its speed."""
    data, args, _ = _read(path)
    lines = [
        [recipe["name"], recipe["description"].replace("|", "\\|"),
         f"{data['ms_per_run_iteration'][unit] * 1000:.2f}"]
        for unit, recipe in data["recipes"].items()
    ]  # fmt: skip
    return "\n".join(markdown_table(["unit", "recipe", "us per run-iteration"], lines))


def thresholds(epsilon="1e-05", path=RECORD):
    """The success threshold of each range and operation: their simulated
    MSE of a solution off by `epsilon` (`nalu_research.tasks.mistry_threshold`)."""
    data, args, _ = _read(path)
    lines = []
    for index in args.ranges:
        interpolation, extrapolation = MISTRY_RANGES[index]
        line = [index, describe_range(extrapolation)]
        for operation in args.operations:
            cell = next(
                c for c in data["runs"]
                if (c["operation"], c["range"]) == (operation, index)
            )  # fmt: skip
            line.append(f"{cell['threshold'][epsilon]:.3e}")
        lines.append(line)
    header = ["range", "extrapolation", *(SYMBOLS[o] for o in args.operations)]
    return "\n".join(markdown_table(header, lines))


def per_operation(epsilon="1e-05", path=RECORD):
    """Per operation, the units that do best on all nine ranges together
    (most successes on their worst range, then in all; ties all named), the
    worst range and the successes in all, beside the paper's NALU."""
    data, args, runs = _read(path)
    seeds, ranges = args.seeds, args.ranges

    def counts(unit, operation):
        return [
            sum(r["success"][epsilon] for r in cell_runs(runs, unit, operation, i))
            for i in ranges
        ]

    lines = []
    for operation in args.operations:
        scored = {u: counts(u, operation) for u in args.units}
        top = max((min(c), sum(c)) for c in scored.values())
        units = [u for u in args.units if (min(scored[u]), sum(scored[u])) == top]
        unit, worst = units[0], top[0]
        at = [str(ranges[i]) for i, c in enumerate(scored[unit]) if c == worst]
        where = "every range" if len(at) == len(ranges) else f"range {', '.join(at)}"
        nalu = scored.get("nalu")
        lines.append(
            [
                SYMBOLS[operation],
                ", ".join(RECIPES[u].name for u in units),
                f"{worst}/{seeds} ({where})",
                f"{sum(scored[unit])}/{seeds * len(ranges)}",
                "–" if nalu is None else f"{sum(nalu)}/{seeds * len(ranges)}",
            ]
        )
    header = ["operation", "best unit on every range", "worst range",
              "all nine ranges", "the paper's NALU"]  # fmt: skip
    return "\n".join(markdown_table(header, lines))


ORACLE = "experiments/mistry-benchmark/mistry_oracle.json"


def oracle(epsilon="1e-05", path=RECORD, theirs=ORACLE):
    """Their own code's success counts beside ours, per cell it ran
    (`nalu_research.experiments.mistry_oracle.compare`): Wilson 95%
    intervals, whether they overlap, Fisher's exact p, the successes' median
    solved-at."""
    from nalu_research.experiments.mistry_oracle import compare, comparison_table

    table = compare(record(path), record(theirs), float(epsilon))
    return "\n".join(comparison_table(table))


UNSIGNED = "experiments/mistry-benchmark/mistry_nmru_unsigned.json"


def sign_retrieval(epsilon="1e-05", path=RECORD, unsigned=UNSIGNED):
    """Division per range: the NMRU without sign retrieval (the package's
    default, its own record) beside the NMRU with it (the grid's), both by
    the NMRU's recipe, successes with Wilson 95% intervals."""
    from nalu_research.tasks import wilson_interval

    def counts(source, unit):
        data, args, runs = _read(source)
        return args.seeds, {
            i: sum(r["success"][epsilon] for r in cell_runs(runs, unit, "div", i))
            for i in args.ranges
        }

    (n_before, before), (n_after, after) = (
        counts(unsigned, "nmru-unsigned"),
        counts(path, "nmru"),
    )

    def text(wins, n):
        low, high = wilson_interval(wins, n)
        return f"{wins}/{n} [{low:.2f}, {high:.2f}]"

    lines = [
        [i, describe_range(MISTRY_RANGES[i][0]), describe_range(MISTRY_RANGES[i][1]),
         text(before[i], n_before), text(after[i], n_after)]
        for i in sorted(before)
    ]  # fmt: skip
    header = ["range", "interpolation", "extrapolation",
              "NMRU, no sign retrieval", "NMRU, sign retrieval"]  # fmt: skip
    return "\n".join(markdown_table(header, lines))


def oracle_time(theirs=ORACLE):
    """Their code's budget and time per cell: runs, iterations, the median
    and total wall seconds of a run (one thread each, two at a time)."""
    import statistics

    data = record(theirs)
    cells = {}
    for run in data["runs"]:
        cells.setdefault((run["unit"], run["operation"], run["range"]), []).append(
            run["seconds"]
        )
    lines = []
    for (unit, operation, index), seconds in sorted(cells.items()):
        timed = [s for s in seconds if s is not None]
        lines.append(
            [unit, SYMBOLS[operation], index, len(seconds), f"{data['iterations']:,}",
             f"{statistics.median(timed):.0f}" if timed else "–",
             f"{sum(timed):,.0f}"]
        )  # fmt: skip
    header = ["unit", "op", "range", "runs", "iterations", "median s per run",
              "total s"]  # fmt: skip
    return "\n".join(markdown_table(header, lines))
