"""On/off environment variables: our rule (docs/environment.md) and huggingface_hub's for its own variables."""

from __future__ import annotations

import logging

import pytest
from huggingface_hub import constants

from kernel_builder import hub
from kernel_builder.common import env
from kernel_builder.common.env import env_flag, hf_flag
from kernel_builder.loader import signatures

NAME = "KERNEL_BUILDER_TEST_SWITCH"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(env, "_reported", set())
    for name in (NAME, "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY", "DISABLE_TELEMETRY",
                 "DO_NOT_TRACK", signatures.REQUIRE_SIGNATURE):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "True", "yes", "Yes", "on", "ON", " 1 ", "\ttrue\n"])
@pytest.mark.parametrize("default", [False, True])
def test_on_words_turn_a_switch_on(monkeypatch: pytest.MonkeyPatch, value: str, default: bool) -> None:
    monkeypatch.setenv(NAME, value)
    assert env_flag(NAME, default=default) is True


@pytest.mark.parametrize("value", ["0", "false", "FALSE", "no", "No", "off", "OFF", " 0 ", "off\n"])
@pytest.mark.parametrize("default", [False, True])
def test_off_words_turn_a_switch_off(monkeypatch: pytest.MonkeyPatch, value: str, default: bool) -> None:
    monkeypatch.setenv(NAME, value)
    assert env_flag(NAME, default=default) is False


@pytest.mark.parametrize("default", [False, True])
def test_unset_or_empty_is_the_default(monkeypatch: pytest.MonkeyPatch, default: bool) -> None:
    assert env_flag(NAME, default=default) is default
    monkeypatch.setenv(NAME, "")
    assert env_flag(NAME, default=default) is default
    monkeypatch.setenv(NAME, "   ")
    assert env_flag(NAME, default=default) is default
    assert env_flag(NAME) is False  # the default default: off unless turned on


@pytest.mark.parametrize("default", [False, True])
def test_any_other_value_is_the_default_and_reported_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, default: bool
) -> None:
    monkeypatch.setenv(NAME, "disable")
    with caplog.at_level(logging.WARNING, logger="kernel_builder"):
        assert env_flag(NAME, default=default) is default
        assert env_flag(NAME, default=default) is default
    assert [record.getMessage() for record in caplog.records] == [
        f"{NAME}='disable' is neither on (1, true, yes, on) nor off (0, false, no, off); using the default "
        f"({'on' if default else 'off'})"
    ]
    monkeypatch.setenv(NAME, "2")  # another value is reported again
    with caplog.at_level(logging.WARNING, logger="kernel_builder"):
        env_flag(NAME, default=default)
    assert len(caplog.records) == 2


# --- huggingface_hub's variables -----------------------------------------------------------------------------

HF_VALUES = ["1", "0", "true", "TRUE", "True", "yes", "on", "ON", "false", "no", "off", "", " 1", "1 ", "2", "y",
             "enable", "\ttrue"]  # fmt: skip


@pytest.mark.parametrize("value", HF_VALUES)
def test_hf_variables_read_as_huggingface_hub_reads_them(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """Compared with huggingface_hub's own reader of its switches, value by value."""
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", value)
    assert hf_flag("HF_HUB_DISABLE_TELEMETRY") is constants._is_true(value)


@pytest.mark.parametrize(
    ("hf_hub_offline", "transformers_offline", "expected"),
    [
        (None, None, False),
        (None, "1", True),
        ("", "1", True),  # empty: the next variable decides
        ("0", "1", False),  # set: it decides, as in huggingface_hub
        ("1", "0", True),
        ("yes", None, True),
        (" 1", None, False),  # not stripped, as in huggingface_hub
    ],
)
def test_offline_is_huggingface_hubs_rule(
    monkeypatch: pytest.MonkeyPatch,
    hf_hub_offline: str | None,
    transformers_offline: str | None,
    expected: bool,
) -> None:
    for name, value in (("HF_HUB_OFFLINE", hf_hub_offline), ("TRANSFORMERS_OFFLINE", transformers_offline)):
        if value is not None:
            monkeypatch.setenv(name, value)
    assert constants._is_true(hf_hub_offline or transformers_offline) is expected  # huggingface_hub's reading
    assert hf_flag("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") is expected
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # as if huggingface_hub was imported online
    assert hub.is_offline() is expected


# --- the users of the two rules ------------------------------------------------------------------------------


def test_telemetry_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    assert hub.telemetry_disabled() is False
    for name in ("HF_HUB_DISABLE_TELEMETRY", "DISABLE_TELEMETRY", "DO_NOT_TRACK"):
        monkeypatch.setenv(name, "ON")
        assert hub.telemetry_disabled() is True
        monkeypatch.setenv(name, "0")
        assert hub.telemetry_disabled() is False


def test_require_signature_follows_our_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    assert signatures.required() is False
    monkeypatch.setenv(signatures.REQUIRE_SIGNATURE, " Yes ")
    assert signatures.required() is True
    monkeypatch.setenv(signatures.REQUIRE_SIGNATURE, "off")
    assert signatures.required() is False
