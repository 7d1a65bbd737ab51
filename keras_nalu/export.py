"""Export a Keras model as a TensorFlow SavedModel, verified before it lands."""

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

import keras
import numpy as np

from keras_nalu import validation
from keras_nalu._types import ArrayLike

_SAVED_MODEL_FILE = "saved_model.pb"
# The longest file name of the usual file systems (ext4, APFS, NTFS), in bytes.
_NAME_MAX = 255


def export_saved_model(
    model: keras.Model,
    path: str | os.PathLike,
    sample_input: ArrayLike | None = None,
    *,
    overwrite: bool = True,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    jit_compile: bool = False,
) -> Path:
    """Exports `model` as a TensorFlow SavedModel at `path`, or leaves all as it was.

    The model is written by Keras's `ExportArchive` (on JAX by
    `model.export(format="tf_saved_model")`) into a staging folder beside
    `path`, loaded back with `tf.saved_model.load`, and
    served on `sample_input` (and on its first row alone, a batch of one).
    Only when the served outputs match the in-memory model's within
    `rtol`/`atol` is the folder moved to `path`. On any failure before that
    move, the staging folder and any parent folders this call created are
    removed and a model already at `path` is untouched. A model already at
    `path` is replaced only by a verified one, by two renames on the same
    file system: it is moved aside, the new one moved in, and the old one
    deleted (or moved back if the second rename fails).

    The SavedModel needs neither Keras nor `keras_nalu` to serve: its
    `serve` endpoint (also the `serving_default` signature, for
    `saved_model_cli` and TF Serving) takes a batch of any size: a tensor,
    or for a model of several inputs one list of tensors in the order of
    `model.inputs` (on both backends). A wrong
    dtype or shape is refused with an error naming the expected one: `serve`
    refuses it when binding its inputs, and the signature, which binds only
    dtypes, checks shapes with `tf.ensure_shape` before the model runs (on
    the TensorFlow backend; a JAX export is Keras's own `model.export`).

    Args:
        model: A built `keras.Model`.
        path: Folder to write. Its parent folders are created.
        sample_input: Input to verify the export on, as `model(sample_input)`
            takes it, with a batch axis of at least 1. Defaults to standard
            normal values of shape `model.inputs` with a batch of 8, which
            needs every non-batch dimension to be known.
        overwrite: Whether a SavedModel already at `path` may be replaced
            (keyword-only, a bool).
        rtol: Relative tolerance of the check of served against Keras
            outputs.
        atol: Absolute tolerance of that check.
        jit_compile: Whether the `serve` endpoint is compiled with XLA when
            it is loaded (`tf.function(jit_compile=True)`; keyword-only, a
            bool). XLA fuses the NALU's elementwise log, exp and sigmoid with
            their neighbours: `examples/serving_benchmark.py` measures the
            gain. The model's inputs must have known dimensions besides the
            batch. On the JAX backend the endpoint is always XLA (jax2tf
            embeds the compiled program), so the flag changes nothing there.

    Backends: TensorFlow and JAX. On JAX, Keras converts the model with
    `jax2tf`, without gradient functions (jax2tf cannot trace the gradient
    of the NMU's product for a batch of unknown size, and serving needs
    none), so the SavedModel serves but cannot be fine-tuned in TensorFlow.
    Keras's SavedModel export from torch fails on every model here (Keras
    3.15, torch 2.13): save a `.keras` file and export it from a process
    with `KERAS_BACKEND=tensorflow`.

    Returns:
        The `pathlib.Path` of the exported SavedModel.

    Example:

    >>> import tempfile, keras, numpy as np
    >>> import tensorflow as tf
    >>> from keras_nalu import NALU, export_saved_model
    >>> model = keras.Sequential([keras.Input((3,)), NALU(1)])
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = export_saved_model(model, folder + "/nalu")
    ...     served = tf.saved_model.load(str(path))
    ...     served.serve(np.ones((5, 3), "float32")).shape
    TensorShape([5, 1])
    """
    if not isinstance(model, keras.Model):
        raise ValueError(
            "Received an invalid value for `model`, expected a keras.Model. "
            f"Received: model={model!r}"
        )
    if not model.built:
        raise ValueError(
            "Received an invalid value for `model`, expected a built model: "
            "call it on data or give it an `Input` first. "
            f"Received: model={model.name!r} (not built)"
        )
    try:
        has_inputs = bool(model.inputs)
    except AttributeError:
        has_inputs = False
    if not has_inputs:
        raise ValueError(
            "Received an invalid value for `model`, expected a model with known "
            "inputs (`model.inputs`: a Functional or Sequential model started "
            f"with keras.Input). Received: a subclassed model {model.name!r}; "
            "wrap it, e.g. keras.Sequential([keras.Input(shape), model])"
        )
    for name, value in (("rtol", rtol), ("atol", atol)):
        if (
            not isinstance(value, (int, float, np.floating, np.integer))
            or isinstance(value, bool)
            or not np.isfinite(value)
            or value < 0
        ):
            raise ValueError(
                f"Received an invalid value for `{name}`, expected a finite "
                f"number >= 0. Received: {name}={value!r}"
            )
    for name, value in (("overwrite", overwrite), ("jit_compile", jit_compile)):
        if not isinstance(value, bool):
            raise ValueError(
                f"Received an invalid value for `{name}`, expected True or "
                f"False. Received: {name}={value!r}"
            )
    backend = keras.backend.backend()
    if backend not in ("tensorflow", "jax"):
        raise ValueError(
            "export_saved_model needs the tensorflow or jax backend; this "
            f"process runs KERAS_BACKEND={backend!r}. Save the model with "
            "`model.save('model.keras')`, then load and export it in a process "
            "with KERAS_BACKEND=tensorflow."
        )
    validation.tensorflow("export_saved_model (a TensorFlow SavedModel)")
    target = _check_target(path, overwrite)
    if sample_input is None:
        sample_input = _default_sample(model)
    elif len(getattr(model, "inputs", None) or [None]) == 1:
        sample_input = np.asarray(sample_input)  # e.g. a nested list
    _check_sample(model, sample_input)
    samples = [sample_input, keras.tree.map_structure(lambda a: a[:1], sample_input)]
    expected = [_to_numpy(model(sample, training=False)) for sample in samples]

    created = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    moved, staging = False, None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # A short staging name: the export's own name must fit beside it.
        staging = Path(tempfile.mkdtemp(prefix=".export-partial-", dir=target.parent))
        exported = staging / target.name
        with _tensorflow_info_off():
            _write(model, exported, backend, jit_compile)
        _verify(exported, samples, expected, rtol, atol)
        _move_into_place(exported, target, staging / "previous")
        moved = True
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        if not moved:
            for folder in created:  # deepest first
                if folder.is_dir() and not any(folder.iterdir()):
                    folder.rmdir()
    return target


