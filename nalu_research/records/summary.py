"""The summary tables (README.md's which-unit table, the home page's units
and the experiments index's results), from the records of the experiment
pages. Their links are written from the repository's root (`docs/...`);
`root` rewrites them for a page elsewhere (`""` in docs/, `"../"` below it)."""

import numpy as np

from nalu_research.monitoring import markdown_table
from nalu_research.records import first_contact, record

# The unit README.md recommends per task of the first contact.
RECOMMENDED = {
    "a+b": "NAU",
    "a-b": "NAU",
    "a*b": "NMU",
    "a/b": "RealNPU",
    "signed a*b": "NMU",
}


def which_unit():
    """Seeds within 1e-6 of the first contact's tasks, as trained and after
    `snap_weights`, for `Dense`, `NAC`, `NALU` and the recommended unit."""

    def within(row, snapped=False):
        return first_contact.solved(
            row["snapped"] if snapped else row["errors"]["final"], 1e-6
        )

    table = []
    for operation, unit in RECOMMENDED.items():
        rows = {r["unit"]: r for r in first_contact.rows(operation)}
        best = f"`{unit}`: {within(rows[unit])}"
        if within(rows[unit], True) != within(rows[unit]):
            best += f", {within(rows[unit], True)} snapped"
        table.append(
            [
                operation,
                within(rows["Dense"]),
                within(rows["NAC"]),
                within(rows["NAC"], True),
                within(rows["NALU"]),
                within(rows["NALU"], True),
                best,
            ]
        )
    header = [
        "task",
        "`Dense`",
        "`NAC`",
        "`NAC` snapped",
        "`NALU`",
        "`NALU` snapped",
        "recommended",
    ]
    return "\n".join(markdown_table(header, table))


def _static():
    from nalu_research.records.static_arithmetic import RECORD, SYMBOLS, runs

    operations = record(RECORD)["arguments"]["operations"]

    def wins(model, op):
        found = runs(RECORD, model, op)
        return sum(r["success"] for r in found), len(found)

    nalu = {wins("nalu", op) for op in operations}
    nalu = (
        f"NALU {'/'.join(map(str, nalu.pop()))} on every operation"
        if len(nalu) == 1
        else "NALU "
        + ", ".join(
            f"{SYMBOLS[op]} {w}/{n}" for op in operations for w, n in [wins("nalu", op)]
        )
    )
    nac = ", ".join(
        f"{SYMBOLS[op]} {w}/{n}" for op in operations for w, n in [wins("nac", op)] if w
    )
    return f"{nalu}; NAC {nac}"


def _units():
    from nalu_research.records import units_benchmark as units
    from nalu_research.records.static_arithmetic import runs

    def share(path, model="nmu", op="mul"):
        found = runs(path, model, op)
        return f"{sum(r['success'] for r in found)}/{len(found)}"

    add, sub = share(units.UNITS, "nau", "add"), share(units.UNITS, "nau", "sub")
    nau = f"NAU {add} on +, -" if add == sub else f"NAU {add} on +, {sub} on -"
    return (
        f"{nau}; NMU on * {share(units.ANCHOR_5M)} in their 5M iterations (theirs "
        f"98/100), {share(units.CENTERED)} in 200k with `centered_gradient`"
    )


def _mystery():
    from nalu_research.records import mystery_arithmetic

    nmu = record("experiments/mystery-arithmetic/mystery_nau_nmu.json")["runs"]
    solved = sum(
        run["snapped"]["solved"] == list(range(len(run["snapped"]["formulas"])))
        for run in nmu.values()
    )
    division = record(mystery_arithmetic.DIVISION)["nau_20_normalized"]
    every = sum(len(s["outputs_solved"]) == len(s["task"]) for s in division)
    return (
        "none of the blog's models solves it; our NAU-NMU, snapped (`search=True`), "
        f"solves every output on {solved} of {len(nmu)} seeds; with `/` added, our "
        f"NAU-NMRU on {every} of {len(division)}"
    )


