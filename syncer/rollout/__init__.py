"""Clusters into canary waves and the gate decisions between them. [pure]

Owns: stable wave assignment by percentage and label, and proceed/wait/halt/rollback decisions as
values. Must not: do I/O or apply anything.
"""
