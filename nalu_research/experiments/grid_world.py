"""Tracking time in a grid world (Trask et al. 2018, Section 4.5, Figure 5):
an actor-critic agent with and without a NAC, and with an exact counter.

The environment is `nalu_research.tasks.grid_world` (Gymnasium,
`nalu_research/GridWorldTime-v0`; its docstring states the choices the paper
leaves open); the three agents (`AGENTS`) and how they learn, a synchronous
advantage actor-critic (A2C), not the paper's A3C, are
`nalu_research.models.grid_world`.

Each update is an epoch of `keras_nalu.training.fit`, checkpointed: run the
same command again after an interruption and each agent resumes where it
stopped. An update's episodes are drawn from `(seed, update)`, so a resumed
run plays the episodes an uninterrupted one would.

After training, each agent plays `--eval-episodes` episodes for every T in
`--eval-instructions` (actions sampled from its policy, as in training), and
the script prints the average episode reward with its standard error beside
the paper's reading of Figure 5, plots the figure (`--png`), writes the
results (`--json`) and saves each agent of seed 0 as `.keras` and as a
SavedModel that takes one step a call, served from a fresh process, in
`--export-dir` (`saved_models/grid_world_AGENT`; `--no-export`: none).

    python examples/grid_world.py --quick
    python examples/grid_world.py     # 3 agents x 3 seeds
    python examples/grid_world.py --agents a2c_counter \
        --beside docs/experiments/grid-world/grid_world.json
"""

import json
import math
import time
from pathlib import Path

import numpy as np

from nalu_research.arguments import (
    Shared,
    add_selection,
    non_negative_float,
    non_negative_int,
    positive_int,
)
from nalu_research.experiment import Experiment
from nalu_research.monitoring import input_file, markdown_table
from nalu_research.serving import Export
from nalu_research.tasks import grid_world
from nalu_research.tasks.grid_world import vector_env

# The agents, name: (label, the core's units beside its LSTM: the arguments
# of `nalu_research.models.grid_world.agent_model`). The exact counter is not
# in the paper: a diagonal NAUCell whose state weights start at 1 and whose
# constant input can reach exactly 1.
AGENTS = {
    "a2c": ("A2C", {}),
    "a2c_nac": ("A2C + NAC", {"nac_units": 4}),
    "a2c_counter": ("A2C + exact counter", {"counter_units": 2}),
}


def fit_agent(agent, seed, args, session):
    """Trains one agent from `seed` for `--updates` updates (the epochs of
    `keras_nalu.training.fit`, each checkpointed); returns the fit result
    with the history of the episodes' mean reward and length per update."""
    import keras

    from nalu_research.models.grid_world import (
        ActorCriticLoss,
        agent_model,
        play,
        training_batch,
    )
    from nalu_research.tasks.batches import one_batch

    envs = vector_env(args.envs)
    built = {}

    def model_fn():
        keras.utils.set_random_seed(seed)
        built["model"] = agent_model(**AGENTS[agent][1])
        return built["model"]

    what = f"{AGENTS[agent][0]} seed {seed}"
    played = EpisodeLog(args.updates, args.every, what)

    def data_fn(update):
        # The update's episodes and actions depend only on (seed, update).
        rng = np.random.default_rng([seed, update])
        steps = play(built["model"], envs, rng, seed=int(rng.integers(2**31)))
        played.record(steps)
        return one_batch(training_batch(built["model"], steps))

    result = session.fit(
        agent,
        seed,
        what=what,
        continued_by="--updates",
        model_fn=model_fn,
        data_fn=data_fn,
        loss={"policy": ActorCriticLoss(args.entropy), "value": "mse"},
        optimizer_fn=lambda: keras.optimizers.Adam(
            args.learning_rate, global_clipnorm=args.clipnorm
        ),
        epochs=args.updates,
        config={
            "agent": agent,
            "seed": seed,
            **{k: getattr(args, k) for k in TRAINING},
        },
        callbacks=[
            keras.callbacks.LambdaCallback(on_epoch_end=played.on_epoch_end),
            *session.callbacks(agent, seed),
        ],
        verbose=0,
    )
    envs.close()
    return result


class EpisodeLog:
    """Adds the mean reward and length of each update's episodes to the logs
    (so `fit` keeps them in its history, across a resume) and prints a
    `Progress` line every `every` updates, with their means over those (its
    `on_epoch_end` is a `keras.callbacks.LambdaCallback`'s)."""

    def __init__(self, total, every, label):
        from keras_nalu.training import Progress

        self.every, self.last, self.recent = every, None, []
        self.progress = Progress(total, unit="update", label=label)

    def record(self, steps):
        self.last = {
            "episode_reward": float(steps["reward"].sum(axis=1).mean()),
            "episode_length": float(steps["mask"].sum(axis=1).mean()),
        }

    def on_epoch_end(self, epoch, logs=None):
        # `fit` calls `model.fit` once per update: its History holds one
        # update, so the updates since the last line are kept here.
        logs.update(self.last)
        self.recent.append(self.last)
        if (epoch + 1) % self.every == 0 or epoch + 1 == self.progress.total:
            means = {
                name.replace("episode_", ""): np.mean([r[name] for r in self.recent])
                for name in self.last
            }
            self.progress.update(epoch + 1, means)
            self.recent = []


