"""The grid world of Trask et al. (2018), Section 4.5, as a Gymnasium
environment: arrive at the red square at the instructed time T.

Each episode places the agent and one red target square at two random cells
of a 5x5 grid. At every step the agent sees a 56x56 RGB image of the whole
world and picks one of PASS, UP, DOWN, LEFT, RIGHT; it is told an integer
instruction T, the time at which it must first step onto the target. The
episode ends when the agent steps onto the target or at the time-out L.

The paper leaves these choices open; this environment makes them:

- **The frame.** The 5x5 grid inside a one-cell grey wall, each cell 8x8
  pixels (7 x 8 = 56): the floor black, the wall grey (128), the agent white,
  the target red. A move into the wall leaves the agent in place.
- **What the agent observes of T.** T at every step, beside the frame (the
  paper's agent has "an additional input unit" for it; it does not say
  whether the unit holds T after the first step). The time elapsed is not
  observed: the agent must count it.
- **The reward.** Only on stepping onto the target at time t (the t-th
  action): `1 - 0.1 * |t - T|`, at least -1. So arriving at T earns the
  maximum m = 1, and arriving k steps early (or late) earns 0.1 k less: the
  paper's baseline "arrives at t = 12 ... and thus receives incrementally
  less reward with larger stimuli". At the time-out the reward is -1 (the
  paper's Figure 5 runs from -1 to 1); every other step earns 0.
- **The time-out.** L = 30 steps by default, for every T (so T up to 29 is
  reachable); reaching it ends the episode as `terminated` (it is one of the
  task's rules, with its reward, not a truncation).
- **The instructions.** T is drawn uniformly from `instructions` (default
  5..12, the paper's training range), or set for one episode by
  `reset(options={"instruction": T})`, as an evaluation does.

    import gymnasium as gym
    import nalu_research.tasks.grid_world  # registers the environment

    env = gym.make("nalu_research/GridWorldTime-v0", render_mode="rgb_array")
    observation, info = env.reset(seed=0, options={"instruction": 9})
    observation["frame"].shape, observation["instruction"]   # (56, 56, 3), [9.]
"""

import gymnasium as gym
import numpy as np

ENV_ID = "nalu_research/GridWorldTime-v0"
SIZE = 5  # cells per side
CELL = 8  # pixels per cell; the frame is (SIZE + 2) * CELL = 56 pixels square
FRAME = (SIZE + 2) * CELL
TIME_OUT = 30
MAX_INSTRUCTION = 1000  # the largest T an observation holds
TRAINING_INSTRUCTIONS = (5, 12)  # the paper's T ~ U{5, 12}
# The reward lost per step of arriving early or late, and the floor of the
# reward, which is also the reward of a time-out.
STEP_COST = 0.1
WORST = -1.0
ACTIONS = ("PASS", "UP", "DOWN", "LEFT", "RIGHT")
_MOVES = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]])
_FLOOR, _WALL = (0, 0, 0), (128, 128, 128)
_AGENT, _TARGET = (255, 255, 255), (255, 0, 0)


def arrival_reward(t, instruction):
    """The reward for stepping onto the target at time `t` when told `T`."""
    return max(WORST, 1.0 - STEP_COST * abs(t - instruction))


