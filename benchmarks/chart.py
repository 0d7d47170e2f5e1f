"""The lookup benchmark's plot: lookup time against the number of versions (log x).

Needs matplotlib (in a checkout: ``pip install -e '.[plot]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bitemporal import ConfigurationError

# What is drawn, and how: ours solid, the baselines and the other designs dashed; one
# colour per line whichever lines a run has.
LINES = (
    ("as_of, current knowledge (server)", "as_of, current knowledge", "-", "o", "tab:blue"),
    ("as_of, past knowledge (server)", "as_of, past knowledge", "-", "s", "tab:cyan"),
    ("resolve (server)", "resolve", "-", "^", "tab:green"),
    ("primary key (server)", "primary key, plain table (baseline)", "--", "o", "black"),
    ("latest row per key (server)", "latest row per key (naive)", ":", "x", "tab:gray"),
    ("single-axis history (server)", "single-axis history (naive)", ":", "+", "tab:brown"),
    (
        "periods, current knowledge (server)",
        "periods extension, current knowledge",
        "-.",
        "D",
        "tab:red",
    ),
    (
        "periods, past knowledge (server)",
        "periods extension, past knowledge",
        "-.",
        "d",
        "tab:pink",
    ),
    ("resolve (Python, end to end)", "resolve, Python end to end", "-", "v", "tab:olive"),
    (
        "primary key (Python, end to end)",
        "primary key, Python end to end (baseline)",
        "--",
        "v",
        "tab:purple",
    ),
)


def draw_lookups(result: dict[str, Any], path: str | Path) -> None:
    """Draw the median lookup times of every size in ``result`` (a lookup run) to a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigurationError(
            "drawing needs matplotlib", hint="pip install -e '.[plot]'"
        ) from exc

    sizes = result["sizes"]
    figure, axes = plt.subplots(figsize=(9, 5.5))
    for operation, label, style, marker, color in LINES:
        points = [
            (s["versions"], s["summary"][operation]["median_ms"])
            for s in sizes
            if operation in s["summary"]
        ]
        if points:
            xs, ys = zip(*points, strict=True)
            axes.plot(xs, ys, linestyle=style, marker=marker, color=color, label=label)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("versions in the store")
    axes.set_ylabel("median time of one lookup (ms)")
    machine = result["machine"]
    axes.set_title(
        f"As-of point lookup of one key: PostgreSQL {machine['server_version']}, "
        f"{machine['cpus']} CPUs\n(server: EXPLAIN ANALYZE execution time; "
        "Python: end to end)",
        fontsize=10,
    )
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
