"""The PNG plot of a run: a trajectory and the solver statistics over time (matplotlib, headless)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: files only

import matplotlib.pyplot as plt  # noqa: E402


def plot_run(series: dict, title: str, path: str) -> None:
    """Write ``path`` (PNG): the tracked quantity of world 0 (``series["value"]`` labelled
    ``series["value_label"]``), Newton iterations per step (mean and max over worlds) and contacts per
    world, against simulated time ``series["time"]`` [s]."""
    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    t = series["time"]
    axes[0].plot(t, series["value"], color="tab:blue")
    axes[0].set_ylabel(series["value_label"])
    axes[0].set_title(title)
    if series["iterations_mean"]:
        axes[1].plot(t, series["iterations_mean"], label="mean over worlds")
        axes[1].plot(t, series["iterations_max"], label="max over worlds", alpha=0.7)
        axes[1].legend(loc="upper right")
    axes[1].set_ylabel("Newton iterations / step")
    if series["contacts"]:
        axes[2].plot(t, series["contacts"], color="tab:green")
    axes[2].set_ylabel("contacts / world")
    axes[2].set_xlabel("time [s]")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
