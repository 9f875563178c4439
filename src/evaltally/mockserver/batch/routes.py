"""Mounting the batch endpoints on the mock's application."""

from __future__ import annotations

from aiohttp import web

from evaltally.mockserver.batch import anthropic, gemini, openai
from evaltally.mockserver.batch.store import BatchStore
from evaltally.mockserver.state import MockState

BATCH_STORE = web.AppKey("batch_store", BatchStore)


def add_batch_routes(app: web.Application, state: MockState) -> BatchStore:
    store = BatchStore(state)
    app[BATCH_STORE] = store
    for shape in (openai, anthropic, gemini):
        for method, path, handler in shape.routes(store):
            app.router.add_route(method, path, handler)
    return store
