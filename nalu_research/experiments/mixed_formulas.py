"""Which units for a formula that mixes operations: `a*b - c`, `(a+b)*c`, `a/b + c`.

"Which unit to use" (`first_contact`) answers for one operation. A formula
that mixes them needs a model shape: units side by side where the formula
adds terms of different kinds, one after another where it nests them. Three
inputs `a, b, c` drawn from U[1, 10] (4,096 training examples; positive, so
that a quotient's divisor stays away from 0), `model.fit` with Adam at 0.01,
batches of 64, the squared error; tested on fresh inputs from U[1, 10] and
on U[100, 1000], by the relative error `mean |y_hat - y| / mean |y|`, as
trained and after `keras_nalu.snap_weights` (on held-out pairs of the
training range, `search=True`, kept only if within `SNAP_RTOL` there), and
the formula `keras_nalu.formulas` reads off a solved seed (its gates, if
any, decided on the held-out inputs).

The shapes (`RECIPES`):

- `[NAU, NMU] -> NAU`: a NAU and an NMU side by side on the inputs, their
  outputs concatenated, then a NAU: sums and products, added (the recipe of
  the mystery-arithmetic experiment). It holds `a*b - c` and, as `a*c + b*c`,
  `(a+b)*c`.
- `NAU -> NMU`: the sum first, then the product: `(a+b)*c` as written.
- `[NAU, RealNPU] -> NAU`: the RealNPU, which divides, in the NMU's place.
- `NALU -> NALU`: the paper's two NALU layers, for comparison.

Each unit's sparsity penalty is ramped in from half to three quarters of the
fit's steps (`regularization_start`, `regularization_end`): the layers'
default schedule starts at step 20,000, which a fit of this size (3,200
steps) never reaches; the row marked "default schedule" shows what that
costs. The NMU and RealNPU start near 0 (U[0, 0.02], each output a product of
nothing) and Adam's update is clipped to a global norm of 1, as in the
mystery-arithmetic experiment.

    python examples/mixed_formulas.py              # every row, 5 seeds
    python examples/mixed_formulas.py --seeds 10 \\
        --json docs/experiments/mixed-formulas/mixed_formulas.json  # the page's
"""

import warnings

import numpy as np

from nalu_research.experiment import Experiment
from nalu_research.monitoring import markdown_table, spread_and_solved

FORMULAS = {
    "a*b - c": lambda a, b, c: a * b - c,
    "(a+b)*c": lambda a, b, c: (a + b) * c,
    "a/b + c": lambda a, b, c: a / b + c,
}
TRAIN_RANGE = (1.0, 10.0)
EXTRAPOLATION_RANGE = (100.0, 1000.0)
TEST_SIZE = 2000
SOLVED = 1e-6  # the extrapolation error below which a seed counts
SNAP_RTOL = 1e-4  # the largest held-out error a snapped model may have
STEPS_PER_EXECUTION = 16
NEAR_ZERO = {"class_name": "RandomUniform", "config": {"minval": 0.0, "maxval": 0.02}}
CLIPNORM = 1.0


def side_by_side(product_unit):
    """`[NAU, UNIT] -> NAU`: sums and the terms of the `keras_nalu` unit
    named `product_unit`, then added."""

    def build(x, schedule):
        import keras

        import keras_nalu
        from keras_nalu import NAU

        unit = getattr(keras_nalu, product_unit)
        sums = NAU(2, **schedule)(x)
        terms = unit(2, kernel_initializer=NEAR_ZERO, **schedule)(x)
        return NAU(1, **schedule)(keras.layers.Concatenate()([sums, terms]))

    return build


def sum_then_product(x, schedule):
    from keras_nalu import NAU, NMU

    return NMU(1, **schedule)(NAU(2, **schedule)(x))


def two_nalus(x, schedule):
    from keras_nalu import NALU

    return NALU(1)(NALU(2)(x))


RECIPES = {
    "[NAU, NMU] -> NAU": side_by_side("NMU"),
    "NAU -> NMU": sum_then_product,
    "[NAU, RealNPU] -> NAU": side_by_side("RealNPU"),
    "NALU -> NALU": two_nalus,
}
# The rows: each formula with the shapes that can hold it, and the paper's.
ROWS = (
    ("a*b - c", "[NAU, NMU] -> NAU", "fit"),
    ("a*b - c", "[NAU, NMU] -> NAU", "default"),
    ("a*b - c", "NALU -> NALU", "fit"),
    ("(a+b)*c", "NAU -> NMU", "fit"),
    ("(a+b)*c", "[NAU, NMU] -> NAU", "fit"),
    ("(a+b)*c", "NALU -> NALU", "fit"),
    ("a/b + c", "[NAU, RealNPU] -> NAU", "fit"),
    ("a/b + c", "NALU -> NALU", "fit"),
)


