"""Where models come from: offline packs (packs.py for Whisper, text_models.py for text LMs), CTranslate2
checkpoints (ct2.py), transformers directories and model-hub ids (hub.py), and the on-disk cache (cache.py)."""
