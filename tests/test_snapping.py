"""keras_nalu.snap_weights: exact weights for units that learned near them,
verified, and a clear refusal for those that did not."""

import keras
import numpy as np
import pytest

import keras_nalu
from keras_nalu import (
    INALU,
    NAC,
    NALU,
    NAU,
    NMRU,
    NMU,
    NPU,
    ArithmeticUnit,
    ConfiguredNALU,
    NACCell,
    NALUCell,
    NAUCell,
    RealNPU,
    snap_weights,
)
from keras_nalu.snapping import SATURATION

pytestmark = pytest.mark.backends

RNG = np.random.default_rng(0)
SMALL = RNG.uniform(1, 10, (256, 2)).astype("float32")
LARGE = RNG.uniform(100, 1000, (256, 2)).astype("float32")


def numpy(tensor):
    return keras.ops.convert_to_numpy(tensor)


def relative_error(model, x, y):
    y_hat = numpy(model(x)).astype(np.float64)
    return float(np.mean(np.abs(y_hat - y)) / np.mean(np.abs(y)))


def sets(operation):
    x64 = {
        name: x.astype(np.float64) for name, x in (("small", SMALL), ("large", LARGE))
    }
    return {name: (x, operation(x[:, :1], x[:, 1:])) for name, x in x64.items()}


def model_of(*layers, inputs=2):
    return keras.Sequential([keras.Input((inputs,)), *layers])


def near(value, size, spread=0.02):
    """`value` off by up to `spread`: what training leaves."""
    return (value + RNG.uniform(-spread, spread, size)).astype("float32")


def latent_for(w):
    """`(w_hat, m_hat)` with `tanh(w_hat) * sigmoid(m_hat) == w`, |w| < 0.99."""
    m_hat = np.full_like(w, 6.0)
    return np.arctanh(w * (1 + np.exp(-m_hat))).astype("float32"), m_hat


def test_a_nac_near_a_sum_snaps_to_the_exact_sum():
    model = model_of(NAC(1))
    w = near(np.array([[1.0], [-1.0]]), (2, 1)) * 0.97
    model.layers[0].set_weights(latent_for(w))
    before = [v.copy() for v in model.get_weights()]
    data = sets(np.subtract)
    snapped, report = snap_weights(model, data)
    np.testing.assert_array_equal(
        numpy(snapped.layers[0].effective_kernel), [[1], [-1]]
    )
    assert report["large"]["before"] > 1e-3 and report["large"]["after"] < 1e-6
    assert relative_error(snapped, LARGE, data["large"][1]) < 1e-6
    for got, want in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(got, want)  # the original is untouched


def test_a_nalu_near_a_product_snaps_its_weights_and_its_gate():
    model = model_of(NALU(1))
    w = near(np.ones((2, 1)), (2, 1)) * 0.97
    layer = model.layers[0]
    layer.w_hat.assign(latent_for(w)[0])
    layer.m_hat.assign(latent_for(w)[1])
    layer.gate_kernel.assign(np.full((2, 1), -0.8, "float32"))  # mostly closed
    data = sets(np.multiply)
    snapped, report = snap_weights(model, data, rtol=1e-5)
    assert report["large"]["before"] > 1e-2
    assert report["small"]["after"] < 1e-5 and report["large"]["after"] < 1e-5


def test_an_nau_nmu_stack_snaps_to_the_exact_formula():
    model = model_of(NAU(2), NMU(1), inputs=3)
    model.layers[0].kernel.assign(near(np.array([[1, 0], [1, 0], [0, 1]]), (3, 2)))
    model.layers[1].kernel.assign(near(np.array([[1.0], [1.0]]), (2, 1)))
    x = RNG.uniform(-50, 50, (128, 3))
    y = (x[:, :1] + x[:, 1:2]) * x[:, 2:]
    snapped, report = snap_weights(model, {"signed": (x.astype("float32"), y)})
    assert report["signed"]["after"] < 1e-6
    np.testing.assert_array_equal(numpy(snapped.layers[1].effective_kernel), [[1], [1]])


