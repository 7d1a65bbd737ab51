"""`keras_nalu.training.fit`: resumable, divergence-aware training on both
loops (`model.fit` and the custom `distribute.Trainer` loop)."""

import keras
import numpy as np
import pytest

from keras_nalu import NALU, NAU, NMU, training
from keras_nalu.checkpoints import Checkpoint
from keras_nalu.training import Progress, fit, moving_averages, remove_checkpoint

# The custom loop is `distribute.Trainer`, written with tf.distribute.
LOOPS = ("fit", "custom")
LOOP_PARAMS = ("fit", pytest.param("custom", marks=pytest.mark.tensorflow))
EPOCHS, STEPS, BATCH = 4, 5, 16
pytestmark = pytest.mark.backends


def nau_nmu():
    schedule = {"regularization_start": 0, "regularization_end": 10}
    return keras.Sequential([keras.Input((4,)), NAU(2, **schedule), NMU(1, **schedule)])


def adam():
    return keras.optimizers.Adam(0.01)


class Batches(keras.utils.PyDataset):
    """Epoch `epoch`'s fresh batches, drawn from `(epoch, step)` only."""

    def __init__(self, epoch, scale=1.0):
        super().__init__()
        self.epoch, self.scale = epoch, scale

    def __len__(self):
        return STEPS

    def __getitem__(self, step):
        rng = np.random.default_rng((self.epoch, step))
        x = rng.uniform(1, 2, (BATCH, 4)).astype("float32") * self.scale
        return x, x[:, :1] * x[:, 1:2]


class Interrupt(keras.callbacks.Callback):
    """Raises at the end of epoch `at`, before its checkpoint is written."""

    def __init__(self, at):
        super().__init__()
        self.at = at

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.at:
            raise KeyboardInterrupt


class Probe(keras.callbacks.Callback):
    """Adds a value to the epoch's logs and keeps a state across a resume."""

    def __init__(self):
        super().__init__()
        self.calls = np.zeros((), "int64")

    def on_epoch_end(self, epoch, logs=None):
        self.calls += 1
        logs["probe"] = 10.0 * epoch

    def get_checkpoint_state(self):
        return {"calls": self.calls}

    def set_checkpoint_state(self, state):
        self.calls = state["calls"].copy()


def with_dropout(seed=None):
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dropout(0.3, seed=seed), NAU(2), NMU(1)]
    )


def with_seeded_dropout():
    return with_dropout(seed=5)


# On torch, a Dropout without a seed draws from torch's global generator (as
# Keras's torch backend does), which no checkpoint holds: only a seeded one
# resumes exactly there.
UNSEEDED_DROPOUT = pytest.param(
    with_dropout,
    marks=pytest.mark.skipif(
        keras.backend.backend() == "torch",
        reason="torch: an unseeded Dropout uses torch's global generator",
    ),
)


def adam_ema():
    return keras.optimizers.Adam(0.01, use_ema=True, ema_momentum=0.9)


def train(
    loop, checkpoint_dir=None, callbacks=(), config=None, data_fn=Batches,
    model_fn=nau_nmu, verbose=0, optimizer_fn=adam, epochs=EPOCHS,
):  # fmt: skip
    keras.utils.set_random_seed(3)
    return fit(
        model_fn,
        data_fn,
        loss="mse",
        optimizer_fn=optimizer_fn,
        epochs=epochs,
        loop=loop,
        checkpoint_dir=checkpoint_dir,
        config=config,
        callbacks=callbacks,
        verbose=verbose,
    )


def weights(model):
    return [keras.ops.convert_to_numpy(w) for w in model.weights]


