"""A real terminal for tests: a command run in a tmux pane of a given size, and what the pane
shows (its history included), as a user at that terminal would see it.

Each `Pane` runs on a private tmux server (`tmux -L <name>`, no config file), which is killed
when the pane is closed."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
import uuid
from collections.abc import Sequence
from types import TracebackType

#: Printed after the command ends, with its exit status: `__END__ <status>`.
END = "__END__"


class Pane:
    """`argv` running in a `width` x `height` tmux pane with `TERM` set to `term` (the
    environment otherwise this process's, without tmux's and the size variables)."""

    def __init__(
        self, argv: Sequence[str], width: int, height: int, *, term: str = "xterm-256color"
    ) -> None:
        self.server = f"kubegc-test-{uuid.uuid4().hex[:8]}"
        self.tmux = ["tmux", "-L", self.server, "-f", "/dev/null"]
        command = (
            f"env TERM={shlex.quote(term)} {' '.join(shlex.quote(a) for a in argv)}; "
            f'echo "{END} $?"; sleep 600'
        )
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "COLUMNS", "LINES")}
        subprocess.run([*self.tmux, "new-session", "-d", "-x", str(width), "-y", str(height),
                        command], check=True, env=env)  # fmt: skip

    def screen(self) -> str:
        """Everything the pane shows and has scrolled off, one line a terminal row (a line
        the terminal wrapped is as many rows), blank rows at the end left out."""
        shown = subprocess.run([*self.tmux, "capture-pane", "-p", "-S", "-"],
                               capture_output=True, text=True, check=True).stdout  # fmt: skip
        return shown.rstrip("\n") + "\n"

    def wait_for(self, text: str, timeout: float = 90) -> str:
        """The screen once it shows `text`. Raises AssertionError with the screen on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if text in shown:
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not shown within {timeout:g}s:\n{shown}")
            time.sleep(0.2)

    def finished(self, timeout: float = 90) -> tuple[int, str]:
        """(exit status, screen above the end marker) once the command has ended."""
        shown = self.wait_for(END, timeout)
        before, _, after = shown.partition(END)
        return int(after.split()[0]), before

    def send(self, *keys: str) -> None:
        """Type `keys` (tmux key names: "n", "Enter")."""
        subprocess.run([*self.tmux, "send-keys", *keys], check=True)

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], check=False, capture_output=True)

    def __enter__(self) -> Pane:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def run_in_pane(
    argv: Sequence[str], width: int, height: int, *, term: str = "xterm-256color"
) -> tuple[int, str]:
    """Run `argv` to its end in a fresh pane: (exit status, what the pane showed)."""
    with Pane(argv, width, height, term=term) as pane:
        return pane.finished()
