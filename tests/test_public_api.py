"""The public API is what evaltally/__init__.py re-exports; this pins it."""

import evaltally

EXPECTED = {
    "Completion",
    "ConfigError",
    "CredentialError",
    "DataError",
    "EvaltallyError",
    "LedgerError",
    "LedgerIntegrityError",
    "PlanMismatchError",
    "PlannedCall",
    "ProviderError",
    "RunLockedError",
    "SandboxError",
    "Status",
    "SweepConfig",
    "Usage",
    "__version__",
    "load_config",
}


def test_public_api_is_pinned() -> None:
    assert set(evaltally.__all__) == EXPECTED
    for name in EXPECTED:
        assert hasattr(evaltally, name)


def test_every_error_derives_from_the_root() -> None:
    for name in EXPECTED:
        obj = getattr(evaltally, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, evaltally.EvaltallyError)
