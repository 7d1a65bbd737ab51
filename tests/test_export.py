import atexit
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_nalu.export
from keras_nalu import NAC, NALU, NACCell, NALUCell, export_saved_model

pytestmark = pytest.mark.processes

# Served by a Python that can import neither keras_nalu nor nalu_research: the
# SavedModel must serve with TensorFlow alone. One such process per test
# process serves every request (`serve_models_in_fresh_process`): it never
# imports either, and the suite does not pay a TensorFlow import per served
# model.
SERVE_SCRIPT = textwrap.dedent(
    """
    import sys, traceback

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("keras_nalu", "nalu_research"):
                raise ImportError(f"{name} must not be imported when serving")

    sys.meta_path.insert(0, Block())
    import numpy as np
    import tensorflow as tf

    def serve(loaded, key, x):
        if key.startswith("signature|"):  # as saved_model_cli and TF Serving call it
            signature = loaded.signatures["serving_default"]
            (name,) = signature.structured_input_signature[1]
            return signature(**{name: x})
        return loaded.serve(x)

    # One request a line: model_dir, inputs, outputs, and "errors" to answer
    # an input's error as its outputs "KEY|error" and "KEY|message" (what a
    # client sees) or "raise" to fail the request.
    for line in sys.stdin:
        try:
            model_dir, inputs, outputs, mode = line.rstrip("\\n").split("\\t")
            loaded = tf.saved_model.load(model_dir)
            served = {}
            with np.load(inputs) as data:
                for key in data.files:
                    try:
                        out = serve(loaded, key, tf.constant(data[key]))
                    except Exception as error:
                        if mode != "errors":
                            raise
                        out = {"error": type(error).__name__, "message": str(error)}
                    if not isinstance(out, dict):
                        out = {"": out}
                    for field, value in out.items():
                        served["|".join(filter(None, [key, field]))] = np.asarray(value)
            assert not any(
                m.split(".")[0] in ("keras_nalu", "nalu_research") for m in sys.modules
            )
            np.savez(outputs, **served)
            print("served: ok", flush=True)
        except Exception:
            print("served:", repr(traceback.format_exc()), flush=True)
    """
)

_server = None


def serving_process():
    """The process that serves SavedModels without keras_nalu, started on
    first use (again if it died) and killed when this process exits."""
    global _server
    if _server is None or _server.poll() is not None:
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
        env.pop("PYTHONPATH", None)
        stderr = tempfile.TemporaryFile(mode="w+")
        _server = subprocess.Popen(
            [sys.executable, "-c", SERVE_SCRIPT], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=stderr, text=True, env=env,
            cwd=tempfile.gettempdir(),
        )  # fmt: skip
        _server.stderr_file = stderr
        atexit.register(_server.kill)
    return _server


def serve_in_fresh_process(model_dir, inputs, tmp_path):
    """Serves each array of `inputs` in a process without keras_nalu."""
    return serve_models_in_fresh_process({"model": (model_dir, inputs)}, tmp_path)[
        "model"
    ]


def serve_models_in_fresh_process(models, tmp_path, errors=False):
    """`{name: (model_dir, inputs)}` served by the process without keras_nalu
    (`serving_process`): `{name: {key: output}}`, an output a dict of the
    model's outputs where it has several. An input whose key starts with
    `signature|` goes through the `serving_default` signature, the others
    through `serve`. With `errors`, an input that fails answers
    `{"error": its type's name, "message": its text}`; without, the request
    fails."""
    served = {}
    for name, (model_dir, inputs) in models.items():
        paths = [model_dir, tmp_path / f"{name}_inputs.npz",
                 tmp_path / f"{name}_outputs.npz"]  # fmt: skip
        np.savez(paths[1], **inputs)
        server = serving_process()
        request = [*map(str, paths), "errors" if errors else "raise"]
        server.stdin.write("\t".join(request) + "\n")
        server.stdin.flush()
        reply = server.stdout.readline()
        while reply and not reply.startswith("served: "):  # anything else printed
            reply = server.stdout.readline()
        reply = reply.removeprefix("served: ").strip()
        if reply != "ok":
            server.stderr_file.seek(0)
            log = server.stderr_file.read()[-3000:]
            raise AssertionError(f"serving {name} failed: {reply or log}")
        served[name] = {}
        with np.load(paths[2]) as outputs:
            for key in outputs.files:
                if key in inputs:
                    served[name][key] = outputs[key]
                else:
                    input_key, field = key.rsplit("|", 1)
                    value = outputs[key]
                    served[name].setdefault(input_key, {})[field] = (
                        value.item() if value.dtype.kind == "U" else value
                    )
    return served


