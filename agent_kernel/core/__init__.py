"""The floor everything stands on: events, settings, the workspace and its files, the
ledger, redaction and the approval key. Pure Python; imports nothing above it."""
