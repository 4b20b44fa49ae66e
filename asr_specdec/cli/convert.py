"""`python -m asr_specdec.convert CT2_DIR OUT_DIR`: a faster-whisper (CTranslate2) Whisper checkpoint in, a
transformers directory out."""

from __future__ import annotations

import argparse
import sys

from ..errors import ModelError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="asr-specdec-convert",
        description="Convert a CTranslate2 Whisper checkpoint (model.bin, config.json, tokenizer.json, as used by "
                    "faster-whisper) into a float32 transformers directory that from_pretrained loads.")
    parser.add_argument("ct2_dir", help="the CTranslate2 checkpoint directory")
    parser.add_argument("out_dir", help="where to write the transformers model (must not exist, or be empty)")
    args = parser.parse_args(argv)

    from ..weights.ct2 import convert_ct2_whisper  # imported late so --help does not load torch

    try:
        out_dir = convert_ct2_whisper(args.ct2_dir, args.out_dir)
    except ModelError as error:
        print(f"asr-specdec-convert: error: {error}", file=sys.stderr)
        return 2
    print(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
