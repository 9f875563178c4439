"""DexBench: instances, coverage, prompts' parser, sandboxed verification, grading."""
