"""Tables of docs/units/nau-nmu-nmru.md, from the records of the benchmark of
the units (docs/experiments/units-benchmark/)."""

from nalu_research.monitoring import markdown_table
from nalu_research.records import record
from nalu_research.records import units_benchmark as units
from nalu_research.records.static_arithmetic import runs
from nalu_research.tasks.metrics import solved_by

MARKS = (50_000, 200_000, 1_000_000, 2_000_000)
DIV_CENTERED = units.PAGE + "units_recipe_div_centered.json"


def _budget(iterations):
    return (
        f"{iterations // 1_000_000}M"
        if iterations >= 1_000_000
        else (f"{iterations // 1000}k")
    )


def solved_by_iteration():
    """The fraction of seeds solved by each iteration, Madsen & Johansen's
    published beside ours ("-" past a run's budget; in bold where every seed
    is solved)."""
    from nalu_research.tasks.static_arithmetic import MADSEN_JOHANSEN_SOLVED_BY

    def theirs(op, who, model, operation):
        fractions = MADSEN_JOHANSEN_SOLVED_BY[model][operation]
        return [
            op,
            f"Madsen & Johansen, {who}",
            "5M",
            *(f"{fractions[n]:.2f}" for n in MARKS),
        ]

    def ours(op, who, path, model, operation):
        found = runs(path, model, operation)
        budget = record(path)["arguments"]["iterations"]
        cells = []
        for n in MARKS:
            if n > budget:
                cells.append("-")
                continue
            text = f"{solved_by(found, n):.2f}"
            cells.append(f"**{text}**" if text == "1.00" else text)
        who = who if who.startswith("the same") else f"ours, {who}"
        return [op, who, _budget(budget), *cells]

    five_m = solved_by(runs(units.ANCHOR_5M, "nmu", "mul"), 5_000_000)
    their_5m = MADSEN_JOHANSEN_SOLVED_BY["nmu"]["mul"][5_000_000]
    anchor = runs(units.ANCHOR, "nmu", "mul")
    anchor_row = ours(
        "a*b",
        f"NAU-NMU, their schedule (`units_anchor_nmu.json`, {len(anchor)} seeds; "
        f"to 5M: {five_m:.2f}, theirs {their_5m:.2f})",
        units.ANCHOR,
        "nmu",
        "mul",
    )
    anchor_row[2] = "5M"  # run on to 5M (`units_anchor_nmu_5m.json`)
    realnpu = runs(units.REALNPU_DIV, "realnpu", "div")
    rows = [
        theirs("a+b", "NAU", "nau", "add"),
        ours(
            "a+b",
            "NAU-NAU, the layers' defaults (`units.json`)",
            units.UNITS,
            "nau",
            "add",
        ),
        ours(
            "a-b",
            "NAU-NAU, the layers' defaults (`units.json`)",
            units.UNITS,
            "nau",
            "sub",
        ),
        theirs("a*b", "NAU-NMU", "nmu", "mul"),
        anchor_row,
        ours(
            "a*b",
            "NAU-NMU, `NAU(centered_gradient=True)`, penalty from 100k "
            "(`units_recipe_centered.json`)",
            units.CENTERED,
            "nmu",
            "mul",
        ),
        ours(
            "a*b",
            "the same without `centered_gradient` (`units_recipe_plain.json`)",
            units.PLAIN,
            "nmu",
            "mul",
        ),
        theirs("a/b", "every unit", "nmu", "div"),
        ours(
            "a/b",
            "NAU-NMRU, `centered_gradient`, penalty from 100k "
            "(`units_recipe_div_centered.json`)",
            DIV_CENTERED,
            "nmru",
            "div",
        ),
        ours(
            "a/b",
            "NAU-RealNPU, the ratio recipe above (`units_realnpu_div.json`, "
            f"{len(realnpu)} seeds)",
            units.REALNPU_DIV,
            "realnpu",
            "div",
        ),
    ]
    header = [
        "operation",
        "who, model and recipe",
        "budget",
        *(f"by {n:,}" for n in MARKS),
    ]
    return "\n".join(markdown_table(header, rows))
