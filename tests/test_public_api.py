"""Every arithmetic unit of the package through the public-API check
(`tests/layer_test_case.py`): the units are found through the package's one
list of its layers, `keras_nalu.layers.__all__`, so a unit added there is
checked here with no change to the tests, with its constructor's defaults
until `ARGUMENTS` gives it every argument of its own."""

import keras
import pytest

from keras_nalu import NAC, NALU, NACCell, NALUCell, NAUCell
from keras_nalu.regularizers import Sparsity
from tests.helpers import package_units
from tests.layer_test_case import run_layer_test
from tests.test_units import LAYERS as SCHEDULED_UNITS

pytestmark = pytest.mark.backends

# Every argument of the NALU and the NALUCell, but `tied_weights`.
NALU_ARGUMENTS = {
    "epsilon": 1e-6,
    "w_hat_initializer": "glorot_normal",
    "m_hat_initializer": "random_uniform",
    "gate_initializer": "ones",
    "w_hat_regularizer": "l2",
    "m_hat_regularizer": "l1",
    "gate_regularizer": keras.regularizers.L1L2(0.01, 0.02),
    "w_hat_constraint": "max_norm",
    "m_hat_constraint": "unit_norm",
    "gate_constraint": "non_neg",
    "mul_w_hat_initializer": "he_uniform",
    "mul_m_hat_initializer": "ones",
    "mul_w_hat_regularizer": "l1",
    "mul_m_hat_regularizer": "l2",
    "mul_w_hat_constraint": "non_neg",
    "mul_m_hat_constraint": "max_norm",
}
NAC_ARGUMENTS = {
    "w_hat_initializer": "glorot_normal",
    "m_hat_initializer": "random_uniform",
    "w_hat_regularizer": "l2",
    "m_hat_regularizer": "l1",
    "w_hat_constraint": "max_norm",
    "m_hat_constraint": "non_neg",
}
# `{unit: {variant: constructor arguments}}`, beside `units=2`: each unit in
# every configuration that changes its weights, every argument changed from
# its default. A unit not named here is checked with its defaults.
ARGUMENTS = {
    NAC: {
        "additive": NAC_ARGUMENTS,
        "multiplicative": {**NAC_ARGUMENTS, "multiplicative": True, "epsilon": 1e-6},
    },
    NALU: {
        "tied": {**NALU_ARGUMENTS, "tied_weights": True},
        "untied": {**NALU_ARGUMENTS, "tied_weights": False},
    },
    NACCell: {"all": NAC_ARGUMENTS},
    NALUCell: {
        "tied": {**NALU_ARGUMENTS, "tied_weights": True},
        "untied": {**NALU_ARGUMENTS, "tied_weights": False},
    },
    NAUCell: {
        "all": {
            "kernel_initializer": "glorot_normal",
            "recurrent_initializer": "orthogonal",
            "kernel_regularizer": Sparsity(0.1),
            "recurrent_regularizer": Sparsity(1.0),
            "kernel_constraint": "non_neg",
            "recurrent_constraint": "non_neg",
            "centered_gradient": True,
            "diagonal_state": True,
        }
    },
    **{unit: {"all": arguments} for unit, arguments in SCHEDULED_UNITS.items()},
}
CASES = [
    pytest.param(unit, arguments, id=f"{unit.__name__}-{variant}")
    for unit in package_units()
    for variant, arguments in ARGUMENTS.get(unit, {"defaults": {}}).items()
]


def test_the_arguments_name_only_units_of_the_package():
    assert set(ARGUMENTS) <= set(package_units())


@pytest.mark.parametrize("unit, arguments", CASES)
def test_public_api(tmp_path, unit, arguments):
    cell = hasattr(unit, "state_size")
    run_layer_test(
        unit,
        {"units": 2, "name": "unit", **arguments},
        input_shape=(4, 6, 3) if cell else (4, 5),
        expected_output_shape=(4, 2),
        # A cell's output is its RNN's, in the policy's float16; a unit that
        # computes in float32 under a 16-bit policy returns float32 (the NALU
        # and the products' units: their own tests pin which).
        mixed_precision_output_dtype=(
            "float16" if cell else unit(2, dtype="mixed_float16").compute_dtype
        ),
        tmp_path=tmp_path,
    )
