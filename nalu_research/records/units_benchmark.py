"""Tables of docs/experiments/units-benchmark.md: the NAU, NMU, NMRU, iNALU
and RealNPU on the static task, from the records of the benchmark's runs."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import division_benchmark, record
from nalu_research.records.static_arithmetic import runs
from nalu_research.tasks.metrics import solved_by

PAGE = "experiments/units-benchmark/"
UNITS = PAGE + "units.json"
INALU = PAGE + "units_inalu.json"
SIGNED = PAGE + "units_signed.json"
SIGNED_CENTER = PAGE + "units_signed_center075.json"
CENTERED = PAGE + "units_recipe_centered.json"
PLAIN = PAGE + "units_recipe_plain.json"
REALNPU_DIV = PAGE + "units_realnpu_div.json"
ANCHOR = PAGE + "units_anchor_nmu.json"
ANCHOR_5M = PAGE + "units_anchor_nmu_5m.json"
SPLIT = PAGE + "units_anchor_split.json"
GPU = "gpu/gpu.json"
# Madsen & Johansen's fraction of 100 seeds solved by 3,000,000 iterations
# (stable-nalu's paper/results/sft-last.csv); the other marks are
# nalu_research.tasks.MADSEN_JOHANSEN_SOLVED_BY's.
THEIRS_BY_3M = 0.98


def interval(wins, n):
    """`[low, high]`: the Wilson 95% interval of `wins` of `n`."""
    from nalu_research.tasks.metrics import wilson_interval

    low, high = wilson_interval(wins, n)
    return f"[{low:.2f}, {high:.2f}]"


def count(runs, with_interval=False):
    """`k/n` solved, in bold where all are, with the Wilson 95% interval."""
    wins = sum(r["success"] for r in runs)
    text = f"{wins}/{len(runs)}"
    text = f"**{text}**" if runs and wins == len(runs) else text
    return f"{text} {interval(wins, len(runs))}" if with_interval else text


def _iterations(path):
    return f"{record(path)['arguments']['iterations']:,}"


def headline():
    """Success by the strict criterion per task and model, with the
    published rates beside them."""
    nau, nmu, nmru = (
        lambda op, m=m, **k: count(runs(UNITS, m, op), **k)
        for m in ("nau", "nmu", "nmru")
    )

    def inalu(op, **k):
        return count(runs(INALU, "inalu", op), **k)

    nmru_share = division_benchmark.total(
        division_benchmark.runs(division_benchmark.NMRU)
    )
    realnpu_share = division_benchmark.total(
        division_benchmark.runs(division_benchmark.REALNPU)
    )
    rows = [
        [
            "a+b",
            nau("add", with_interval=True),
            nmu("add"),
            nmru("add"),
            inalu("add", with_interval=True),
            "100%",
            "NAU 100% (M&J), NALU 14%",
        ],
        [
            "a-b",
            nau("sub", with_interval=True),
            nmu("sub"),
            nmru("sub"),
            inalu("sub"),
            "100%",
            "NAU 100% (M&J), NALU 14%",
        ],
        [
            "a*b",
            nau("mul"),
            f"{nmu('mul', with_interval=True)}; "
            f"{count(runs(CENTERED, 'nmu', 'mul'), with_interval=True)} in "
            f"{_iterations(CENTERED)} with `centered_gradient` (below)",
            nmru("mul"),
            inalu("mul"),
            ">= 95%",
            "NMU 98% in 5M iterations (M&J)",
        ],
        [
            "a/b",
            nau("div"),
            nmu("div"),
            f"{nmru('div', with_interval=True)}; NAU-RealNPU "
            f"{count(runs(REALNPU_DIV, 'realnpu', 'div'), with_interval=True)} in "
            f"{_iterations(REALNPU_DIV)} "
            "([below](#division-two-layers-a-nau-and-a-real-npu))",
            inalu("div"),
            ">= 80%",
            "NMRU 91.6% in its own setup (Mistry et al.; here on it: NMRU "
            f"{nmru_share[0].split(' = ')[1]}, RealNPU "
            f"{realnpu_share[0].split(' = ')[1]}, "
            "[division benchmark](division-benchmark.md))",
        ],
        [
            "a*b, signed",
            "",
            f"{count(runs(SIGNED, 'nmu', 'mul'), with_interval=True)}; "
            f"{count(runs(SIGNED_CENTER, 'nmu', 'mul'), with_interval=True)} with "
            "`NMUUniform(center=0.75)`",
            "",
            f"{count(runs(SIGNED, 'inalu', 'mul'))} "
            f"({len(runs(SIGNED, 'inalu', 'mul'))} seeds)",
            ">= 90%",
            "",
        ],
    ]
    seeds = record(INALU)["arguments"]["seeds"]
    header = [
        "task",
        "NAU-NAU",
        "NAU-NMU",
        "NAU-NMRU",
        f"iNALU ({seeds} seeds)",
        "goal",
        "published",
    ]
    return "\n".join(markdown_table(header, rows))


def _fraction(runs, iteration, bold=False):
    text = f"{solved_by(runs, iteration):.2f}"
    return f"**{text}**" if bold else text


def anchor():
    """The anchor (NAU-NMU, a*b, Madsen & Johansen's schedule): the fraction
    of seeds solved by each iteration, and the strict success at the end."""
    from nalu_research.tasks.static_arithmetic import MADSEN_JOHANSEN_SOLVED_BY

    marks = (50_000, 200_000, 1_000_000, 2_000_000, 3_000_000, 5_000_000)
    two_m = runs(ANCHOR, "nmu", "mul")
    five_m = runs(ANCHOR_5M, "nmu", "mul")

    def success(runs, bold=False):
        wins = sum(r["success"] for r in runs)
        text = f"{wins}/{len(runs)}"
        return f"{f'**{text}**' if bold else text} {interval(wins, len(runs))}"

    rows = []
    for name, part in (
        ("seeds 0-24 (first run, 2M)", two_m[:25]),
        ("seeds 25-49 (2026-11-24, 2M)", two_m[25:]),
    ):
        rows.append(
            [
                f"here, {name}",
                *(_fraction(part, n) for n in marks[:4]),
                "-",
                "-",
                f"{success(part)} at 2M",
            ]
        )
    rows.append(
        [
            f"**here, {len(two_m)} seeds**",
            *(_fraction(two_m, n) for n in marks[:3]),
            _fraction(two_m, 2_000_000, bold=True),
            "",
            "",
            f"{success(two_m, bold=True)} at 2M",
        ]
    )
    rows.append(
        [
            f"**here, {len(five_m)} seeds to 5M** (2026-11-25)",
            *(_fraction(five_m, n) for n in marks[:5]),
            _fraction(five_m, 5_000_000, bold=True),
            f"{success(five_m, bold=True)} at 5M",
        ]
    )
    theirs = {**MADSEN_JOHANSEN_SOLVED_BY["nmu"]["mul"], 3_000_000: THEIRS_BY_3M}
    rows.append(
        [
            "Madsen & Johansen, 100 seeds",
            *(f"{theirs[n]:.2f}" for n in marks),
            f"{round(100 * theirs[5_000_000])}/100 at 5M",
        ]
    )
    header = [
        "NAU-NMU, a*b",
        *(f"by {n:,}" for n in marks),
        "strict success at the end",
    ]
    return "\n".join(markdown_table(header, rows))


def gpu():
    """The anchor on 100 seeds on a GPU (`make gpu-check`'s record), beside
    the CPU run and Madsen & Johansen's."""
    from nalu_research.tasks.static_arithmetic import MADSEN_JOHANSEN_SOLVED_BY

    on_gpu = record(GPU)["anchor"]["runs"]
    cpu = runs(ANCHOR, "nmu", "mul")

    def row(name, runs, bold=False):
        wins = sum(r["success"] for r in runs)
        text = f"{wins}/{len(runs)}"
        return [name, f"**{text}**" if bold else text, interval(wins, len(runs))]

    theirs = MADSEN_JOHANSEN_SOLVED_BY["nmu"]["mul"][2_000_000]
    rows = [
        row(f"**jax, GPU, seeds 0-{len(on_gpu) - 1}**", on_gpu, bold=True),
        row(f"of them seeds 0-{len(cpu) - 1}", on_gpu[: len(cpu)]),
        row(f"tensorflow, CPU, seeds 0-{len(cpu) - 1} (above)", cpu),
        ["Madsen & Johansen, 100 seeds", f"{round(100 * theirs)}/100", ""],
    ]
    header = ["NAU-NMU, a*b, by 2,000,000", "solved (strict)", "Wilson 95%"]
    return "\n".join(markdown_table(header, rows))


def split():
    """The initial split controlled: the stuck seeds with their split moved
    away from 0, the solved seeds with theirs moved to 0."""
    data = record(SPLIT)
    five_m = {r["seed"]: r for r in runs(ANCHOR_5M, "nmu", "mul")}
    rows = []
    for arm, seeds, name in (
        (
            "moved",
            data["arguments"]["stuck"],
            f"stuck seeds, split moved to +-{data['arguments']['target']:g}",
        ),
        ("projected", data["arguments"]["solved"], "solved seeds, split moved to 0"),
    ):
        here = [r for r in data["runs"] if r["arm"] == arm]
        wins = sum(r["success"] for r in here)
        # The median as examples/anchor_split.py reports it: of an even
        # count, the upper of the two middle values.
        at = sorted(r["solved_at"] for r in here if r["solved_at"] is not None)
        drawn = [five_m[s] for s in seeds]
        drawn_wins = sum(r["solved_at"] is not None for r in drawn)
        if drawn_wins:
            last = max(r["solved_at"] for r in drawn)
            as_drawn = f"{drawn_wins}/{len(drawn)} by {last / 1e6:.3g}M"
        else:
            as_drawn = f"0/{len(drawn)}, to 5M"
        rows.append(
            [
                name,
                len(here),
                f"**{wins}/{len(here)}**",
                interval(wins, len(here)),
                f"{at[len(at) // 2]:,}" if at else "-",
                as_drawn,
            ]
        )
    header = [
        "arm",
        "runs",
        "solved by 2M (strict)",
        "Wilson 95%",
        "first solved, median",
        "as drawn (above)",
    ]
    return "\n".join(markdown_table(header, rows))


def recipe():
    """The centered gradient against the same schedule without it and the
    anchor: fractions solved by iteration, the median iteration solved and
    the strict success."""
    from nalu_research.tasks.static_arithmetic import MADSEN_JOHANSEN_SOLVED_BY

    marks = (100_000, 110_000, 200_000, 2_000_000)

    def row(name, path, bold=False):
        runs = globals()["runs"](path, "nmu", "mul")
        at = [r["solved_at"] for r in runs if r["solved_at"] is not None]
        fractions = [
            _fraction(runs, n, bold and solved_by(runs, n) == 1)
            if n <= record(path)["arguments"]["iterations"]
            else ""
            for n in marks
        ]
        median = f"{int(np.median(at)):,}" if at else "-"
        return [
            name,
            *fractions,
            f"**{median}**" if bold and at else median,
            count(runs, with_interval=True),
        ]

    theirs = MADSEN_JOHANSEN_SOLVED_BY["nmu"]["mul"]
    rows = [
        row("centered gradient, penalty from 100,000", CENTERED, True),
        row(
            "the same schedule without it ([`units_recipe_plain.json`]"
            "(units-benchmark/units_recipe_plain.json))",
            PLAIN,
        ),
        row(
            f"anchor: Madsen & Johansen's schedule (above), "
            f"{len(runs(ANCHOR, 'nmu', 'mul'))} seeds",
            ANCHOR,
        ),
        [
            "Madsen & Johansen, published (100 seeds)",
            f"{theirs[50_000]:.2f}",
            "",
            f"{theirs[200_000]:.2f}",
            f"{theirs[2_000_000]:.2f}",
            "about 1,400,000",
            "",
        ],
    ]
    seeds = len(runs(CENTERED, "nmu", "mul"))
    header = [
        f"NAU-NMU, a*b, {seeds} seeds",
        "solved by 100,000",
        "by 110,000",
        "by 200,000",
        "by 2,000,000",
        "median iteration solved",
        "strict success",
    ]
    return "\n".join(markdown_table(header, rows))


VARIANTS = PAGE + "units_realnpu_div_variants.json"


def _variant(name):
    """The runs of the variant `name` of the division recipe (`recipe`: the
    recipe's own record, seeds 0 to 24)."""
    if name == "recipe":
        return [r for r in runs(REALNPU_DIV, "realnpu", "div") if r["seed"] < 25]
    return record(VARIANTS)[name]["runs"]


def _mse(value):
    """2 significant digits, in exponent form below 0.001."""
    return f"{value:.2g}" if value >= 1e-3 else f"{value:.1e}"


# The rows of `variants`: the change, the variants it ran (tensorflow, then
# jax after `jax:`), a note on the median extrapolation MSE, what happens.
VARIANT_ROWS = [
    (
        "none: the first version (`div_penalty_150k`; on jax `div_penalty_150k_jax`)",
        ["div_penalty_150k", "jax:div_penalty_150k_jax"],
        "",
        "3 seeds on the edge rounded wrong",
    ),
    (
        "the NAU's penalty from 170,000 to 180,000: **the recipe** (seeds 0 to 24 of "
        "`units_realnpu_div.json`, identical run for run to a 25-seed run; "
        "`div_penalty_170k_jax`)",
        ["recipe", "jax:div_penalty_170k_jax"],
        "",
        "",
    ),
    (
        "no learning-rate drop (`div_no_drop`)",
        ["div_no_drop"],
        "",
        "the weights are right but Adam's steps of about 1e-3 around the penalty's "
        "kink keep them jittering; `snap_weights` makes {snapped} of {seeds} exact, "
        "as the drop does",
    ),
    (
        "the RealNPU's penalty from 150,000 like the NAU's, none holding the "
        "exponents (`div_exponent_penalty_late`)",
        ["div_exponent_penalty_late"],
        " (before the penalty)",
        "the exponents drift to about 0.9997 and the NAU compensates; the shared "
        "inputs separate less and the penalty rounds some to 0 (6.8e-05 at 200,000)",
    ),
    (
        "exponents drawn by `NAUUniform`, random about ±0.5 (`div_random_exponents`)",
        ["div_random_exponents"],
        "",
        "the constant 1: the penalty rounds the small exponents to 0",
    ),
    (
        "exponents started at `(+1, +1)`, a product (`div_product_start`)",
        ["div_product_start"],
        "",
        "the penalty holds the product: the start is the prior",
    ),
    (
        "`gated=True`, Heim et al.'s gate started at 0.5 (`div_gated`)",
        ["div_gated"],
        "",
        "the gates close: the constant 1",
    ),
    (
        "the NAU's penalty at strength 0.1 or 0.01 instead of 1 "
        "(`div_nau_strength_0.1`, `_0.01`)",
        ["div_nau_strength_0.1", "div_nau_strength_0.01"],
        "",
        "the same: under Adam the penalty's scale hardly matters once it dominates "
        "the MSE's gradient; its start does",
    ),
    (
        "`NAU(centered_gradient=True)`, what solves a*b above (`div_centered`)",
        ["div_centered"],
        "",
        "the constant 1 by iteration 100,000: the centered gradient loses the means "
        "that set the hidden sums' scale",
    ),
    (
        "NAU started by its default `NAUUniform`, about ±0.24 (`div_default_nau_init`)",
        ["div_default_nau_init"],
        " (before the penalty)",
        "the hidden units start mixed; the penalty rounds them to a wrong split "
        "(8.3e-05 at 200,000)",
    ),
]


def variants():
    """The division recipe changed one thing at a time: the seeds solved
    (strict, with the Wilson 95% interval; on jax after `;`), the median
    extrapolation MSE of each run's best evaluation, and what happens."""
    rows = []
    for change, names, note, happens in VARIANT_ROWS:
        tf = [_variant(n) for n in names if not n.startswith("jax:")]
        jax = [_variant(n[4:]) for n in names if n.startswith("jax:")]
        solved = [count(r) for r in tf]
        if len(set(solved)) == 1 and len(tf) > 1:
            cell = f"{solved[0]} each"
        else:
            cell = count(tf[0], with_interval=True)
        cell += "".join(f"; jax {count(r)}" for r in jax)
        median = np.median([r["extrapolation_mse"] for r in tf[0]])
        snapped = sum(bool(r.get("snapped")) for r in tf[0])
        rows.append(
            [
                change,
                cell,
                _mse(median) + note,
                happens.format(snapped=snapped, seeds=len(tf[0])),
            ]
        )
    header = ["change", "solved", "median extrapolation MSE", "what happens"]
    return "\n".join(markdown_table(header, rows))