@pytest.mark.parametrize("loop", LOOP_PARAMS)
@pytest.mark.parametrize("model_fn", [nau_nmu, UNSEEDED_DROPOUT, with_seeded_dropout])
def test_an_interrupted_run_resumes_to_the_uninterrupted_weights(
    loop, model_fn, tmp_path
):
    whole = train(loop, callbacks=[Probe()], model_fn=model_fn)
    probe = Probe()
    with pytest.raises(KeyboardInterrupt):
        train(loop, tmp_path, callbacks=[probe, Interrupt(at=2)], model_fn=model_fn)
    assert probe.calls == 3
    # As a fresh process: reseeded, so the dropout generator starts afresh and
    # the callback's state is new; both must come from the checkpoint.
    probe = Probe()
    resumed = train(loop, tmp_path, callbacks=[probe], model_fn=model_fn)
    assert resumed.resumed_at == 2 and resumed.epochs == EPOCHS
    assert probe.calls == EPOCHS  # 2 restored + 2 after the resume
    for a, b in zip(weights(whole.model), weights(resumed.model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    # The step counter of the scheduled penalty resumed too.
    nau = [layer for layer in resumed.model.layers if isinstance(layer, NAU)][0]
    assert int(nau.regularization_step.numpy()) == EPOCHS * STEPS
    np.testing.assert_allclose(resumed.history["loss"], whole.history["loss"])
    assert resumed.history["probe"] == [0.0, 10.0, 20.0, 30.0]
    assert resumed.divergence is None


def loss_scaled_adam_ema():
    return keras.optimizers.LossScaleOptimizer(adam_ema())


class EpochWeights(keras.callbacks.Callback):
    """The model's weights at the end of every epoch."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def on_epoch_end(self, epoch, logs=None):
        self.seen.append(weights(self.model))


@pytest.mark.parametrize("loop", LOOP_PARAMS)
@pytest.mark.parametrize("optimizer_fn", [adam_ema, loss_scaled_adam_ema])
def test_moving_averages_end_the_run_as_one_model_fit_call(loop, optimizer_fn):
    # Keras's model.fit writes the averages into the model when it ends; fit
    # calls it once per epoch, and must still train on the raw weights
    # throughout (it restarted from the averages each epoch, and crashed on
    # JAX at the second epoch).
    keras.utils.set_random_seed(3)
    model = nau_nmu()
    model.compile(optimizer=optimizer_fn(), loss="mse")
    model.fit(Batches(0), epochs=EPOCHS, shuffle=False, verbose=0)
    spy, raw_spy = EpochWeights(), EpochWeights()
    ours = train(
        loop, data_fn=lambda epoch: Batches(0), optimizer_fn=optimizer_fn,
        callbacks=[spy],
    )  # fmt: skip
    for a, b in zip(weights(model), weights(ours.model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    raw = train(loop, data_fn=lambda epoch: Batches(0), callbacks=[raw_spy])
    assert not np.allclose(weights(raw.model)[0], weights(ours.model)[0], atol=1e-3)
    # The callbacks see the weights being trained, not the averages.
    for seen, raw_seen in zip(spy.seen, raw_spy.seen, strict=True):
        for a, b in zip(seen, raw_seen, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    if loop == "fit":  # It trains on: no buffer shared with the averages.
        ours.model.fit(Batches(0), epochs=1, verbose=0)


class AveragedPredictions(keras.callbacks.Callback):
    """Predicts with the moving averages after every epoch (on JAX predict
    donates the weights' buffers, the averages' too if they were shared)."""

    def __init__(self):
        super().__init__()
        self.inside = []

    def on_epoch_end(self, epoch, logs=None):
        with moving_averages(self.model):
            self.model.predict(Batches(0)[0][0], verbose=0)
            self.inside.append(weights(self.model))


@pytest.mark.parametrize("loop", LOOP_PARAMS)
def test_moving_averages_block_reads_the_averages_and_leaves_no_trace(loop, tmp_path):
    plain = train(loop, optimizer_fn=adam_ema)
    probe = AveragedPredictions()
    probed = train(loop, tmp_path, callbacks=[probe], optimizer_fn=adam_ema)
    assert len(probe.inside) == EPOCHS
    for a, b, c in zip(
        weights(plain.model), weights(probed.model), probe.inside[-1], strict=True
    ):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-7)


def test_moving_averages_need_an_optimizer_that_keeps_them():
    model = nau_nmu()
    model.compile(optimizer=adam(), loss="mse")
    with pytest.raises(ValueError, match="`optimizer`, expected an optimizer with"):
        with moving_averages(model):
            pass


@pytest.mark.tensorflow
def test_trainer_fit_ends_with_the_moving_averages_as_model_fit():
    import tensorflow as tf

    from keras_nalu.distribute import Trainer

    keras.utils.set_random_seed(3)
    model = nau_nmu()
    model.compile(optimizer=adam_ema(), loss="mse")
    model.fit(Batches(0), epochs=2, shuffle=False, verbose=0)
    keras.utils.set_random_seed(3)
    trainer = Trainer(nau_nmu, "mse", adam_ema)
    epoch = [Batches(0)[step] for step in range(STEPS)]
    x, y = (np.concatenate([part[i] for part in epoch] * 2) for i in (0, 1))
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH)
    trainer.fit(data, epochs=2, steps_per_epoch=STEPS)
    for a, b in zip(weights(model), weights(trainer.model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loop", LOOP_PARAMS)
def test_an_interrupted_run_with_moving_averages_resumes_exactly(loop, tmp_path):
    whole = train(loop, optimizer_fn=adam_ema)
    with pytest.raises(KeyboardInterrupt):
        train(loop, tmp_path, callbacks=[Interrupt(at=2)], optimizer_fn=adam_ema)
    resumed = train(loop, tmp_path, optimizer_fn=adam_ema)
    assert resumed.resumed_at == 2
    for a, b in zip(weights(whole.model), weights(resumed.model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    # A finished run restored again ends with the same averages.
    again = train(loop, tmp_path, optimizer_fn=adam_ema)
    assert again.resumed_at == EPOCHS
    for a, b in zip(weights(whole.model), weights(again.model), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("loop", LOOP_PARAMS)
def test_a_finished_run_continues_to_more_epochs(loop, tmp_path):
    whole = train(loop, optimizer_fn=adam_ema)
    short = train(loop, tmp_path, optimizer_fn=adam_ema, epochs=2)
    assert short.epochs == 2 and len(short.history["loss"]) == 2
    longer = train(loop, tmp_path, optimizer_fn=adam_ema)
    assert longer.resumed_at == 2 and longer.epochs == EPOCHS
    for a, b in zip(weights(whole.model), weights(longer.model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(longer.history["loss"], whole.history["loss"])
    # Fewer epochs than the checkpoint holds: an error, the checkpoint kept.
    with pytest.raises(
        training.CheckpointAheadError, match=r"`epochs`, expected at least 4.*epochs=3"
    ) as error:
        train(loop, tmp_path, optimizer_fn=adam_ema, epochs=3)
    assert error.value.checkpoint_epochs == EPOCHS
    assert isinstance(error.value, ValueError)
    assert train(loop, tmp_path, optimizer_fn=adam_ema).resumed_at == EPOCHS


def test_a_kept_checkpoint_is_never_replaced_by_another_config(tmp_path):
    first = train("fit", tmp_path, config={"lr": 0.01})
    training.keep_checkpoint(tmp_path)
    with pytest.raises(
        ValueError, match="`checkpoint_dir`, expected a folder without a kept"
    ) as refused:
        train("fit", tmp_path, config={"lr": 0.02})
    # The one policy, `Checkpoint.load_for`'s, word for word.
    with pytest.raises(ValueError) as policy:
        Checkpoint(tmp_path).load_for("another config")
    assert str(refused.value) == str(policy.value)
    # Its own config restores it, and more epochs continue it, as before.
    again = train("fit", tmp_path, config={"lr": 0.01})
    assert again.resumed_at == EPOCHS
    for a, b in zip(weights(first.model), weights(again.model), strict=True):
        np.testing.assert_array_equal(a, b)
    # Removed, the folder takes any run again.
    remove_checkpoint(tmp_path)
    assert train("fit", tmp_path, config={"lr": 0.02}).resumed_at == 0


@pytest.mark.parametrize("loop", LOOP_PARAMS)
def test_a_finished_run_restores_without_training(loop, tmp_path):
    first = train(loop, tmp_path)
    calls = []
    again = train(loop, tmp_path, data_fn=lambda epoch: calls.append(epoch))
    assert calls == [] and again.resumed_at == EPOCHS
    for a, b in zip(weights(first.model), weights(again.model), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.tensorflow
def test_both_loops_train_alike():
    by_loop = {loop: train(loop) for loop in LOOPS}
    for a, b in zip(*(weights(r.model) for r in by_loop.values()), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(
        by_loop["fit"].history["loss"], by_loop["custom"].history["loss"], rtol=1e-4
    )


def test_each_epoch_gets_its_own_data():
    seen = []

    def data_fn(epoch):
        seen.append(epoch)
        return Batches(epoch)

    train("fit", data_fn=data_fn)
    assert seen == list(range(EPOCHS))


def test_another_config_starts_afresh_with_a_warning(tmp_path, caplog):
    train("fit", tmp_path, config={"lr": 0.01})
    with caplog.at_level("WARNING", logger="keras_nalu.checkpoints"):
        again = train("fit", tmp_path, config={"lr": 0.02})
    assert "from another configuration: starting afresh" in caplog.text
    assert str(tmp_path / "checkpoint.npz") in caplog.text
    assert again.resumed_at == 0 and again.epochs == EPOCHS
    # The new run replaced the checkpoint: it resumes under its own config.
    assert train("fit", tmp_path, config={"lr": 0.02}).resumed_at == EPOCHS


@pytest.mark.parametrize("loop", LOOP_PARAMS)
def test_a_diverging_run_stops_with_a_clear_message(loop, tmp_path):
    def data_fn(epoch):
        return Batches(epoch, scale=np.inf if epoch == 1 else 1.0)

    keras.utils.set_random_seed(0)
    result = fit(
        lambda: keras.Sequential([keras.Input((4,)), NALU(1)]),
        data_fn,
        loss="mse",
        optimizer_fn=adam,
        epochs=EPOCHS,
        loop=loop,
        checkpoint_dir=tmp_path,
    )
    assert result.epochs == 2
    assert result.divergence == (
        "diverged: the training loss was nan by step 1 of 5 of epoch 2; "
        "training stopped there"
    )
    # The divergence is checkpointed: a rerun reports it without training.
    again = fit(
        lambda: keras.Sequential([keras.Input((4,)), NALU(1)]),
        lambda epoch: pytest.fail("trained again"),
        loss="mse",
        optimizer_fn=adam,
        epochs=EPOCHS,
        loop=loop,
        checkpoint_dir=tmp_path,
    )
    assert again.divergence == result.divergence and again.epochs == 2


def test_a_checkpoint_of_another_model_is_refused(tmp_path):
    train("fit", tmp_path)
    with pytest.raises(ValueError, match="written by another model"):
        fit(
            lambda: keras.Sequential([keras.Input((4,)), NALU(1)]),
            Batches,
            loss="mse",
            optimizer_fn=adam,
            epochs=EPOCHS,
            checkpoint_dir=tmp_path,
        )


def leave_a_half_written_checkpoint(folder):
    """What a kill while saving leaves beside the previous checkpoint: half of
    the new one, under its temporary name."""
    (folder / ".checkpoint-killed.partial").write_bytes(b"half")


def test_a_kill_while_writing_leaves_the_previous_checkpoint(tmp_path):
    whole = train("fit")
    with pytest.raises(KeyboardInterrupt):
        train("fit", tmp_path, callbacks=[Interrupt(at=2)])
    leave_a_half_written_checkpoint(tmp_path)
    resumed = train("fit", tmp_path)
    assert resumed.resumed_at == 2  # and it saved over the half-written files
    for a, b in zip(weights(whole.model), weights(resumed.model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert train("fit", tmp_path).resumed_at == EPOCHS


def test_remove_checkpoint_deletes_only_the_checkpoint(tmp_path):
    folder = tmp_path / "run"
    train("fit", folder)
    leave_a_half_written_checkpoint(folder)
    # The files of TensorFlow's checkpoints, which versions up to 0.2 wrote.
    (folder / "checkpoint").write_text("old")
    (folder / "ckpt-3.index").write_text("old")
    (folder / "notes.txt").write_text("mine")
    remove_checkpoint(folder)
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    (folder / "notes.txt").unlink()
    train("fit", folder)
    remove_checkpoint(folder)
    assert not folder.exists()
    remove_checkpoint(folder)  # nothing there: nothing to do


@pytest.mark.tensorflow
def test_trainer_fit_runs_callbacks_and_stops_when_asked():
    from keras_nalu.distribute import Trainer

    class StopAfter(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.events = []

        def on_train_begin(self, logs=None):
            self.events.append("begin")

        def on_train_batch_end(self, batch, logs=None):
            self.events.append(("batch", batch, round(logs["loss"], 6) >= 0))
            if batch == 2:
                self.model.stop_training = True

        def on_train_end(self, logs=None):
            self.events.append("end")

    trainer = Trainer(nau_nmu, "mse", adam)
    callback = StopAfter()
    history = trainer.fit(Batches(0), epochs=3, callbacks=[callback])
    assert callback.events == [
        "begin",
        ("batch", 0, True),
        ("batch", 1, True),
        ("batch", 2, True),
        "end",
    ]
    assert len(history.history["loss"]) == 1
    assert int(trainer.optimizer.iterations.numpy()) == 3


@pytest.mark.tensorflow
def test_trainer_fit_needs_steps_for_an_infinite_dataset():
    import tensorflow as tf

    from keras_nalu.distribute import Trainer

    dataset = tf.data.Dataset.from_tensors(Batches(0)[0]).repeat()
    trainer = Trainer(nau_nmu, "mse", adam)
    with pytest.raises(ValueError, match="steps_per_epoch=None"):
        trainer.fit(dataset)
    history = trainer.fit(dataset, epochs=2, steps_per_epoch=3)
    assert len(history.history["loss"]) == 2


@pytest.mark.tensorflow
def test_trainer_sums_a_list_of_losses():
    import tensorflow as tf

    def two_outputs():
        x = keras.Input((4,))
        return keras.Model(x, [NAU(1)(x), NAU(1)(x)])

    def data(epoch):
        x, y = Batches(epoch)[0]
        return tf.data.Dataset.from_tensors((x, (y, 2 * y)))

    keras.utils.set_random_seed(0)
    custom = fit(
        two_outputs,
        data,
        loss=["mse", "mae"],
        optimizer_fn=adam,
        epochs=2,
        loop="custom",
    )
    keras.utils.set_random_seed(0)
    keras_fit = fit(
        two_outputs, data, loss=["mse", "mae"], optimizer_fn=adam, epochs=2, loop="fit"
    )
    np.testing.assert_allclose(
        custom.history["loss"], keras_fit.history["loss"], rtol=1e-5
    )


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"epochs": 0}, "epochs"),
        ({"epochs": 1.5}, "epochs"),
        ({"loop": "keras"}, "loop"),
        ({"verbose": 3}, "verbose"),
        ({"steps_per_execution": 0}, "steps_per_execution"),
        ({"callbacks": [print]}, "callbacks"),
        ({"config": {"f": print}}, "config"),
        ({"model_fn": "model"}, "model_fn"),
        ({"model_fn": lambda: keras.Sequential([NAU(1)])}, "model_fn"),
        ({"data_fn": [1, 2]}, "data_fn"),
        ({"optimizer_fn": lambda: "adam"}, "optimizer_fn"),
        ({"strategy": "tpu"}, "strategy"),
    ],
)
def test_invalid_arguments_raise(kwargs, name):
    arguments = {
        "model_fn": nau_nmu,
        "data_fn": Batches,
        "loss": "mse",
        "optimizer_fn": adam,
        "epochs": 1,
        **kwargs,
    }
    model_fn, data_fn = arguments.pop("model_fn"), arguments.pop("data_fn")
    with pytest.raises(ValueError, match=f"`{name}`"):
        fit(model_fn, data_fn, **arguments)


@pytest.mark.tensorflow
def test_a_list_of_one_loss_for_one_output_trains_alike_on_both_loops():
    losses = {}
    for loop in LOOPS:
        keras.utils.set_random_seed(0)
        result = fit(nau_nmu, Batches, loss=["mse"], optimizer_fn=adam, epochs=2,
                     loop=loop)  # fmt: skip
        losses[loop] = result.history["loss"]
    np.testing.assert_allclose(losses["custom"], losses["fit"], rtol=1e-5)


@pytest.mark.tensorflow
@pytest.mark.parametrize("loss", ["mse", keras.losses.MeanAbsoluteError()])
def test_one_number_per_example_trains_alike_on_both_loops(loss):
    import tensorflow as tf

    def scalar_output():
        x = keras.Input((4,))
        return keras.Model(x, keras.layers.Reshape(())(NAU(1)(x)))

    def data(epoch):
        x, y = Batches(epoch)[0]
        return tf.data.Dataset.from_tensors((x, y[:, 0]))

    losses = {}
    for loop in LOOPS:
        keras.utils.set_random_seed(0)
        result = fit(scalar_output, data, loss=loss, optimizer_fn=adam, epochs=3,
                     loop=loop)  # fmt: skip
        losses[loop] = result.history["loss"]
    np.testing.assert_allclose(losses["custom"], losses["fit"], rtol=1e-5)


@pytest.mark.skipif(
    keras.backend.backend() == "tensorflow", reason="the check of other backends"
)
@pytest.mark.parametrize(
    "kwargs", [{"loop": "custom"}, {"strategy": "mirrored"}], ids=["custom", "mirrored"]
)
def test_tensorflow_features_refuse_other_backends_clearly(kwargs):
    with pytest.raises(ValueError, match="need the tensorflow backend"):
        fit(nau_nmu, lambda epoch: None, loss="mse", optimizer_fn=adam, epochs=1,
            **kwargs)  # fmt: skip


class Clock:
    """`time.perf_counter` of `keras_nalu.training`, moved by hand."""

    def __init__(self, monkeypatch):
        self.now = 100.0
        monkeypatch.setattr(training.time, "perf_counter", lambda: self.now)


def test_progress_lines_estimate_the_time_left(monkeypatch):
    clock, lines = Clock(monkeypatch), []
    progress = Progress(4, done=1, unit="step", label="NMU", print_fn=lines.append)
    clock.now += 30
    progress.update(2, {"loss": 0.012345678, "solved": "3/5 runs", "nan": np.nan})
    clock.now += 3600
    progress.update(3, what="seed 7")
    progress.update(4, {"loss": np.float32(2.5)})
    assert lines == [
        "NMU - step 2/4 - loss 0.01235 - solved 3/5 runs - nan nan - 30 s, "
        "about 1 min 00 s left",  # 30 s for the 1 step since `done`
        "NMU - step 3/4 (seed 7) - 1 h 00 min, about 30 min 15 s left",
        "NMU - step 4/4 - loss 2.5 - 1 h 00 min, done",
    ]


def test_progress_without_done_times_from_its_first_update(monkeypatch):
    clock, lines = Clock(monkeypatch), []
    progress = Progress(10, unit="iteration", print_fn=lines.append)
    clock.now += 50  # e.g. compiling, or restoring a checkpoint: not timed
    progress.update(4)
    clock.now += 20
    progress.update(6)
    assert lines == [
        "iteration 4/10 - 50 s, estimating the time left",
        "iteration 6/10 - 1 min 10 s, about 40 s left",
    ]


@pytest.mark.parametrize("total", [0, -1, 1.5, "3"])
def test_progress_rejects_a_bad_total(total):
    with pytest.raises(ValueError, match="total"):
        Progress(total)


@pytest.mark.parametrize("loop", LOOP_PARAMS)
def test_fit_prints_a_line_per_epoch_when_not_a_terminal(loop, capsys, tmp_path):
    # The custom loop's model is not compiled (no `model.optimizer`): the
    # step comes from its Trainer's optimizer (`distribute.optimizer_of`).
    train(loop, tmp_path / "run", callbacks=[Probe()], verbose="auto")
    lines = capsys.readouterr().out.splitlines()  # pytest's capture: no terminal
    assert [line.split(" - ")[:3] for line in lines] == [
        [f"epoch {e}/{EPOCHS} (step {STEPS * e})", f"loss {line.split()[6]}",
         f"probe {10.0 * (e - 1):.4g}"]
        for e, line in enumerate(lines, 1)
    ]  # fmt: skip
    assert "left" in lines[0] and lines[-1].endswith(", done")
    # Resumed after its last epoch: nothing to train, nothing printed.
    train(loop, tmp_path / "run", verbose=2)
    assert capsys.readouterr().out == ""


def test_a_resumed_fit_counts_its_epochs_from_the_resume(capsys, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        train("fit", tmp_path / "run", callbacks=[Interrupt(2)])
    train("fit", tmp_path / "run", verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" - ")[0] for line in lines] == [
        f"epoch {e}/{EPOCHS} (step {STEPS * e})" for e in (3, 4)
    ]


def test_fit_with_verbose_1_numbers_the_epochs_of_the_whole_run(capsys):
    train("fit", verbose=1)
    out = capsys.readouterr().out
    for e in range(1, EPOCHS + 1):
        assert f"Epoch {e}/{EPOCHS}" in out
        assert f"epoch {e}/{EPOCHS} (step {STEPS * e}) - loss " in out


def test_fit_with_verbose_0_prints_nothing(capsys):
    train("fit")
    assert capsys.readouterr().out == ""
