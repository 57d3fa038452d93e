"""kernel_builder.authoring.profiling: ``bench --profile`` writes a Chrome trace and ranks what ran (CPU here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kernel_builder.authoring.profiling import PROFILE_CALLS, profile, render  # noqa: E402  (after the skip)


def test_a_chrome_trace_with_a_span_per_side_and_the_top_cpu_ops(tmp_path: Path) -> None:
    x = torch.randn(256, 256)
    sides = [("mm: kernel", lambda: x @ x), ("mm: reference", lambda: torch.mm(x, x)), ("add", lambda: x + x)]
    trace = tmp_path / "sub" / "trace.json"
    kind, rows = profile(sides, "cpu", trace, top=4)

    events = json.loads(trace.read_text())["traceEvents"]
    assert isinstance(events, list)
    spans = {e["name"] for e in events if str(e.get("name", "")).startswith("bench: ")}
    assert spans == {"bench: mm: kernel", "bench: mm: reference", "bench: add"}
    # Without a GPU the ranking is of CPU ops by self time; our spans are not ops.
    assert kind == "CPU ops" and len(rows) == 4
    assert [r.total_us for r in rows] == sorted((r.total_us for r in rows), reverse=True) and rows[
        -1
    ].total_us > 0
    assert not any(r.name.startswith("bench: ") for r in rows)
    mm = next(r for r in rows if r.name == "aten::mm")
    assert mm.calls == 2 * PROFILE_CALLS  # both mm sides, each called PROFILE_CALLS times

    text = render(kind, rows, "cpu", trace)
    assert f"profile: {trace} (Chrome trace JSON" in text
    assert "no GPU: these are CPU ops, not device kernels" in text
    assert rows[0].name in text


def test_the_summary_says_when_nothing_was_recorded(tmp_path: Path) -> None:
    text = render("device kernels", [], "cuda", tmp_path / "t.json")
    assert "top device kernels by total device time" in text and "none recorded: is CUPTI available?" in text
