"""Tables of docs/experiments/division-benchmark.md: one NMRU (or RealNPU)
among 10 inputs on Mistry et al.'s nine ranges, from the page's records."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record
from nalu_research.tasks.metrics import rate

PAGE = "experiments/division-benchmark/"
NMRU = PAGE + "division_benchmark.json"
REALNPU = PAGE + "division_benchmark_realnpu.json"
THEIR_CODE = PAGE + "division_benchmark_mistry_code.json"


def _ranges():
    from nalu_research.tasks.static_arithmetic import MISTRY_RANGES

    return MISTRY_RANGES


def _describe(value_range):
    from nalu_research.tasks.static_arithmetic import describe_range

    return describe_range(value_range)


def runs(path, index=None):
    """The runs of the record `path` on range `index` (all ranges: None)."""
    found = record(path)["runs"]
    return [r for r in found if index is None or r["range"] == index]


def share(runs, percent=False):
    """`k/n`, or `k/n = p%` with `percent`."""
    wins = sum(r["success"] for r in runs)
    text = f"{wins}/{len(runs)}"
    return text + (f" = {wins / len(runs):.1%}" if percent else "")


def total(runs, digits=1):
    """`k/n = p% [low, high]` over every run."""
    from nalu_research.tasks.metrics import wilson_interval

    wins = sum(r["success"] for r in runs)
    low, high = wilson_interval(wins, len(runs))
    return (
        f"{wins}/{len(runs)} = {wins / len(runs):.{digits}%}",
        f"[{low:.2f}, {high:.2f}]",
    )


def _median_solved(runs):
    at = [r["solved_at"] for r in runs if r["solved_at"] is not None]
    return f"{int(np.median(at)):,}" if at else "-"


def _snapped(runs):
    return f"{sum(r['formula'] is not None for r in runs)}/{len(runs)}"


def _bold(text, bold):
    return f"**{text}**" if bold else text


def by_range(unit="nmru"):
    """Per range: solved by Mistry et al.'s criterion (Wilson 95%), the median
    iteration first solved and the runs snapped; for the RealNPU also the
    NMRU's solved runs beside it."""
    path = {"nmru": NMRU, "realnpu": REALNPU}[unit]
    rows = []
    for index in record(path)["arguments"]["ranges"]:
        here = runs(path, index)
        interpolation, extrapolation = _ranges()[index]
        solved = rate(here)
        if unit == "realnpu" and not any(r["success"] for r in here):
            count, interval = solved.split(" ", 1)
            solved = f"**{count}** {interval}"
        row = [
            index,
            _describe(interpolation),
            _describe(extrapolation),
            solved,
            _median_solved(here),
            _snapped(here),
        ]
        if unit == "realnpu":
            row.append(share(runs(NMRU, index)))
        rows.append(row)
    count, interval = total(runs(path))
    row = ["**all**", "", "", f"**{count}** {interval}", "", _snapped(runs(path))]
    header = [
        "range",
        "interpolation",
        "extrapolation",
        "solved",
        "median iteration first solved",
        "snapped",
    ]
    if unit == "realnpu":
        header[3] = "RealNPU: solved"
        header.append("NMRU (above)")
        row.append(share(runs(NMRU), percent=True))
    rows.append(row)
    return "\n".join(markdown_table(header, rows))


def their_code():
    """Mistry et al.'s own code run here, beside ours, on the ranges where
    ours fell short (range 1's one run, stopped early, left out)."""
    theirs = [r for r in record(THEIR_CODE)["runs"] if r["range"] != 1]
    ranges = sorted({r["range"] for r in theirs})
    rows = []
    for index in ranges:
        rows.append(
            [
                index,
                _describe(_ranges()[index][0]),
                rate([r for r in theirs if r["range"] == index]),
                rate(runs(NMRU, index)),
            ]
        )
    mine = [r for r in runs(NMRU) if r["range"] in ranges]
    (count, interval), (ours, ours_interval) = total(theirs, 0), total(mine, 0)
    rows.append(
        ["**the five**", "", f"**{count}** {interval}", f"{ours} {ours_interval}"]
    )
    header = ["range", "interpolation", "their code, here", "ours (above)"]
    return "\n".join(markdown_table(header, rows))
