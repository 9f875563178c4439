"""The mock provider's batch endpoints: OpenAI (/files + /batches), Anthropic Message Batches and
Gemini batch mode, over one in-memory batch store with timed state transitions and faults.
See docs/mock-server.md, "Batch endpoints". `routes.add_batch_routes` mounts them."""
