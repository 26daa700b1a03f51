"""Error translation from apiserver Status answers (bodies as kube-apiserver v1.34 sends them)."""

from __future__ import annotations

import json

from syncer import errors
from syncer.kube import translate


def status(code: int, reason: str, message: str, causes: list[dict[str, str]] | None = None) -> str:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "reason": reason}
    if causes is not None:
        body["details"] = {"causes": causes}  # type: ignore[assignment]
    body["code"] = code  # type: ignore[assignment]
    return json.dumps(body)


def test_a_field_manager_conflict_names_every_manager_and_field() -> None:
    body = status(
        409,
        "Conflict",
        "Apply failed with 2 conflicts",
        [
            {"reason": "FieldManagerConflict", "message": 'conflict with "helm"', "field": ".spec.shards"},
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "kubectl-client-side-apply" using v1',
                "field": ".spec.version",
            },
        ],
    )
    err = translate.api_error(409, body, {}, cluster="eu-1", subject="RedisCluster/cache/sessions")
    assert isinstance(err, errors.Conflict)
    assert err.managers == ("helm", "kubectl-client-side-apply")
    assert [c.field for c in err.conflicts] == [".spec.shards", ".spec.version"]
    assert str(err) == (
        "[eu-1] RedisCluster/cache/sessions: fields .spec.shards, .spec.version are owned by another "
        "field manager (helm, kubectl-client-side-apply)"
    )


def test_an_invalid_object_keeps_its_field_causes() -> None:
    body = status(
        422,
        "Invalid",
        'RedisCluster.redis.syncer.dev "a" is invalid: spec.shards: Invalid value: 0',
        [{"reason": "FieldValueInvalid", "message": "Invalid value: 0", "field": "spec.shards"}],
    )
    err = translate.api_error(422, body, {}, cluster="c", subject="s")
    assert isinstance(err, errors.Invalid)
    assert err.causes == (errors.FieldCause("spec.shards", "Invalid value: 0"),)


def test_throttling_carries_the_retry_after_hint() -> None:
    body = status(429, "TooManyRequests", "too many requests")
    err = translate.api_error(429, body, {"Retry-After": "3"}, cluster="c", subject="s")
    assert isinstance(err, errors.TooManyRequests)
    assert err.retry_after == 3.0


def test_status_codes_map_to_the_error_tree() -> None:
    cases = {
        404: errors.NotFound,
        403: errors.Forbidden,
        500: errors.ServerError,
        503: errors.ServerError,
        401: errors.KubeError,
    }
    for code, kind in cases.items():
        err = translate.api_error(code, status(code, "X", f"code {code}"), {}, cluster="c", subject="s")
        assert type(err) is kind
        assert err.status == code


def test_a_body_that_is_not_a_status_is_kept_as_the_message() -> None:
    err = translate.api_error(502, "<html>bad gateway</html>", {}, cluster="c", subject="")
    assert isinstance(err, errors.ServerError)
    assert "bad gateway" in str(err)


def test_a_404_without_a_status_means_the_kind_is_not_served() -> None:
    err = translate.api_error(404, "404 page not found\n", {}, cluster="eu-1", subject="RedisCluster/a/b")
    assert isinstance(err, errors.NotFound)
    assert err.detail == "the apiserver does not serve this kind (is its CustomResourceDefinition installed?)"
    assert str(err).startswith("[eu-1] RedisCluster/a/b: the apiserver does not serve")
