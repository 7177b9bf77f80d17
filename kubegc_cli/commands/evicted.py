"""`kubegc evict prune`'s entry points under the names `cli` imports: the flow is in
`commands.evict`, the rules in `policy.evicted`."""

from __future__ import annotations

from kubegc_cli.commands.evict import prune_evicted as prune_evicted
from kubegc_cli.policy.evicted import PruneOptions as PruneOptions
