"""Runs one revision through the pipeline: source, verify, manifests, plan, rollout, apply, health, status.

Owns: the order of the stages and passing each one's result to the next. Must not: hold stage logic.
"""
