"""The model runtime: loading (lean_model, lean_processor), precision (compute), the encoder, the decoder's two
backends behind one protocol (decoder, decoder_backend, native_decoder, torch_decoder, kv_cache), Whisper's tokens
and timestamp rules, and the one window pipeline every path decodes through."""