def _write(model, exported, backend, jit_compile):
    """Writes the SavedModel of `model` at `exported` on `backend`."""
    if backend == "jax":
        model.export(
            str(exported),
            format="tf_saved_model",
            verbose=False,
            jax2tf_kwargs={"with_gradient": False},
        )
    else:
        _export_checked(model, exported, jit_compile)


@contextlib.contextmanager
def _tensorflow_info_off():
    """TensorFlow's Python log from WARNING on while it writes: its INFO line
    "Assets written to: .../.export-partial-..." names the staging folder,
    not where the export lands."""
    logger = logging.getLogger("tensorflow")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def _export_checked(model, folder, jit_compile):
    """Writes `model` with a `serve` endpoint (also the `serving_default`
    signature) that checks the shape of its inputs, compiled by XLA with
    `jit_compile`.

    `serve` itself refuses a wrong dtype or shape when it binds its inputs;
    the signature, which `saved_model_cli` and TF Serving call, checks only
    dtypes, so the function starts with `tf.ensure_shape`: a wrong shape
    fails there with a message that names the expected shape, not inside
    the model's first layer.
    """
    import tensorflow as tf

    specs = []
    for tensor in model.inputs:
        if jit_compile and any(dim is None for dim in tuple(tensor.shape)[1:]):
            raise ValueError(
                "Received jit_compile=True for a model whose input shape "
                f"{tuple(tensor.shape)} has unknown dimensions besides the "
                "batch; expected known ones (XLA compiles one program per "
                "shape). Export it with jit_compile=False."
            )
        specs.append(tf.TensorSpec(tensor.shape, tensor.dtype, name=tensor.name))

    def checked(inputs):
        return [
            tf.ensure_shape(x, spec.shape)
            for x, spec in zip(inputs, specs, strict=True)
        ]

    # One input is served as a tensor; several as one list of tensors, in
    # the order of `model.inputs`, as Keras's JAX export takes them.
    if len(specs) == 1:

        def serve(x):
            return model(checked([x])[0], training=False)

        signature = specs
    else:

        def serve(inputs):
            return model(checked(inputs), training=False)

        signature = [specs]
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serve",
        tf.function(serve, jit_compile=jit_compile or None, input_signature=signature),
    )
    archive.write_out(str(folder), verbose=False)