def evaluate(model, instructions, episodes, seed):
    """Plays `episodes` episodes for each T of `instructions`; per T the
    mean episode reward, its standard error, the fraction of episodes that
    reached the target and the median time of arrival."""
    from nalu_research.models.grid_world import play

    envs = vector_env(episodes)
    rows = []
    for instruction in instructions:
        rng = np.random.default_rng([seed, instruction])
        options = {"instruction": int(instruction)}
        steps = play(model, envs, rng, int(rng.integers(2**31)), options)
        reward = steps["reward"].sum(axis=1)
        length = steps["mask"].sum(axis=1)
        arrived = steps["arrived"]
        arrival = float(np.median(length[arrived])) if arrived.any() else None
        rows.append(
            {
                "instruction": int(instruction),
                "reward": float(reward.mean()),
                "standard_error": float(reward.std(ddof=1) / math.sqrt(episodes)),
                "arrived": float(arrived.mean()),
                "median_arrival": arrival,
            }
        )
    envs.close()
    return rows


# The arguments that change a run's results: a checkpoint resumes only a run
# with the same ones.
TRAINING = ("envs", "learning_rate", "clipnorm", "entropy")
# The budget's defaults, of a full run and of `--quick`.
FULL = {"updates": 2500, "seeds": 3, "envs": 32, "eval_episodes": 400}
QUICK = {"updates": 20, "seeds": 1, "envs": 8, "eval_episodes": 20}


