"""The fleet's API objects, read and written with the official `kubernetes` client: each
node's `NodeGCReport` (`reports`) and the apply slots held as Leases (`leases`)."""
