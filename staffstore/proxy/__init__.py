"""The OpenAI-compatible HTTP front (`staffstore serve`), on starlette and uvicorn.

Owns the app (app.py), the wire format (wire.py), streaming (stream.py), the batched writer
(writer.py), serve configuration (config.py), metrics, the threaded server (server.py) and
running it (run.py). May import everything below it (store, gate, working_set, mouth, upstream,
models, errors, config); never cli or replays. This file imports nothing, so that reading
proxy/config.py or proxy/run.py does not need starlette, which only the `serve` extra installs.
"""
