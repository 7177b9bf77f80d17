"""The Kubernetes API calls of the fleet form: apply slots held as `coordination.k8s.io/v1`
Leases (`leases`), and the node's `NodeGCReport` (`reports`). The shapes are `core.fleet`'s;
the `kubernetes` client is imported inside the functions that call it."""
