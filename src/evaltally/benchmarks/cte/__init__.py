"""CTE-Bench: scenarios, oracle, sandbox, grading and baselines."""
