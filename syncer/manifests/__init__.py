"""Strict manifest loading, schema validation against the CRD and per-cluster rendering. [pure]

Owns: turning a checked-out tree into a DesiredFleet or a ManifestError listing every problem with
file:line:column. Must not: do network I/O, call git or talk to clusters.
"""
