"""The Hub's place and mode from the environment, read without importing ``huggingface_hub``
(:mod:`kernel_builder.common.hub_env`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kernel_builder.common import hub_env


def test_the_cache_variables_in_their_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("KERNELS_CACHE", "HF_HUB_CACHE", "HF_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hub_env.cache_location() == (tmp_path / ".cache" / "huggingface" / "hub", "the default")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub_env.cache_location() == (tmp_path / "home" / "hub", "HF_HOME")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    assert hub_env.cache_location() == (tmp_path / "hf", "HF_HUB_CACHE")
    monkeypatch.setenv("KERNELS_CACHE", "~/kernels")
    assert hub_env.cache_location() == (tmp_path / "kernels", "KERNELS_CACHE")


def test_endpoint_and_folder_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert hub_env.endpoint() == "https://huggingface.co"
    monkeypatch.setenv("HF_ENDPOINT", " http://127.0.0.1:9/ ")
    assert hub_env.endpoint() == "http://127.0.0.1:9"
    assert hub_env.repo_folder_name("org/relu", "kernel") == "kernels--org--relu"
    assert hub_env.repo_folder_name("org/relu", "model") == "models--org--relu"


@pytest.mark.parametrize(
    ("value", "offline"),
    # huggingface_hub's own rule: upper-cased, not stripped, so " ON " is off for both libraries
    [("1", True), ("on", True), ("yes", True), (" ON ", False), ("0", False), ("", False)],
)
def test_offline_from_the_variable(monkeypatch: pytest.MonkeyPatch, value: str, offline: bool) -> None:
    import huggingface_hub.constants as constants  # as imported online: it reads the variable once

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert hub_env.offline_requested() is offline


def test_transformers_offline_decides_when_hf_hub_offline_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    assert hub_env.offline_requested() is True
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert hub_env.offline_requested() is False


def test_an_offline_client_counts_and_nothing_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants as constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert hub_env.offline_requested() is True
    code = "import sys\nfrom kernel_builder.common import hub_env\nhub_env.offline_requested()\nprint('huggingface_hub' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