def _check_target(path, overwrite):
    try:
        path = Path(os.fspath(path))
    except TypeError:
        raise ValueError(
            "Received an invalid value for `path`, expected a str or "
            f"os.PathLike folder name. Received: path={path!r}"
        ) from None
    longest = max((len(part.encode()) for part in path.parts), default=0)
    if longest > _NAME_MAX:
        raise ValueError(
            "Received an invalid value for `path`, expected folder names of at "
            f"most {_NAME_MAX} bytes (the file system's limit); one has {longest}. "
            f"Received: path='{path}'"
        )
    if path.exists():
        if not path.is_dir():
            raise ValueError(
                "Received an invalid value for `path`, expected a folder to "
                f"write a SavedModel in, but it is an existing file. "
                f"Received: path='{path}'"
            )
        if not (path / _SAVED_MODEL_FILE).is_file() and any(path.iterdir()):
            raise ValueError(
                "Received an invalid value for `path`, expected a new folder, "
                "an empty one or an existing SavedModel; it holds other files, "
                f"which will not be replaced. Received: path='{path}'"
            )
        if not overwrite and (path / _SAVED_MODEL_FILE).is_file():
            raise FileExistsError(
                f"A SavedModel already exists at path='{path}' and overwrite=False."
            )
    return path


def _check_sample(model, sample_input):
    """Refuses a `sample_input` that cannot verify an export: not one array
    per input of the model's shape, no example, or values not finite."""
    arrays = [np.asarray(a) for a in keras.tree.flatten(sample_input)]
    shapes = [tuple(tensor.shape) for tensor in model.inputs]

    def fits(array, shape):
        return array.ndim == len(shape) and all(
            want is None or want == got
            for want, got in zip(shape[1:], array.shape[1:], strict=True)
        )

    if len(arrays) != len(shapes) or not all(
        fits(a, shape) for a, shape in zip(arrays, shapes, strict=False)
    ):
        expected = ", ".join(
            "(" + ", ".join("batch" if d is None else str(d) for d in shape) + ")"
            for shape in shapes
        )
        raise ValueError(
            f"Received an invalid value for `sample_input`, expected arrays of "
            f"shape {expected}, one per model input. Received: shapes "
            f"{[a.shape for a in arrays]}"
        )
    if any(a.shape[0] == 0 for a in arrays):
        raise ValueError(
            "Received an invalid value for `sample_input`, expected a batch of at "
            "least one example to verify the export on. Received: shapes "
            f"{[a.shape for a in arrays]}"
        )
    if not all(np.all(np.isfinite(a)) for a in arrays if a.dtype.kind == "f"):
        raise ValueError(
            "Received an invalid value for `sample_input`, expected finite numbers "
            "to verify the export on. Received: NaN or inf values"
        )


def _default_sample(model):
    rng = np.random.default_rng(0)
    samples = []
    for tensor in model.inputs:
        shape = tuple(tensor.shape)
        if any(dim is None for dim in shape[1:]):
            raise ValueError(
                "Received sample_input=None, expected an input to check the "
                f"export on: the model's input shape {shape} has unknown "
                "dimensions besides the batch. Pass `sample_input`."
            )
        samples.append(rng.standard_normal((8,) + shape[1:]).astype(tensor.dtype))
    return samples[0] if len(samples) == 1 else samples


def _to_numpy(outputs):
    return [keras.ops.convert_to_numpy(t) for t in keras.tree.flatten(outputs)]


def _verify(exported, samples, expected, rtol, atol):
    import tensorflow as tf

    served = tf.saved_model.load(str(exported))
    for sample, want in zip(samples, expected, strict=True):
        got = _to_numpy(served.serve(sample))
        batch = want[0].shape[0]
        for got_tensor, want_tensor in zip(got, want, strict=True):
            if got_tensor.shape != want_tensor.shape or not np.allclose(
                got_tensor, want_tensor, rtol=rtol, atol=atol, equal_nan=True
            ):
                raise RuntimeError(
                    "The exported SavedModel does not reproduce the model on a "
                    f"batch of {batch}: it served shape {got_tensor.shape} "
                    f"where the model gave {want_tensor.shape}, max abs "
                    f"difference {_max_difference(got_tensor, want_tensor)}. "
                    "Nothing was written."
                )


def _max_difference(got, want):
    if got.shape != want.shape:
        return "n/a"
    return float(np.nanmax(np.abs(got.astype("float64") - want)))


def _move_into_place(exported, path, backup):
    """Renames `exported` to `path`, keeping what was at `path` until it lands."""
    had_previous = path.exists()
    if had_previous:
        os.rename(path, backup)
    try:
        os.rename(exported, path)
    except BaseException:
        if had_previous:
            os.rename(backup, path)
        raise
