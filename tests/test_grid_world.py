"""The grid world of Section 4.5 (a Gymnasium environment) and its
actor-critic agents."""

import argparse
import json

import gymnasium as gym
import keras
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from nalu_research.experiments import grid_world as experiment
from nalu_research.layers import InstructedLSTMCell
from nalu_research.models import grid_world as agents
from nalu_research.tasks import grid_world

pytestmark = pytest.mark.research


def make(**kwargs):
    return gym.make(grid_world.ENV_ID, disable_env_checker=True, **kwargs).unwrapped


def walk_to_target(env, slack, wait):
    """Resets with T = the distance to the target + `slack`, PASSes `wait`
    steps, then walks straight onto the target; returns the rewards, the
    last step's result and T."""
    # With T given, the positions depend on the seed only.
    env.reset(seed=3, options={"instruction": 0})
    instruction = int(np.abs(env.target - env.agent).sum()) + slack
    env.reset(seed=3, options={"instruction": instruction})
    (dr, dc) = env.target - env.agent
    moves = [2 if dr > 0 else 1] * abs(dr) + [4 if dc > 0 else 3] * abs(dc)
    rewards, result = [], None
    for action in [0] * wait + moves:
        result = env.step(action)
        rewards.append(result[1])
    return rewards, result, instruction


def test_passes_gymnasiums_environment_checker():
    check_env(make(render_mode="rgb_array"), skip_render_check=False)


def test_registered_and_seeded():
    first = gym.make(grid_world.ENV_ID).reset(seed=7)
    again = gym.make(grid_world.ENV_ID).reset(seed=7)
    np.testing.assert_array_equal(first[0]["frame"], again[0]["frame"])
    assert first[0]["instruction"] == again[0]["instruction"]
    instructions = {
        int(gym.make(grid_world.ENV_ID).reset(seed=s)[0]["instruction"][0])
        for s in range(200)
    }
    assert instructions == set(range(5, 13))  # the paper's T ~ U{5, 12}


def test_reward_only_on_arriving_at_the_instructed_time():
    rewards, (_, reward, terminated, truncated, info), instruction = walk_to_target(
        make(), slack=4, wait=4
    )
    assert rewards[:-1] == [0.0] * (len(rewards) - 1)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["arrived"] and info["time"] == instruction


@pytest.mark.parametrize("early", [1, 3])
def test_arriving_early_earns_less(early):
    _, (_, reward, terminated, _, _), _ = walk_to_target(make(), slack=early, wait=0)
    assert terminated and reward == pytest.approx(1.0 - 0.1 * early)


def test_time_out_ends_with_the_worst_reward():
    env = make(time_out=6)
    observation, _ = env.reset(seed=0, options={"instruction": 9})
    rewards = []
    for _ in range(6):
        _, reward, terminated, _, info = env.step(0)  # PASS: never arrives
        rewards.append(reward)
    assert rewards == [0.0] * 5 + [-1.0]
    assert terminated and not info["arrived"]


def test_walls_keep_the_agent_inside():
    env = make()
    env.reset(seed=0)
    for _ in range(6):
        env.step(1)  # UP
    for _ in range(6):
        env.step(3)  # LEFT
    if (env.agent != env.target).any():
        np.testing.assert_array_equal(env.agent, [0, 0])


def test_frame_shows_agent_and_target():
    env = make(render_mode="rgb_array")
    observation, _ = env.reset(seed=5)
    frame = env.render()
    np.testing.assert_array_equal(frame, observation["frame"])
    assert frame.shape == (56, 56, 3) and frame.dtype == np.uint8

    def cell(position):
        row, col = (1 + position) * grid_world.CELL
        return frame[row : row + grid_world.CELL, col : col + grid_world.CELL]

    assert (cell(env.target) == (255, 0, 0)).all()
    assert (cell(env.agent) == 255).all()
    assert (frame[:8] == 128).all()  # the wall
    assert (frame == (255, 0, 0)).all(axis=-1).sum() == 64  # one 8x8 target


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"instructions": (12, 5)}, "`instructions`.*instructions=\\(12, 5\\)"),
        ({"instructions": 5}, "`instructions`"),
        ({"time_out": 0}, "`time_out`"),
        ({"render_mode": "human"}, "`render_mode`.*'human'"),
    ],
)
def test_invalid_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        grid_world.GridWorldTime(**kwargs)