def split_products_model():
    """`y = x2 + x0*x1` with the product computed by three NMU units, the
    last layer's weight split among them (each rounds to 0)."""
    x = keras.Input((3,))
    nau, nmu, out = NAU(1), NMU(3), NAU(1)
    model = keras.Model(x, out(keras.layers.Concatenate()([nau(x), nmu(x)])))
    nau.kernel.assign(near(np.array([[0.0], [0.0], [1.0]]), (3, 1)))
    nmu.kernel.assign(near(np.array([[1.0] * 3, [1.0] * 3, [0.0] * 3]), (3, 3)))
    out.kernel.assign(np.array([[0.99], [0.34], [0.33], [0.33]], "float32"))
    return model, out


def test_units_that_compute_the_same_product_are_merged_before_rounding():
    model, _ = split_products_model()
    x = RNG.uniform(-5, 5, (128, 3))
    y = x[:, 2:] + x[:, :1] * x[:, 1:2]
    snapped, report = snap_weights(model, {"signed": (x.astype("float32"), y)})
    assert report["signed"]["after"] < 1e-6
    out = snapped.layers[-1]
    np.testing.assert_array_equal(numpy(out.effective_kernel), [[1], [1], [0], [0]])


def test_a_sum_and_a_product_of_one_factor_are_the_same_feature():
    # An NMU unit that multiplies x1 alone computes x1, as a NAU unit that
    # adds x1 alone does: a layer splitting its weight between them merges.
    x = keras.Input((2,))
    nau, nmu, out = NAU(1), NMU(1), NAU(1)
    model = keras.Model(x, out(keras.layers.Concatenate()([nau(x), nmu(x)])))
    nau.kernel.assign(np.array([[0.02], [0.97]], "float32"))
    nmu.kernel.assign(np.array([[0.01], [0.99]], "float32"))
    out.kernel.assign(np.array([[0.5], [0.5]], "float32"))
    data = RNG.uniform(-5, 5, (64, 2))
    snapped, _ = snap_weights(model, (data.astype("float32"), data[:, 1:]))
    out = numpy(snapped.layers[-1].effective_kernel)
    np.testing.assert_array_equal(out, [[1], [0]])


def test_duplicate_inputs_of_a_product_are_not_merged():
    # x0 * x0 is not x0: only the layers that add merge their inputs.
    x = keras.Input((1,))
    model = keras.Model(x, NMU(1)(keras.layers.Concatenate()([NAU(1)(x), NAU(1)(x)])))
    for layer in model.layers[1:3]:
        layer.kernel.assign(np.array([[0.99]], "float32"))
    model.layers[-1].kernel.assign(np.array([[0.98], [0.97]], "float32"))
    data = RNG.uniform(1, 5, (64, 1))
    snapped, _ = snap_weights(model, (data.astype("float32"), data**2))
    out = numpy(snapped.layers[-1].effective_kernel)
    np.testing.assert_array_equal(out, [[1], [1]])


def test_an_nmru_snaps_to_a_quotient():
    model = model_of(NMRU(1))
    # Rows: a, b, 1/a, 1/b: a / b keeps a and 1/b.
    model.layers[0].kernel.assign(near(np.array([[1.0], [0.0], [0.0], [1.0]]), (4, 1)))
    snapped, report = snap_weights(model, sets(np.divide))
    assert report["large"]["after"] < 1e-6


def test_a_real_npu_snaps_its_exponents_and_its_gate_to_a_quotient():
    model = model_of(RealNPU(1))
    layer = model.layers[0]
    layer.kernel.assign(near(np.array([[1.0], [-1.0]]), (2, 1)))
    layer.gate.assign(near(np.ones(2), 2))
    snapped, report = snap_weights(model, sets(np.divide))
    assert report["large"]["after"] < 1e-6
    snapped_layer = snapped.layers[0]
    np.testing.assert_array_equal(numpy(snapped_layer.effective_kernel), [[1], [-1]])
    np.testing.assert_array_equal(numpy(snapped_layer.effective_gate), [1, 1])


def test_an_inalu_snaps_its_paths_and_its_gate():
    model = model_of(INALU(1))
    layer = model.layers[0]
    w = near(np.ones((2, 1)), (2, 1)) * 0.97
    for w_hat, m_hat in (
        (layer.w_hat, layer.m_hat),
        (layer.mul_w_hat, layer.mul_m_hat),
    ):
        w_hat.assign(latent_for(w)[0])
        m_hat.assign(latent_for(w)[1])
    layer.gate.assign(np.array([3.0], "float32"))  # the additive path
    snapped, report = snap_weights(model, sets(np.add))
    np.testing.assert_array_equal(numpy(snapped.layers[0].gate), [SATURATION])
    assert report["large"]["after"] < 1e-6


