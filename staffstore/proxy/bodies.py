"""Request bodies the proxy's own endpoints (app.py) validate.

Apart from app.py so that openapi.py can describe them without importing the app that serves it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ..models import Moment


class PromoteBody(BaseModel):
    """POST /v1/staffstore/claims with a receipt id: the paid answer to promote, tidied up."""

    model_config = ConfigDict(extra="forbid")

    receipt_id: str
    owner: str | None = None
    question: str | None = None
    answer: str | None = None
    agent: str | None = None
    repository: str | None = None
    revision: str | None = None
    profile: str | None = None
    expires_at: Moment | None = None
