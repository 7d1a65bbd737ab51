"""The anchor's stuck runs, controlled: does the NAU's initial split decide them?

Madsen & Johansen's anchor (NAU-NMU on `a * b`, their schedule: no penalty
until iteration 1,000,000, then ramped to 10 by 2,000,000) leaves some runs
stuck. Their initial NAU weights predict which: the runs whose split
(`initial_splits`) starts below `SMALL_SPLIT` are,
in both codes, the stuck and the late ones. This tests it by intervention, in
one program of the seed-batched engine (each run its own seed's batches):

- `moved`: the `--stuck` seeds with their split moved away from 0, to
  `--target` (of the sign it had; `set_initial_splits`, about
  0.02 added to one unit's weights on the inputs of `a` alone);
- `projected`: the `--solved` seeds with their split moved to 0.

Everything else as drawn. The prediction: the moved runs solve, the projected
ones stick. The as-drawn outcomes of the same seeds are those of
`docs/experiments/units-benchmark/units_anchor_nmu.json` (the engine repeats
them seed for seed).

    python examples/anchor_split.py                    # 16 runs, 2M iterations
"""

import math

from nalu_research.arguments import Shared, non_negative_int, positive_float
from nalu_research.engine_model import HIDDEN
from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table
from nalu_research.recipe import Recipe
from nalu_research.tasks import wilson_interval

# Seeds 0-49 on the tensorflow backend
# (docs/experiments/units-benchmark/units_anchor_nmu.json): the 8 that
# stay stuck to 5M iterations, all with |split| < SMALL_SPLIT, and the first 8
# solved by 2M, all with |split| > 0.4.
STUCK = (1, 11, 21, 23, 32, 35, 39, 47)
SOLVED = (0, 2, 3, 4, 5, 6, 7, 8)
# The median |split| of seeds 0-49 on tensorflow.
TARGET = 0.63
REGULARIZATION = [10.0, 1_000_000, 2_000_000]  # Madsen & Johansen's


# |initial split| below which lay the stuck and late runs of the anchor, in
# both codes (an analysis of Madsen & Johansen's per-seed results and ours).
SMALL_SPLIT = 0.071


def initial_splits(bench):
    """Per run of a `StaticBenchmark` whose first layer is a two-unit NAU
    (NAU-NMU, NAU-NMRU, ...), the split of that NAU between its two hidden
    units: with `d_i = W[i, 0] - W[i, 1]`, the sum of `d_i` over the inputs
    only in the run's `a` slice minus that over the inputs only in its `b`
    slice. Near 0 the NAU is undecided which unit sums which slice: on the
    anchor task such starts are the runs that stay stuck or solve late
    (`docs/experiments/units-benchmark.md`)."""
    from keras import ops

    kernel = ops.convert_to_numpy(_nau_kernel(bench))  # (runs, inputs, 2)
    return [
        float(d[a].sum() - d[b].sum())
        for d, (a, b) in zip(
            kernel[..., 0] - kernel[..., 1], _only_masks(bench), strict=True
        )
    ]


def set_initial_splits(bench, targets):
    """Moves run `i`'s initial split (`initial_splits`) to `targets[i]`
    (`None`: left as drawn) before training, by adding `c` to `W[i, 0]` and
    subtracting it from `W[i, 1]` on the inputs only in its `a` slice, the
    smallest even change that does it (`c` is about 0.02 for a move of
    0.6 over 13 inputs). Returns the splits after the move."""
    from keras import ops

    kernel = ops.convert_to_numpy(_nau_kernel(bench)).copy()
    splits = initial_splits(bench)
    for i, ((a, _), target) in enumerate(zip(_only_masks(bench), targets, strict=True)):
        if target is not None:
            c = (target - splits[i]) / (2 * a.sum())
            kernel[i, a, 0] += c
            kernel[i, a, 1] -= c
    _nau_kernel(bench).assign(kernel)
    return initial_splits(bench)


def _nau_kernel(bench):
    if (bench.engine_model.kinds or (None,))[0] != "nau" or HIDDEN != 2:
        raise ValueError(
            "Received an invalid value for `bench`, expected a benchmark whose "
            "first layer is a two-unit NAU (e.g. model 'nmu'). Received: a "
            f"benchmark of model {bench.model!r}"
        )
    return bench.params["kernel_0"]