def test_a_counting_cell_snaps_and_counts_to_a_thousand_exactly():
    model = keras.Sequential([keras.Input((None, 1)), keras.layers.RNN(NACCell(1))])
    cell = model.layers[0].cell
    # Kernel rows: the input, then the state; both near 1.
    w = near(np.ones((2, 1)), (2, 1)) * 0.97
    cell.w_hat.assign(latent_for(w)[0])
    cell.m_hat.assign(latent_for(w)[1])
    ones = np.ones((2, 1000, 1), "float32")
    snapped, _ = snap_weights(model, {"length 1000": (ones, np.full((2, 1), 1000.0))})
    np.testing.assert_array_equal(numpy(snapped(ones)), [[1000.0], [1000.0]])


def test_a_model_that_did_not_learn_the_operation_is_refused_with_its_errors():
    model = model_of(NAC(1))
    model.layers[0].set_weights(latent_for(np.array([[0.55], [0.4]])))
    with pytest.raises(ValueError) as error:
        snap_weights(model, sets(np.add))
    message = str(error.value)
    assert "does not fit ['large', 'small'] within rtol=1e-05" in message
    assert "large: " in message and " before, " in message and " after" in message


class Misspelt(ArithmeticUnit):
    """`x @ clip(kernel, -1, 1)`, its `exact_values` misspelt."""

    exact_values = {"kernal": (-1.0, 0.0, 1.0)}

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], 1))

    def effective_weights(self, weights):
        return {"kernel": keras.ops.clip(weights["kernel"], -1.0, 1.0)}

    def math(self, x, weights, training=False):
        return keras.ops.matmul(x, self.effective_weights(weights)["kernel"])

    def expression(self, h, writer, x=None):
        return writer.sums(writer.matrix(self.effective_kernel), h)


class OneKeyMisspelt(Misspelt):
    """Its `kernel` right, and a second key that names no weight."""

    exact_values = {"kernel": (-1.0, 0.0, 1.0), "kernal": (0.0, 1.0)}


@pytest.mark.parametrize("unit", [Misspelt, OneKeyMisspelt])
def test_exact_values_that_name_no_effective_weight_are_refused_by_name(unit):
    model = model_of(unit(name="mine"))
    model.layers[0].kernel.assign(near(np.ones((2, 1)), (2, 1)))
    message = (
        rf"The key 'kernal' of the exact_values of {unit.__name__} 'mine' names "
        r"no effective weight of the unit, which has \['kernel'\]"
    )
    with pytest.raises(ValueError, match=message):
        snap_weights(model, sets(np.add))
    with pytest.raises(ValueError, match=message):
        model.layers[0].snap()
    with pytest.raises(ValueError, match=message):
        model.layers[0].snap(["kernel"])  # a right name does not hide it


def test_every_misspelt_key_is_named():
    class TwoMisspelt(Misspelt):
        exact_values = {"kernal": (0.0,), "kernel": (0.0,), "gaet": (0.0,)}

    layer = TwoMisspelt(name="mine")
    layer.build((None, 2))
    with pytest.raises(ValueError, match="The keys 'kernal', 'gaet' of the"):
        layer.snapped_names()


# Every unit and cell of the package, in each configuration that changes its
# weights, and the effective weights it snaps.
CONFIGURATIONS = [
    (NAC(1), ["kernel"]),
    (NACCell(1), ["kernel"]),
    (NALU(1), ["kernel"]),
    (NALU(1, tied_weights=False), ["kernel", "mul_kernel"]),
    (NALUCell(1), ["kernel"]),
    (NALUCell(1, tied_weights=False), ["kernel", "mul_kernel"]),
    (INALU(1), ["kernel", "mul_kernel", "gate"]),
    (NAU(1), ["kernel"]),
    (NAUCell(1), ["kernel", "recurrent_kernel"]),
    (NAUCell(1, diagonal_state=True), ["kernel", "recurrent_kernel"]),
    (NMU(1), ["kernel"]),
    (NMRU(1), ["kernel"]),
    (RealNPU(1), ["kernel", "gate"]),
    (RealNPU(1, gated=False), ["kernel"]),
    (NPU(1), ["kernel", "gate", "imaginary_kernel"]),
    (NPU(1, gated=False), ["kernel", "imaginary_kernel"]),
]