def _recurrent():
    from nalu_research.records import recurrent_arithmetic as recurrent

    add = recurrent.runs(recurrent.NAU, "add", "nau")
    sub = recurrent.runs(recurrent.NAU, "sub", "nau")
    met = sum(r["extrapolation"] < 0.05 for r in add)  # the paper's 0.0, rounded
    snapped = sum(r["snapped"] for r in sub)
    square = recurrent.runs(recurrent.NAU_NMU_10, "square", "nau-nmu")
    product = recurrent.runs(recurrent.NAU_NMU_10, "mul", "nau-nmu")
    seeds = record(recurrent.TEN_SEEDS)["arguments"]["seeds"]
    return (
        f"the paper's models do not extrapolate ({seeds} seeds); `NAUCell` (ours) "
        f"does on + ({met}/{len(add)}), on - once snapped ({snapped}/{len(sub)}), "
        "and under an `NMU` on a^2 and a*b "
        f"({sum(r['snapped'] for r in square)}/{len(square)}, "
        f"{sum(r['snapped'] for r in product)}/{len(product)} snapped)"
    )


def _number_words():
    from nalu_research.records import number_words as words

    runs = [r for s in words.SPLIT_SEEDS for r in words._split_runs("mse_drop", s)]
    medians = [
        np.median([r["test"] for r in words._split_runs("mse_drop", s)])
        for s in words.SPLIT_SEEDS
    ]
    step = record(words.PAGE + "number_translation_step_mse.json")
    size, rate = step["chosen"]["LSTM + NALU"]
    chosen = step["runs"]["LSTM + NALU"][f"size {size}, lr {rate:g}"]
    return (
        "a NALU over word pairs (not the paper's model): test MAE "
        f"{words.spread([r['test'] for r in runs])} over {len(words.SPLIT_SEEDS)} "
        f"splits x 10 seeds (split medians {words.g3(min(medians))} to "
        f"{words.g3(max(medians))}); the paper's LSTM + NALU: "
        f"{words.g3(np.median([r['test'] for r in chosen]))} median"
    )


def _program():
    from nalu_research.records import program_evaluation as program

    def median(path, model):
        return np.median([s["final"]["test"] for s in record(path)["results"][model]])

    at_1m = record(program.STEPS_1M)["results"]["NALU"]
    diverged = sum(bool(s["diverged"]) for s in at_1m)
    return (
        f"NALU {median(program.STEPS_100K, 'NALU'):.1f}% of digits at 100k steps "
        f"(LSTM {median(program.STEPS_100K, 'LSTM'):.1f}%), "
        f"{median(program.STEPS_1M, 'NALU'):.1f}% at the paper's 1M "
        f"({'one' if diverged == 1 else diverged} seed of {len(at_1m)} diverged)"
    )


def _counting():
    from nalu_research.records import mnist_counting as counting

    count = [counting.figures(counting.count_2018(10_000, s)) for s in range(5)]
    paper = counting.paper("count")
    medians = [np.median(column) for column in zip(*count, strict=True)]
    beaten = all(f[i] < paper[i] for f in count for i in (1, 2, 3))
    single = [r["test"]["1"]["accuracy"] for r in
              (counting.sum_2018(72_000, s) for s in range(4))]  # fmt: skip
    total = counting.paper("sum")[0]
    met = "met" if np.median(single) >= total else "**not met**"
    return (
        "our `NAUCell`, medians: counting lengths 10, 100, 1000 at "
        f"{', '.join(counting._g3(m) for m in medians[1:])}"
        f"{' (beaten on every seed)' if beaten else ''}, single digits "
        f"{medians[0]:.2f}%; addition's single digits {np.median(single):.2f}% "
        f"({met}, paper {total:g}%)"
    )


def _parity():
    from nalu_research.records import mnist_parity as parity

    data = record(parity.MERGED)
    seeds = len(data["results"]["NAC"])
    cells = {}
    compared = ("NAC", "Wx+b")
    for variant in compared:
        mean, low, high = parity.mean_interval(
            [r["test_accuracy"] for r in data["results"][variant]]
        )
        cells[variant] = f"{variant} {mean:.2f}% [{low:.2f}, {high:.2f}]"
    paper = parity.PAPER_TABLE_4
    beat = all(
        r["test_accuracy"] >= paper[v] for v in compared for r in data["results"][v]
    )
    mean, low, high = parity.mean_interval(parity.lead())
    met = ": both meet or beat the paper's on every seed" if beat else ""
    return (
        f"MNIST, canvases drawn anew for every batch, {data['arguments']['epochs']} "
        f"epochs, {seeds} seeds: {cells['NAC']}, {cells['Wx+b']}"
        f"{met}; "
        f"the NAC's lead is not reproduced ({mean:+.2f} points paired "
        f"[{low:+.2f}, {high:+.2f}], paper {paper['NAC'] - paper['Wx+b']:+.1f})"
    )


