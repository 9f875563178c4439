"""Scheduler, endpoint lanes, retries and transport: everything between a plan and the wire."""
