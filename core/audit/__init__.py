"""The audit ledger: metadata of what the gateway did, written off the turn's path."""
