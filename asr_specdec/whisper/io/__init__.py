"""Input and output: audio in (audio), transcripts out as text, SRT and WebVTT (formats) and JSON records (records)."""
