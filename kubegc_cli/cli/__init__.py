"""The click command tree: options → one commands/ call → render. No policy here.

One module per command group — `gc`, `evict`, `memory`, `residue`, `df`, `snapshot`,
`history`, `apply`, `config`, `completion` — built on `options` (the global options and their
types), `configfile` (the config file), `command` (the click classes every command is made of)
and `common` (settings, the console, `finish`). `main` holds the root group and the entry point;
`entry` is the console script; nothing but the entry points (`python -m kubegc_cli`, the
console script) imports this package.
"""