class GridWorld(Experiment):
    """Tracking time in a grid world (Trask et al. 2018, Section 4.5, Figure
    5): an actor-critic agent with and without a NAC, and with an exact
    counter."""

    arguments = {
        "seeds": Shared(None, help="seeds 0..N-1 (default 3)"),
        "learning_rate": 1e-3,
        "clipnorm": 1.0,
    }
    record_path = "results/grid_world.json"
    replays = (
        "train nothing: print the table of an earlier run's results and plot them again"
    )
    checkpoints = True
    continued_by = "--updates"
    export_path = "saved_models"

    def add_arguments(self, parser):
        add_selection(parser, "--agents", AGENTS, "the agents trained")
        parser.add_argument(
            "--updates",
            type=positive_int,
            help="updates per agent and seed (default 2,500)",
        )
        parser.add_argument(
            "--envs", type=positive_int, help="episodes per update (default 32)"
        )
        parser.add_argument(
            "--entropy",
            type=non_negative_float,
            default=0.01,
            help="the entropy bonus's weight",
        )
        parser.add_argument(
            "--eval-episodes",
            type=positive_int,
            help="episodes per T in the evaluation (default 400: a standard "
            "error below 0.05 for rewards in [-1, 1])",
        )
        parser.add_argument(
            "--eval-instructions",
            nargs=2,
            type=non_negative_int,
            default=[1, 25],
            metavar=("LOW", "HIGH"),
            help="the T evaluated, LOW..HIGH (default 1 25, Figure 5's range)",
        )
        parser.add_argument(
            "--every", type=positive_int, default=100, help="updates per progress line"
        )
        parser.add_argument(
            "--quick",
            action="store_true",
            help="a smoke run: 1 seed, 20 updates of 8 episodes, 20 episodes per T",
        )
        parser.add_argument(
            "--beside",
            type=input_file,
            metavar="JSON",
            help="an earlier run's results (its --json): its runs of the agents "
            "not trained now are shown beside these in the table, the plot and "
            "the JSON; its settings must be these",
        )

    def check_arguments(self, args, parser):
        for name, value in (QUICK if args.quick else FULL).items():
            if getattr(args, name) is None:
                setattr(args, name, value)
        low, high = args.eval_instructions
        if not 0 <= low <= high <= grid_world.MAX_INSTRUCTION:
            parser.error(
                "argument --eval-instructions: expected LOW HIGH with 0 <= LOW <= "
                f"HIGH <= {grid_world.MAX_INSTRUCTION}, got {low} {high}"
            )
        if args.strategy != "default":
            parser.error("argument --strategy: the agents train on one device only")
        # Shown beside this run's, kept apart from its arguments.
        self.beside = [] if args.beside is None else beside_runs(parser, args)
        if args.from_json:  # its plot again, beside it
            args.png = args.png or args.from_json[0].with_suffix(".png")

    def prepare(self, args, session):
        self.started = time.perf_counter()
        self.agents = {}  # each agent of seed 0, exported at the end

    def runs(self, args):
        # Seed by seed, so that an interrupted run has both agents of a seed.
        return [(agent, seed) for seed in range(args.seeds) for agent in args.agents]

    def train(self, args, run, session):
        agent, seed = run
        print(
            f"{AGENTS[agent][0]} seed {seed}: {args.updates} updates of "
            f"{args.envs} episodes",
            flush=True,
        )
        began = time.perf_counter()
        result = fit_agent(agent, seed, args, session)
        seconds = time.perf_counter() - began
        if seed == 0:
            self.agents[agent] = result.model
        instructions = range(args.eval_instructions[0], args.eval_instructions[1] + 1)
        history = ("episode_reward", "episode_length", "loss")
        return {
            "agent": agent,
            "seed": seed,
            "train_seconds": seconds,
            "diverged": result.divergence,
            "evaluation": evaluate(
                result.model, instructions, args.eval_episodes, seed
            ),
            "history": {k: result.history[k] for k in history},
        }

    def progress(self, row):
        rewards = [t["reward"] for t in row["evaluation"]]
        return {"mean reward over T": float(np.mean(rewards))}

    def run_name(self, run, row):
        agent, seed = run
        return f"{AGENTS[agent][0]} seed {seed}" + (
            ", diverged" if row["diverged"] else ""
        )

    def report(self, args, rows):
        print_table(self.beside + rows, args)
        if args.from_json:
            return
        frames = sum(sum(r["history"]["episode_length"]) * args.envs for r in rows)
        print(
            f"\nWall time: {time.perf_counter() - self.started:.0f} s on the "
            f"{args.backend} backend; {frames:,.0f} frames of training "
            "in all."
        )

    def record(self, args, rows):
        return {"runs": self.beside + rows}

    def plot(self, args, rows, plt):
        return figure(self.beside + rows, args, plt)

    def exports(self, args, rows):
        """Each agent of seed 0, saved as `grid_world_AGENT.keras` and
        exported for one step a call (`step_model`)."""
        from nalu_research.models.grid_world import step_model

        exports = []
        for agent, model in self.agents.items():
            path = Path(args.export_dir) / f"grid_world_{agent}"
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".partial.keras")
            model.save(partial)
            partial.replace(path.with_suffix(".keras"))
            print(f"Saved {path.with_suffix('.keras')}.")
            step = step_model(model)
            exports.append(Export(path.name, step, step_inputs(step, batch=4)))
        return exports

    def served(self, args, served):
        for found in served.values():
            policy = np.asarray(found["served"]["policy"])
            print(
                f"Exported the SavedModel {found['path']} (one step a call), "
                f"served from a fresh process: policy logits {policy.shape}."
            )
        return {name: found["path"] for name, found in served.items()}

    def replayed(self, args, records):
        """The runs of earlier results, with the settings they were run with."""
        for name in ("agents", "updates", "envs", "eval_episodes", "eval_instructions"):
            setattr(args, name, records[0]["arguments"][name])
        return [run for record in records for run in record["runs"]]


# The settings two runs must share for their agents to be compared.
COMPARED = ("updates", *TRAINING, "eval_episodes", "eval_instructions")


def beside_runs(parser, args):
    """The runs of `--beside`'s results whose agents this run does not train,
    after checking that they were trained and evaluated with these
    `COMPARED` settings."""
    try:
        results = json.loads(args.beside.read_text())
        earlier = results["arguments"]
        runs = results["runs"]
    except (OSError, ValueError, KeyError) as error:
        parser.error(
            f"argument --beside: expected the --json of a grid_world run, got "
            f"{str(args.beside)!r} ({error})"
        )
    differ = {
        name: (earlier.get(name), getattr(args, name))
        for name in COMPARED
        if earlier.get(name) != getattr(args, name)
    }
    if differ:
        parser.error(
            f"argument --beside: {str(args.beside)!r} was run with other "
            "settings: "
            + ", ".join(f"{k} {a} (here {b})" for k, (a, b) in differ.items())
        )
    return [run for run in runs if run["agent"] not in args.agents]


def step_inputs(model, batch, seed=0):
    """One step's inputs for `batch` episodes, first frames of the task, as
    the list `model.inputs` orders them: frame, instruction, states."""
    from nalu_research.models.grid_world import zero_states

    envs = vector_env(batch)
    observation, _ = envs.reset(seed=seed)
    envs.close()
    frame = observation["frame"][:, None].astype(np.float32)
    return [frame, observation["instruction"][:, None], *zero_states(model, batch)]


