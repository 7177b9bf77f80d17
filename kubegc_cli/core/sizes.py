"""What removing an object frees on disk, bytes: the one sizing every command counts with.

`kubegc df` (reclaimable), the plans of `gc containers|logs|all`, `reclaim` (expected) and
`residue scan` (a finding's bytes) size the same object with the same function here:

- a file or a directory: its allocated blocks (`st_blocks` × 512, as `du` and `df` count,
  `on_disk`), never its apparent size — a 56-byte log takes a 4 KiB block, and a sparse
  file takes less than its size;
- a dead container: its writable layer (CRI `ListContainerStats`: the runtime removes it with
  the container) and its log files' blocks (`container_bytes`);
- a deleted pod's log directory: what stays in it once its containers' logs go with their
  containers (`left_in_pod_log_dir`): the directories' own blocks and any other file.

Standard library only; no I/O.
"""

from __future__ import annotations

#: The unit of `st_blocks` (POSIX: 512-byte blocks, whatever the filesystem's block size).
BLOCK = 512


def on_disk(st_blocks: int) -> int:
    """Bytes an inode takes on disk, from its `st_blocks` (`os.stat_result.st_blocks`): what
    removing its last link frees. A negative count (never from the kernel) is 0."""
    return max(0, st_blocks) * BLOCK


def container_bytes(log_bytes: int | None, layer_bytes: int | None) -> int:
    """What removing a dead container is expected to free, bytes: its log files on disk
    (`on_disk`, rotated ones too) and its writable layer; an unknown figure (None) counts 0."""
    return (log_bytes or 0) + (layer_bytes or 0)


def left_in_pod_log_dir(dir_bytes: int, logs_going: int) -> int:
    """What a pod log directory frees once the logs of the containers removed before it are
    gone, bytes: `dir_bytes` (the whole tree on disk, `on_disk` per inode, each once) less
    `logs_going` (those logs' `on_disk` bytes, already counted with their containers), never
    below 0 (a log removed meanwhile)."""
    return max(0, dir_bytes - logs_going)
