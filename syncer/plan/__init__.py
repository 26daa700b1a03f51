"""Three-way diff per cluster: desired vs last applied vs live, prune set and apply order. [pure]

Owns: classifying every object as create, update, prune, unchanged, conflict or drift. Must not: do
I/O; live state and dry-run results are passed in by the engine.
"""
