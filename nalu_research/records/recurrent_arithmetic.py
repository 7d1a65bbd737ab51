"""Tables of docs/experiments/recurrent-arithmetic.md, from the records of
`examples/recurrent_arithmetic.py` beside the page."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record
from nalu_research.records.static_arithmetic import SYMBOLS

PAGE = "experiments/recurrent-arithmetic/"
TEN_SEEDS = PAGE + "recurrent_arithmetic_10.json"
NAU = PAGE + "recurrent_arithmetic_nau.json"
OURS = PAGE + "recurrent_arithmetic_ours.json"
NAU_NMU_10 = PAGE + "recurrent_arithmetic_nau_nmu_10.json"


def fmt(value):
    """A figure on the paper's scale: 3 digits, `>999` above 999."""
    if value is None:
        return "-"
    return ">999" if not np.isfinite(value) or value > 999 else f"{value:.3g}"


def runs(path, operation, model):
    return [
        r
        for r in record(path)["runs"]
        if r["operation"] == operation and r["model"] == model
    ]


def _paper(model, operation):
    from nalu_research.tasks.recurrent_arithmetic import PAPER_TABLE_1_RECURRENT

    return PAPER_TABLE_1_RECURRENT.get(model, {}).get(operation)


def _snapped(run):
    """A run's extrapolation error after `snap_weights`, the trained one
    where it refused."""
    return run.get("snapped_extrapolation_error", run["extrapolation"])


def _bold(text, bold):
    return f"**{text}**" if bold else text


def paper_scale(split):
    """Median `split` error over the 10 seeds of every model, the paper's
    Table 1 in brackets."""
    index = ("interpolation", "extrapolation").index(split)
    arguments = record(TEN_SEEDS)["arguments"]
    table = []
    for operation in arguments["operations"]:
        cells = []
        for model in arguments["models"]:
            here = runs(TEN_SEEDS, operation, model)
            paper = _paper(model, operation)
            cells.append(
                fmt(np.median([r[split] for r in here]))
                + ("*" if any(r["diverged"] for r in here) else "")
                + (f" ({fmt(paper[index])})" if paper else "")
            )
        table.append([SYMBOLS[operation], *cells])
    header = ["op", *(_name(m) for m in arguments["models"])]
    return "\n".join(markdown_table(header, table))


def spread():
    """The NAC's and the NALU's extrapolation over the 10 seeds: median
    [min, max], and the seeds below 1 on the paper's scale."""

    def cells(here):
        errors = np.array([r["extrapolation"] for r in here])
        low = fmt(errors.min()) if errors.min() >= 1 else f"{errors.min():.2g}"
        text = f"{fmt(np.median(errors))} [{low}, {fmt(errors.max())}]"
        return [text, f"{int(np.sum(errors < 1))}/{len(errors)}"]

    table = [
        [
            SYMBOLS[op],
            *cells(runs(TEN_SEEDS, op, "nac")),
            *cells(runs(TEN_SEEDS, op, "nalu")),
        ]
        for op in record(TEN_SEEDS)["arguments"]["operations"]
    ]
    header = ["op", "NAC", "NAC seeds < 1", "NALU", "NALU seeds < 1"]
    return "\n".join(markdown_table(header, table))


def nau():
    """The NAUCell beside the NAC in the same run (10 seeds): medians on the
    paper's scale (the paper's NAC in brackets), and after `snap_weights`.
    In bold: the paper's 0.0 met (below 0.05), as trained on every seed, or
    in the median once snapped."""
    table = []
    for operation in record(NAU)["arguments"]["operations"]:
        mine, nac = runs(NAU, operation, "nau"), runs(NAU, operation, "nac")
        paper = _paper("nac", operation)[1]
        trained = [r["extrapolation"] for r in mine]
        every = max(trained) < 0.05
        snapped = np.median([_snapped(r) for r in mine])
        count = sum(r["snapped"] for r in mine)
        table.append(
            [
                SYMBOLS[operation],
                fmt(np.median([r["interpolation"] for r in mine])),
                f"{_bold(fmt(np.median(trained)), every)} ({fmt(paper)})",
                f"{_bold(fmt(snapped), not every and snapped < 0.05)} "
                f"({count}/{len(mine)})",
                f"{fmt(np.median([r['interpolation'] for r in nac]))} "
                f"({fmt(_paper('nac', operation)[0])})",
                f"{fmt(np.median([r['extrapolation'] for r in nac]))} ({fmt(paper)})",
            ]
        )
    header = [
        "op",
        "NAU interpolation",
        "NAU extrapolation",
        "after `snap_weights` (seeds snapped)",
        "NAC interpolation",
        "NAC extrapolation",
    ]
    return "\n".join(markdown_table(header, table))


def ours():
    """NAUCell then NMU, or then RealNPU (3 seeds): the medians of the
    extrapolation error as trained and after `snap_weights`, the seeds it
    verified (and over 10 seeds where they ran), beside the paper's NAC and
    NALU. In bold: what snapped on every seed."""
    table = []
    for operation in ("mul", "square", "sub", "add", "div", "sqrt"):
        mine = runs(OURS, operation, "nau-nmu")
        count = sum(r["snapped"] for r in mine)
        every = count == len(mine)
        seeds = _bold(f"{count}/{len(mine)}", every)
        if count == 1:
            (one,) = (r for r in mine if r["snapped"])
            seeds += f" (seed {one['seed']}: {_snapped(one):.2g})"
        ten = runs(NAU_NMU_10, operation, "nau-nmu")
        if ten:
            seeds += (
                f"; {sum(r['snapped'] for r in ten)}/{len(ten)} over {len(ten)} seeds"
            )
        paper = (_paper("nac", operation)[1], _paper("nalu", operation)[1])
        table.append(
            [
                SYMBOLS[operation],
                fmt(np.median([r["extrapolation"] for r in mine])),
                _bold(fmt(np.median([_snapped(r) for r in mine])), every),
                seeds,
                fmt(
                    np.median(
                        [
                            r["extrapolation"]
                            for r in runs(OURS, operation, "nau-realnpu")
                        ]
                    )
                ),
                f"{fmt(paper[0])} / {fmt(paper[1])}",
            ]
        )
    header = [
        "op",
        "NAU-NMU extrapolation (trained)",
        "after `snap_weights`",
        "seeds snapped",
        "NAU-RealNPU (trained)",
        "paper's NAC / NALU",
    ]
    return "\n".join(markdown_table(header, table))


def _name(model):
    """The table's name of `model`, as the experiment names it."""
    from nalu_research.experiments.recurrent_arithmetic import MODELS

    return MODELS[model][0]
