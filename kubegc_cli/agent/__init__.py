"""`kubegc agent`, the DaemonSet form: one cycle per interval (observe the node once, run the
configured checks from that observation, write the node's `NodeGCReport`), apply slots held as
Leases, and the `/metrics`, `/healthz` and `/readyz` endpoints. Imports every layer but cli."""
