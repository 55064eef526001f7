"""The one message every module of this package raises when the ``[langchain]`` extra is missing."""

from __future__ import annotations

__all__ = ["missing_extra"]

INSTALL_HINT = "pip install 'cuemap-integrations[langchain]'"


def missing_extra(error: ImportError) -> ImportError:
    """An ImportError naming the missing module and the extra that provides it.

    Example:
        >>> str(missing_extra(ModuleNotFoundError("No module named 'langgraph'", name="langgraph")))
        "langchain_cuemap needs langgraph, which is not installed: pip install 'cuemap-integrations[langchain]'"
    """
    name = error.name or "LangChain"
    return ImportError(f"langchain_cuemap needs {name}, which is not installed: {INSTALL_HINT}")