def test_invalid_instruction_and_action_raise():
    env = make()
    with pytest.raises(ValueError, match="`instruction`.*instruction=-1"):
        env.reset(options={"instruction": -1})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="`action`.*action=5"):
        env.step(5)


@pytest.mark.parametrize("units", [{}, {"nac_units": 3}, {"counter_units": 2}], ids=str)
def test_instructed_cell_round_trips_and_trains_its_unit(units):
    cell = InstructedLSTMCell(4, **units)
    layer = keras.layers.RNN(cell)
    x = np.random.default_rng(0).normal(size=(2, 5, 6)).astype("float32")
    y = layer(x)
    assert y.shape == (2, 4)
    extra = list(units.values())
    assert cell.state_size == [4, 4] + extra
    clone = InstructedLSTMCell.from_config(cell.get_config())
    assert clone.get_config() == cell.get_config()
    unit = cell.nac or cell.counter
    if units:
        import tensorflow as tf  # the research tests run on tensorflow

        with tf.GradientTape() as tape:
            loss = keras.ops.sum(layer(x) ** 2)
        grads = tape.gradient(loss, unit.trainable_weights)
        assert all(float(keras.ops.max(keras.ops.abs(g))) > 0 for g in grads)


def test_instructed_cell_counter_counts_exactly():
    """The counter's state weights start at exactly 1: with its constant
    input's weight at 1 and the others at 0 it counts the steps exactly, for
    any instruction and far past any episode's length (30 steps)."""
    cell = InstructedLSTMCell(4, counter_units=1)
    layer = keras.layers.RNN(cell, return_state=True)
    steps = 300
    x = np.random.default_rng(0).normal(size=(3, steps, 6)).astype("float32")
    x[:, :, -1] = [[5.0], [19.0], [400.0]]  # the instruction
    layer(x[:, :2])  # builds the cell
    kernel = np.zeros(cell.counter.kernel.shape, "float32")
    kernel[0, 0] = 1.0  # the constant 1; the instruction and h read 0
    cell.counter.kernel.assign(kernel)
    # The state weight's start (the identity's diagonal), left as it is.
    assert keras.ops.convert_to_numpy(cell.counter.recurrent_kernel).tolist() == [1.0]
    *_, counted = layer(x)
    assert keras.ops.convert_to_numpy(counted)[:, 0].tolist() == [steps] * 3


def test_instructed_cell_rejects_bad_units():
    with pytest.raises(ValueError, match="`nac_units`.*nac_units=-1"):
        InstructedLSTMCell(4, nac_units=-1)
    with pytest.raises(ValueError, match="`counter_units`.*counter_units=-2"):
        InstructedLSTMCell(4, counter_units=-2)
    with pytest.raises(ValueError, match="at most one.*nac_units=1, counter_units=1"):
        InstructedLSTMCell(4, nac_units=1, counter_units=1)


def test_actor_critic_loss_against_numpy():
    logits = np.array([[[1.0, 2.0, 0.0, 0.0, -1.0], [0.0] * 5]], "float32")
    y_true = np.array([[[1, 0.5, 1], [3, 2.0, 0]]], "float32")  # action, adv, mask
    loss = agents.ActorCriticLoss(entropy=0.1, reduction=None)
    got = keras.ops.convert_to_numpy(loss(y_true, logits))
    p = np.exp(logits[0, 0]) / np.exp(logits[0, 0]).sum()
    want = -(0.5 * np.log(p[1]) + 0.1 * -(p * np.log(p)).sum())
    np.testing.assert_allclose(got, [[want, 0.0]], rtol=1e-5)


def test_advantages_of_a_final_reward():
    steps = {
        "reward": np.array([[0.0, 0.0, 1.0, 0.0]], "float32"),
        "value": np.array([[0.5, 0.5, 0.5, 9.0]], "float32"),
        "mask": np.array([[1, 1, 1, 0]], "float32"),
    }
    advantage, returns = agents.advantages(steps)
    # gamma 1: deltas 0, 0, 0.5 (no value after the end); lambda 0.95.
    np.testing.assert_allclose(
        advantage, [[0.95**2 * 0.5, 0.95 * 0.5, 0.5, 0.0]], rtol=1e-6
    )
    np.testing.assert_allclose(returns[0, :3], advantage[0, :3] + 0.5, rtol=1e-6)


