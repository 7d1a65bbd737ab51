"""Bad input, as a careful user would give it.

What every exported model serves for bad input, from a process that imports
neither `keras_nalu` nor `nalu_research`: the number-word model reports
unknown words and empty or over-long phrases (`valid` false, `value` NaN), and
every model's signature rejects a wrong dtype or shape with an error that
names the TensorSpec it expects. Then the helpers (`training.fit`,
`snap_weights`, `formulas`, `export_saved_model`): each bad argument is
refused before any work with an error that names it, the value received and
what was expected; and every unit computes in float64."""

import json

import keras
import numpy as np
import pytest

from keras_nalu import NAU, NMU, export_saved_model, formulas, snap_weights, training
from nalu_research.experiments import (
    demo,
    program_evaluation,
    static_arithmetic,
)
from nalu_research.layers import CheckedTokens
from nalu_research.models import mnist, number_words
from nalu_research.tasks.number_words import encode
from nalu_research.tasks.program_evaluation import TOKENS
from tests.helpers import package_units
from tests.test_export import serve_models_in_fresh_process

pytestmark = pytest.mark.processes


def serve_each_in_fresh_process(cases, folder):
    """`[serve(values as dtype) or {"error", "message"}, ...]` for `cases` of
    `(model_dir, values, dtype[, "serve" or "signature"])`, served by the
    process without keras_nalu and nalu_research
    (`tests.test_export.serving_process`): through the `serve` endpoint or
    the `serving_default` signature; outputs as lists."""
    models = {}
    for i, (model_dir, values, dtype, *how) in enumerate(cases):
        key = f"{(*how, 'serve')[0]}|{i}"
        _, inputs = models.setdefault(str(model_dir), (model_dir, {}))
        inputs[key] = np.asarray(values, dtype="U" if dtype == "string" else dtype)
    served = serve_models_in_fresh_process(
        {str(i): model for i, model in enumerate(models.values())}, folder, errors=True
    )
    outputs = {}
    for (_, inputs), answers in zip(models.values(), served.values(), strict=True):
        for key in inputs:
            answer = answers[key]
            outputs[int(key.split("|")[1])] = (
                {field: _plain(value) for field, value in answer.items()}
                if isinstance(answer, dict)
                else answer.tolist()
            )
    return [outputs[i] for i in range(len(cases))]