def static_model():
    return keras.Sequential(
        [keras.Input((4,), name="x"), NALU(3), NALU(2, tied_weights=False), NAC(1)]
    )


def recurrent_model():
    return keras.Sequential(
        [
            keras.Input((None, 3), name="x"),
            keras.layers.RNN(NALUCell(2), return_sequences=True),
            keras.layers.RNN(NACCell(1)),
        ]
    )


def predict(model, x):
    return keras.ops.convert_to_numpy(model(x))


@pytest.mark.parametrize("jit_compile", [False, True])
def test_static_model_serves_without_keras_nalu_at_any_batch_size(
    tmp_path, jit_compile
):
    model = static_model()
    path = export_saved_model(model, tmp_path / "static", jit_compile=jit_compile)
    # The serving function is marked for XLA exactly when asked.
    assert (b"_XlaMustCompile" in (path / "saved_model.pb").read_bytes()) is jit_compile
    assert path == tmp_path / "static" and (path / "saved_model.pb").is_file()
    rng = np.random.default_rng(0)
    inputs = {
        f"batch_{n}": rng.uniform(0.5, 3, (n, 4)).astype("float32") for n in (1, 7, 300)
    }
    served = serve_in_fresh_process(path, inputs, tmp_path)
    for key, x in inputs.items():
        np.testing.assert_allclose(served[key], predict(model, x), rtol=1e-5, atol=1e-6)


def test_recurrent_model_serves_any_batch_and_length(tmp_path):
    model = recurrent_model()
    rng = np.random.default_rng(0)
    sample = rng.uniform(0.5, 1.5, (2, 5, 3)).astype("float32")
    path = export_saved_model(model, tmp_path / "recurrent", sample)
    inputs = {
        "short": rng.uniform(0.5, 1.5, (1, 3, 3)).astype("float32"),
        "long": rng.uniform(0.5, 1.5, (4, 50, 3)).astype("float32"),
    }
    served = serve_in_fresh_process(path, inputs, tmp_path)
    for key, x in inputs.items():
        np.testing.assert_allclose(served[key], predict(model, x), rtol=1e-4, atol=1e-5)


def test_recurrent_model_without_sample_input_asks_for_one(tmp_path):
    with pytest.raises(ValueError, match="unknown dimensions.*Pass `sample_input`"):
        export_saved_model(recurrent_model(), tmp_path / "recurrent")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("jit_compile", [False, True])
def test_saved_model_cli_runs_the_serving_signature(tmp_path, jit_compile):
    model = static_model()
    path = export_saved_model(model, tmp_path / "static", jit_compile=jit_compile)
    cli = Path(sys.executable).with_name("saved_model_cli")
    if not cli.exists():
        cli = shutil.which("saved_model_cli")
    x = np.arange(12, dtype="float32").reshape(3, 4) / 4 + 0.25
    np.save(tmp_path / "x.npy", x)
    subprocess.run(
        [str(cli), "run", "--dir", str(path), "--tag_set", "serve",
         "--signature_def", "serving_default", "--inputs", f"x={tmp_path / 'x.npy'}",
         "--outdir", str(tmp_path / "out")],
        check=True, capture_output=True, text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )  # fmt: skip
    (output,) = list((tmp_path / "out").glob("*.npy"))
    np.testing.assert_allclose(np.load(output), predict(model, x), rtol=1e-5, atol=1e-6)


