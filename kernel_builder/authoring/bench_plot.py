"""``kernel-builder bench --plot FILE``: the table as a picture, like upstream's ``kernels benchmark --visual``.

One group of horizontal bars per case (or workload): the kernel, its reference and, with ``--compare compile``,
the compiled reference. The bars are GB/s when every timed case declares its bytes, with the measured copy
bandwidth as a dashed line (the ceiling); else the median time in microseconds, where shorter is better. The
whiskers span the quartiles; the kernel's bar is labelled with its speed-up over the reference; a side that
``bench`` flagged (implausible or unstable) is hatched and its label says so.

It is drawn from the ``--json`` report, so both modes (``Case`` functions, ``Benchmark`` classes) plot alike.
matplotlib is an optional extra (``pip install 'kernel-builder[plot]'``), imported only here.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernel_builder.errors import UsageError

__all__ = ["PlotDependencyError", "draw", "require"]

INSTALL = "pip install 'kernel-builder[plot]'"

#: The sides of a result, in drawing order: the report's key, and the label of the legend.
SIDES = (("kernel", "kernel"), ("reference", "reference"), ("compiled", "torch.compile(reference)"))
COLOURS = {"kernel": "#d95f02", "reference": "#7570b3", "compiled": "#1b9e77"}


class PlotDependencyError(UsageError):
    """``--plot`` without matplotlib installed (exit 2): the message names the extra to install."""


def require() -> None:
    """Raise :class:`PlotDependencyError` unless matplotlib can be imported; checked before any work starts."""
    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise PlotDependencyError(
            f"--plot draws with matplotlib, which is not installed: {INSTALL} (the 'plot' extra), then run "
            "again; the table and --json need nothing more"
        )


def _timing(result: Mapping[str, Any], side: str) -> Mapping[str, Any] | None:
    timing = result.get(side)
    return timing if isinstance(timing, Mapping) and timing.get("median_us") else None


def _flagged(result: Mapping[str, Any], label: str) -> bool:
    return any(str(w).startswith(f"{label}: ") for w in result.get("warnings") or ())


def _series(results: Sequence[Mapping[str, Any]], gbps: bool) -> dict[str, list[tuple[float, float, float]]]:
    """Per side, one ``(value, low, high)`` per result (zeros where the side was not timed)."""
    series: dict[str, list[tuple[float, float, float]]] = {side: [] for side, _ in SIDES}
    for result in results:
        nbytes = result.get("bytes") or 0
        for side, _ in SIDES:
            timing = _timing(result, side)
            if timing is None:
                series[side].append((0.0, 0.0, 0.0))
            elif (
                gbps
            ):  # the quartiles of time give the whiskers of rate (the slower quartile, the lower rate)
                series[side].append((nbytes / timing["median_us"] / 1e3, nbytes / timing["q3_us"] / 1e3,
                                     nbytes / max(timing["q1_us"], 1e-9) / 1e3))  # fmt: skip
            else:
                series[side].append((timing["median_us"], timing["q1_us"], timing["q3_us"]))
    return series


def draw(report: Mapping[str, Any], path: Path) -> Path:
    """Draw ``report`` (the ``--json`` report) into ``path`` (PNG, SVG or PDF, by its suffix); returns it."""
    require()
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    matplotlib.rcParams["svg.fonttype"] = "none"  # an SVG keeps its text as text (searchable, editable)
    import matplotlib.pyplot as plt

    results = [r for r in report.get("results", ()) if _timing(r, "kernel") is not None]
    reference = str(report.get("reference") or "reference")
    gbps = bool(results) and all(r.get("bytes") for r in results)
    series = _series(results, gbps)
    shown = [(side, label) for side, label in SIDES if any(v for v, _, _ in series[side])]
    height = 0.8 / max(len(shown), 1)
    figure, axes = plt.subplots(figsize=(9, 2.2 + 0.4 * max(len(results), 1) * max(len(shown), 1)))
    labels = {"kernel": "kernel", "reference": reference, "compiled": f"torch.compile({reference})"}
    reach = max([high for side, _ in shown for _, _, high in series[side]] or [1.0])
    any_flagged = False
    for offset, (side, _) in enumerate(shown):
        positions = [i + (offset - (len(shown) - 1) / 2) * height for i in range(len(results))]
        values = [v for v, _, _ in series[side]]
        whiskers = [[v - low for v, low, _ in series[side]], [high - v for v, _, high in series[side]]]
        bars = axes.barh(positions, values, height=height * 0.9, xerr=whiskers, color=COLOURS[side],
                         label=labels[side], error_kw={"elinewidth": 0.8, "capsize": 2})  # fmt: skip
        for bar, result, (_, _, high) in zip(bars, results, series[side]):
            flagged = _flagged(result, labels[side])
            any_flagged |= flagged
            if flagged:
                bar.set_hatch("//")
                bar.set_edgecolor("black")
            if side == "kernel" and _timing(result, "reference") is not None:
                # Right of the whisker, so that neither it nor the ceiling's line crosses the text.
                axes.annotate(f"{_speedup(result)} vs {reference}", (high + 0.01 * reach, bar.get_y() +
                              bar.get_height() / 2), va="center", fontsize=8)  # fmt: skip
    copy = (report.get("copy") or {}).get("gbps")
    if gbps and copy:
        axes.axvline(copy, color="black", linestyle="--", linewidth=1, label=f"copy ceiling {copy:.1f} GB/s")
        reach = max(reach, copy)
    if any_flagged:
        from matplotlib.patches import Patch

        axes.add_artist(axes.legend(handles=[Patch(facecolor="white", edgecolor="black", hatch="//",
                                                   label="flagged: see the warnings")],
                                    loc="lower right", fontsize=8))  # fmt: skip
    axes.set_xlim(0, reach * 1.3)
    axes.set_yticks(range(len(results)), [str(r.get("name", "?")) for r in results])
    axes.invert_yaxis()
    axes.set_xlabel("GB/s (higher is better); whiskers: quartiles" if gbps else
                    "median time, µs (shorter is better); whiskers: quartiles")  # fmt: skip
    threads = report.get("threads")
    on = f", {threads} CPU thread{'s' if threads != 1 else ''}" if threads else ""
    axes.set_title(f"kernel-builder bench: {report.get('device', '?')}, torch {report.get('torch', '?')}{on}")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=4, fontsize=8, frameon=False)
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def _speedup(result: Mapping[str, Any]) -> str:
    """The reference's median over the kernel's, as the table's ``vs reference`` column."""
    kernel, reference = _timing(result, "kernel"), _timing(result, "reference")
    if kernel is None or reference is None:
        return ""
    return f"{reference['median_us'] / kernel['median_us']:.2f}x"