def _plain(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


def _positive(*shape):
    return np.random.default_rng(0).uniform(1.0, 3.0, shape).astype("float32")


VALID = ["five hundred and fifteen", "nine", "eighty eight", "zero"]
# (name, served text) of the number-word model.
PHRASES = {
    "unknown": ["zzz qqq"],
    "empty beside valid": ["", "nine"],
    "only empty": ["", ""],
    "over-long": ["nine " * 500, "nine"],
    "valid": VALID,
}


def _float_models():
    """`{kind: (model, sample, wrong shape)}` as each experiment exports it,
    small."""
    program = np.zeros((2, 5, 1 + len(TOKENS)), "float32")
    program[:, :, 0] = [[1, 2, 3, 4, 5], [10, 20, 30, 40, 50]]
    program[:, np.arange(5), 1] = 1.0
    counting, _, _ = mnist.sequence_model("nac", "count", (8, 8, 1), features=8)
    nalu = demo.MODELS["a*b"]["NALU (paper)"]
    return {
        "demo": (
            keras.Sequential([keras.Input((2,)), *nalu()]),
            _positive(3, 2),
            (3, 3),
        ),
        "static": (
            static_arithmetic.build_models(100)["NALU-NALU"](),
            _positive(3, 100),
            (3, 99),
        ),
        "program": (
            program_evaluation.build_model("nalu", 8, 5),
            program,
            (2, 6, 1 + len(TOKENS)),
        ),
        "mnist": (counting, _positive(2, 3, 8, 8, 1) / 3.0, (2, 3, 9, 8, 1)),
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Every model exported to a temporary folder and served, once, in one
    fresh process: `{"words": {name: output}, "keras": {name: value},
    "errors": {(kind, "dtype" | "shape"): error}, "specs": {kind: spec}}`."""
    folder = tmp_path_factory.mktemp("bad_input")
    keras.utils.set_random_seed(0)
    ((_, words_model),) = number_words.build_models("nalu", 4, [0])
    text_model = number_words.text_model(words_model)
    path = export_saved_model(text_model, folder / "words", np.array(VALID + [""]))
    cases = [(path, texts, "string") for texts in PHRASES.values()]
    cases += [(path, [1, 2], "int32"), (path, [["nine"]], "string")]
    specs = {"words": "TensorSpec(shape=(None,), dtype=tf.string"}
    for kind, (model, sample, wrong_shape) in _float_models().items():
        path = export_saved_model(model, folder / kind, sample)
        shape = (None, *sample.shape[1:])
        if kind == "mnist":
            shape = (None, None, *sample.shape[2:])
        specs[kind] = f"TensorSpec(shape={shape}, dtype=tf.float32"
        cases.append((path, sample.astype("float64").tolist(), "float64"))
        cases.append((path, np.ones(wrong_shape).tolist(), "float32"))
    signed = [
        (folder / kind, np.ones(wrong_shape).tolist(), "float32", "signature")
        for kind, (_, _, wrong_shape) in _float_models().items()
    ]
    cases += [(folder / "words", [["nine"]], "string", "signature"), *signed]
    results = serve_each_in_fresh_process(cases, folder)
    words = dict(zip(PHRASES, results, strict=False))
    errors = {}
    for i, kind in enumerate(specs):
        start = len(PHRASES) + 2 * i
        errors[(kind, "dtype")], errors[(kind, "shape")] = results[start : start + 2]
        errors[(kind, "signature shape")] = results[len(PHRASES) + 2 * len(specs) + i]
    keras_values = {
        phrase: keras.ops.convert_to_numpy(words_model(encode([phrase])))[0]
        for phrase in VALID
    }
    return {"words": words, "keras": keras_values, "errors": errors, "specs": specs}


def test_unknown_words_are_counted_and_make_the_phrase_invalid(served):
    out = served["words"]["unknown"]
    assert out["unknown_tokens"] == [2] and out["tokens"] == [2]
    assert out["valid"] == [False] and np.isnan(out["value"][0])


def test_an_empty_phrase_beside_a_valid_one_is_invalid_and_leaves_it_alone(served):
    out = served["words"]["empty beside valid"]
    assert out["tokens"] == [0, 1] and out["unknown_tokens"] == [0, 0]
    assert out["valid"] == [False, True] and np.isnan(out["value"][0])
    np.testing.assert_allclose(out["value"][1], served["keras"]["nine"], atol=1e-5)


def test_a_batch_of_only_empty_phrases_serves(served):
    out = served["words"]["only empty"]
    assert "error" not in out, out.get("message", "")[:500]
    assert out["tokens"] == [0, 0] and out["valid"] == [False, False]
    assert np.all(np.isnan(out["value"]))


def test_an_over_long_phrase_is_invalid(served):
    out = served["words"]["over-long"]
    assert out["tokens"] == [500, 1] and out["unknown_tokens"] == [0, 0]
    assert out["valid"] == [False, True] and np.isnan(out["value"][0])
    np.testing.assert_allclose(out["value"][1], served["keras"]["nine"], atol=1e-5)


def test_valid_phrases_serve_the_keras_models_values(served):
    out = served["words"]["valid"]
    assert out["valid"] == [True] * len(VALID)
    assert out["tokens"] == [len(p.split()) for p in VALID]
    want = [served["keras"][phrase] for phrase in VALID]
    np.testing.assert_allclose(out["value"], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["words", "demo", "static", "program", "mnist"])
@pytest.mark.parametrize("wrong", ["dtype", "shape"])
def test_a_wrong_dtype_or_shape_is_refused_naming_the_expected_spec(
    served, kind, wrong
):
    error = served["errors"][(kind, wrong)]
    assert error.get("error") == "TypeError", error
    assert f"to {served['specs'][kind]}" in error["message"], error["message"]


@pytest.mark.parametrize("kind", ["words", "demo", "static", "program", "mnist"])
def test_the_serving_signature_refuses_a_wrong_shape_naming_the_expected_one(
    served, kind
):
    # `saved_model_cli` and TF Serving call the signature, which binds only
    # dtypes: `export_saved_model` checks the shape first (tf.ensure_shape).
    error = served["errors"][(kind, "signature shape")]
    assert error.get("error") == "InvalidArgumentError", error
    assert "is not compatible with expected shape" in error["message"], error


# CheckedTokens, the layer that does the number-word model's checks.


def _checked(ids, **kwargs):
    out = CheckedTokens(**kwargs)(np.array(ids, "int32"))
    return {k: keras.ops.convert_to_numpy(v).tolist() for k, v in out.items()}


def test_checked_tokens_counts_words_and_unknown_ones_by_hand():
    out = _checked([[5, 1, 7, 0], [1, 0, 0, 0], [3, 4, 0, 0], [0, 0, 0, 0]],
                   max_length=2)  # fmt: skip
    assert out["tokens"] == [3, 1, 2, 0]
    assert out["unknown_tokens"] == [1, 1, 0, 0]
    assert out["valid"] == [False, False, True, False]
    # Cut to max_length columns, then one column of padding.
    assert out["ids"] == [[5, 1, 0], [1, 0, 0], [3, 4, 0], [0, 0, 0]]


def test_checked_tokens_bounds_the_ids_a_model_reads():
    assert np.shape(_checked(np.full((2, 500), 9), max_length=5)["ids"]) == (2, 6)
    assert np.shape(_checked(np.zeros((3, 0)), max_length=5)["ids"]) == (3, 1)
    assert _checked([[2, 7]], max_length=5, oov_id=7)["unknown_tokens"] == [1]


def test_checked_tokens_symbolic_shapes_match_eager_ones():
    ids = keras.Input((None,), dtype="int32")
    out = CheckedTokens(5)(ids)
    assert {k: (v.shape, v.dtype) for k, v in out.items()} == {
        "ids": ((None, None), "int32"), "tokens": ((None,), "int32"),
        "unknown_tokens": ((None,), "int32"), "valid": ((None,), "bool"),
    }  # fmt: skip
    assert CheckedTokens(5)(keras.Input((3,), dtype="int32"))["ids"].shape == (None, 4)


def test_checked_tokens_config_round_trips_through_json():
    layer = CheckedTokens(4, oov_id=3, name="check")
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(layer)))
    restored = keras.saving.deserialize_keras_object(config)
    assert restored.get_config() == layer.get_config()
    assert (restored.max_length, restored.oov_id) == (4, 3)


def test_checked_tokens_model_saves_and_reloads(tmp_path):
    ids = keras.Input((None,), dtype="int32")
    model = keras.Model(ids, CheckedTokens(2)(ids))
    model.save(tmp_path / "checked.keras")
    reloaded = keras.saving.load_model(tmp_path / "checked.keras")
    x = np.array([[2, 3, 4], [1, 0, 0]], "int32")
    for key, value in model(x).items():
        np.testing.assert_array_equal(reloaded(x)[key], value)


@pytest.mark.parametrize(
    "kwargs", [{"max_length": 0}, {"max_length": 2.5}, {"max_length": 5, "oov_id": 0}]
)
def test_invalid_checked_tokens_arguments_raise(kwargs):
    name, value = list(kwargs.items())[-1]
    with pytest.raises(ValueError, match=f"Received: {name}={value!r}"):
        CheckedTokens(**kwargs)


# --- the helpers --------------------------------------------------------------

X = np.random.default_rng(0).uniform(1, 2, (32, 2)).astype("float32")
Y = X[:, :1] + X[:, 1:]


def exact_sum():
    model = keras.Sequential([keras.Input((2,)), NAU(1)])
    model.layers[0].kernel.assign(np.ones((2, 1), "float32"))
    return model


class TwoBatches(keras.utils.PyDataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return X[16 * i : 16 * (i + 1)], Y[16 * i : 16 * (i + 1)]


class Watch(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs = 0

    def on_epoch_end(self, epoch, logs=None):
        self.epochs += 1


def fit(data_fn=lambda epoch: TwoBatches(), **kwargs):
    return training.fit(
        lambda: keras.Sequential([keras.Input((2,)), NAU(1)]), data_fn,
        loss="mse", optimizer_fn=lambda: keras.optimizers.Adam(0.1),
        epochs=2, verbose=0, **kwargs,
    )  # fmt: skip


@pytest.mark.parametrize(
    "returned, named",
    [((X, Y), r"returned a tuple \(arrays: wrap them"), (None, "returned None")],
    ids=["arrays", "None"],
)
def test_fit_refuses_a_data_fn_that_returns_no_dataset(returned, named):
    with pytest.raises(ValueError, match=rf"`data_fn`.*data_fn\(0\) {named}"):
        fit(lambda epoch: returned)


def test_fit_refuses_an_unwritable_checkpoint_dir_before_training(tmp_path):
    (tmp_path / "file").write_text("")
    watch = Watch()
    with pytest.raises(ValueError, match="`checkpoint_dir`, expected a folder where"):
        fit(checkpoint_dir=tmp_path / "file" / "run", callbacks=[watch])
    assert watch.epochs == 0


def test_fit_refuses_a_checkpoint_dir_that_is_no_path():
    with pytest.raises(
        ValueError, match="`checkpoint_dir`.*Received: checkpoint_dir=3"
    ):
        fit(checkpoint_dir=3)


def test_fit_refuses_a_file_that_is_no_checkpoint_before_training(tmp_path):
    (tmp_path / "checkpoint.npz").write_bytes(b"not a checkpoint")
    watch = Watch()
    with pytest.raises(ValueError, match="is not a keras_nalu checkpoint"):
        fit(checkpoint_dir=tmp_path, callbacks=[watch])
    assert watch.epochs == 0


def test_a_checkpoint_that_cannot_be_saved_loses_no_training(tmp_path, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", full_disk)
    with pytest.warns(UserWarning, match="Could not save the checkpoint") as record:
        result = fit(checkpoint_dir=tmp_path / "run")
    saves = [str(w.message) for w in record if "Could not save" in str(w.message)]
    assert [message.split(" in ")[0] for message in saves] == [
        "Could not save the checkpoint of epoch 1",
        "Could not save the checkpoint of epoch 2",
    ]
    assert result.epochs == 2 and len(result.history["loss"]) == 2


@pytest.mark.parametrize(
    "data, message",
    [
        ((X, Y[:5]), r"`data`, expected y of 32 rows.*shape \(5, 1\)"),
        ((X, np.hstack([Y, Y])), r"`data`, expected y of shape \(32, 1\).*\(32, 2\)"),
        ((), r"`data`, expected an \(x, y\) pair of arrays. Received: a tuple of 0"),
        ((X[:0], Y[:0]), "`data`, expected at least one example"),
        ((X, np.full_like(Y, np.nan)), "`data`, expected finite.*NaN or inf in y"),
        ((X[:, :1], Y), r"`data`, expected x of shape \(n, 2\)"),
        ((X, np.zeros_like(Y)), "`data`, expected y not all zeros"),
        ({"far": (X, "y")}, r"`data\['far'\]`, expected y of 32 rows"),
    ],
    ids=["lengths", "width", "empty-tuple", "no-rows", "nan", "x-width", "zeros",
         "named"],
)  # fmt: skip
def test_snap_weights_names_what_is_wrong_with_data(data, message):
    with pytest.raises(ValueError, match=message):
        snap_weights(exact_sum(), data)


def test_snap_weights_refuses_a_subclassed_model():
    class Sum(keras.Model):
        def __init__(self):
            super().__init__()
            self.unit = NAU(1)

        def call(self, x):
            return self.unit(x)

    model = Sum()
    model(X)
    with pytest.raises(
        ValueError, match="`model`, expected a Functional or Sequential"
    ):
        snap_weights(model, (X, Y))


def test_formulas_refuse_two_inputs_of_one_name():
    with pytest.raises(ValueError, match="2 distinct non-empty strings.*'a', 'a'"):
        formulas(exact_sum(), ["a", "a"])
    with pytest.raises(ValueError, match="1 distinct non-empty string. .*'y', 'y'"):
        formulas(exact_sum(), ["a", "b"], ["y", "y"])


@pytest.mark.parametrize(
    "x, message",
    [
        (np.full((3, 2), np.nan), "`x`, expected finite numbers"),
        (np.ones((0, 2)), r"`x`, expected an array of shape \(batch, 2\), batch >= 1"),
    ],
    ids=["nan", "empty"],
)
def test_formulas_refuse_an_x_that_decides_nothing(x, message):
    with pytest.raises(ValueError, match=message):
        formulas(exact_sum(), x=x)


@pytest.mark.tensorflow
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rtol": "x"}, "`rtol`, expected a finite number >= 0. Received: rtol='x'"),
        ({"atol": -1.0}, "`atol`, expected a finite number >= 0"),
        ({"sample_input": X[:0]}, "`sample_input`, expected a batch of at least one"),
        (
            {"sample_input": np.ones((2, 5), "float32")},
            r"`sample_input`, expected arrays of shape \(batch, 2\).*\(2, 5\)",
        ),
        (
            {"sample_input": np.full((2, 2), np.nan, "float32")},
            "`sample_input`, expected finite numbers",
        ),
    ],
)
def test_export_refuses_bad_tolerances_and_an_empty_sample(kwargs, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        export_saved_model(exact_sum(), tmp_path / "model", **kwargs)
    assert not (tmp_path / "model").exists()


@pytest.mark.tensorflow
def test_export_refuses_a_subclassed_model_by_name(tmp_path):
    class Sum(keras.Model):
        def __init__(self):
            super().__init__(name="my_sum")
            self.unit = NAU(1)

        def call(self, x):
            return self.unit(x)

    model = Sum()
    model(X)
    with pytest.raises(ValueError, match="subclassed model 'my_sum'; wrap it"):
        export_saved_model(model, tmp_path / "model")


@pytest.mark.tensorflow
def test_export_refuses_a_name_too_long_and_leaves_no_folder(tmp_path):
    path = tmp_path / "new" / "deeper" / ("x" * 256)
    with pytest.raises(ValueError, match="at most 255 bytes.*one has 256"):
        export_saved_model(exact_sum(), path)
    assert not (tmp_path / "new").exists()
    # 255 bytes fit: the staging folder beside it has a short name of its own.
    assert export_saved_model(exact_sum(), path.with_name("x" * 255)).is_dir()


UNITS = package_units(cells=False)


@pytest.mark.backends
@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.__name__)
def test_every_unit_computes_in_float64(unit):
    if keras.backend.backend() == "jax":
        pytest.skip("JAX computes float64 only with jax_enable_x64")
    from tests.helpers import gradients

    x = np.array([[-2.0, 3.0], [0.0, 0.5], [1e3, -1e-3]], "float64")
    layer = unit(2, dtype="float64")
    y = layer(x)
    assert keras.backend.standardize_dtype(y.dtype) == "float64"
    assert np.all(np.isfinite(keras.ops.convert_to_numpy(y)))
    for path, grad in gradients(layer, x).items():
        assert grad is not None and np.all(np.isfinite(grad)), path


@pytest.mark.backends
def test_float64_products_keep_float64_digits():
    """Keras's torch `matmul` and `prod` return float64 as float32:
    `keras_nalu.ops` keeps the digits (1 + 1e-12 is 1 in float32)."""
    if keras.backend.backend() == "jax":
        pytest.skip("JAX computes float64 only with jax_enable_x64")
    x = np.array([[1.0, 1e-12]], "float64")
    nau = NAU(1, dtype="float64")
    nau.build((None, 2))
    nau.kernel.assign(np.ones((2, 1)))
    assert keras.ops.convert_to_numpy(nau(x))[0, 0] == 1.0 + 1e-12
    nmu = NMU(1, dtype="float64")
    nmu.build((None, 2))
    nmu.kernel.assign(np.ones((2, 1)))
    x = np.array([[1.0 + 1e-12, 3.0]], "float64")
    assert keras.ops.convert_to_numpy(nmu(x))[0, 0] == (1.0 + 1e-12) * 3.0


def test_the_mnist_model_answers_a_batch_of_no_sequences():
    """TensorFlow's convolution fails on a batch of no images: the image
    sequence encoder adds a blank one when not training (its SavedModel then
    serves an empty batch too)."""
    model, _, _ = mnist.sequence_model("nac", "count", (28, 28, 1))
    empty = keras.ops.convert_to_numpy(model(np.zeros((0, 3, 28, 28, 1), "float32")))
    assert empty.shape == (0, model.outputs[0].shape[-1])
    blank = keras.ops.convert_to_numpy(model(np.zeros((2, 3, 28, 28, 1), "float32")))
    assert blank.shape[0] == 2 and np.all(np.isfinite(blank))


@pytest.mark.parametrize("flag", ["--json", "--checkpoint-dir", "--export-dir"])
def test_an_example_refuses_an_output_it_cannot_write_before_training(
    flag, tmp_path, capsys
):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as exit_:
        demo.Demo().parse_args([flag, str(tmp_path / "file" / "out")])
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert f"argument {flag}: cannot write" in error
    assert "is a file, not a folder" in error