def _grid():
    from nalu_research.records import grid_world

    runs = [r for r in record(grid_world.COUNTER)["runs"]]
    first = record(grid_world.RECORD)["arguments"]["eval_instructions"][0]

    def at(agent, t):
        return [
            r["evaluation"][t - first]["reward"] for r in runs if r["agent"] == agent
        ]

    last = record(grid_world.RECORD)["arguments"]["eval_instructions"][1]
    positive = sum(v > 0 for v in at("a2c_counter", last))
    seeds = record(grid_world.COUNTER)["arguments"]["seeds"]
    return (
        f"A2C + NAC holds 1-2 steps of T longer than A2C ({seeds} seeds); our A2C + a "
        f"`NAUCell` counter: {np.median(at('a2c_counter', 19)):+.2f} at T = 19 (median "
        f"of {seeds} seeds; NAC {np.median(at('a2c_nac', 19)):+.2f}), "
        f"{'one seed' if positive == 1 else f'{positive} seeds'} to T = {last}"
    )


def _serving():
    from nalu_research.records.serving_benchmark import RECORD

    rows = record(RECORD)["rows_per_second"]
    return (
        f"{rows['dense'] / rows['nalu']:.2f}x at batch 1,024; NALU with XLA "
        f"{rows['dense'] / rows['nalu_xla']:.2f}x a plain Dense"
    )


def _identity():
    from nalu_research.records.identity import RECORD

    runs = record(RECORD)["runs"]
    mean = {
        name: float(np.mean([r["table_mae"] for r in runs if r["model"] == name]))
        for name in ("None", "NAC", "Tanh")
    }
    return (
        f"linear model MAE {mean['None']:.2g}, NAC {mean['NAC']:.2g}, Tanh "
        f"{mean['Tanh']:.1f} (mean of 3 seeds)"
    )


def _feynman():
    from nalu_research.experiments.feynman.tables import counts as count
    from nalu_research.records.feynman import RECORD

    data = record(RECORD)
    counts = count(data["runs"], data["arguments"]["seeds"])
    forms = ("product", "sum", "rational", "root", "transcendental")
    ours = ", ".join(f"{counts[f]['ours']}/{counts[f]['equations']} {f}" for f in forms)
    return (
        f"recovered exactly on a majority of {data['arguments']['seeds']} seeds: "
        f"{ours}; gplearn, same wall time: {counts['all']['gplearn']}/"
        f"{counts['all']['equations']}"
    )


# README.md's results: the experiment (its page), the paper's claim, and
# what its records measure.
RESULTS = (
    (
        "[Static arithmetic](docs/experiments/static-arithmetic.md), Table 1",
        "NALU extrapolation error 0.0 on +, -, *, a^2, sqrt (0.7 on /)",
        _static,
    ),
    (
        "[Units benchmark](docs/experiments/units-benchmark.md)",
        "NAU 100% on +, -; NMU 98% on * (5M iterations)",
        _units,
    ),
    (
        "[Identity](docs/experiments/identity.md), Figure 1, Table 5",
        "linear model MAE < 0.0001, Tanh 493.65",
        _identity,
    ),
    (
        "[Mystery arithmetic](docs/experiments/mystery-arithmetic.md), the blog",
        "the NALU fits best and comes close",
        _mystery,
    ),
    (
        "[Recurrent arithmetic](docs/experiments/recurrent-arithmetic.md), Table 1",
        "NALU extrapolation error 0 on all but a/b",
        _recurrent,
    ),
    (
        "[Number words](docs/experiments/number-words.md), Table 3",
        "LSTM + NALU test MAE 0.41",
        _number_words,
    ),
    (
        "[Program evaluation](docs/experiments/program-evaluation.md), Figure 4",
        "only the NALU extrapolates to 4 digits",
        _program,
    ),
    (
        "[Counting digits](docs/experiments/mnist-counting.md), Table 2",
        "NAC counts to length 1000 (MAE 3.32); adds single digits at 97.6%",
        _counting,
    ),
    (
        "[Parity](docs/experiments/mnist-parity.md), Table 4",
        "NAC 93.1%, Wx+b 88.1%",
        _parity,
    ),
    (
        "[Grid world](docs/experiments/grid-world.md), Figure 5",
        "the NAC agent holds its reward to T = 19, A3C degrades past 13",
        _grid,
    ),
    (
        "[Feynman equations](docs/experiments/feynman.md), Udrescu & Tegmark",
        "- (our goal: 37/38 products, 6/7 sums, 7/14 rational, 6/12 roots)",
        _feynman,
    ),
    (
        "[Serving](docs/experiments/serving-benchmark.md)",
        "- (our goal: a NALU row at most 1.5x a Dense row)",
        _serving,
    ),
)


