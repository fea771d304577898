"""Working state and agent state: what an agent is committed to now, and what its code keeps.

Working state (working.py) is one authoritative table of an agent's current rules, changed only
by explicit calls with a reason, each change kept in a supersession chain, and rendered into the
tail of every prompt (section.py). Agent state (agent.py) is the working memory an agent's code
keeps under a declared schema (schema.py): versioned, capped, kept by retention, erased with a
proof, and never shown to a model. Names pass checks.py; JSON from outside passes strict_json.py
(the proxy's bodies and the CLI's too). May import store (its methods only, no SQL here), models,
errors and identity; never the gate, working_set, mouth, proxy, cli or replays.
"""

from .agent import AgentState
from .config import DEFAULT_AGENT, StateConfig, scope_key_from_env
from .models import (
    AgentStateInfo,
    AgentStateRead,
    AgentStateWrite,
    ErasureProof,
    Handoff,
    Scope,
    StateEntry,
    StateEvent,
    StateWrite,
    SweepReport,
    WorkingStateView,
)
from .schema import AgentStateSchema, FieldSpec, load_schema
from .section import render_section
from .working import WorkingState, working_state_section

__all__ = [
    "DEFAULT_AGENT",
    "AgentState",
    "AgentStateInfo",
    "AgentStateRead",
    "AgentStateSchema",
    "AgentStateWrite",
    "ErasureProof",
    "FieldSpec",
    "Handoff",
    "Scope",
    "StateConfig",
    "StateEntry",
    "StateEvent",
    "StateWrite",
    "SweepReport",
    "WorkingState",
    "WorkingStateView",
    "load_schema",
    "render_section",
    "scope_key_from_env",
    "working_state_section",
]
