"""Live transcription: the streaming transcriber (streaming), its commit policy (agreement), and a recording replayed
as if it were live (replay)."""
