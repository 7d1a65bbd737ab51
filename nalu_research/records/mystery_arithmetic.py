"""Tables of docs/experiments/mystery-arithmetic.md, from the records beside
the page."""

from nalu_research.monitoring import markdown_table
from nalu_research.records import record

DIVISION = "experiments/mystery-arithmetic/mystery_nau_nmru_division.json"
# The arms of the division record, with their rows' names.
ARMS = {
    "nau_20_normalized": "**normalized MSE (the default)**",
    "nau_20_mse": "`--loss mse`",
    "nau_10_normalized_single_pass_search": (
        "first version: `NAU(10)` beside the NMRU, normalized MSE, one-pass search"
    ),
    "nau_10_mse_single_pass_search": "`NAU(10)`, `--loss mse`, one-pass search",
}


def division():
    """NAU-NMRU on the mystery task with division, per arm: the tasks solved
    on every output (Wilson 95% interval from 10 seeds on), the outputs and
    the quotients solved."""
    from nalu_research.tasks.metrics import wilson_interval

    rows = []
    for arm, name in ARMS.items():
        seeds = record(DIVISION)[arm]
        tasks = sum(len(s["outputs_solved"]) == len(s["task"]) for s in seeds)
        outputs = sum(len(s["outputs_solved"]) for s in seeds)
        every = sum(len(s["task"]) for s in seeds)
        quotients = [
            (i in s["outputs_solved"])
            for s in seeds
            for i, t in enumerate(s["task"])
            if "/" in t
        ]
        bold = tasks == len(seeds)
        cells = [
            f"{tasks}/{len(seeds)}",
            f"{outputs}/{every}",
            f"{sum(quotients)}/{len(quotients)}",
        ]
        if bold:
            cells = [f"**{c}**" for c in cells]
        if len(seeds) >= 10:
            low, high = wilson_interval(tasks, len(seeds))
            cells[0] += f" [{low:.2f}, {high:.2f}]"
        else:
            name += f" (seeds 0-{len(seeds) - 1})"
        rows.append([name, *cells])
    header = [
        "NAU-NMRU, 10 seeds",
        "tasks solved on every output",
        "outputs solved",
        "quotients solved",
    ]
    return "\n".join(markdown_table(header, rows))


NAU_NMU = "experiments/mystery-arithmetic/mystery_nau_nmu.json"
# Typed from the runs, not in the record (it keeps the search's result only):
# each seed's outputs solved by rounding the weights alone.
BY_ROUNDING = {
    "seed 0": "9 of 10 (`y5 = x27 + x81 - 1`, relative test error 4.7e-04)",
    "seed 1": "10 of 10",
    "seed 2": "10 of 10",
}


def nau_nmu():
    """The NAU-NMU per seed: the relative test error of the trained and the
    snapped model, the outputs solved (in bold where all are), and the
    outputs solved by rounding alone (typed, `BY_ROUNDING`)."""
    import re

    rows = []
    for seed, run in record(NAU_NMU)["runs"].items():
        snapped, trained = re.search(
            r"relative test error (\S+) \(trained: (\S+)\)", run["snapped"]["verdict"]
        ).groups()
        solved = f"{len(run['snapped']['solved'])} of {len(run['outputs'])}"
        if len(run["snapped"]["solved"]) == len(run["outputs"]):
            solved = f"**{solved}**"
        rows.append(
            [
                seed.split()[1],
                f"{float(trained):.2g}",
                f"{float(snapped):.1e}",
                solved,
                BY_ROUNDING[seed],
            ]
        )
    header = [
        "seed",
        "trained: relative test error",
        "snapped: relative test error",
        "outputs solved",
        "by rounding alone",
    ]
    return "\n".join(markdown_table(header, rows))
