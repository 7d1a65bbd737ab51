"""Tables of docs/experiments/mnist-counting.md, from the records of
`examples/mnist_counting.py` beside the page (one JSON per run)."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record

PAGE = "experiments/mnist-counting/"
LENGTHS = ("1", "10", "100", "1000")


def count_2018(steps, seed):
    """The record of a counting run with the paper's 2018 convnet."""
    name = f"mnist_count_mnist_pytorch2018_no_dropout_{steps // 1000}k_s{seed}.json"
    return record(PAGE + name)["results"]["nau"]


def sum_2018(steps, seed):
    """The record of an addition run with the paper's 2018 convnet."""
    name = f"mnist_sum_mnist_pytorch2018_no_dropout_s{seed}_{steps // 1000}k.json"
    return record(PAGE + name)["results"]["nau"]


def paper(task):
    """Table 2's NAC row of `task` (`count` or `sum`)."""
    from nalu_research.tasks.mnist import PAPER_TABLE_2

    return PAPER_TABLE_2[task]["nac"]


def _g3(value):
    return f"{value:#.3g}".rstrip(".")


def figures(result, test="test"):
    """Single test digits (%) and the MAE at lengths 10, 100 and 1,000."""
    return [
        result[test]["1"]["accuracy"],
        *(result[test][n]["mae"] for n in LENGTHS[1:]),
    ]


def _cells(values, bold=False):
    accuracy, *errors = values
    cells = [f"{accuracy:.2f}%", *map(_g3, errors)]
    return [f"**{c}**" for c in cells] if bold else cells


def _spread(columns, bold=False, brackets="[]"):
    """Per column of per-seed values: `median [min, max]`."""
    cells = []
    for i, values in enumerate(columns):
        median, low, high = np.median(values), min(values), max(values)
        if i == 0:
            text = f"{median:.2f}%"
            ends = (
                f"{low:.2f}, {high:.2f}"
                if brackets == "[]"
                else f"{low:.2f}-{high:.2f}"
            )
        else:
            text = _g3(median)
            ends = (
                f"{_g3(low)}, {_g3(high)}"
                if brackets == "[]"
                else f"{_g3(low)}-{_g3(high)}"
            )
        text = f"**{text}**" if bold else text
        cells.append(f"{text} {brackets[0]}{ends}{brackets[1]}")
    return cells


def counting_seeds():
    """Counting with the 2018 convnet: seeds 3 and 4 at 10,000 steps, the
    medians of the five seeds at 10,000 and at 12,000 steps, the paper's."""
    rows = []
    for seed in (3, 4):
        result = count_2018(10_000, seed)
        rows.append(
            [
                f"seed {seed}, 10,000 steps",
                *_cells(figures(result)),
                f"{result['train_digits']['accuracy_all']:.2f}%",
            ]
        )
    for steps, bold in ((10_000, True), (12_000, False)):
        results = [count_2018(steps, seed) for seed in range(5)]
        columns = list(zip(*(figures(r) for r in results), strict=True))
        train = np.median([r["train_digits"]["accuracy_all"] for r in results])
        name = f"{steps:,} steps, median of 5"
        rows.append(
            [
                f"**{name}** [min, max]" if bold else f"{name} [min, max]",
                *_spread(columns, bold),
                f"{train:.2f}%",
            ]
        )
    accuracy, *errors = paper("count")
    rows.append(
        ["paper's NAC (MNIST)", f"{accuracy:g}%", *(f"{e:g}" for e in errors), ""]
    )
    header = [
        "counting, `NAUCell`, 2018 convnet, no dropout",
        "length 1",
        "length 10",
        "length 100",
        "length 1000",
        "training images",
    ]
    return "\n".join(markdown_table(header, rows))


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
        name = "median of 4 (range)"
        rows.append(
            [
                f"**{name}**" if bold else name,
                f"{at:,}",
                *_spread(columns[:5], bold, "()"),
                f"{np.median(columns[5]):.2f}%",
            ]
        )
    accuracy, *errors = paper("sum")
    rows.append(
        [
            "paper's NAC",
            "not stated",
            f"{accuracy:g}%",
            *(f"{e:g}" for e in errors),
            "",
            "",
        ]
    )
    header = [
        "addition, 2018 convnet, no dropout",
        "steps",
        "length 1",
        "length 10",
        "length 100",
        "length 1000",
        "length 1000, state snapped",
        "training images (first 10,000)",
    ]
    return "\n".join(markdown_table(header, rows))


def _at(result, step):
    """Single test digits (%) at the checkpoint of `step`."""
    index = result["epoch_steps"].index(step)
    return result["epoch_metrics"]["length_1_accuracy"][index]


def addition_checkpoints(steps, *marks):
    """Single test digits (%) of the four addition seeds with the 2018
    convnet at the checkpoints `marks` (thousands of steps) of the run to
    `steps`, and their median. In bold: each seed's first checkpoint at or
    above the paper's 97.6%, its last one if above, and the median's last."""
    results = [sum_2018(int(steps), seed) for seed in range(4)]
    marks = [int(m) * 1000 for m in marks]
    goal = paper("sum")[0]
    rows = []
    for seed, result in enumerate(results):
        values = [_at(result, m) for m in marks]
        cells = [f"{v:.2f}" for v in values]
        above = [i for i, v in enumerate(values) if v >= goal]
        for i in above[:1] + above[-1:]:
            if i == above[0] or i == len(values) - 1:
                cells[i] = f"**{cells[i]}**"
        rows.append([f"2018, seed {seed}", *cells])
    medians = [f"{np.median([_at(r, m) for r in results]):.2f}" for m in marks]
    medians[-1] = f"**{medians[-1]}**"
    rows.append(["**median of 4**", *medians])
    header = ["convnet, seed", *(f"{m // 1000}" for m in marks)]
    return "\n".join(markdown_table(header, rows))


def counting_checkpoints(*seeds):
    """Single test digits (%) per checkpoint of the counting runs with the
    2018 convnet (10,000 steps)."""
    results = {int(s): count_2018(10_000, int(s)) for s in seeds}
    marks = results[int(seeds[0])]["epoch_steps"]
    rows = [
        [f"seed {seed}", *(f"{_at(result, m):.2f}" for m in marks)]
        for seed, result in results.items()
    ]
    header = ["convnet, seed", *(f"{m // 1000}" for m in marks)]
    return "\n".join(markdown_table(header, rows))


def count_2020(seed):
    """The record of a counting run with the default (2020) convnet, 10,000
    steps, no dropout."""
    suffix = f"_s{seed}" if seed else ""
    name = f"mnist_count_mnist_no_dropout_10k{suffix}.json"
    return record(PAGE + name)["results"]["nau"]


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
    rows.append([f"**{name}** [min, max]", *_spread(columns, bold=True)])
    if beside:
        other, _, anchor = beside.partition(":")
        others = [runs[other](int(s)) for s in seeds.split(",")]
        medians = [np.median(c) for c in zip(*map(figures, others), strict=True)]
        label = f"{other} convnet{' (the default)' if other == '2020' else ''}"
        rows.append([f"{label}, median of {len(others)} ([above]({anchor}))",
                     *_cells(medians)])  # fmt: skip
    accuracy, *errors = paper("count")
    rows.append(["paper's NAC (MNIST)", f"{accuracy:g}%", *(f"{e:g}" for e in errors)])
    header = ["counting, `NAUCell`, no dropout, 10,000 steps", "length 1",
              "length 10", "length 100", "length 1000"]  # fmt: skip
    return "\n".join(markdown_table(header, rows))
