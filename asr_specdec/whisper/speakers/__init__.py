"""Who spoke when: speaker turns found in the audio (speaker embeddings over sliding windows of the speech the
transcript's words cover, clustered), then each word and segment of a transcription given its speaker. Behind
the transcription: the decoding path never sees it. Stereo audio whose channels carry different speakers is
labelled by channel."""
