"""Model-agnostic speculative decoding: the engine loop (engine.py), the pure verifier (verify.py), draft length,
telemetry, logit rules and sampling, the certified argmax, row-blocked projection, the drafter interface
(drafter.py, model_drafter.py) and the drafters that need no model (prompt_lookup.py). Nothing here imports the
Whisper or text adapters or weight loading."""
