"""The text-LM drafters, one module each, all behind `core.drafter.Drafter`."""
