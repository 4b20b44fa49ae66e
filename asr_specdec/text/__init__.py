"""The causal-LM adapter: `SpeculativeLM` (lm.py) over `CausalLMTarget` (target.py), with its drafters."""

_EXPORTS = {"SpeculativeLM": "lm", "GenerationResult": "lm"}


def __getattr__(name):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(name)


__all__ = list(_EXPORTS)
