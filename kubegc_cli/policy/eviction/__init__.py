"""The kubelet's node-pressure eviction policy as pure functions.

- `kubegc_cli.policy.eviction.thresholds`: eviction signals, the threshold grammar of the kubelet's
  flags and config file, its Linux defaults, where each setting came from (kubegc's flags, the
  running kubelet's command line, its config file), and the evaluation of thresholds against
  observed signal values.
- `kubegc_cli.policy.eviction.ranking`: pod requests as the kubelet computes them and its ranking of
  pods for eviction under memory, PID and disk pressure.
- `kubegc_cli.policy.eviction.memory`: the eviction manager's memory from one cycle to the next
  (grace periods, minimum-reclaim holds, the pressure transition period).

Nothing here reads a clock, a socket or a file: the signals are observed by `node.signals`, the
running kubelet's command line is read by `node.host.processes`.
"""

from __future__ import annotations
