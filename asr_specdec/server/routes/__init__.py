"""One router per resource: audio (transcriptions, translations), models, health."""