@pytest.mark.parametrize(
    "layer, names",
    CONFIGURATIONS,
    ids=[f"{type(layer).__name__}-{i}" for i, (layer, _) in enumerate(CONFIGURATIONS)],
)
def test_exact_values_follow_the_configuration(layer, names):
    copy = type(layer).from_config(layer.get_config())
    copy.build((None, 2))
    assert list(copy.exact_values) == names
    assert copy.snapped_names() == names
    assert set(names) <= set(copy.effective_weights())
    copy.snap()


def test_every_unit_and_cell_of_the_package_is_configured_above():
    listed = {type(layer) for layer, _ in CONFIGURATIONS}
    exported = {
        value
        for value in vars(keras_nalu).values()
        if isinstance(value, type)
        and issubclass(value, ArithmeticUnit)
        and value is not ArithmeticUnit
    }
    assert exported == listed


def test_snapping_names_a_unit_lacks_is_refused_by_name():
    layer = NAC(1)  # no multiplicative path of its own: no `mul_kernel`
    layer.build((None, 2))
    with pytest.raises(
        ValueError,
        match=r"`names`, expected a list of names of NAC's exact_values "
        r"\['kernel'\] \(its effective weights that snap\). "
        r"Received: names=\['mul_kernel'\]",
    ):
        layer.snap(["mul_kernel"])
    layer.snap()  # the weights it has
    ungated = RealNPU(1, gated=False)
    ungated.build((None, 2))
    ungated.snap()
    with pytest.raises(ValueError, match=r"Received: names=\['gate'\]"):
        ungated.snap(["gate"])


def test_search_decides_a_halfway_weight_on_the_data():
    # A NAC at (0.55, 0.4) rounds to x0 alone; with search, 0.4 (the weight
    # rounded from 0.4 away) is tried at 1, which fits a+b exactly.
    model = model_of(NAC(1))
    model.layers[0].set_weights(latent_for(np.array([[0.55], [0.4]])))
    snapped, report = snap_weights(model, sets(np.add), search=True)
    np.testing.assert_array_equal(numpy(snapped.layers[0].effective_kernel), [[1], [1]])
    assert report["large"]["after"] < 1e-6


def test_search_keeps_only_changes_that_lower_the_error():
    # (0.7, 0.3) for 0.9*x0: rounding gives x0 (relative error 0.11); both
    # flips, 0 for the first weight and 1 for the second, are worse and undone.
    model = model_of(NAC(1))
    model.layers[0].set_weights(latent_for(np.array([[0.7], [0.3]])))
    data = sets(lambda a, b: 0.9 * a)
    snapped, report = snap_weights(model, data, search=True, rtol=0.2)
    np.testing.assert_array_equal(numpy(snapped.layers[0].effective_kernel), [[1], [0]])
    assert report["small"]["after"] == pytest.approx(0.1 / 0.9)


def test_search_drops_a_constant_unit_the_rounding_would_keep():
    # The mystery task's miss: an NMU unit of small weights varies on the
    # data but rounds to the constant 1, and the layer above holds -1 on it.
    # Rounding gives x0*x1 - 1; searching tries 0 for that weight: exact.
    model = model_of(NMU(2), NAU(1))
    model.layers[0].kernel.assign(np.array([[1.0, 0.1], [1.0, 0.05]], "float32"))
    model.layers[1].kernel.assign(np.array([[1.0], [-1.0]], "float32"))
    x = SMALL.astype(np.float64)
    data = {"held-out": (x, x[:, :1] * x[:, 1:])}
    snapped, report = snap_weights(model, data, rtol=1e-3, search=True)
    np.testing.assert_array_equal(numpy(snapped.layers[1].effective_kernel), [[1], [0]])
    kernel = numpy(snapped.layers[0].effective_kernel)
    np.testing.assert_array_equal(kernel, [[1, 0], [1, 0]])
    assert report["held-out"]["after"] < 1e-6
    with pytest.raises(ValueError, match="does not fit"):
        snap_weights(model, data, rtol=1e-3)  # rounding alone: x0*x1 - 1


