"""The actor-critic agents of the grid world (Trask et al. 2018, Section 4.5,
Figure 5) and how they learn.

Three agents (`nalu_research.experiments.grid_world.AGENTS`), one Keras
model each (`agent_model`): a convnet over the 56x56 frame, the instruction
T concatenated to its features, an LSTM core, and policy and value heads.
The NAC agent's core is `nalu_research.layers.InstructedLSTMCell` with
`nac_units`: T also passes through the package's `NAC`, whose output goes
back into the LSTM. The counter agent (ours, not the paper's) has
`counter_units` instead: a diagonal `NAUCell` over `[1, T, h]` whose state
weights start at exactly 1, so that it can count the steps exactly, read by
the LSTM. The environment is `nalu_research.tasks.grid_world`.

**What is built: a synchronous advantage actor-critic (A2C), not the paper's
A3C.** A3C runs asynchronous workers; on one machine their synchronous
equivalent batches them: every update plays `--envs` complete episodes in
parallel with the current policy (Gymnasium's `SyncVectorEnv`), computes
the advantages with generalized advantage estimation (gamma 1, lambda 0.95;
an episode is at most L = 30 steps, and its only reward comes at its end),
and takes one Adam step on the policy-gradient loss, half the value's
squared error and an entropy bonus (`ActorCriticLoss`), through `model.fit`.
The paper gives none of these settings.
"""

import keras
import numpy as np
from keras import ops

from keras_nalu import validation
from nalu_research.layers import ImageSequenceEncoder, InstructedLSTMCell
from nalu_research.tasks import grid_world

_register = keras.saving.register_keras_serializable(package="nalu_research")

CORE_UNITS = 64
GAMMA, LAMBDA = 1.0, 0.95


@_register
class ActorCriticLoss(keras.losses.Loss):
    """The actor's loss at every step of a batch of episodes.

    `y_true` (..., 3) holds the action taken, its advantage and the step's
    mask (0 after the episode ended); `y_pred` holds the policy's logits.
    `loss = -mask * (advantage * log pi(action) + entropy * H(pi))`.
    """

    def __init__(self, entropy=0.01, name="actor_critic", **kwargs):
        super().__init__(name=name, **kwargs)
        self.entropy = validation.non_negative_float("entropy", entropy)

    def call(self, y_true, y_pred):
        action = ops.cast(y_true[..., 0], "int32")
        advantage, mask = y_true[..., 1], y_true[..., 2]
        log_pi = ops.log_softmax(y_pred, axis=-1)
        taken = ops.sum(log_pi * ops.one_hot(action, y_pred.shape[-1]), axis=-1)
        entropy = -ops.sum(ops.exp(log_pi) * log_pi, axis=-1)
        return -mask * (advantage * taken + self.entropy * entropy)

    def get_config(self):
        return {**super().get_config(), "entropy": self.entropy}


def agent_model(nac_units=0, units=CORE_UNITS, steps=None, counter_units=0):
    """The agent: frames and T, one row per step, to the policy's logits,
    the value and the core's states.

    Inputs: `frame` (batch, steps, 56, 56, 3) uint8, `instruction`
    (batch, steps, 1), and the core's initial states `state_0`, ... Outputs:
    a dict of `policy` (batch, steps, 5) logits, `value` (batch, steps, 1)
    and the final states `state_0`, ... Training runs it on whole episodes
    from zero states; acting runs one step at a time, passing the states on.
    `steps` fixes the steps axis (the exported agent takes one step a call).
    `nac_units` and `counter_units` are the core's (`InstructedLSTMCell`).
    """
    frame = keras.Input((steps, grid_world.FRAME, grid_world.FRAME, 3), name="frame")
    instruction = keras.Input((steps, 1), name="instruction")
    cell = InstructedLSTMCell(
        units, nac_units, counter_units=counter_units, name="core_cell"
    )
    states = [
        keras.Input((size,), name=f"state_{i}")
        for i, size in enumerate(cell.state_size)
    ]
    encoder = keras.Sequential(
        [
            keras.layers.Rescaling(1 / 255),
            # One filter position per cell of the frame.
            keras.layers.Conv2D(16, grid_world.CELL, strides=grid_world.CELL),
            keras.layers.ReLU(),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
        ],
        name="convnet",
    )
    features = ImageSequenceEncoder(encoder, name="frames")(frame)
    x = keras.layers.Concatenate()([features, instruction])
    h, *final = keras.layers.RNN(
        cell, return_sequences=True, return_state=True, name="core"
    )(x, initial_state=states)
    outputs = {
        "policy": keras.layers.Dense(len(grid_world.ACTIONS), name="policy")(h),
        "value": keras.layers.Dense(1, name="value")(h),
        **{f"state_{i}": state for i, state in enumerate(final)},
    }
    return keras.Model([frame, instruction, *states], outputs, name="agent")