def schedule_of(kind, steps):
    """The penalty schedule of a row: within the fit (`"fit"`: from half to
    three quarters of its `steps`) or the layers' own (`"default"`)."""
    if kind == "default":
        return {}
    return {"regularization_start": steps // 2, "regularization_end": steps * 3 // 4}


def sample(formula, n, value_range, seed):
    """`(x, y)`: `n` examples of `formula`, `x` `(n, 3)` float32, `y` `(n, 1)`
    computed in float64 from the float32 inputs."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(*value_range, size=(n, 3)).astype("float32")
    a, b, c = np.split(x.astype("float64"), 3, axis=1)
    return x, FORMULAS[formula](a, b, c).astype("float32")


def relative_error(model, x, y):
    import keras

    y_hat = keras.ops.convert_to_numpy(model(x, training=False)).astype("float64")
    return float(np.mean(np.abs(y_hat - y)) / np.mean(np.abs(y)))


def snapped(model, held_out):
    """The model snapped to exact weights, or None where `snap_weights`
    refuses it (its held-out error above `SNAP_RTOL`)."""
    from keras_nalu import snap_weights

    try:
        return snap_weights(model, {"held-out": held_out}, rtol=SNAP_RTOL, search=True)[
            0
        ]
    except ValueError:
        return None


class MixedFormulas(Experiment):
    """Which units for a formula that mixes operations."""

    arguments = {
        "examples": 4096,
        "seeds": 5,
        "epochs": 50,
        "batch_size": 64,
        "learning_rate": 0.01,
    }
    record_path = "results/mixed_formulas.json"
    checkpoints = True
    continued_by = "--epochs"
    run_unit = "row"

    def prepare(self, args, session):
        self.data = {
            formula: {
                "train": sample(formula, args.examples, TRAIN_RANGE, seed=0),
                "held-out": sample(formula, TEST_SIZE, TRAIN_RANGE, seed=1),
                "extrapolation": sample(formula, TEST_SIZE, EXTRAPOLATION_RANGE, 2),
            }
            for formula in FORMULAS
        }
        self.steps = args.epochs * -(-args.examples // args.batch_size)

    def runs(self, args):
        return ROWS

    def train(self, args, run, session):
        import keras

        from keras_nalu import formulas

        formula, recipe, schedule = run
        data = self.data[formula]
        x, y = data["train"]
        row = {
            "formula": formula,
            "model": recipe,
            "schedule": schedule,
            "trained": [],
            "snapped": [],
            "formulas": [],
            "penalty_warnings": 0,
        }
        for seed in range(args.seeds):

            def model_fn():
                inputs = keras.Input((3,))
                build = RECIPES[recipe]
                outputs = build(inputs, schedule_of(schedule, self.steps))
                return keras.Model(inputs, outputs)

            result = session.fit_seed(
                formula,
                recipe,
                schedule,
                seed=seed,
                what=f"{formula} {recipe} seed {seed}",
                model_fn=model_fn,
                x=x,
                y=y,
                optimizer_fn=lambda: keras.optimizers.Adam(
                    args.learning_rate, global_clipnorm=CLIPNORM
                ),
                config={"formula": formula, "model": recipe, "schedule": schedule},
                steps_per_execution=STEPS_PER_EXECUTION,
            )
            model = result.model
            far = data["extrapolation"]
            row["trained"].append(relative_error(model, *far))
            # The default schedule's row is meant to end before the penalty:
            # the warning `snap_weights` and `formulas` give there is counted,
            # not printed.
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always", UserWarning)
                exact = snapped(model, data["held-out"])
                row["formulas"].append(
                    None
                    if exact is None
                    else formulas(
                        exact, ["a", "b", "c"], x=data["held-out"][0], positive=True
                    )[0]
                )
            row["penalty_warnings"] += any(
                "penalty starts" in str(w.message) for w in said
            )
            row["snapped"].append(
                row["trained"][-1] if exact is None else relative_error(exact, *far)
            )
        return row

    def run_name(self, run, row):
        formula, recipe, schedule = run
        return f"{formula}, {recipe}" + (
            ", default schedule" if schedule == "default" else ""
        )

    def progress(self, row):
        return {"median snapped error": np.median(row["snapped"])}

    def report(self, args, rows):
        print(
            f"\nRelative extrapolation error on {describe(EXTRAPOLATION_RANGE)} "
            f"(median [min, max] over {args.seeds} seeds; solved: <= {SOLVED:g}), "
            f"{args.epochs} epochs ({self.steps} steps):\n"
        )
        print("\n".join(markdown_table(*table(rows, args.seeds))))

    def record(self, args, rows):
        return {"steps": self.steps, "solved_below": SOLVED, "snap_rtol": SNAP_RTOL}


def describe(value_range):
    return "U[{:g}, {:g}]".format(*value_range)


def table(rows, seeds):
    """The header and rows of the results table (also the docs page's,
    read by its records module)."""
    header = [
        "formula",
        "model",
        "trained",
        "solved",
        "snapped",
        "solved",
        "a solved seed's formula",
    ]
    lines = []
    for row in rows:
        model = f"`{row['model']}`" + (
            f", default schedule ({row['penalty_warnings']}/{seeds} warned)"
            if row["schedule"] == "default"
            else ""
        )
        solved = zip(row["formulas"], row["snapped"], strict=True)
        read = next((f for f, error in solved if f and error <= SOLVED), None)
        lines.append(
            [
                f"`{row['formula']}`",
                model,
                *spread_and_solved(row["trained"], SOLVED),
                *spread_and_solved(row["snapped"], SOLVED),
                "-" if read is None else f"`{read}`",
            ]
        )
    return header, lines


def main(argv=None):
    return MixedFormulas().main(argv)
