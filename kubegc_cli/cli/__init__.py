"""The click command tree: options → one core call → render. No policy here."""
