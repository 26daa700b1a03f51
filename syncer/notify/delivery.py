"""Sending requests to one receiver from a thread of its own, so that a slow, hanging or failing
receiver never delays a pass nor another receiver.

Each receiver has a bounded queue (``NotifySettings.queue``): a notice that finds it full is dropped
and counted, never waited for. Its thread sends each request with a deadline per try
(``NotifySettings.timeout``); a try that fails to connect or is answered 429 or 5xx is tried again
after a back-off that urllib3's ``Retry`` decides (factor, cap, ``Retry-After``), waited on the stop
event so that closing is never held up by a sleep. Before each request its host is judged
(``guard``: what it resolves to now); a refused one is counted and logged, never sent. Only the
receiver's name and the kind of failure are ever logged: URLs and headers may hold secrets.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

import urllib3
from urllib3.exceptions import HTTPError, MaxRetryError
from urllib3.util import Retry, Timeout

from syncer.config.settings import NotifySettings
from syncer.notify.payloads import Request

log = logging.getLogger("syncer.notify")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
Count = Callable[[str, str], None]
"""Counts one result (``sent``, ``failed``, ``dropped``, ``folded``, ``refused``) for a receiver."""
Guard = Callable[[str], str]
"""Why a request to a URL must not be sent ("" when it may): ``syncer.config.addresses.refusal``."""


def _no_guard(_: str) -> str:
    return ""


def retry_policy(settings: NotifySettings) -> Retry:
    """How often and how long to wait between tries: ``settings.retries`` tries after the first, for
    failed connections and reads and for 429/5xx answers, backing off by ``settings.backoff`` up to
    ``settings.backoff_max`` seconds."""
    return Retry(
        total=settings.retries,
        redirect=0,
        allowed_methods=None,
        status_forcelist=RETRY_STATUSES,
        backoff_factor=settings.backoff,
        backoff_max=settings.backoff_max,
        raise_on_status=False,
        respect_retry_after_header=True,
    )


@dataclass(frozen=True)
class Delivery:
    """How sending one request ended: sent, or why not (an HTTP status or the kind of error)."""

    sent: bool
    why: str = ""
    tries: int = 1


def deliver(
    pool: urllib3.PoolManager, request: Request, settings: NotifySettings, stop: threading.Event
) -> Delivery:
    """POST ``request`` until it is answered 2xx, the retry policy gives up, or ``stop`` is set."""
    retry = retry_policy(settings)
    timeout = Timeout(connect=settings.timeout, read=settings.timeout)
    tries = 0
    while True:
        tries += 1
        delay = 0.0
        try:
            response = pool.request(
                "POST",
                request.url,
                body=request.body,
                headers=dict(request.headers),
                retries=False,
                redirect=False,
                timeout=timeout,
            )
        except HTTPError as err:
            why = type(err).__name__
            try:
                retry = retry.increment("POST", request.url, error=err)
            except (MaxRetryError, HTTPError):
                return Delivery(False, why, tries)
        else:
            if 200 <= response.status < 300:
                return Delivery(True, tries=tries)
            why = f"HTTP {response.status}"
            has_after = response.headers.get("Retry-After") is not None
            if not retry.is_retry("POST", response.status, has_retry_after=has_after):
                return Delivery(False, why, tries)
            try:
                retry = retry.increment("POST", request.url, response=response)
            except MaxRetryError:
                return Delivery(False, why, tries)
            delay = min(retry.get_retry_after(response) or 0.0, settings.backoff_max)
        if stop.wait(max(delay, retry.get_backoff_time())):
            return Delivery(False, f"{why}; stopped", tries)


class Courier:
    """One receiver's queue and the thread that empties it."""

    def __init__(self, name: str, settings: NotifySettings, count: Count, guard: Guard = _no_guard) -> None:
        self.name = name
        self.settings = settings
        self.count = count
        self.guard = guard
        self.queue: queue.Queue[tuple[str, Request]] = queue.Queue(maxsize=settings.queue)
        self.stop = threading.Event()
        self.pool = urllib3.PoolManager(retries=False)
        self.thread = threading.Thread(target=self._run, name=f"notify-{name}", daemon=True)
        self.thread.start()

    def post(self, summary: str, request: Request) -> None:
        """Queue ``request`` at once, or drop it (counted) when the queue is full."""
        try:
            self.queue.put_nowait((summary, request))
        except queue.Full:
            self.count(self.name, "dropped")
            log.warning("notification to %s dropped: its queue is full", self.name, extra={"detail": summary})

    def _run(self) -> None:
        while not (self.stop.is_set() and self.queue.empty()):
            try:
                summary, request = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            refused = self.guard(request.url)  # at each send: what the host resolves to may change
            if refused:
                self.count(self.name, "refused")
                log.warning("notification to %s refused: %s", self.name, refused, extra={"detail": summary})
                continue
            done = deliver(self.pool, request, self.settings, self.stop)
            self.count(self.name, "sent" if done.sent else "failed")
            if done.sent:
                log.info("notified %s", self.name, extra={"detail": summary})
            else:
                log.warning(
                    "notification to %s failed after %d tries: %s",
                    self.name,
                    done.tries,
                    done.why,
                    extra={"detail": summary},
                )

    def close(self, timeout: float) -> None:
        """Send what is queued for up to ``timeout`` seconds, then stop (what is left is dropped)."""
        self.stop.set()
        self.thread.join(timeout)
        self.pool.clear()
