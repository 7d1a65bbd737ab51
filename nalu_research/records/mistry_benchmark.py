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
            names = ", ".join(RECIPES[u]["name"] for u in args.units if u in units)
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
                ", ".join(RECIPES[u]["name"] for u in units),
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
    (`nalu_research.oracle.compare`): Wilson 95% intervals, whether they
    overlap, Fisher's exact p, the successes' median solved-at."""
    from nalu_research.oracle import compare, comparison_table

    table = compare(record(path), record(theirs), float(epsilon))
    return "\n".join(comparison_table(table))
