"""containerd's own API (beside CRI, on the same socket): what kubegc needs of it."""
