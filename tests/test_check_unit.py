"""keras_nalu.testing.check_unit: every unit of the package keeps
`ArithmeticUnit`'s interface, and a unit that breaks a part of it is told
which."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_nalu import (
    NAC,
    NALU,
    NAU,
    NMRU,
    NPU,
    ArithmeticUnit,
    NAUCell,
    RealNPU,
    formulas,
    snap_weights,
)
from keras_nalu import ops as nalu_ops
from keras_nalu.testing import CHECKS, UnitCheckError, check_unit
from tests.helpers import package_units

pytestmark = pytest.mark.backends

# Each unit layer of the package (found through `keras_nalu.layers.__all__`),
# then the configurations that change a unit's weights or its math; every key
# of each one's `exact_values` names one of its effective weights.
CONFIGURATIONS = [
    NAC(2, multiplicative=True),  # NAC*: the NAC in log space
    NALU(2, tied_weights=False),  # tied (the default): no `mul_kernel`
    NAU(2, centered_gradient=True),
    NMRU(2, sign_retrieval=True),
    RealNPU(2, gated=False),  # no `gate`
    NPU(2, gated=False),
]
PACKAGE_UNITS = [*package_units(cells=False), *CONFIGURATIONS]


def _name(unit):
    if isinstance(unit, type):
        return unit.__name__
    defaults = type(unit)(2).get_config()
    changed = {k: v for k, v in unit.get_config().items() if defaults.get(k) != v}
    changed.pop("name", None)
    return type(unit).__name__ + "".join(f"-{k}={v}" for k, v in changed.items())


@pytest.mark.parametrize("unit", PACKAGE_UNITS, ids=map(_name, PACKAGE_UNITS))
def test_every_package_unit_in_every_configuration_passes(unit):
    check_unit(unit)


class Sum(ArithmeticUnit):
    """`sum_i W_ij x_i`, `W = clip(kernel, -1, 1)`: a good unit, whose
    `effective_weights` takes no default, as the docs' table shows it; the
    broken units below each change one part of it."""

    exact_values = {"kernel": (-1.0, 0.0, 1.0)}
    linear = True
    initial = (-1.0, 1.0)  # the range of the kernel's initial values

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(
            name="kernel",
            shape=(input_shape[-1], self.units),
            initializer=keras.initializers.RandomUniform(*self.initial),
        )

    def effective_weights(self, weights):
        return {"kernel": ops.clip(weights["kernel"], -1.0, 1.0)}

    def math(self, x, weights, training=False):
        return nalu_ops.matmul(x, self.effective_weights(weights)["kernel"])

    def penalty(self, weights):
        w = self.effective_weights(weights)["kernel"]
        return ops.mean(ops.abs(w - ops.round(w)), axis=(-2, -1))

    def expression(self, h, writer, x=None):
        return writer.sums(writer.matrix(self.effective_kernel), h)

    def get_config(self):
        return {**super().get_config(), "units": self.units}


class Misspelt(Sum):
    exact_values = {"kernal": (-1.0, 0.0, 1.0)}


class OneKeyMisspelt(Sum):
    """Its `kernel` right, a second key naming no weight."""

    exact_values = {"kernel": (-1.0, 0.0, 1.0), "kernal": (0.0, 1.0)}


class Unstacked(Sum):
    def math(self, x, weights, training=False):
        w = self.effective_weights(weights)["kernel"]
        return ops.tensordot(x, w, axes=1)  # no leading seed axis


class OffExact(Sum):
    initial = (1.6, 2.4)

    def effective_weights(self, weights):  # 1 assigned is 0.5 applied
        return {"kernel": 0.5 * weights["kernel"]}


class OnePenalty(Sum):
    def penalty(self, weights):  # one value for all the copies
        return ops.mean(ops.abs(self.effective_weights(weights)["kernel"]))


class WrongExpression(Sum):
    def expression(self, h, writer, x=None):
        return writer.products(writer.matrix(self.effective_kernel), h)


class NoConfig(Sum):
    def get_config(self):
        return ArithmeticUnit.get_config(self)  # without `units`


def test_a_unit_without_a_default_for_effective_weights_works_with_every_tool():
    check_unit(Sum)
    model = keras.Sequential([keras.Input((2,)), Sum(1)])
    model.layers[0].kernel.assign([[0.98], [1.01]])
    assert formulas(model, ["a", "b"], digits=2) == ["y0 = 0.98*a + b"]
    x = np.random.default_rng(0).uniform(-5, 5, (32, 2))
    snapped, _ = snap_weights(model, (x, x.sum(1, keepdims=True)))
    assert formulas(snapped, ["a", "b"]) == ["y0 = a + b"]
    model.layers[0].snap()
    np.testing.assert_array_equal(
        ops.convert_to_numpy(model.layers[0].effective_kernel), [[1.0], [1.0]]
    )


@pytest.mark.parametrize(
    "unit, check, message",
    [
        (NoConfig, "config", "missing 1 required positional argument: 'units'"),
        (
            Misspelt,
            "exact values",
            r"the key 'kernal' of exact_values names no effective weight: the "
            r"unit has \['kernel'\]",
        ),
        (
            OneKeyMisspelt,
            "exact values",
            r"the key 'kernal' of exact_values names no effective weight: the "
            r"unit has \['kernel'\]",
        ),
        (Unstacked, "stacked math", "called one by one: shape"),
        (OnePenalty, "stacked penalty", "one value per copy"),
        (OffExact, "snap", "holds 0.5, not one of its exact values"),
        (WrongExpression, "expression", r"output \d of the snapped unit, written"),
    ],
)
def test_a_broken_unit_is_told_which_check_it_fails(unit, check, message):
    keras.utils.set_random_seed(0)  # weights where each break shows
    with pytest.raises(UnitCheckError, match=message) as error:
        check_unit(unit)
    assert error.value.check == check and check in CHECKS
    assert isinstance(error.value, AssertionError)
    assert str(error.value).startswith(f"{unit.__name__} fails check_unit's {check!r}")


def test_an_instance_is_checked_by_copies_and_left_as_it_was():
    unit = Sum(2, name="mine")
    check_unit(unit)
    assert not unit.built
    with pytest.raises(UnitCheckError, match="^Misspelt 'mine' fails"):
        check_unit(Misspelt(2, name="mine"))


@pytest.mark.parametrize(
    "arguments, name",
    [
        ({"unit": keras.layers.Dense}, "unit"),
        ({"unit": NAUCell}, "unit"),
        ({"unit": NAUCell(2)}, "unit"),
        ({"unit": NAU, "units": 0}, "units"),
        ({"unit": NAU, "input_size": 0}, "input_size"),
        ({"unit": NAU, "seeds": 1.5}, "seeds"),
        ({"unit": NAU, "input_range": (2.0, 1.0)}, "input_range"),
        ({"unit": NAU, "rtol": -1.0}, "rtol"),
    ],
)
def test_invalid_arguments_raise(arguments, name):
    with pytest.raises(ValueError, match=f"Received an invalid value for `{name}`"):
        check_unit(**arguments)
