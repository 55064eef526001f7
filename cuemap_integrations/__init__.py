"""cuemap-integrations: deterministic-first long-term memory with continuous recall.

Importing this package loads the standard library only; the LangChain, LlamaIndex, FAISS and
PostgreSQL integrations are imported by the modules that need them.
"""

from .capture import CaptureResult, CaptureRule
from .config import RecallConfig
from .core import CueMap, StoreStats
from .errors import (
    ConfigError,
    CueMapError,
    DuplicateIdError,
    NotFoundError,
    SecretError,
    StoreError,
    ValidationError,
)
from .records import MemoryRecord, MemoryType
from .redact import RedactionPolicy
from .results import ConflictNote, Hit, RecallResult, RecallTrace, ScoreBreakdown
from .session import RecallSession
from .text import derive_cues, normalize

__version__ = "0.1.0"

__all__ = [
    "CaptureResult",
    "CaptureRule",
    "ConfigError",
    "ConflictNote",
    "CueMap",
    "CueMapError",
    "DuplicateIdError",
    "Hit",
    "MemoryRecord",
    "MemoryType",
    "NotFoundError",
    "RecallConfig",
    "RecallResult",
    "RecallSession",
    "RecallTrace",
    "RedactionPolicy",
    "ScoreBreakdown",
    "SecretError",
    "StoreError",
    "StoreStats",
    "ValidationError",
    "__version__",
    "derive_cues",
    "normalize",
]
