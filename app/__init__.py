"""The asr-specdec web app: upload or record speech, get the transcript and see why it was fast."""
