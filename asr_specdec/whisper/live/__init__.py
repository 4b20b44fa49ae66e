"""Live transcription: the streaming transcriber (streaming) and the jobs of its updates (intake, decoding, commit
over agreement, cuts with speech, words, updates), and a recording replayed as if it were live (replay)."""
