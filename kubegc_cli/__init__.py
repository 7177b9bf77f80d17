"""kubegc: the kubelet's garbage collection and eviction rules for one Kubernetes node."""

__version__ = "0.1.0"
