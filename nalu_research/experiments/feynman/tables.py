"""The tables and figure of the Feynman experiment, its report's and its
page's (which its records module reads), from its rows."""

import math

import numpy as np

from nalu_research.tasks import feynman as task

# The extrapolation error below which an equation counts as extrapolated.
EXTRAPOLATED = 1e-5
# The columns of `counts_table` after the form's: header, key of `counts`.
# fmt: off
COLUMNS = {
    "equations": "equations", "ours": "ours", "gplearn": "gplearn",
    "ours: form": "ours_form", "gplearn: form": "gplearn_form",
    "ours < 1e-5": "ours_extrapolated", "gplearn < 1e-5": "gplearn_extrapolated",
    "ReLU < 1e-5": "dense_extrapolated",
}
# fmt: on
# The figure's points: whose, label, marker, size.
SERIES = (
    ("ours", "ours", "o", 14),
    ("gplearn", "gplearn", "s", 14),
    ("dense", "ReLU network", "x", 10),
)


def majority(flags):
    flags = [bool(f) for f in flags]
    return sum(flags) * 2 > len(flags)


def median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else math.nan


def extrapolation(row, who):
    """The extrapolation errors of `who` (ours, gplearn, dense) on `row`'s
    seeds: none where it did not run."""
    if who == "dense":
        return row.get("dense", {}).get("extrapolation", [])
    return [s[who]["extrapolation"] for s in row["seeds"] if who in s]


def counts(rows, seeds):
    """`{form: {"equations", "ours", "gplearn"}}`: equations recovered on a
    majority of the seeds, by form, and in all."""
    found = {}
    for form in (*task.FORMS, "all"):
        chosen = [r for r in rows if form in ("all", r["form"])]
        if not chosen:
            continue
        found[form] = {"equations": len(chosen)}
        for who in ("ours", "gplearn"):
            if all(who in s for r in chosen for s in r["seeds"]):
                found[form][who] = sum(
                    majority(s[who]["recovered"] for s in r["seeds"]) for r in chosen
                )
                # A formula recovered has its form (constants within 1e-2) too.
                found[form][f"{who}_form"] = sum(
                    majority(
                        s[who]["recovered"] or s[who].get("form", False)
                        for s in r["seeds"]
                    )
                    for r in chosen
                )
                found[form][f"{who}_extrapolated"] = sum(
                    median(extrapolation(r, who)) < EXTRAPOLATED for r in chosen
                )
        if all("dense" in r for r in chosen):
            found[form]["dense_extrapolated"] = sum(
                median(extrapolation(r, "dense")) < EXTRAPOLATED for r in chosen
            )
    return found


def recovered_yet_far(rows):
    """`[(equation, seed), ...]` recovered by ours but extrapolating no better
    than `EXTRAPOLATED`: none, if recovering a formula means what it says."""
    return [
        (r["equation"], s["seed"])
        for r in rows
        for s in r["seeds"]
        if s["ours"]["recovered"] and not s["ours"]["extrapolation"] < EXTRAPOLATED
    ]


def counts_table(rows, seeds):
    """Equations recovered on a majority of `seeds` seeds, by form: exactly
    (constants within 1e-4) and their form (constants within 1e-2); and
    those whose median extrapolation error is below `EXTRAPOLATED`."""
    lines = [
        [form, *(c.get(key, "-") for key in COLUMNS.values())]
        for form, c in counts(rows, seeds).items()
    ]
    return ["form", *COLUMNS], lines


def shorter(formula, size=90):
    """`formula`, cut to `size` characters (a failed search's can be long)."""
    return formula if len(formula) <= size else formula[: size - 4] + " ..."


def equations_table(rows):
    """One line per equation: its formula, ours and gplearn's recovered
    seeds, a formula found and the median extrapolation errors."""
    # fmt: off
    header = ["equation", "form", "formula", "ours", "a formula ours found",
              "ours: error", "gplearn", "gplearn: error", "ReLU: error"]
    # fmt: on
    lines = []
    for row in rows:
        ours = [s["ours"] for s in row["seeds"]]
        shown = next((f for f in ours if f["recovered"]), ours[0])
        gplearn = [s["gplearn"] for s in row["seeds"] if "gplearn" in s]
        errors = {}
        for who, *_ in SERIES:  # "-" where it did not run
            value = median(extrapolation(row, who))
            errors[who] = "-" if math.isnan(value) else f"{value:.0e}"
        lines.append(
            [
                row["equation"],
                row["form"],
                f"`{row['formula']}`",
                f"{sum(f['recovered'] for f in ours)}/{len(ours)}",
                f"`{shorter(shown['formula'])}`",
                errors["ours"],
                f"{sum(g['recovered'] for g in gplearn)}/{len(gplearn)}"
                if gplearn
                else "-",
                errors["gplearn"],
                errors["dense"],
            ]
        )
    return header, lines


def figure(rows, plt):
    """Median extrapolation error per equation: ours, gplearn, ReLU."""
    fig, ax = plt.subplots(figsize=(10, 3.6), dpi=90)
    index = np.arange(len(rows))
    for i, (who, label, marker, size) in enumerate(SERIES):
        values = [median(extrapolation(r, who)) for r in rows]
        if not all(math.isnan(v) for v in values):
            kwargs = {"s": size, "marker": marker, "color": f"C{i}", "label": label}
            ax.scatter(index, np.maximum(values, 1e-17), **kwargs)
    ax.axhline(EXTRAPOLATED, color="grey", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.set_ylabel("median relative error,\nextrapolation")
    ax.set_xticks(index[::5])
    ax.set_xlabel("equation (in the table's order)")
    for i, r in enumerate(rows):
        if i == 0 or r["form"] != rows[i - 1]["form"]:
            ax.axvline(i - 0.5, color="lightgrey", linewidth=0.6)
    ax.legend(loc="upper left", fontsize=8, ncol=3)
    fig.tight_layout()
    return fig