def results(root="docs/"):
    """Every experiment of the paper: the paper's claim and what the
    records beside its page measure (links from `root`)."""
    rows = [[name, paper, measured()] for name, paper, measured in RESULTS]
    header = ["experiment", "paper", "measured here"]
    return _linked("\n".join(markdown_table(header, rows)), root)


def _linked(markdown, root):
    """`markdown` with its links to `docs/...` made relative to `root`."""
    return markdown.replace("](docs/", f"]({root}")


def _share(path, model, op):
    from nalu_research.records.static_arithmetic import runs

    found = runs(path, model, op)
    return f"{sum(r['success'] for r in found)}/{len(found)}"


def _by_operation(path, model, operations=None):
    """`a-b 25/25; 0/25 on a+b, a*b`: the operations solved, then the
    others grouped by their share."""
    from nalu_research.records.static_arithmetic import SYMBOLS

    operations = operations or record(path)["arguments"]["operations"]
    shares = {op: _share(path, model, op) for op in operations}
    solved = [
        f"{SYMBOLS[op]} {s}" for op, s in shares.items() if not s.startswith("0/")
    ]
    missed = [SYMBOLS[op] for op, s in shares.items() if s.startswith("0/")]
    if not solved:
        return f"{shares[operations[0]]} on every operation"
    zero = next((s for s in shares.values() if s.startswith("0/")), "")
    return "; ".join(
        [", ".join(solved), *([f"{zero} on {', '.join(missed)}"] if missed else [])]
    )


def _units_measured():
    from nalu_research.records import division_benchmark as division
    from nalu_research.records import npu
    from nalu_research.records import static_arithmetic as static
    from nalu_research.records import units_benchmark as units

    signed = units.SIGNED
    nmru = division.total(division.runs(division.NMRU))[0].split(" = ")[1]
    realnpu = division.total(division.runs(division.REALNPU))[0].split(" = ")[1]
    theirs = [r for r in record(division.THEIR_CODE)["runs"] if r["range"] != 1]
    ranges = sorted({r["range"] for r in theirs})
    ours = [r for r in division.runs(division.NMRU) if r["range"] in ranges]
    two = {
        (m, op, s): _share(path, m, op)
        for path, s in ((npu.TWO_INPUTS, ""), (npu.SIGNED, "signed"))
        for m in npu.MODELS
        for op in record(path)["arguments"]["operations"]
    }
    positive = {two["single-npu", op, ""] for op in ("mul", "div", "sqrt")}
    like = (
        "like the RealNPU"
        if positive == {two["single-realnpu", op, ""] for op in ("mul", "div", "sqrt")}
        else ""
    )
    inalu = {_share(units.INALU, "inalu", op) for op in ("add", "sub", "mul", "div")}
    seeds = record(units.INALU)["arguments"]["seeds"]
    return {
        "NAC": _by_operation(static.RECORD, "nac"),
        "NALU": f"{_by_operation(static.RECORD, 'nalu')}; signed a*b "
        f"{_share(signed, 'nalu', 'mul')}",
        "NAU": f"a+b {_share(units.UNITS, 'nau', 'add')}, a-b "
        f"{_share(units.UNITS, 'nau', 'sub')}; the cell's state weight reaches "
        "1 exactly",
        "NMU": f"signed a*b {_share(signed, 'nmu', 'mul')}, "
        f"{_share(units.SIGNED_CENTER, 'nmu', 'mul')} with "
        f"`NMUUniform(center=0.75)`; a*b on U[1, 2] "
        f"{_share(units.UNITS, 'nmu', 'mul')}, "
        f"{_share(units.CENTERED, 'nmu', 'mul')} in "
        f"{record(units.CENTERED)['arguments']['iterations']:,} iterations "
        "after `NAU(centered_gradient=True)` ([recipe](docs/experiments/"
        "units-benchmark.md#a-tenth-of-the-iterations-the-naus-centered-gradient))",
        "NMRU": f"a/b {_share(units.UNITS, 'nmru', 'div')}; one unit among 10 inputs "
        "([Mistry et al.'s task](docs/experiments/division-benchmark.md)) "
        f"{nmru} (published 91.6%; their own code here: "
        f"{sum(r['success'] for r in theirs)}/{len(theirs)} on ranges "
        f"{', '.join(map(str, ranges))}, ours "
        f"{sum(r['success'] for r in ours)}/{len(ours)})",
        "RealNPU": f"a/b {_share(units.REALNPU_DIV, 'realnpu', 'div')} in "
        f"{record(units.REALNPU_DIV)['arguments']['iterations']:,} "
        "iterations after a NAU, exponents started as a ratio ([recipe]"
        "(docs/experiments/units-benchmark.md#division-two-layers-a-nau-and-"
        f"a-real-npu)); one unit among 10 inputs {realnpu}",
        "NPU": "one unit on two inputs (the NPU paper's task, "
        f"{record(npu.TWO_INPUTS)['arguments']['seeds']} seeds): a*b, a/b, "
        f"sqrt(a) {'/'.join(sorted(positive))} {like}; signed a*b "
        f"{two['single-npu', 'mul', 'signed']} against the RealNPU's "
        f"{two['single-realnpu', 'mul', 'signed']}, signed a/b "
        f"{two['single-npu', 'div', 'signed']} against "
        f"{two['single-realnpu', 'div', 'signed']} ([NPU](docs/units/npu.md))",
        "INALU": f"{'/'.join(sorted(inalu))} on +, -, *, / ({seeds} seeds); signed a*b "
        f"{_share(signed, 'inalu', 'mul')}",
    }