def _only_masks(bench):
    """Per run, the boolean masks of the inputs only in `a`, only in `b`
    (from the benchmark's masks of its slices)."""
    from keras import ops

    masks = ops.convert_to_numpy(bench._masks) > 0  # (runs, inputs, 2)
    a, b = masks[..., 0], masks[..., 1]
    return list(zip(a & ~b, b & ~a, strict=True))


def report(runs):
    """The table of the two arms, printed; returns its lines."""
    arms = []
    for arm in ("moved", "projected"):
        mine = [r for r in runs if r["arm"] == arm]
        solved = sum(r["success"] for r in mine)
        low, high = wilson_interval(solved, len(mine))
        at = sorted(r["solved_at"] for r in mine if r["solved_at"] is not None)
        median = f"{at[len(at) // 2]:,}" if at else "-"
        interval = f"[{low:.2f}, {high:.2f}]"
        arms.append([arm, len(mine), f"{solved}/{len(mine)}", interval, median])
    seeds = []
    for r in runs:
        at = "-" if r["solved_at"] is None else f"{r['solved_at']:,}"
        drawn, moved = f"{r['split_drawn']:+.3f}", f"{r['split_moved']:+.3f}"
        seeds.append([r["seed"], r["arm"], drawn, moved, r["success"], at])
    lines = markdown_table(
        ["arm", "runs", "solved (strict)", "Wilson 95%", "solved at, median"], arms
    )
    lines.append("")
    lines += markdown_table(
        ["seed", "arm", "split drawn", "split moved", "solved", "solved at"], seeds
    )
    print("\n".join(lines))
    return lines


class AnchorSplit(Experiment):
    # Its --help description is the module docstring's first paragraph.

    arguments = {
        "iterations": 2_000_000,
        "eval_every": 5000,
        "eval_size": 10_000,
        "regularization": Shared(
            REGULARIZATION,
            help="the penalty: STRENGTH ramped in from START to END (default "
            "%(default)s, Madsen & Johansen's)",
        ),
    }
    record_path = "results/anchor_split.json"
    checkpoints = True
    run_unit = "program"

    def add_arguments(self, parser):
        parser.add_argument(
            "--stuck", type=non_negative_int, nargs="+", default=list(STUCK)
        )
        parser.add_argument(
            "--solved", type=non_negative_int, nargs="+", default=list(SOLVED)
        )
        parser.add_argument(
            "--target",
            type=positive_float,
            default=TARGET,
            help="|split| the stuck seeds are moved to (default %(default)s)",
        )

    def check_arguments(self, args, parser):
        if set(args.stuck) & set(args.solved):
            parser.error("a seed is in both --stuck and --solved")

    def prepare(self, args, session):
        print(
            f"NAU-NMU on a*b: seeds {args.stuck} with their split moved to "
            f"+-{args.target:g}, seeds {args.solved} with theirs moved to 0 "
            f"(small: |split| < {SMALL_SPLIT}); {args.iterations:,} iterations on "
            f"{args.backend}."
        )

    def train(self, args, run, session):
        """Both arms in one program: the per-seed rows."""
        import keras

        from nalu_research.seed_batched import StaticBenchmark

        keras.utils.set_random_seed(0)
        bench = StaticBenchmark(
            "nmu",
            "mul",
            [*args.stuck, *args.solved],
            Recipe(regularization=args.regularization),
            eval_size=args.eval_size,
        )
        drawn = initial_splits(bench)
        targets = [
            math.copysign(args.target, split) for split in drawn[: len(args.stuck)]
        ]
        moved = set_initial_splits(bench, targets + [0.0] * len(args.solved))
        # The checkpoint folder itself, as before the skeleton: it resumes.
        result = session.run_engine(bench, "anchor split", folder="")
        self.train_seconds = result["seconds"]
        rows = bench.summarize(result["history"])
        arms = ["moved"] * len(args.stuck) + ["projected"] * len(args.solved)
        for row, arm, before, after in zip(rows, arms, drawn, moved, strict=True):
            row.update(arm=arm, split_drawn=before, split_moved=after)
        return rows

    def report(self, args, rows):
        report(rows)

    def record(self, args, rows):
        return {"train_seconds": self.train_seconds}


def main(argv=None):
    return AnchorSplit().main(argv)
