"""Working state, agent state and scoped state: an agent's rules, its code's memory, a
workflow's keys.

Working state (working.py) is one authoritative table of an agent's current rules, changed only
by explicit calls with a reason, each change kept in a supersession chain, and rendered into the
tail of every prompt (section.py). Agent state (agent.py) is the working memory an agent's code
keeps under a declared schema (schema.py): versioned, capped, kept by retention, erased with a
proof, and never shown to a model. Scoped state (scoped.py) is what repeated work keeps between
runs, in four namespaces (step, workflow, project, global) that never fall back; secrets.py
scrubs secrets from what workflow memory stores, and scoped state refuses them. Names pass
checks.py; JSON from outside passes strict_json.py (the proxy's bodies and the CLI's too). May
import store (its methods only, no SQL here), models, errors and identity; never the gate,
working_set, mouth, proxy, cli or replays.
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
from .scoped import DEFAULT_PROJECT, ScopedState, ScopedValue, ScopedWrite, ScopeRef
from .secrets import Scrubber
from .section import render_section
from .working import WorkingState, working_state_section

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_PROJECT",
    "AgentState",
    "AgentStateInfo",
    "AgentStateRead",
    "AgentStateSchema",
    "AgentStateWrite",
    "ErasureProof",
    "FieldSpec",
    "Handoff",
    "Scope",
    "ScopeRef",
    "ScopedState",
    "ScopedValue",
    "ScopedWrite",
    "Scrubber",
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