# README.md's units: the layers, their paper, and the key of `_units_measured`
# (None: no measured figure).
UNITS = (
    (
        "`NAC`, `NACCell`",
        "Trask et al., 2018, [Neural Arithmetic Logic Units]"
        "(https://arxiv.org/abs/1808.00508)",
        "NAC",
    ),
    ("`NALU`, `NALUCell`", "Trask et al., 2018", "NALU"),
    (
        "`NAU`, `NAUCell`",
        "Madsen & Johansen, 2020, [Neural Arithmetic Units]"
        "(https://openreview.net/forum?id=H1gNOeHKPS)",
        "NAU",
    ),
    ("`NMU`", "Madsen & Johansen, 2020", "NMU"),
    (
        "`NMRU`",
        "Mistry, Farrahi & Hare, 2021, [Learning Division with Neural "
        "Arithmetic Logic Modules](https://arxiv.org/abs/2110.05177)",
        "NMRU",
    ),
    (
        "`RealNPU`",
        "Heim, Pevný & Šmídl, 2020, [Neural Power Units]"
        "(https://arxiv.org/abs/2006.01681)",
        "RealNPU",
    ),
    ("`NPU`", "Heim, Pevný & Šmídl, 2020", "NPU"),
    (
        "`INALU`",
        "Schlör, Ring & Hotho, 2020, [iNALU: Improved Neural Arithmetic "
        "Logic Unit](https://arxiv.org/abs/2003.07629)",
        "INALU",
    ),
    (
        "`ConfiguredNALU`",
        "Trask et al., 2018, Section 4.4",
        "a NALU whose weights a controller sets ([program evaluation]"
        "(docs/experiments/program-evaluation.md))",
    ),
    (
        "`ConstrainedDense`",
        "Trask et al., 2018, Table 4",
        "`f(W) x + b`, the ablation's layer "
        "([parity](docs/experiments/mnist-parity.md))",
    ),
)


def units(root="docs/"):
    """Each unit of the package, its paper, and its success by the strict
    criterion in the benchmarks' records (links from `root`)."""
    measured = _units_measured()
    rows = [[layer, paper, measured.get(key, key)] for layer, paper, key in UNITS]
    header = ["layer", "paper", "measured success"]
    return _linked("\n".join(markdown_table(header, rows)), root)
