"""The event vocabulary: every step is reported somehow, and the text never carries the meaning."""

from __future__ import annotations

from pathlib import Path

from syncer.domain.progress import TREATMENTS, PassEvent, Step, to_all


def test_every_step_has_exactly_one_treatment() -> None:
    assert set(TREATMENTS) == set(Step)


def test_steps_with_an_event_reason_use_kubernetes_reason_style() -> None:
    for step, treatment in TREATMENTS.items():
        if treatment.event_reason:
            assert treatment.event_reason[0].isupper(), step
            assert treatment.event_reason.isalnum(), step


def test_the_detail_is_the_error_then_the_reason_then_a_named_revision() -> None:
    assert PassEvent(Step.APPLY_FAILED, error="boom", reason="why").detail == "boom"
    assert PassEvent(Step.GATE_HALT, reason="eu-1: degraded").detail == "eu-1: degraded"
    assert PassEvent(Step.APPLYING, "w", "c", "abc").detail == "abc"
    assert PassEvent(Step.APPLIED, "w", "c", "abc").detail == ""


def test_to_all_tells_every_listener_in_order() -> None:
    heard: list[str] = []
    tell = to_all(lambda e: heard.append(f"a:{e.step}"), None, lambda e: heard.append(f"b:{e.step}"))
    tell(PassEvent(Step.APPLIED))
    assert heard == ["a:applied", "b:applied"]


def test_the_agent_docs_name_every_step_and_every_event_reason() -> None:
    docs = (Path(__file__).parents[3] / "docs" / "agent.md").read_text()
    for step, treatment in TREATMENTS.items():
        assert f"`{step}`" in docs, step
        if treatment.event_reason:
            assert f"`{treatment.event_reason}`" in docs, treatment.event_reason
