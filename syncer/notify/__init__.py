"""Notifications that reach people: pass events turned into notices, routed to webhooks, chat and
the forge's commit statuses.

Owns: which pass events are worth telling and of which class and severity (``classify``, pure),
folding duplicates (``folding``, pure), the bodies, signatures and commit statuses of each kind of
receiver (``payloads``, pure), and sending them from one thread and bounded queue per receiver with
retries and back-off (``delivery``), all wired as one pass-event listener (``notifier``). Must not:
decide anything about a rollout, talk to clusters or git, delay the pass that tells it, or put a
secret (a key, a token, a Slack URL) in a log line.
"""