def test_search_passes_again_when_a_change_pays_only_after_another(monkeypatch):
    # The task with division's miss: x0 + 0.9*x1 - x2 for x0, with x1 about
    # 0.1 and x2 about 1. Rounded, x0 + x1 - x2 is off by about 0.9. The
    # farthest-rounded weight, x1's, goes first: 0 for it leaves -x2, off by
    # 1, undone. Then 0 for x2's: off by 0.1, kept. Only a second pass drops x1.
    rng = np.random.default_rng(1)
    x = np.stack(
        [
            rng.uniform(1, 2, 256),
            rng.uniform(0.05, 0.15, 256),
            rng.uniform(0.9, 1.1, 256),
        ],
        axis=1,
    )
    data = {"held-out": (x, x[:, :1])}
    model = model_of(NAU(1), inputs=3)
    model.layers[0].kernel.assign(np.array([[1.0], [0.9], [-1.0]], "float32"))
    snapped, report = snap_weights(model, data, rtol=1e-3, search=True)
    np.testing.assert_array_equal(
        numpy(snapped.layers[0].effective_kernel), [[1], [0], [0]]
    )
    assert report["held-out"]["after"] < 1e-6
    monkeypatch.setattr("keras_nalu.snapping.MAX_PASSES", 1)
    with pytest.raises(ValueError, match="does not fit"):
        snap_weights(model, data, rtol=1e-3, search=True)  # one pass: x0 + x1


def test_search_must_be_a_boolean():
    with pytest.raises(ValueError, match="search"):
        snap_weights(model_of(NAU(1)), sets(np.add), search="yes")


def test_snapping_never_makes_a_model_worse():
    # Weights near 0.5 round to 1 or 0: worse than the unsnapped model, even
    # where the tolerance would let it pass.
    model = model_of(NAC(1))
    model.layers[0].set_weights(latent_for(np.array([[0.51], [0.51]])))
    x = SMALL.astype(np.float64)
    with pytest.raises(ValueError, match="does not fit"):
        snap_weights(model, {"half": (x, 0.51 * x.sum(1, keepdims=True))}, rtol=10.0)


def test_a_model_compiled_with_a_plain_function_as_its_loss_snaps():
    # The copy is not compiled: a loss Keras cannot deserialize does not matter.
    model = model_of(NAU(2), NMU(1))
    model.layers[0].kernel.assign(near(np.array([[1.0, 0.0], [0.0, 1.0]]), (2, 2)))
    model.layers[1].kernel.assign(near(np.ones((2, 1)), (2, 1)))
    model.compile("adam", loss=lambda y, y_hat: keras.ops.mean((y - y_hat) ** 2))
    snapped, report = snap_weights(model, sets(np.multiply))
    assert report["large"]["after"] < 1e-6 and not snapped.compiled
    assert isinstance(snapped, keras.Sequential)


class Halve(keras.layers.Layer):  # not registered with Keras
    def call(self, x):
        return x / 2


def test_a_model_with_an_unregistered_layer_of_its_own_snaps():
    model = model_of(NAU(1), Halve())
    model.layers[0].kernel.assign(near(np.array([[1.0], [1.0]]), (2, 1)))
    x = SMALL.astype(np.float64)
    snapped, report = snap_weights(model, (x, x.sum(1, keepdims=True) / 2))
    assert isinstance(snapped.layers[1], Halve) and report["data"]["after"] < 1e-6


def test_a_snapped_model_saves_and_reloads(tmp_path):
    model = model_of(NAU(2), NMU(1))
    model.layers[0].kernel.assign(near(np.array([[1.0, 0.0], [0.0, 1.0]]), (2, 2)))
    model.layers[1].kernel.assign(near(np.ones((2, 1)), (2, 1)))
    snapped, _ = snap_weights(model, sets(np.multiply))
    snapped.save(tmp_path / "snapped.keras")
    reloaded = keras.saving.load_model(tmp_path / "snapped.keras")
    np.testing.assert_array_equal(numpy(reloaded(LARGE)), numpy(snapped(LARGE)))


