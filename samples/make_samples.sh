#!/usr/bin/env bash
# Regenerates the sample clips in this folder from text with espeak-ng and sox; README.md lists the texts.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# speak TEXT OUT [sox output options...]: American English, leading/trailing silence trimmed to 0.1 s
speak() {
  local text=$1 out=$2
  shift 2
  espeak-ng -v en-us -s 150 -w "$work/raw.wav" "$text"
  sox -D "$work/raw.wav" "$@" "$out" \
    silence 1 0.02 0.5% reverse silence 1 0.02 0.5% reverse pad 0.1 0.1 norm -3
}

speak "Please call me back when you get this message." message.wav -r 16000 -c 1 -b 16
speak "Thank you for calling. Please leave a message after the tone." greeting.flac -r 16000 -c 1 -b 16
# stereo whose channels differ: the right one at half the left's volume, so a mixdown is visible
speak "Good morning." "$work/mono_44k.wav" -r 44100 -c 1 -b 16
sox -D "$work/mono_44k.wav" -b 16 stereo_44k.wav remix 1v1.0 1v0.5