class GridWorldTime(gym.Env):
    """Arrive at the red square at exactly the instructed time T.

    Args:
        instructions: `(low, high)`, integers: T is drawn uniformly from
            `low..high` at each reset (default `(5, 12)`, the paper's
            training range).
        time_out: Positive integer L, the steps after which an episode ends
            with reward -1 (default 30).
        render_mode: `None` or `"rgb_array"` (`render()` returns the frame
            the agent observes).

    Observation: a dict, `"frame"` (56, 56, 3) uint8 and `"instruction"`
    (1,) float32, T. Actions: `Discrete(5)`, PASS, UP, DOWN, LEFT, RIGHT.
    `info` holds `"time"` (steps taken), `"distance"` (the agent's Manhattan
    distance to the target) and, at the end, `"arrived"`.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(
        self, instructions=TRAINING_INSTRUCTIONS, time_out=TIME_OUT, render_mode=None
    ):
        from keras_nalu import validation

        self.instructions = _instruction_range(instructions)
        self.time_out = validation.positive_int("time_out", time_out)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(
                "Received an invalid value for `render_mode`, expected None or "
                f"'rgb_array'. Received: render_mode={render_mode!r}"
            )
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Dict(
            {
                "frame": gym.spaces.Box(0, 255, (FRAME, FRAME, 3), np.uint8),
                "instruction": gym.spaces.Box(
                    0.0, float(MAX_INSTRUCTION), (1,), np.float32
                ),
            }
        )
        self.action_space = gym.spaces.Discrete(len(ACTIONS))
        self.agent = self.target = None
        self.instruction, self.time = 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        options = options or {}
        if "instruction" in options:
            self.instruction = _instruction(options["instruction"])
        else:
            low, high = self.instructions
            self.instruction = int(self.np_random.integers(low, high + 1))
        cells = self.np_random.choice(SIZE * SIZE, size=2, replace=False)
        self.agent = np.array([cells[0] // SIZE, cells[0] % SIZE])
        self.target = np.array([cells[1] // SIZE, cells[1] % SIZE])
        self.time = 0
        return self._observation(), self._info()

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(
                "Received an invalid value for `action`, expected an integer "
                f"in 0..{len(ACTIONS) - 1} ({', '.join(ACTIONS)}). "
                f"Received: action={action!r}"
            )
        if self.agent is None:
            raise RuntimeError("Call reset() before step().")
        self.agent = np.clip(self.agent + _MOVES[int(action)], 0, SIZE - 1)
        self.time += 1
        arrived = bool((self.agent == self.target).all())
        terminated = arrived or self.time >= self.time_out
        reward = 0.0
        if arrived:
            reward = arrival_reward(self.time, self.instruction)
        elif terminated:
            reward = WORST
        info = self._info()
        if terminated:
            info["arrived"] = arrived
        return self._observation(), reward, terminated, False, info

    def render(self):
        if self.render_mode == "rgb_array":
            return self._frame()
        return None

    def _frame(self):
        cells = np.empty((SIZE + 2, SIZE + 2, 3), np.uint8)
        cells[:] = _WALL
        cells[1:-1, 1:-1] = _FLOOR
        cells[1 + self.target[0], 1 + self.target[1]] = _TARGET
        cells[1 + self.agent[0], 1 + self.agent[1]] = _AGENT
        return np.repeat(np.repeat(cells, CELL, axis=0), CELL, axis=1)

    def _observation(self):
        instruction = np.array([self.instruction], np.float32)
        return {"frame": self._frame(), "instruction": instruction}

    def _info(self):
        distance = int(np.abs(self.agent - self.target).sum())
        return {"time": self.time, "distance": distance}


def _instruction(value):
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or not 0 <= value <= MAX_INSTRUCTION
    ):
        raise ValueError(
            "Received an invalid value for `instruction`, expected an "
            f"integer in 0..{MAX_INSTRUCTION}. Received: instruction={value!r}"
        )
    return int(value)


def _instruction_range(value):
    try:
        low, high = value
    except (TypeError, ValueError):
        low = high = None
    if (
        not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool)
            for v in (low, high)
        )
        or not 0 <= low <= high <= MAX_INSTRUCTION
    ):
        raise ValueError(
            "Received an invalid value for `instructions`, expected a pair of "
            f"integers (low, high) with 0 <= low <= high <= {MAX_INSTRUCTION}. "
            "Received: "
            f"instructions={value!r}"
        )
    return int(low), int(high)


gym.register(id=ENV_ID, entry_point=GridWorldTime)


def vector_env(episodes, **kwargs):
    """`episodes` grid worlds in one Gymnasium `SyncVectorEnv`."""
    return gym.make_vec(
        ENV_ID,
        num_envs=episodes,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP},
        **kwargs,
    )
