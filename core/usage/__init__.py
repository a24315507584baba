"""Usage accounting and budgets: what each model call cost, and the caps on it."""