def test_quick_run_trains_saves_and_serves(tmp_path):
    """A smoke run of the script; the saved agent reloads and plays the same
    episodes, and its SavedModel serves without the package."""
    first, out = tmp_path / "nac.json", tmp_path / "grid.json"
    settings = ["--quick", "--updates", "3", "--envs", "4", "--eval-episodes", "4",
                "--eval-instructions", "11", "13", "--every", "1",
                "--export-dir", str(tmp_path / "saved"),
                "--checkpoint-dir", str(tmp_path / "checkpoints")]  # fmt: skip
    experiment.main([*settings, "--agents", "a2c_nac", "--json", str(first)])
    # A second run trains the counter agent; the first's runs are shown beside.
    experiment.main(
        [*settings, "--agents", "a2c_counter", "--beside", str(first),
         "--json", str(out)]
    )  # fmt: skip
    results = json.loads(out.read_text())
    assert [r["agent"] for r in results["runs"]] == ["a2c_nac", "a2c_counter"]
    assert "beside_runs" not in results["arguments"]
    with pytest.raises(SystemExit):  # another budget is not comparable
        experiment.GridWorld().parse_args(
            [*settings, "--updates", "4", "--agents", "a2c", "--beside", str(first)]
        )
    for run in results["runs"]:
        assert [row["instruction"] for row in run["evaluation"]] == [11, 12, 13]
        assert len(run["history"]["episode_reward"]) == 3
        assert all(-1 <= row["reward"] <= 1 for row in run["evaluation"])
    assert out.with_suffix(".png").stat().st_size > 0
    assert not (tmp_path / "checkpoints").exists()  # removed when done
    out.with_suffix(".png").unlink()
    assert experiment.main(["--from-json", str(out)]) == 0  # plots again
    assert out.with_suffix(".png").stat().st_size > 0
    with pytest.raises(SystemExit) as exited:  # no such file
        experiment.main(["--from-json", str(tmp_path / "none.json")])
    assert exited.value.code == 2

    for agent in ("a2c_nac", "a2c_counter"):
        assert (tmp_path / "saved" / f"grid_world_{agent}.keras").is_file()
        assert (tmp_path / "saved" / f"grid_world_{agent}" / "saved_model.pb").is_file()


@pytest.mark.processes
def test_saved_agent_reloads_acts_identically_and_serves(tmp_path):
    """The agent the script saves reloads and plays the same episodes (same
    sampled actions), and its SavedModel, one step a call, serves without
    the package what the agent computes."""
    from nalu_research.serving import export_and_serve

    keras.utils.set_random_seed(0)
    model = agents.agent_model(nac_units=3)
    grid = experiment.GridWorld()
    grid.agents = {"a2c_nac": model}
    [export] = grid.exports(argparse.Namespace(export_dir=str(tmp_path)), [])
    loaded = keras.saving.load_model(tmp_path / "grid_world_a2c_nac.keras")
    envs = grid_world.vector_env(5)
    played = [
        agents.play(agent, envs, np.random.default_rng(1), seed=2)
        for agent in (model, loaded)
    ]
    np.testing.assert_array_equal(played[0]["action"], played[1]["action"])
    np.testing.assert_allclose(played[0]["value"], played[1]["value"], atol=1e-6)

    served = export_and_serve([export], tmp_path)["grid_world_a2c_nac"]
    assert served["path"] == str(tmp_path / "grid_world_a2c_nac")
    want = loaded.predict_on_batch(export.inputs)
    for key in ("policy", "value", "state_0", "state_1", "state_2"):
        np.testing.assert_allclose(
            served["served"][key], want[key], rtol=1e-5, atol=1e-6
        )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--entropy", "-1"], "argument --entropy: expected a finite number >= 0"),
        (["--eval-instructions", "5", "2"], "expected LOW HIGH with 0 <= LOW <= HIGH"),
        (["--strategy", "mirrored"], "the agents train on one device only"),
    ],
)
def test_bad_arguments_are_refused_as_they_are_parsed(capsys, args, message):
    with pytest.raises(SystemExit) as exit_:
        experiment.GridWorld().parse_args(args)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
