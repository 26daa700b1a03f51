"""The offline schema check says what the apiserver says: generated values for the RedisCluster
fields whose validation differs most between Python and the apiserver (RE2 patterns, integers,
int-or-string quantities), each judged offline and by a server-side dry-run apply on the real fleet.

Every disagreement found here is kept as a case of tests/unit/manifests/test_schema.py, which runs
without a fleet.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncer.errors import Invalid, ServerError
from syncer.kube import ApplyOptions, ClusterClient
from syncer.manifests.options import REDIS_CLUSTER
from syncer.manifests.schema import crd_validators

# Characters that tell the regular-expression dialects apart: ASCII and non-ASCII digits, line
# ends, and what quantities and versions are made of.
_TRICKY = "0123456789.\n\r \t-+eEimkMGTPn\u0667\u0664\uff12\u09e9\u00b2"
_TEXT = st.text(alphabet=_TRICKY, max_size=8)
_NUMBER = st.one_of(
    st.integers(-3, 130),
    st.floats(-3, 130, allow_nan=False, allow_infinity=False),
    st.sampled_from([3.0, 100.0, 0.5, 1e3]),
)
_VALUE = st.one_of(
    _TEXT, _NUMBER, st.booleans(), st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,2})?(Mi|Gi|m)?", fullmatch=True)
)

# Each field with the values to try there, and how to place a value in a spec.
FIELDS: dict[str, tuple[Any, Any]] = {
    "version": (
        st.one_of(_TEXT, st.from_regex(r"[0-9]{1,2}\.[0-9]{1,2}(\.[0-9])?\n?", fullmatch=True)),
        lambda v: {"version": v},
    ),
    "resources.limits.cpu": (_VALUE, lambda v: {"version": "7.2", "resources": {"limits": {"cpu": v}}}),
    "persistence.size": (_VALUE, lambda v: {"version": "7.2", "persistence": {"size": v}}),
    "shards": (st.one_of(_NUMBER, st.booleans()), lambda v: {"version": "7.2", "shards": v}),
    "redisConfig": (_TEXT, lambda v: {"version": "7.2", "redisConfig": {"maxmemory-policy": v}}),
    "rolloutStrategy.stepTimeout": (
        st.one_of(_TEXT, st.from_regex(r"([0-9]{1,2}(ms|s|m|h)){1,2}\n?", fullmatch=True)),
        lambda v: {"version": "7.2", "rolloutStrategy": {"stepTimeout": v}},
    ),
}

EXAMPLES = 60


def _offline_accepts(body: dict[str, Any]) -> bool:
    validator = crd_validators()[(REDIS_CLUSTER.api_version, REDIS_CLUSTER.kind)]
    return not list(validator.iter_errors(body))


def _server_accepts(kube: ClusterClient, body: dict[str, Any]) -> bool:
    try:
        kube.apply(body, ApplyOptions(dry_run=True))
    except Invalid:
        return False
    except ServerError as err:
        # Server-side apply cannot even build its typed patch (a boolean where a number belongs):
        # refused, with a 500 instead of a 422.
        if "failed to create typed patch object" in str(err):
            return False
        raise
    return True


@pytest.mark.usefixtures("crd_installed")
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_offline_validation_agrees_with_the_apiserver(
    kube: ClusterClient, namespace: str, field: str
) -> None:
    values, place = FIELDS[field]
    tried: list[Any] = []
    disagreements: list[tuple[Any, bool, bool]] = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(values)
    def judge(value: Any) -> None:
        body = {
            "apiVersion": REDIS_CLUSTER.api_version,
            "kind": REDIS_CLUSTER.kind,
            "metadata": {"name": "fuzz", "namespace": namespace},
            "spec": place(value),
        }
        tried.append(value)
        offline, server = _offline_accepts(body), _server_accepts(kube, body)
        if offline != server:
            disagreements.append((value, offline, server))

    judge()
    print(f"{field}: {len(tried)} values tried, {len(disagreements)} disagreements")
    assert len(tried) >= EXAMPLES // 2
    assert disagreements == [], [(repr(v), f"offline={o}", f"apiserver={s}") for v, o, s in disagreements]
