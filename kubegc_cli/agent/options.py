"""What one `kubegc agent` process is told to do: the options of `kubegc agent` and the policy
(kubegc's config file) resolved into one value, handed to each cycle. A policy re-read while
the agent runs makes a new `AgentOptions`; a cycle uses the one in force when it starts."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubegc_cli.commands.flow import ActOptions
from kubegc_cli.policy.containers import ContainerGCPolicy
from kubegc_cli.policy.scope import Scope

#: The checks a cycle can run, in the order it runs them.
CHECKS = ("evict", "df", "residue", "gc")
#: The gc plans apply mode can carry out, in the kubelet's order (containers and sandboxes
#: first, then logs, then images).
PLANS = ("containers", "sandboxes", "logs", "images")


@dataclass(frozen=True, slots=True)
class AgentOptions:
    """One agent's settings, all resolved (no None where a default applies).

    `interval`, `heartbeat`, `lease_seconds` in seconds. `mode` "report" (act on nothing) or
    "apply" (carry out `plans` while holding an apply slot, inside `window` when one is set).
    `checks` a subset of `CHECKS`; `plans` a subset of `PLANS`. `act` holds the per-run caps
    (`max_delete`, `max_bytes`) and concurrency; `container_policy` and `scope` the gc options
    as `gc all` takes them; `root_dir` the kubelet root, `pod_logs_dir` the pod log root (None:
    the kubelet config's). `apply_slots` the number of Leases `kubegc-apply-<n>` in
    `lease_namespace`; `max_failed_percent` and `breaker_window` (seconds) the circuit breaker;
    `window` the apply window as written ("" = always) in `window_timezone`; `top` how many
    items each list of the report keeps; `listen` host:port of the HTTP endpoints.
    """

    interval: float = 300.0
    once: bool = False
    mode: str = "report"
    checks: tuple[str, ...] = CHECKS
    plans: tuple[str, ...] = ("containers", "sandboxes", "logs")
    act: ActOptions = field(default_factory=lambda: ActOptions(yes=True))
    container_policy: ContainerGCPolicy = field(default_factory=ContainerGCPolicy)
    scope: Scope = field(default_factory=Scope)
    root_dir: str = "/var/lib/kubelet"
    pod_logs_dir: str | None = None
    apply_slots: int = 1
    lease_namespace: str = "kubegc"
    lease_seconds: float = 60.0
    max_failed_percent: float = 20.0
    breaker_window: float = 3600.0
    window: str = ""
    window_timezone: str = "UTC"
    heartbeat: float = 1800.0
    top: int = 5
    listen: str = ":9808"
