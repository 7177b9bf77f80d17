"""`kubegc version` as text: kubectl's "Client Version" line, then the runtime's lines exactly
as `crictl version` prints them (`Version:  0.1.0`, `RuntimeName:  containerd`, ...), so
what reads crictl's output reads these lines too. Plain text: no rich."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING

from kubegc_cli.core.units import safe_text

if TYPE_CHECKING:
    from kubegc_cli.commands.version import VersionReport


def version_lines(report: VersionReport) -> list[str]:
    """The lines of the text form: `Client Version:  X`; with a runtime that answered,
    `Runtime Endpoint:  E` and crictl's four lines (`Version`, `RuntimeName`,
    `RuntimeVersion`, `RuntimeApiVersion`, each `Key:  value`). What the runtime sent is
    shown with control characters escaped (`safe_text`)."""
    lines = [f"Client Version:  {report.client}"]
    rt = report.runtime
    if rt is not None:
        lines += [
            f"Runtime Endpoint:  {safe_text(report.endpoint)}",
            f"Version:  {safe_text(rt.cri_version)}",
            f"RuntimeName:  {safe_text(rt.name)}",
            f"RuntimeVersion:  {safe_text(rt.version)}",
            f"RuntimeApiVersion:  {safe_text(rt.api_version)}",
        ]
    return lines


def render_version(report: VersionReport, out: IO[str] | None = None) -> None:
    """Write `version_lines(report)` to `out` (stdout)."""
    out = out or sys.stdout
    out.write("".join(f"{line}\n" for line in version_lines(report)))
    out.flush()
