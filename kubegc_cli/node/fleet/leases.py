"""Apply slots: `coordination.k8s.io/v1` Leases `kubegc-apply-0` … `kubegc-apply-<N-1>`.

An agent acts only while it holds one slot; N slots let at most N nodes act at once across
the cluster. The Lease record follows client-go's leader election (`tools/leaderelection`,
`tryAcquireOrRenew` and `release`, over `resourcelock.LeaseLock`):

- `spec.holderIdentity` names the holder; `leaseDurationSeconds` how long a record lives
  without renewal; `acquireTime` and `renewTime` are MicroTimes (RFC 3339, microseconds, UTC);
  `leaseTransitions` counts the times an agent took the Lease over from another holder (or
  from none, after a release), as client-go counts them.
- A missing Lease is created held; a Lease is taken over by an update carrying the
  `resourceVersion` that was read, so two agents racing for one Lease cannot both win: the
  loser's update is refused (409 Conflict) and it counts as not acquired.
- A slot is free when it has no holder, or its `renewTime + leaseDurationSeconds` is past.
- Release clears the holder (as `ReleaseOnCancel` does: `leaseDurationSeconds` 1, the times
  set to now, the transitions kept), and only while the Lease is still ours.

Squatting: any agent can write a slot's Lease. A `renewTime` up to one lease duration in the
future counts as the reader's now, one further ahead makes the slot free, and a
`leaseDurationSeconds` longer than the reader's own lease duration counts as that duration: a
record that is not renewed frees its slot within two lease durations, whatever it says.

Clock skew: a Lease's `renewTime` is written by its holder's clock and judged by the reader's.
Renewals come every `lease_seconds / 3` while all goes well, so a healthy holder's record is
at most a third of its duration old and a reader whose clock runs up to two thirds of the
duration ahead (40 s at the default 60 s) sees it held. When renewals fail, the holder keeps
acting until its last renewal is five sixths of the duration old (`agent.build.KeptSlots`):
then the skew tolerated is one sixth (10 s at 60 s). A reader whose clock runs behind only
waits longer for a dead holder's slot. Nodes synchronise their
clocks (NTP, chrony) to well under a second; kubegc adds no margin of its own. client-go
avoids the comparison by timing the record's changes on its own clock, which needs a reader
that watches continuously; an agent looks once per cycle.

API errors raise `ApiUnavailable` (one line naming the API, the Lease and the refusal).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.fleet import lease_name
from kubegc_cli.core.units import NS_PER_SECOND, rfc3339_to_ns
from kubegc_cli.node.pods.api import ApiUnavailable, reply, status_message

API_VERSION = "coordination.k8s.io/v1"
#: Label on the Leases kubegc creates, so that `kubectl get leases -l` finds the slots.
LABEL = "app.kubernetes.io/managed-by"
LABEL_VALUE = "kubegc"


def micro_time(epoch: float) -> str:
    """Seconds since the epoch → a MicroTime, `2026-12-05T03:30:00.250000Z` (six digits, UTC).

    A time on a whole second is written one microsecond later: the `kubernetes` client turns
    the body into its model and back, writing a datetime without microseconds with no fraction
    at all, which the API server refuses for a MicroTime (its layout needs six digits).
    """
    at = datetime.fromtimestamp(epoch, UTC)
    if at.microsecond == 0:
        at = at.replace(microsecond=1)
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return rfc3339_to_ns(text) / NS_PER_SECOND
    except BadInput:
        return None


def _spec(lease: dict[str, Any]) -> dict[str, Any]:
    spec = lease.get("spec")
    return spec if isinstance(spec, dict) else {}


class _Conflict(Exception):
    """The Lease changed since it was read (409), or was created by another meanwhile."""


class ApplySlots:
    """The apply slots of one agent: `slots` Leases `lease_name(0)` … in `namespace`, held
    as `identity` (one per agent process: `agent.build.slot_identity`), through
    `api_client` (a `kubernetes.client.ApiClient`). `lease_seconds` is the record's
    `leaseDurationSeconds` (whole seconds, ≥ 1); `clock` gives seconds since the epoch;
    `rng` orders the slots tried (a fleet spreads over them); `timeout` is seconds per
    request.

    Every method raises `ApiUnavailable` when the API refuses (other than a lost race) or
    cannot be reached; `ValueError` for settings that cannot be meant.
    """

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        identity: str,
        slots: int,
        *,
        lease_seconds: float = 60,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        timeout: float = 10.0,
    ) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, not {slots!r}")
        if not identity:
            raise ValueError("an apply slot holder needs an identity")
        if lease_seconds < 1:
            raise ValueError(f"lease_seconds must be at least 1, not {lease_seconds!r}")
        self.api_client = api_client
        self.namespace = namespace
        self.identity = identity
        self.slots = slots
        self.lease_seconds = int(lease_seconds)
        self.clock = clock
        self.rng = rng if rng is not None else random.Random()
        self.timeout = timeout
        self.host = str(getattr(getattr(api_client, "configuration", None), "host", "") or "")

    # --- the API ------------------------------------------------------------------------------

    def _api(self) -> Any:
        # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
        from kubernetes import client

        return client.CoordinationV1Api(self.api_client)

    def _call(
        self, verb: str, name: str, fn: Callable[[], Any], *, on_404: str = "error"
    ) -> dict[str, Any] | None:
        """The decoded reply of `fn()`; `_Conflict` for 409 (and for 404 with `on_404`
        "conflict": the Lease went in between); None for 404 with `on_404` "none"; else
        `ApiUnavailable`, one line."""
        # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
        from kubernetes.client.exceptions import ApiException

        # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
        from urllib3.exceptions import HTTPError

        where = f"Kubernetes API {self.host}: {verb} lease {self.namespace}/{name}"
        try:
            data = fn().data
        except ApiException as exc:
            status = exc.status or 0
            if status == 404 and on_404 == "none":
                return None
            if status == 409 or (status == 404 and on_404 == "conflict"):
                raise _Conflict() from None
            if not status:
                raise ApiUnavailable(f"{where}: unreachable: {exc.reason}") from None
            if status == 403:
                raise ApiUnavailable(
                    f"{where}: 403 Forbidden: kubegc needs permission to get, create and "
                    f"update leases in namespace {self.namespace}"
                ) from None
            body = exc.body.decode(errors="replace") if isinstance(exc.body, bytes) else exc.body
            detail = status_message(body or "")
            raise ApiUnavailable(
                f"{where}: {status} {exc.reason or ''}".rstrip()
                + (f": {detail.splitlines()[0]}" if detail else "")
            ) from None
        except (HTTPError, OSError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise ApiUnavailable(
                f"{where}: unreachable: {type(exc).__name__}{': ' + first if first else ''}"
            ) from None
        doc = reply(data, self.host, f"lease {self.namespace}/{name}")
        if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
            raise ApiUnavailable(f"{where}: the reply is not a Lease")
        return doc

    def _get(self, name: str) -> dict[str, Any] | None:
        return self._call(
            "reading",
            name,
            lambda: self._api().read_namespaced_lease(
                name, self.namespace, _preload_content=False, _request_timeout=self.timeout
            ),
            on_404="none",
        )

    def _create(self, name: str, spec: dict[str, Any]) -> None:
        body = {
            "apiVersion": API_VERSION,
            "kind": "Lease",
            "metadata": {"name": name, "namespace": self.namespace, "labels": {LABEL: LABEL_VALUE}},
            "spec": spec,
        }
        self._call(
            "creating",
            name,
            lambda: self._api().create_namespaced_lease(
                self.namespace, body, _preload_content=False, _request_timeout=self.timeout
            ),
        )

    def _replace(self, name: str, lease: dict[str, Any], spec: dict[str, Any]) -> None:
        """Write `spec` over `lease` as read: refused with `_Conflict` if it changed since."""
        body = {
            "apiVersion": API_VERSION,
            "kind": "Lease",
            "metadata": lease["metadata"],  # carries the resourceVersion read
            "spec": spec,
        }
        self._call(
            "updating",
            name,
            lambda: self._api().replace_namespaced_lease(
                name, self.namespace, body, _preload_content=False, _request_timeout=self.timeout
            ),
            on_404="conflict",
        )

    # --- the record ---------------------------------------------------------------------------

    def _record(self, acquired: float, now: float, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.lease_seconds,
            "acquireTime": micro_time(acquired),
            "renewTime": micro_time(now),
            "leaseTransitions": transitions,
        }

    def holder(self, lease: dict[str, Any], now: float) -> str:
        """The live holder of a Lease read from the API, "" when the slot is free: no holder,
        or `renewTime + leaseDurationSeconds <= now` (a record without a readable renewTime or
        duration is free too: no holder could renew it). Clamped, so that no record holds a
        slot much longer than one of ours: a `renewTime` up to `lease_seconds` in the future
        counts as `now`, one further ahead is not believed (the slot is free: no clock runs
        that far ahead), and a `leaseDurationSeconds` above `lease_seconds` counts as
        `lease_seconds`. A record not renewed frees its slot within two lease durations."""
        spec = _spec(lease)
        who = spec.get("holderIdentity")
        if not isinstance(who, str) or not who:
            return ""
        renewed = _seconds(spec.get("renewTime"))
        duration = spec.get("leaseDurationSeconds")
        if renewed is None or not isinstance(duration, int) or isinstance(duration, bool):
            return ""
        if renewed > now + self.lease_seconds:
            return ""  # the year 9999: not a clock, a squatter
        return who if min(renewed, now) + min(duration, self.lease_seconds) > now else ""

    @staticmethod
    def _transitions(lease: dict[str, Any]) -> int:
        n = _spec(lease).get("leaseTransitions")
        return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else 0

    # --- the slots ----------------------------------------------------------------------------

    def acquire(self) -> str | None:
        """Take a free apply slot: the name of the Lease now held, or None when every slot
        has a live holder other than us (or the races for the free ones were lost).

        Slots are tried in a random order. A slot already held by this identity is renewed
        and returned. A missing Lease is
        created; a free one is taken over with the `resourceVersion` read, `leaseTransitions`
        + 1. Raises `ApiUnavailable`.
        """
        order = list(range(self.slots))
        self.rng.shuffle(order)
        for i in order:
            name = lease_name(i)
            now = self.clock()
            lease = self._get(name)
            try:
                if lease is None:
                    self._create(name, self._record(now, now, 0))
                    return name
                spec = _spec(lease)
                if spec.get("holderIdentity") == self.identity:  # ours, live or expired
                    acquired = _seconds(spec.get("acquireTime"))
                    record = self._record(acquired or now, now, self._transitions(lease))
                elif self.holder(lease, now):
                    continue
                else:
                    record = self._record(now, now, self._transitions(lease) + 1)
                self._replace(name, lease, record)
                return name
            except _Conflict:
                continue  # another agent wrote it first: lost the race
        return None

    def renew(self, name: str) -> bool:
        """Renew the slot `name`: True when it is still ours and its `renewTime` is now
        later; False when another identity holds it (or none does), it is gone, or another
        writer changed it in between. As client-go, a holder whose record expired but that
        nobody took over renews it. Raises `ApiUnavailable`."""
        lease = self._get(name)
        if lease is None:
            return False
        spec = _spec(lease)
        if spec.get("holderIdentity") != self.identity:
            return False
        now = self.clock()
        acquired = _seconds(spec.get("acquireTime"))
        try:
            self._replace(name, lease, self._record(acquired or now, now, self._transitions(lease)))
        except _Conflict:
            return False
        return True

    def release(self, name: str) -> None:
        """Give the slot `name` back, when it is still ours: the holder cleared,
        `leaseDurationSeconds` 1, `acquireTime` and `renewTime` now, the transitions kept
        (client-go's `release`). A Lease held by another identity, or gone, is left alone; so
        is one another writer changed in between (it is then not ours to clear). Raises
        `ApiUnavailable`."""
        lease = self._get(name)
        if lease is None:
            return
        if _spec(lease).get("holderIdentity") != self.identity:
            return
        now = micro_time(self.clock())
        record = {
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": self._transitions(lease),
        }
        try:
            self._replace(name, lease, record)
        except _Conflict:
            return
