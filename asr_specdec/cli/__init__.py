"""The command lines: the four commands (transcribe, serve, generate, convert; `python -m asr_specdec.NAME` runs
each through a two-line module at the package root), the options they share (transcriber_arguments.py: the model
and transcriber; recipe_arguments.py: openai's recipe flags) and their common running and error reporting
(commands.py). Each command maps its flags to the options objects here and nowhere else."""
