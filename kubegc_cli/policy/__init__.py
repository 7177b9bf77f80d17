"""Pure planners: snapshot + policy + pod inventory + now → `Plan`. No clocks, sockets or files."""
