"""`kubegc agent`'s cycle with its Kubernetes parts: the node's `NodeGCReport`, the apply
slots (Leases) and the circuit breaker, all through one API client opened as every kubegc
command opens one (`--kubeconfig`, `KUBECONFIG`, `~/.kube/config`, the in-cluster account).

Without credentials the agent still runs: it reports on stderr and `/metrics` only, and in
apply mode takes no slot (apply slots are Leases: no API, no apply; the report says so).

While an apply runs the slot is renewed every third of its lease duration from a thread of
its own (`KeptSlots`), so a plan that takes longer than the lease never lets another node
take the slot: an agent that dies stops renewing, and its slot expires by its duration.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kubegc_cli.agent.cycle import Agent, Slots
from kubegc_cli.agent.options import AgentOptions
from kubegc_cli.commands.edges import Ui
from kubegc_cli.core.errors import KubegcError
from kubegc_cli.core.fleet import NodeReport
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.fleet.leases import ApplySlots
from kubegc_cli.node.fleet.reports import list_reports, write_report
from kubegc_cli.node.pods.api import ApiSource, find_credentials, node_name, open_api
from kubegc_cli.policy.fleet import breaker


class KeptSlots:
    """`Slots` that keep the slot held while it is: `make()` gives the slots in force (made
    again at each `acquire`, so a re-read policy's slot count, namespace and lease duration
    apply from the next apply); after `acquire` returns a name, a daemon thread renews it
    every `every()` seconds until `release`. `renew(name)` is False once a renewal failed or
    found the slot taken: the cycle then stops before its next plan. `warn` is told each
    failed renewal (one line)."""

    def __init__(self, make: Any, every: Any, warn: Any) -> None:
        self._make, self._every_of, self._warn = make, every, warn
        self._slots: Slots | None = None
        self._every = 1.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._held = False

    def acquire(self) -> str | None:
        self._slots, self._every = self._make(), float(self._every_of())
        name = self._slots.acquire()
        if name is not None:
            self._held = True
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._keep, args=(name,), name="kubegc-apply-slot", daemon=True
            )
            self._thread.start()
        return name

    def _keep(self, name: str) -> None:
        assert self._slots is not None
        while not self._stop.wait(self._every):
            try:
                held = self._slots.renew(name)
            except KubegcError as exc:
                self._warn(f"apply slot {name}: {exc}")
                held = False
            if not held:
                self._held = False
                return

    def renew(self, name: str) -> bool:
        return self._held and self._slots is not None and self._slots.renew(name)

    def release(self, name: str) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._every + 30)
        self._held = False
        if self._slots is not None:
            self._slots.release(name)


def build_agent(s: Settings, options: AgentOptions, ui: Ui) -> Agent:
    """The `Agent` `kubegc agent` runs: with the API when credentials are found (its report
    written, apply slots as Leases named by the node, the breaker over every node's report),
    else without. Raises `BadInput` for a kubeconfig that cannot be used."""
    found = find_credentials(s.kubeconfig, s.env)
    if found is None:
        ui.warn(
            "no Kubernetes credentials (--kubeconfig, KUBECONFIG, ~/.kube/config or the "
            "in-cluster account): no NodeGCReport is written and no apply slot can be held"
        )
        return Agent(s, options, ui)
    node = node_name(s.node_name)
    core, _host = open_api(ApiSource(found, s.context, node))
    api_client = core.api_client
    timeout = s.timeout
    agent: Agent  # made below; the closures read its options in force

    def write(report: NodeReport) -> None:
        write_report(api_client, report, timeout=timeout)

    def fleet_breaker() -> str:
        o = agent.options
        reports = list_reports(api_client, timeout=timeout)
        return breaker(
            reports, time.time(), window=o.breaker_window, max_failed_percent=o.max_failed_percent
        )

    def leases() -> ApplySlots:
        o = agent.options
        return ApplySlots(
            api_client, o.lease_namespace, node, o.apply_slots,
            lease_seconds=o.lease_seconds, timeout=timeout,
        )  # fmt: skip

    slots = KeptSlots(leases, lambda: max(agent.options.lease_seconds / 3, 1.0), ui.warn)
    agent = Agent(s, options, ui, write_report=write, slots=slots, breaker=fleet_breaker)
    return agent