def print_table(runs, args):
    """Mean episode reward per T, a column per agent: with one seed, ± its
    standard error; with several, the median over seeds and their range.
    The median arrival time (over seeds, of each seed's median) in brackets."""
    agents = [a for a in AGENTS if any(r["agent"] == a for r in runs)]
    seeds = max(sum(r["agent"] == a for r in runs) for a in agents)
    spread = (
        "± its standard error"
        if seeds == 1
        else f"the median over {seeds} seeds [their minimum, maximum]"
    )
    print(
        f"\nAverage episode reward by instruction T ({args.eval_episodes} "
        f"episodes per T and seed; {spread}; the median arrival time in "
        "brackets):\n"
    )
    table = []
    for i, instruction in enumerate(
        range(args.eval_instructions[0], args.eval_instructions[1] + 1)
    ):
        cells = [
            reward_cell([r["evaluation"][i] for r in runs if r["agent"] == agent])
            for agent in agents
        ]
        marker = "*" if 5 <= instruction <= 12 else ""
        table.append([f"{instruction}{marker}", *cells])
    header = ["T", *(AGENTS[a][0] for a in agents)]
    print("\n".join(markdown_table(header, table)))
    print(
        "\n* the training range. The paper (Figure 5): both agents master "
        "training; the NAC agent holds its reward up to T = 19, the A3C "
        "baseline degrades after T = 13."
    )


def reward_cell(rows, bold=False):
    """One T's cell of an agent, from its `rows` (an evaluation row per seed):
    the mean episode reward, ± its standard error for one seed, else the
    median over the seeds (in bold with `bold`) [their minimum, maximum]
    (the median alone where they agree), then the median arrival time."""
    rewards = [row["reward"] for row in rows]
    median, low, high = (
        f"{v:+.2f}" for v in (np.median(rewards), min(rewards), max(rewards))
    )
    text = f"**{median}**" if bold else median
    if len(rows) == 1:
        text += f" ± {rows[0]['standard_error']:.2f}"
    elif not text == low == high:
        text += f" [{low}, {high}]"
    arrival = median_arrival(rows)
    return text + (" (never)" if arrival is None else f" (t={arrival:g})")


def median_arrival(rows):
    """The median over seeds of the median arrival time, over the seeds
    whose agent reached the target in at least a quarter of the episodes
    (fewer are the few that start beside it and wander on), or `None`."""
    times = [
        row["median_arrival"]
        for row in rows
        if row["median_arrival"] is not None and row["arrived"] >= 0.25
    ]
    return float(np.median(times)) if times else None


def figure(runs, args, plt):
    """Figure 5 (left): the average episode reward against T, a line per
    agent (the median over seeds; each seed thin, with bars of two standard
    errors); right: when the agents arrive, against the instructed time."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    instructions = list(range(args.eval_instructions[0], args.eval_instructions[1] + 1))
    for ax in (left, right):
        ax.axvspan(5, 12, color="0.92", label="training range")
        ax.set_xlabel("instruction T (the time to arrive)")
    for n, agent in enumerate(a for a in AGENTS if any(r["agent"] == a for r in runs)):
        mine = [r for r in runs if r["agent"] == agent]
        for run in mine:
            rows = run["evaluation"]
            left.errorbar(
                instructions,
                [row["reward"] for row in rows],
                yerr=[2 * row["standard_error"] for row in rows],
                color=f"C{n}",
                linewidth=0.6,
                alpha=0.5,
                capsize=1.5,
            )
        per_t = list(zip(*(run["evaluation"] for run in mine), strict=True))
        left.plot(
            instructions,
            [np.median([row["reward"] for row in rows]) for rows in per_t],
            color=f"C{n}",
            marker=".",
            linewidth=2,
            label=f"{AGENTS[agent][0]} ({len(mine)} seed{'s' * (len(mine) > 1)})",
        )
        arrivals = [median_arrival(rows) for rows in per_t]
        right.plot(
            instructions,
            [np.nan if a is None else a for a in arrivals],
            color=f"C{n}",
            marker=".",
            label=AGENTS[agent][0],
        )
    left.axhline(0, color="0.6", linewidth=0.8, linestyle=":")
    left.set_ylim(-1.05, 1.05)
    left.set_ylabel("average episode reward")
    left.legend(fontsize=8)
    right.plot(instructions, instructions, color="0.5", linestyle="--", label="t = T")
    right.axhline(
        grid_world.TIME_OUT, color="0.6", linewidth=0.8, linestyle=":", label="time-out"
    )
    right.set_ylabel("median arrival time t")
    right.legend(fontsize=8)
    fig.suptitle(
        f"Grid world: {args.updates:,} updates of {args.envs} episodes per agent "
        f"and seed; {args.eval_episodes} episodes per T",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def main(argv=None):
    return GridWorld().main(argv)
