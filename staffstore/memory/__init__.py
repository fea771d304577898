"""Workflow memory: what repeated work learned in earlier runs, bounded and scrubbed.

Owns run records (opened and finished by runs.py), lessons (`remember` during a run, or by
hand), the rolling digest older runs fold into (digest.py, extractive unless a model is
explicitly asked), the memory settings of workflows and steps (config.py), the bounded section
a step's prompt carries (section.py), and entries by id (entries.py). WorkflowMemory
(workflow.py) is the door. Every text is scrubbed of secrets (state.secrets), then cut, before
it is stored. May import store (its methods only, no SQL here), state, models, errors and
identity; never the gate, working_set, mouth, proxy, cli or replays.
"""

from .config import DEFAULTS, EffectiveMemory, MemoryConfig, MemoryDefaults
from .entries import MemoryEntries
from .models import (
    Digest,
    DigestWrite,
    HumanDecision,
    Lesson,
    MemoryEntry,
    MemorySection,
    MemoryView,
    Remembered,
    RunFinish,
    RunRecord,
    RunStep,
)
from .runs import Run
from .section import four_chars_a_token, render_memory_section
from .workflow import StepMemory, WorkflowMemory

__all__ = [
    "DEFAULTS",
    "Digest",
    "DigestWrite",
    "EffectiveMemory",
    "HumanDecision",
    "Lesson",
    "MemoryConfig",
    "MemoryDefaults",
    "MemoryEntries",
    "MemoryEntry",
    "MemorySection",
    "MemoryView",
    "Remembered",
    "Run",
    "RunFinish",
    "RunRecord",
    "RunStep",
    "StepMemory",
    "WorkflowMemory",
    "four_chars_a_token",
    "render_memory_section",
]
