"""The edges of a command: what it reaches outside kubegc's own code, in one seam read at
call time.

- the person or script running it: the `Ui` each command is handed;
- the CRI runtime, the pod source and the clock: `edges().cri`, `edges().pods`,
  `edges().clock` — commands reach the first two through `commands.flow.open_client` and
  `commands.flow.load_pod_inventory`, which use kubegc's own (the endpoint crictl's way,
  the `--pod-source`) unless the edges name another;
- the report of the run: `edges().audit_unwritten(message)`, where a run that acted says its
  audit rows could not be written (the report layer puts its own there while it reports a run);
- whether a run that acts may start its next removal: `edges().abandon()`, "" to go on, else
  why not (`kubegc agent` puts its own there while it holds an apply slot: the slot lost, the
  apply window ended); `carry_out` asks it before each stage and each removal.

The edges' clock is the run's "now" for planning (ages, MinAge, MaxAge, timestamps). The
safety checks that compare a file's modification time with the time right before acting (a
pod directory still being set up, residue grace periods: `node.host.residue`,
`node.execute.residue`) read the wall clock themselves: no fixed clock may make a directory
that is being written look old.

`using(...)` swaps edges for a block (a test's in-memory runtime, a fixed clock) and puts the
previous ones back after it. The edges are read at each call, so which module imported what,
and when, does not matter.

This module imports only the standard library: the report layer reaches it at start-up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kubegc_cli.core.plan import Plan
    from kubegc_cli.core.pods import PodInventory
    from kubegc_cli.core.settings import Settings
    from kubegc_cli.node.cri.client import CriClient


class Ui(Protocol):
    """How the core talks to the person or script running it.

    A Ui may also offer `progress(total)`: a context manager whose `advance(action)` is
    called once per finished removal (a progress bar); `carry_out` uses it when present.
    """

    def info(self, message: str) -> None:
        """A diagnostic line (stderr); shown with -v."""

    def warn(self, message: str) -> None:
        """A line the user must see (stderr), even without -v."""

    def show_plan(self, plan: Plan[Any]) -> None:
        """Render the plan before asking to act."""

    def interactive(self) -> bool:
        """True when a person can be asked (a terminal on stdin and stderr)."""

    def confirm(self, question: str) -> bool:
        """Ask a yes/no question; only called when `interactive()`."""


#: Opens the CRI client of a run (`Settings`, `Ui` → `CriClient`); raises `RuntimeUnavailable`.
CriFactory = Callable[["Settings", Ui], "CriClient"]
#: Reads the desired pods of a run (`Settings`, `Ui` → `PodInventory`).
PodLoader = Callable[["Settings", Ui], "PodInventory"]
#: Nanoseconds since the epoch.
Clock = Callable[[], int]


def go_on() -> str:
    """Whether a run that acts must stop starting removals: never ("")."""
    return ""


def unreported(message: str) -> None:
    """Where an unwritten audit log is said outside a reported run: nowhere (the plan's notes
    still say it)."""


@dataclass(frozen=True, slots=True)
class Edges:
    """What commands reach outside kubegc. `cri` and `pods` None: kubegc's own
    (`commands.flow.connect_runtime`, `commands.flow.read_pod_source`); `agent` None:
    kubegc's own cycle."""

    cri: CriFactory | None = None
    pods: PodLoader | None = None
    clock: Clock = time.time_ns
    audit_unwritten: Callable[[str], None] = unreported
    #: Why a run that acts must start no further removal ("" to go on): asked before each
    #: one; those in flight finish, those not begun are skipped with the reason.
    abandon: Callable[[], str] = go_on
    #: Makes `kubegc agent`'s cycle (`Settings`, `AgentOptions`, `Ui` → an object with
    #: `cycle()` and `reconfigure(settings, options)`, `agent.loop.Cycle`); None: kubegc's
    #: own (`agent.cycle.Agent`). A test hands its own to inject faults and timing.
    agent: Callable[..., Any] | None = None


_lock = threading.Lock()
_OWN = Edges()
_active: list[Edges] = []  # the edges of each `using` block still open, oldest first


def edges() -> Edges:
    """The edges in force now: the newest open `using` block's, else kubegc's own."""
    return _active[-1] if _active else _OWN


@contextmanager
def using(new: Edges | None = None, /, **changes: Any) -> Iterator[Edges]:
    """Within the block, commands reach `new` (default: the edges in force) with `changes`
    (fields of `Edges`: `cri=`, `pods=`, `clock=`, `audit_unwritten=`, `abandon=`,
    `agent=`); after it, the edges of the blocks still open are in force (the newest), else
    kubegc's own — also when blocks end in another order than they began. Process-wide, as
    the runtime and the clock are."""
    with _lock:
        mine = replace(edges() if new is None else new, **changes)
        _active.append(mine)
    try:
        yield mine
    finally:
        with _lock:
            del _active[max(i for i, e in enumerate(_active) if e is mine)]