@pytest.mark.parametrize(
    "model, data, rtol, message",
    [
        ("not a model", (SMALL, SMALL[:, :1]), 1e-5, "`model`, expected a built"),
        ("nac", [SMALL, SMALL[:, :1]], 1e-5, "`data`, .* Received: data of type list$"),
        ("nac", {}, 1e-5, "`data`, .* Received: data of type dict \\(empty\\)"),
        ("nac", (SMALL, SMALL[:, :1]), 0.0, "`rtol`"),
    ],
)
def test_invalid_arguments_raise(model, data, rtol, message):
    model = model_of(NAC(1)) if model == "nac" else model
    with pytest.raises(ValueError, match=message):
        snap_weights(model, data, rtol=rtol)


def test_a_configured_nalu_cannot_be_snapped():
    values, control = keras.Input((2,)), keras.Input((3,))
    configured = ConfiguredNALU(1, name="configured")
    model = keras.Model([values, control], configured([values, control]))
    with pytest.raises(ValueError, match="'configured', a ConfiguredNALU.*controller"):
        snap_weights(model, {"x": ([SMALL, SMALL[:, :1].repeat(3, 1)], SMALL[:, :1])})


def test_a_model_of_two_inputs_snaps():
    # `x1 - x0` from one input, plus `x2` from a second: data given as
    # `model.predict` takes them, a list of arrays.
    first, second = keras.Input((2,)), keras.Input((1,))
    left, right = NAU(1), NAU(1)
    model = keras.Model(
        [first, second], keras.layers.Add()([left(first), right(second)])
    )
    left.kernel.assign(np.array([[-0.98], [0.97]], "float32"))
    right.kernel.assign(np.array([[1.02]], "float32"))
    x = RNG.uniform(-5, 5, (64, 3)).astype("float32")
    y = x[:, 1:2] - x[:, :1] + x[:, 2:]
    snapped, report = snap_weights(model, {"signed": ([x[:, :2], x[:, 2:]], y)})
    assert report["signed"]["before"] > 1e-3
    assert report["signed"]["after"] < 1e-6
    kernel = snapped.get_layer(left.name).effective_kernel
    np.testing.assert_array_equal(numpy(kernel), [[-1], [1]])


def two_outputs():
    """`[x0 + x1, x0 * x1]` from one input, both units off their exact
    weights by what training leaves."""
    inputs = keras.Input((2,))
    total, product = NAU(1, name="total"), NMU(1, name="product")
    model = keras.Model(inputs, [total(inputs), product(inputs)])
    total.kernel.assign(near(1.0, (2, 1)))
    product.kernel.assign(near(1.0, (2, 1)))
    return model


def test_a_model_of_two_outputs_snaps_each_output():
    model = two_outputs()
    x = SMALL.astype(np.float64)
    y = [x[:, :1] + x[:, 1:], x[:, :1] * x[:, 1:]]
    snapped, report = snap_weights(model, {"small": (x, y)})
    assert report["small"]["before"] > 1e-3 and report["small"]["after"] < 1e-6
    for name in ("total", "product"):
        kernel = snapped.get_layer(name).effective_kernel
        np.testing.assert_array_equal(numpy(kernel), [[1], [1]])
    # A set's error is its worst output's: a wrong second output is refused.
    wrong = [y[0], x[:, :1] / x[:, 1:]]
    with pytest.raises(ValueError, match="does not fit \\['small'\\]"):
        snap_weights(model, {"small": (x, wrong)})


@pytest.mark.parametrize(
    "y, message",
    [
        (SMALL[:, :1], "`data`, expected y as a list of 2 arrays, one per output "
                       "of the model. Received: an array of shape \\(256, 1\\)"),
        ([SMALL[:, :1]], "`data`, expected y as a list of 2 arrays"),
        ([SMALL[:, :1], SMALL], "`data`, expected y\\[1\\] of shape \\(256, 1\\), "
                                "the model's output 1. Received: an array of "
                                "shape \\(256, 2\\)"),
        ([SMALL[:, :1], np.zeros((256, 1))], "expected y\\[1\\] not all zeros"),
    ],
    ids=["one array", "one of two", "wrong shape", "zeros"],
)  # fmt: skip
def test_the_targets_of_a_model_of_two_outputs_are_checked_by_name(y, message):
    with pytest.raises(ValueError, match=message):
        snap_weights(two_outputs(), (SMALL, y))
