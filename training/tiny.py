"""A tiny random causal LM and a locally trained BPE tokenizer, saved as a Hugging Face directory.

Used by the CPU tests, ``make run`` and ``training/gpu_check.sh``: nothing is downloaded, ever. The
model is a Llama-architecture decoder (the family both transformers and vLLM load without custom
code) with random weights; the tokenizer is a byte-level BPE trained with ``tokenizers`` on a small
corpus of HTML/CSS/JS fragments and chat markup, so generated text looks like the web apps the real
policy writes. The SFT job adds the texts it will learn (``corpus``): a tokenizer fitted to the
domain's HTML, as a real one is, so a teacher app is about 640 tokens instead of about 1,150 and the demo
policy can finish it within the demo's generation length. The chat template opens the assistant turn; :func:`training.rollout.build_prompt`
then appends the empty ``<think></think>`` block (paper F.3).

Run: ``python -m training.tiny OUT_DIR`` (prints the directory and parameter count).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"

# ChatML, the serialisation the paper's policy family uses; the generation prompt ends the template.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_FRAGMENTS = [
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Counter</title>\n",
    "<style>\nbody { font-family: sans-serif; margin: 0; padding: 16px; }\n.btn { color: #fff; background: #07c; }\n</style>\n",
    "</head>\n<body>\n<div id=\"app\"><button id=\"inc\" class=\"btn\">+1</button><span id=\"count\">0</span></div>\n",
    "<script>\nlet count = 0;\nconst el = document.getElementById('count');\n",
    "function render() { el.textContent = String(count); }\n",
    "document.getElementById('inc').addEventListener('click', () => { count += 1; render(); });\n",
    "const state = { items: [], filter: 'all' };\nfunction addItem(text) { state.items.push({ text, done: false }); }\n",
    "canvas.getContext('2d').fillRect(0, 0, width, height);\nrequestAnimationFrame(loop);\n",
    "</script>\n</body>\n</html>\n",
    "Build a todo list app with filters, a counter and local storage. ",
    "You write one self-contained HTML file with CSS and JavaScript that implements the request. ",
    "The timer starts when the user clicks start and the score updates after every move. ",
]


def training_corpus(repeat: int = 40) -> list[str]:
    """Deterministic corpus for the BPE merges: web-app fragments and chat markup."""
    chat = "<|im_start|>user\nMake a calculator.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    return [chat + "".join(_FRAGMENTS[i % len(_FRAGMENTS):] + _FRAGMENTS[: i % len(_FRAGMENTS)]) for i in range(repeat)]


def build_tokenizer(vocab_size: int = 512, corpus: list[str] | None = None):
    """Train a byte-level BPE tokenizer locally and wrap it as a ``PreTrainedTokenizerFast``; ``corpus``
    (texts of the domain) is learned beside the built-in fragments."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if vocab_size < 300:
        raise ValueError(f"vocab_size={vocab_size} is too small for byte-level BPE; use at least 300")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([*training_corpus(), *(corpus or [])], trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS_TOKEN, pad_token=PAD_TOKEN,
                                   bos_token=None, unk_token=None, chat_template=CHAT_TEMPLATE,
                                   additional_special_tokens=SPECIAL_TOKENS[1:])


def build_tiny_model(out_dir: str | Path, *, vocab_size: int = 512, hidden_size: int = 128, num_layers: int = 2,
                     num_heads: int | None = None, intermediate_size: int | None = None, max_positions: int = 4096,
                     seed: int = 0, corpus: list[str] | None = None) -> Path:
    """Write a random Llama-style causal LM and its tokenizer to ``out_dir``; return the path.

    ``num_heads`` defaults to hidden_size / 64 so ``head_dim`` is 64, a size every vLLM CPU attention
    kernel supports. Same arguments and seed give identical weights; ``corpus`` goes to :func:`build_tokenizer`.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    num_heads = num_heads or max(hidden_size // 64, 1)
    intermediate_size = intermediate_size or 2 * hidden_size
    if hidden_size % num_heads:
        raise ValueError(f"hidden_size={hidden_size} must be divisible by num_heads={num_heads}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(vocab_size, corpus)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_heads,
        max_position_embeddings=max_positions, tie_word_embeddings=False,
        eos_token_id=tokenizer.convert_tokens_to_ids(EOS_TOKEN), pad_token_id=tokenizer.convert_tokens_to_ids(PAD_TOKEN),
        bos_token_id=None, torch_dtype="float32",
    )
    # A fixed seed so the "random" model is reproducible across processes and resumed runs.
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id
    model.generation_config.bos_token_id = None
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    (out / "rubricrl_tiny.json").write_text(json.dumps({"seed": seed, "params": sum(p.numel() for p in model.parameters())}))
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m training.tiny OUT_DIR", file=sys.stderr)
        return 2
    path = build_tiny_model(args[0])
    print(f"tiny model written to {path} ({json.loads((path / 'rubricrl_tiny.json').read_text())['params']} parameters)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
