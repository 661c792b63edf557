"""The GRPO and SFT training jobs (DeepSpeed + vLLM/transformers rollouts); see training/grpo.py."""
