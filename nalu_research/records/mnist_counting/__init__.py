"""Tables of docs/experiments/mnist-counting.md, from the records of
`examples/mnist_counting.py` beside the page (one JSON per run): those
declared as data in `mnist_counting.tables` (drawn by `table` and
`checkpoints`), and those drawn by a function of their own, here."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records.mnist_counting.cells import (
    LENGTH_COLUMNS,
    _g3,
    checkpoints_of,
    figures,
    paper,
    paper_row,
    result,
    series,
    spreads,
    table_of,
)
from nalu_research.records.mnist_counting.tables import (
    CHECKPOINT_TABLES,
    COUNT_2018,
    DEFAULT_16K,
    SUM_2018,
    TABLES,
)


def table(name):
    """The table `name` of `tables.TABLES`: per row its label(s) and cells
    (most often the figures at the test lengths)."""
    return table_of(*TABLES[name]())


def checkpoints(name):
    """The table `name` of `tables.CHECKPOINT_TABLES`: per row a label and
    a metric at each checkpoint (thousands of steps)."""
    return checkpoints_of(*CHECKPOINT_TABLES[name]())


def count_2018(steps, seed):
    """The record of a counting run with the paper's 2018 convnet."""
    return result(COUNT_2018.format(steps // 1000, seed))


def sum_2018(steps, seed):
    """The record of an addition run with the paper's 2018 convnet."""
    return result(SUM_2018.format(seed, steps // 1000))


def count_2020(seed):
    """The record of a counting run with the default (2020) convnet, 10,000
    steps, no dropout."""
    return result(f"mnist_count_mnist_no_dropout_10k{f'_s{seed}' if seed else ''}.json")


def _cells(values, bold=False):
    accuracy, *errors = values
    cells = [f"{accuracy:.2f}%", *map(_g3, errors)]
    return [f"**{c}**" for c in cells] if bold else cells


def _paper(task):
    """Table 2's NAC row of `task`, as text."""
    return [cell.text for cell in paper_row(task)]


def counting_seeds():
    """Counting with the 2018 convnet: seeds 3 and 4 at 10,000 steps, the
    medians of the five seeds at 10,000 and at 12,000 steps, the paper's."""
    rows = []
    for seed in (3, 4):
        found = count_2018(10_000, seed)
        train = f"{found['train_digits']['accuracy_all']:.2f}%"
        rows.append([f"seed {seed}, 10,000 steps", *_cells(figures(found)), train])
    for steps, bold in ((10_000, True), (12_000, False)):
        results = [count_2018(steps, seed) for seed in range(5)]
        columns = list(zip(*(figures(r) for r in results), strict=True))
        train = np.median([r["train_digits"]["accuracy_all"] for r in results])
        name = f"{steps:,} steps, median of 5"
        name = f"**{name}**" if bold else name
        rows.append([f"{name} [min, max]", *spreads(columns, bold), f"{train:.2f}%"])
    rows.append(["paper's NAC (MNIST)", *_paper("count"), ""])
    header = ["counting, `NAUCell`, 2018 convnet, no dropout", *LENGTH_COLUMNS]
    return "\n".join(markdown_table([*header, "training images"], rows))


def addition_seeds(steps, *before):
    """Addition with the 2018 convnet at `steps` (each seed's last
    checkpoint; in bold each column's best seed), the medians of the four
    seeds there and at each of the step counts `before`, and the paper's
    NAC."""
    steps, before = int(steps), [int(b) for b in before]

    def row(result):
        return [
            *figures(result),
            figures(result, "test_state_snapped")[3],
            result["train_digits"]["accuracy_all"],
        ]

    results = [row(sum_2018(steps, seed)) for seed in range(4)]
    best = [max if i == 0 else min for i in range(5)]
    rows = []
    for seed, values in enumerate(results):
        cells = [f"{values[0]:.2f}%", *map(_g3, values[1:5]), f"{values[5]:.2f}%"]
        for i in range(5):
            if values[i] == best[i](v[i] for v in results):
                cells[i] = f"**{cells[i]}**"
        rows.append([f"seed {seed}", f"{steps:,}", *cells])
    for at, bold in ((steps, True), *((b, False) for b in before)):
        here = results if at == steps else [row(sum_2018(at, s)) for s in range(4)]
        columns = list(zip(*here, strict=True))
        name = "**median of 4 (range)**" if bold else "median of 4 (range)"
        cells = [*spreads(columns[:5], bold, "()"), f"{np.median(columns[5]):.2f}%"]
        rows.append([name, f"{at:,}", *cells])
    rows.append(["paper's NAC", "not stated", *_paper("sum"), "", ""])
    header = ["addition, 2018 convnet, no dropout", "steps", *LENGTH_COLUMNS]
    header += ["length 1000, state snapped", "training images (first 10,000)"]
    return "\n".join(markdown_table(header, rows))


def _at(result, step):
    """Single test digits (%) at the checkpoint of `step`."""
    index = result["epoch_steps"].index(step)
    return result["epoch_metrics"]["length_1_accuracy"][index]


def addition_checkpoints(steps, *marks):
    """Single test digits (%) of the four addition seeds with the 2018
    convnet at the checkpoints `marks` (thousands of steps) of the run to
    `steps`, and their median. In bold: each seed's first checkpoint at or
    above the paper's 97.6%, its last one if above, and the median's last.
    A last mark `with-2020` adds the medians of the four seeds with the
    default (2020) convnet at the checkpoints they reached."""
    default = marks[-1] == "with-2020"
    marks = marks[:-1] if default else marks
    results = [sum_2018(int(steps), seed) for seed in range(4)]
    marks = [int(m) * 1000 for m in marks]
    goal = paper("sum")[0]
    rows = []
    for seed, run in enumerate(results):
        values = [_at(run, m) for m in marks]
        cells = [f"{v:.2f}" for v in values]
        above = [i for i, v in enumerate(values) if v >= goal]
        for i in above[:1] + above[-1:]:
            if i == above[0] or i == len(values) - 1:
                cells[i] = f"**{cells[i]}**"
        rows.append([f"2018, seed {seed}", *cells])
    medians = [f"{np.median([_at(r, m) for r in results]):.2f}" for m in marks]
    medians[-1] = f"**{medians[-1]}**"
    rows.append(["**median of 4**", *medians])
    if default:
        runs = [result(w) for w in DEFAULT_16K]

        def median(m):
            return f"{np.median([_at(r, m) for r in runs]):.2f}" if m <= 16000 else "-"

        label = "2020 (the default), median of seeds 0-3 ([above](#seed-1-to-26000-"
        label += "steps-with-its-state-weight-snapped-2026-11-27-sixth-session))"
        rows.append([label, *map(median, marks)])
    header = ["convnet, seed", *(f"{m // 1000}" for m in marks)]
    return "\n".join(markdown_table(header, rows))


def counting_checkpoints(*seeds):
    """Single test digits (%) per checkpoint of the counting runs with the
    2018 convnet (10,000 steps)."""
    marks = [m // 1000 for m in count_2018(10_000, seeds[0])["epoch_steps"]]
    metric = "length_1_accuracy"
    rows = [
        (f"seed {s}", series(COUNT_2018.format(10, s), metric, ".2f")) for s in seeds
    ]
    return checkpoints_of("convnet, seed", marks, rows)


def counting(convnet, seeds, beside=None):
    """Counting (`NAUCell`, no dropout, 10,000 steps) with the `convnet`
    (`2018` or `2020`) on each seed of `seeds` (`0,1,2`), their median
    [min, max], the medians with the convnet `beside` (and its section's
    anchor on this page, `2020:#anchor`), and the paper's NAC."""
    runs = {"2018": lambda s: count_2018(10_000, s), "2020": count_2020}
    results = [runs[convnet](int(s)) for s in seeds.split(",")]
    rows = [
        [f"seed {s}", *_cells(figures(r))]
        for s, r in zip(seeds.split(","), results, strict=True)
    ]
    columns = list(zip(*(figures(r) for r in results), strict=True))
    name = f"median of {len(results)}"
    name = f"{convnet} convnet, {name}" if beside else name
    rows.append([f"**{name}** [min, max]", *spreads(columns, bold=True)])
    if beside:
        other, _, anchor = beside.partition(":")
        others = [runs[other](int(s)) for s in seeds.split(",")]
        medians = [np.median(c) for c in zip(*map(figures, others), strict=True)]
        label = f"{other} convnet{' (the default)' if other == '2020' else ''}"
        label = f"{label}, median of {len(others)} ([above]({anchor}))"
        rows.append([label, *_cells(medians)])
    rows.append(["paper's NAC (MNIST)", *_paper("count")])
    header = ["counting, `NAUCell`, no dropout, 10,000 steps", *LENGTH_COLUMNS]
    return "\n".join(markdown_table(header, rows))