def test_replaces_an_existing_saved_model_only_with_a_verified_one(tmp_path):
    first, second = static_model(), static_model()
    x = np.ones((2, 4), "float32")
    path = export_saved_model(first, tmp_path / "model")
    export_saved_model(second, path)
    served = serve_in_fresh_process(path, {"x": x}, tmp_path)
    np.testing.assert_allclose(served["x"], predict(second, x), rtol=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model",
        "model_inputs.npz",  # the serving process's files
        "model_outputs.npz",
    ]


def snapshot(folder):
    return {
        p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_failed_verification_leaves_the_previous_model_and_no_partial_files(
    tmp_path, monkeypatch
):
    path = export_saved_model(static_model(), tmp_path / "model")
    before = snapshot(tmp_path)

    def wrong_outputs(*args, **kwargs):
        raise RuntimeError("The exported SavedModel does not reproduce the model")

    monkeypatch.setattr(keras_nalu.export, "_verify", wrong_outputs)
    with pytest.raises(RuntimeError, match="does not reproduce"):
        export_saved_model(static_model(), path)
    assert snapshot(tmp_path) == before


def test_interrupted_export_leaves_the_previous_model_and_no_partial_files(
    tmp_path, monkeypatch
):
    path = export_saved_model(static_model(), tmp_path / "model")
    before = snapshot(tmp_path)
    model = static_model()

    def export_then_crash(model, folder, jit_compile):
        Path(folder).mkdir()
        (Path(folder) / "saved_model.pb").write_bytes(b"half written")
        raise KeyboardInterrupt

    monkeypatch.setattr(keras_nalu.export, "_export_checked", export_then_crash)
    with pytest.raises(KeyboardInterrupt):
        export_saved_model(model, path)
    assert snapshot(tmp_path) == before


def test_mismatching_export_is_detected(tmp_path, monkeypatch):
    model = static_model()
    x = np.ones((2, 4), "float32")
    model(x)
    real_export = keras_nalu.export._export_checked

    def export_other_weights(model, folder, jit_compile):
        original = [w.numpy() for w in model.weights]
        for w in model.weights:
            w.assign(w.numpy() + 1.0)
        try:
            real_export(model, folder, jit_compile)
        finally:
            for w, value in zip(model.weights, original, strict=True):
                w.assign(value)

    monkeypatch.setattr(keras_nalu.export, "_export_checked", export_other_weights)
    with pytest.raises(RuntimeError, match="does not reproduce the model"):
        export_saved_model(model, tmp_path / "model", x)
    assert list(tmp_path.iterdir()) == []


def test_failed_swap_puts_the_previous_model_back(tmp_path, monkeypatch):
    path = export_saved_model(static_model(), tmp_path / "model")
    before = snapshot(tmp_path)
    real_rename, calls = os.rename, []

    def rename_failing_second(source, target):
        calls.append(target)
        if len(calls) == 2:  # moving the new model in
            raise OSError("disk gone")
        real_rename(source, target)

    monkeypatch.setattr(keras_nalu.export.os, "rename", rename_failing_second)
    with pytest.raises(OSError, match="disk gone"):
        export_saved_model(static_model(), path)
    monkeypatch.undo()
    assert snapshot(tmp_path) == before


def test_failed_export_removes_the_parent_folders_it_created(tmp_path, monkeypatch):
    monkeypatch.setattr(
        keras_nalu.export, "_verify", lambda *a: (_ for _ in ()).throw(RuntimeError)
    )
    with pytest.raises(RuntimeError):
        export_saved_model(static_model(), tmp_path / "a" / "b" / "model")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.backends
def test_model_of_several_inputs_serves_them_as_one_list(tmp_path):
    """On every exporting backend, `serve` takes a model's several inputs as
    one list in the order of `model.inputs` (it took them as separate
    arguments on tensorflow and failed to verify)."""
    if keras.backend.backend() not in ("tensorflow", "jax"):
        pytest.skip("Keras exports a SavedModel from tensorflow and jax")
    import tensorflow as tf

    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    model = keras.Model([a, b], NAC(1)(keras.layers.Concatenate()([a, b])))
    inputs = [np.ones((4, 3), "float32"), np.arange(8, dtype="float32").reshape(4, 2)]
    export_saved_model(model, tmp_path / "two", inputs)
    loaded = tf.saved_model.load(str(tmp_path / "two"))
    served = loaded.serve([tf.constant(x) for x in inputs]).numpy()
    np.testing.assert_allclose(
        served, keras.ops.convert_to_numpy(model(inputs)), rtol=1e-6
    )


def test_accepts_a_nested_list_as_sample_input(tmp_path):
    sample = [[0.5, 1.0, 1.5, 2.0], [1.0, 1.0, 1.0, 1.0]]
    assert export_saved_model(static_model(), tmp_path / "m", sample).exists()


@pytest.mark.parametrize("name", ["overwrite", "jit_compile"])
@pytest.mark.parametrize("value", ["False", 0, None])
def test_invalid_flag_raises(tmp_path, name, value):
    with pytest.raises(ValueError, match=f"`{name}`.*True or False"):
        export_saved_model(static_model(), tmp_path / "m", **{name: value})


def test_jit_compile_needs_known_input_dimensions(tmp_path):
    sample = np.ones((2, 5, 3), "float32")
    with pytest.raises(ValueError, match="jit_compile=True.*unknown dimensions"):
        export_saved_model(recurrent_model(), tmp_path / "r", sample, jit_compile=True)
    assert list(tmp_path.iterdir()) == []


def test_overwrite_false_keeps_an_existing_model(tmp_path):
    path = export_saved_model(static_model(), tmp_path / "model")
    before = snapshot(tmp_path)
    with pytest.raises(FileExistsError, match="overwrite=False"):
        export_saved_model(static_model(), path, overwrite=False)
    assert snapshot(tmp_path) == before


def test_refuses_to_replace_a_folder_that_is_not_a_saved_model(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds other files.*path="):
        export_saved_model(static_model(), tmp_path / "notes")
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"


def test_refuses_a_path_that_is_a_file(tmp_path):
    (tmp_path / "model").write_text("data")
    with pytest.raises(ValueError, match="existing file.*path="):
        export_saved_model(static_model(), tmp_path / "model")


def test_writes_into_an_existing_empty_folder_and_creates_parents(tmp_path):
    (tmp_path / "empty").mkdir()
    assert (
        export_saved_model(static_model(), tmp_path / "empty") / "saved_model.pb"
    ).is_file()
    deep = export_saved_model(static_model(), str(tmp_path / "a" / "b" / "model"))
    assert (deep / "saved_model.pb").is_file()


@pytest.mark.parametrize(
    "model, message",
    [
        (NALU(1), "expected a keras.Model"),
        (keras.Sequential([NALU(1)]), "expected a built model"),
    ],
)
def test_invalid_model_raises(tmp_path, model, message):
    with pytest.raises(ValueError, match=f"`model`.*{message}"):
        export_saved_model(model, tmp_path / "model")


def test_invalid_path_raises():
    with pytest.raises(ValueError, match="`path`.*Received: path=3"):
        export_saved_model(static_model(), 3)


def test_the_export_logs_no_staging_folder(tmp_path, caplog):
    # TensorFlow's INFO "Assets written to: .../.export-partial-..." names the
    # staging folder, not the export: left out, the caller's level restored.
    logger = logging.getLogger("tensorflow")
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        model = keras.Sequential([keras.Input((2,)), NAC(1)])
        with caplog.at_level(logging.INFO, logger="tensorflow"):
            export_saved_model(model, tmp_path / "m")
        assert logger.level == logging.INFO
    finally:
        logger.setLevel(level)
    assert not [r for r in caplog.records if "export-partial" in r.getMessage()]
