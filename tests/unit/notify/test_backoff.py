"""The retry decisions of a delivery: what is tried again, how long it waits, when it gives up."""

from __future__ import annotations

import pytest
from urllib3.exceptions import MaxRetryError

from syncer.config.settings import NotifySettings
from syncer.notify.delivery import retry_policy


def test_failures_of_the_receiver_are_tried_again_and_refusals_are_not() -> None:
    policy = retry_policy(NotifySettings())
    for status in (429, 500, 502, 503, 504):
        assert policy.is_retry("POST", status), status
    for status in (400, 401, 403, 404, 410, 422):
        assert not policy.is_retry("POST", status), status


def test_the_waits_grow_up_to_the_cap_and_the_tries_end() -> None:
    policy = retry_policy(NotifySettings(retries=6, backoff=1.0, backoff_max=5.0))
    waits = []
    for _ in range(6):
        policy = policy.increment("POST", "/hook", error=ConnectionError())
        waits.append(policy.get_backoff_time())
    assert waits == [0.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    with pytest.raises(MaxRetryError):
        policy.increment("POST", "/hook", error=ConnectionError())
