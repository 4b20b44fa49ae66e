"""The per-window transcription recipe of openai-whisper and faster-whisper: temperature fallback and the no-speech
judgement (fallback, scoring), and word timestamps (alignment, words, window_extras)."""
