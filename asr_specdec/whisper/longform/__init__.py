"""Audio over 30 s: Whisper's sequential windows (sequential), independent quiet-point chunks (chunks), speech
windows found by VAD (vad), and hallucinated segments in silence skipped (hallucination)."""
