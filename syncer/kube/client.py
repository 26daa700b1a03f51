"""A KubeApi over the official kubernetes client, for one kubeconfig context."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from syncer import __version__
from syncer.errors import ConfigError, KubeError, NotFound, ServerError, TooManyRequests
from syncer.kube import resources, translate
from syncer.kube.api import ApplyOptions, ClientOptions, KubeObject, ListResult, WatchEvent
from syncer.kube.kubeconfig import kubeconfig_files, read_kubeconfig
from syncer.kube.throttle import Limits

_APPLY = "application/apply-patch+yaml"
_JSON = "application/json"


def _subject(kind: str, namespace: str, name: str) -> str:
    return "/".join(part for part in (kind, namespace, name) if part)


def _body_subject(body: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = body.get("metadata") or {}
    return (
        str(body.get("apiVersion", "")),
        str(body.get("kind", "")),
        meta.get("namespace", ""),
        meta.get("name", ""),
    )


class ClusterClient:
    """Talks to one cluster. Thread-safe; connections are pooled and reused across calls."""

    def __init__(
        self, cluster: str, api_client: k8s.ApiClient, options: ClientOptions = ClientOptions()
    ) -> None:
        self._cluster = cluster
        self._api = api_client
        self.options = options
        self._limits = Limits(options.qps, options.burst, options.max_in_flight)
        self._discovered: dict[tuple[str, str], resources.ResourceType] = {}
        self._lock = threading.Lock()
        self._write_guard: Callable[[], AbstractContextManager[None]] = nullcontext

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str, context: str, cluster: str = "", options: ClientOptions = ClientOptions()
    ) -> ClusterClient:
        """A client for ``context`` of ``kubeconfig``; ``cluster`` names it in errors (default: context)."""
        configuration = k8s.Configuration()
        document = read_kubeconfig(kubeconfig)
        try:
            k8s_config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
                document,
                context=context or None,
                client_configuration=configuration,
                persist_config=False,
            )
        except (ConfigException, OSError) as err:
            shown = kubeconfig or " or ".join(str(p) for p in kubeconfig_files(""))
            which = f", context {context!r}" if context else " (its current-context)"
            raise ConfigError(f"kubeconfig {shown}{which}: {err}") from err
        # syncer decides itself when to retry (honouring Retry-After); the transport must not.
        configuration.retries = False
        configuration.connection_pool_maxsize = max(options.max_in_flight, 4)
        api_client = k8s.ApiClient(configuration)
        api_client.user_agent = options.user_agent or f"syncer/{__version__}"
        return cls(cluster or context, api_client, options)

    @property
    def cluster(self) -> str:
        return self._cluster

    def guard_writes(self, guard: Callable[[], AbstractContextManager[None]]) -> None:
        """Enter ``guard()`` around each write right before it goes out, after the client's own limits
        let it: a fence (``syncer.leader.fence``) checked only before a write waits for a free slot
        could pass seconds before the request is sent. ``guard`` raises (``FencedOut``) to stop it."""
        self._write_guard = guard

    def close(self) -> None:
        self._api.close()  # type: ignore[no-untyped-call]

    # -- transport -------------------------------------------------------------------------------

    def _send(self, method: str, path: str, *, subject: str, **kwargs: Any) -> Any:
        """One request; reads (GET) that the server answers with 429 or 503 are tried again a few times
        after its Retry-After (or a short backoff): an apiserver whose storage for a just-created CRD is
        still initializing says so with 503. Writes are left to the caller's retry policy."""
        stream = kwargs.pop("stream", False)
        attempts = self.options.read_attempts if method == "GET" and not stream else 1
        for attempt in range(1, attempts + 1):
            try:
                return self._send_once(method, path, subject=subject, **kwargs)
            except (TooManyRequests, ServerError) as err:
                if attempt == attempts or err.status not in {429, 503}:
                    raise
                hint = err.retry_after if isinstance(err, TooManyRequests) else 0.0
                time.sleep(min(hint or 0.25 * 2**attempt, 5.0))
        raise AssertionError("unreachable: the loop returns or raises")

    def _send_once(
        self,
        method: str,
        path: str,
        *,
        subject: str,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = _JSON,
        timeout: float | None = None,
    ) -> Any:
        """One request; returns the urllib3 response for 2xx, raises a KubeError otherwise."""
        header = {"Accept": _JSON, "Content-Type": content_type}
        request = self._api.param_serialize(
            method,
            path,
            query_params=query or [],
            header_params=header,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            with self._limits.slot(), self._write_guard() if method != "GET" else nullcontext():
                response = self._api.call_api(*request, _request_timeout=timeout or self.options.timeout)
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise ServerError(
                f"cannot reach the apiserver: {err}", cluster=self._cluster, subject=subject
            ) from err
        except k8s.ApiException as err:
            raise ServerError(
                f"transport error: {err.reason}", cluster=self._cluster, subject=subject
            ) from err
        if 200 <= response.status < 300:
            return response
        data = response.read()  # type: ignore[no-untyped-call]
        text = data.decode(errors="replace") if isinstance(data, bytes) else str(data)
        raise translate.api_error(
            response.status, text, dict(response.headers), cluster=self._cluster, subject=subject
        )

    def _json(self, method: str, path: str, *, subject: str, **kwargs: Any) -> KubeObject:
        response = self._send(method, path, subject=subject, **kwargs)
        data = response.read()
        parsed = json.loads(data) if data else {}
        if not isinstance(parsed, dict):
            raise KubeError(f"unexpected answer to {method} {path}", cluster=self._cluster, subject=subject)
        return parsed

    # -- resources -------------------------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> resources.ResourceType:
        """Where ``kind`` is served: the built-in table, else one discovery request per group version."""
        known = resources.known(api_version, kind) or self._discovered.get((api_version, kind))
        if known is not None:
            return known
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            document = self._json("GET", path, subject=f"{api_version} {kind}")
        except NotFound as err:
            raise NotFound(
                f"the cluster does not serve {api_version} (is the CRD installed?)",
                cluster=self._cluster,
                subject=kind,
                status=404,
            ) from err
        found = resources.from_discovery(api_version, kind, document)
        if found is None:
            raise NotFound(
                f"{api_version} has no kind {kind}", cluster=self._cluster, subject=kind, status=404
            )
        with self._lock:
            self._discovered[(api_version, kind)] = found
        return found

    # -- KubeApi ---------------------------------------------------------------------------------

    def list(
        self, api_version: str, kind: str, *, namespace: str = "", label_selector: str = ""
    ) -> ListResult:
        rt = self.resource(api_version, kind)
        items: list[KubeObject] = []
        token = ""
        while True:
            query = [("limit", str(self.options.page_size))]
            if label_selector:
                query.append(("labelSelector", label_selector))
            if token:
                query.append(("continue", token))
            page = self._json("GET", rt.path(namespace), subject=_subject(kind, namespace, ""), query=query)
            for item in page.get("items") or []:
                item.setdefault("apiVersion", rt.api_version)
                item.setdefault("kind", kind)
                items.append(item)
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return ListResult(items, str((page.get("metadata") or {}).get("resourceVersion", "")))

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> KubeObject:
        rt = self.resource(api_version, kind)
        return self._json("GET", rt.path(namespace, quote(name)), subject=_subject(kind, namespace, name))

    def get_text(self, path: str) -> str:
        """A raw GET of a non-resource path such as ``/metrics``, as text."""
        data = self._send("GET", path, subject=path).read()
        return data.decode(errors="replace") if isinstance(data, bytes) else str(data)

    def _apply(self, body: Mapping[str, Any], options: ApplyOptions, suffix: str) -> KubeObject:
        api_version, kind, namespace, name = _body_subject(body)
        rt = self.resource(api_version, kind)
        query = [("fieldManager", options.field_manager)]
        if options.force:
            query.append(("force", "true"))
        if options.dry_run:
            query.append(("dryRun", "All"))
        path = rt.path(namespace, quote(name)) + suffix
        return self._json(
            "PATCH",
            path,
            subject=_subject(kind, namespace, name),
            query=query,
            body=dict(body),
            content_type=_APPLY,
        )

    def apply(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        return self._apply(body, options, "")

    def apply_status(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        return self._apply(body, options, "/status")

    def create(self, body: Mapping[str, Any]) -> KubeObject:
        api_version, kind, namespace, name = _body_subject(body)
        rt = self.resource(api_version, kind)
        return self._json(
            "POST", rt.path(namespace), subject=_subject(kind, namespace, name), body=dict(body)
        )

    def replace(self, body: Mapping[str, Any]) -> KubeObject:
        api_version, kind, namespace, name = _body_subject(body)
        rt = self.resource(api_version, kind)
        path = rt.path(namespace, quote(name))
        return self._json("PUT", path, subject=_subject(kind, namespace, name), body=dict(body))

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str = "", propagation: str = "Background"
    ) -> None:
        rt = self.resource(api_version, kind)
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
        self._json(
            "DELETE", rt.path(namespace, quote(name)), subject=_subject(kind, namespace, name), body=body
        )

    def watch(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str = "",
        resource_version: str = "",
        timeout_seconds: int = 60,
    ) -> Iterator[WatchEvent]:
        """Events until the server ends the watch (after about ``timeout_seconds``)."""
        rt = self.resource(api_version, kind)
        query = [("watch", "true"), ("timeoutSeconds", str(timeout_seconds)), ("allowWatchBookmarks", "true")]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        subject = _subject(kind, namespace, "")
        response = self._send(
            "GET",
            rt.path(namespace),
            subject=subject,
            query=query,
            timeout=timeout_seconds + 10.0,
            stream=True,
        )
        raw = response.response
        try:
            buffer = b""
            for chunk in raw.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield _event(line, self._cluster, subject)
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise ServerError(f"watch broken: {err}", cluster=self._cluster, subject=subject) from err
        finally:
            raw.release_conn()


def _event(line: bytes, cluster: str, subject: str) -> WatchEvent:
    parsed = json.loads(line)
    if parsed.get("type") == "ERROR":
        status = parsed.get("object") or {}
        raise translate.api_error(
            int(status.get("code", 500)), json.dumps(status), {}, cluster=cluster, subject=subject
        )
    return WatchEvent(str(parsed.get("type")), parsed.get("object") or {})