def zero_states(model, batch):
    """The core's initial states for `batch` episodes."""
    sizes = model.get_layer("core").cell.state_size
    return [np.zeros((batch, size), np.float32) for size in sizes]


def play(model, envs, rng, seed, options=None):
    """Plays one episode in each of the vector environment's `envs`, with
    actions sampled from the policy by `rng`; every episode runs to its end.

    Returns the steps as arrays (envs, L, ...): `frame`, `instruction`,
    `action`, `reward`, `value` and `mask` (1 up to and including the step
    that ended the episode), and `arrived` (envs,), whether the episode
    ended on the target.
    """
    n, length = envs.num_envs, envs.get_attr("time_out")[0]
    observation, _ = envs.reset(seed=seed, options=options)
    steps = {
        "frame": np.zeros((n, length, grid_world.FRAME, grid_world.FRAME, 3), np.uint8),
        "instruction": np.zeros((n, length, 1), np.float32),
        **{k: np.zeros((n, length), np.float32) for k in ("action", "reward", "value")},
        "mask": np.zeros((n, length), np.float32),
        "arrived": np.zeros(n, bool),
    }
    states = zero_states(model, n)
    active = np.ones(n, bool)
    for t in range(length):
        steps["frame"][:, t] = observation["frame"]
        steps["instruction"][:, t] = observation["instruction"]
        out = model.predict_on_batch(
            {
                "frame": observation["frame"][:, None],
                "instruction": observation["instruction"][:, None],
                **{f"state_{i}": s for i, s in enumerate(states)},
            }
        )
        states = [np.asarray(out[f"state_{i}"]) for i in range(len(states))]
        logits = np.asarray(out["policy"])[:, 0]
        action = np.argmax(logits - np.log(-np.log(rng.random(logits.shape))), axis=-1)
        observation, reward, terminated, truncated, info = envs.step(action)
        steps["action"][:, t] = action
        steps["value"][:, t] = np.asarray(out["value"])[:, 0, 0]
        steps["reward"][:, t] = np.where(active, reward, 0.0)
        steps["mask"][:, t] = active
        steps["arrived"] |= active & (info["distance"] == 0)
        active &= ~(terminated | truncated)
        if not active.any():
            break
    return steps


def advantages(steps):
    """Generalized advantage estimates (GAMMA, LAMBDA) and returns of
    `play`'s steps; 0 where masked."""
    reward, value, mask = steps["reward"], steps["value"], steps["mask"]
    advantage = np.zeros_like(reward)
    following = np.zeros(reward.shape[0], np.float32)
    for t in reversed(range(reward.shape[1])):
        next_value = value[:, t + 1] * mask[:, t + 1] if t + 1 < reward.shape[1] else 0
        delta = reward[:, t] + GAMMA * next_value - value[:, t]
        following = (delta + GAMMA * LAMBDA * following) * mask[:, t]
        advantage[:, t] = following
    return advantage, (advantage + value) * mask


def training_batch(model, steps):
    """`play`'s steps as one `model.fit` batch `(x, y, sample_weight)`:
    advantages normalized over the steps played, states from zero."""
    advantage, returns = advantages(steps)
    mask = steps["mask"]
    valid = mask > 0
    spread = advantage[valid].std() if valid.sum() > 1 else 1.0
    advantage = (advantage - advantage[valid].mean()) / (spread + 1e-8) * mask
    n = mask.shape[0]
    x = {"frame": steps["frame"], "instruction": steps["instruction"]}
    x.update({f"state_{i}": s for i, s in enumerate(zero_states(model, n))})
    y = {
        "policy": np.stack([steps["action"], advantage, mask], axis=-1),
        "value": returns[..., None],
    }
    return x, y, {"policy": np.ones_like(mask), "value": 0.5 * mask}


def step_model(model):
    """The trained agent `model` for one step a call, as it is exported: from
    the observation and the core's states to the policy's logits, the value
    and the next states."""
    cell = model.get_layer("core").cell
    step = agent_model(cell.nac_units, steps=1, counter_units=cell.counter_units)
    step.set_weights(model.get_weights())
    return step
