"""The package's TRL environment (rubricrl_webapp.trl) under a real ``GRPOTrainer(environment_factory=...)`` in its
own environment (``make envs``: .envs/trl, trl 1.16 with the CPU torch), two training steps against the reward
service on 127.0.0.1 (the real browser, the offline judge). No vLLM: without ``use_vllm`` TRL generates with
transformers' ``generate``, tool loop included, which runs on CPU.

The policy is a one-layer Qwen2 built here with set weights (no download), so its episodes are known: its first
``submit_app`` sends one of three apps, drawn evenly (the broken counter, the fixed one, or one longer than the
service takes, whose reward is missing); once a ``<tool_response>`` is in its context (what the environment
found) it sends the fixed app. Two dataset rows: one app allowed, and two (the repair). The rewards TRL
computed and the advantages it gave are read off the trainer after each step: each is the environment's, and
a missing one is NaN with advantage 0 while the rest of its group keeps the advantages of the scored alone."""
from __future__ import annotations

import json
import math
import statistics

import pytest

from rubricrl.export_tasks import task_lines
from tasks.llm import get_provider
from tests.fixtures.environments import BROKEN, FIXED, STACKS, in_stack, offline_service
from tests.fixtures.service import alone, fixture_tasks

pytestmark = pytest.mark.skipif(not (STACKS / "trl").exists(), reason="no .envs/trl: run `make envs`")
TASK = next(t for t in fixture_tasks() if t.query_id == "q-counter")

# the policy: a byte-level tokenizer with Qwen2.5's chat template (one TRL parses tool calls of), and a one-layer
# Qwen2 whose weights make it a lookup: "\n" -> <tool_call> -> an app's whole call (one token; three tie) ->
# </tool_call> -> <|im_end|>. Attention with no query is a mean over the context; its value is "this is
# <tool_response>", so a response anywhere before makes the MLP (gated on <tool_call>) pick the fixed app.
POLICY = r'''
import json, torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from trl.chat_template_utils import qwen2_5_chat_template

def policy(broken, fixed, huge):
    chars = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(chars)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|im_start|>", "<|im_end|>", "<|endoftext|>"])
    call = lambda app: "\n" + json.dumps({"name": "submit_app", "arguments": {"app": app}}) + "\n"
    words = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", *map(call, (broken, fixed, huge))]
    tok.add_tokens([AddedToken(w, normalized=False) for w in words])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        padding_side="left", chat_template=qwen2_5_chat_template)
    ids = {w: tokenizer.convert_tokens_to_ids(w) for w in ["<|im_end|>", *words]}
    nl, tc, etc, tr, cb, cf, ch = (tokenizer.convert_tokens_to_ids("\u010a"), ids["<tool_call>"], ids["</tool_call>"],
                                   ids["<tool_response>"], *(ids[call(a)] for a in (broken, fixed, huge)))
    cfg = Qwen2Config(vocab_size=len(tokenizer), hidden_size=10, intermediate_size=1, num_hidden_layers=1,
                      num_attention_heads=1, num_key_value_heads=1, max_position_embeddings=32768,
                      tie_word_embeddings=False, pad_token_id=tokenizer.pad_token_id,
                      eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    model = Qwen2ForCausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for norm in (model.model.norm, model.model.layers[0].input_layernorm,
                     model.model.layers[0].post_attention_layernorm):
            norm.weight.fill_(1.0)
        emb, layer, head = model.model.embed_tokens.weight, model.model.layers[0], model.lm_head.weight
        for dim, t in [*enumerate([nl, tc, cb, cf, etc, tr]), (8, ch)]:   # the tokens the policy acts on
            emb[t, dim] = 1.0
        layer.self_attn.v_proj.weight[0, 5] = 1.0              # value: "this is <tool_response>"
        layer.self_attn.o_proj.weight[6, 0] = 1.0              # dim 6: share of <tool_response> in the context
        layer.mlp.gate_proj.weight[0, 1] = 5.0                 # open only at <tool_call>
        layer.mlp.up_proj.weight[0, 6] = 1.0
        layer.mlp.down_proj.weight[7, 0] = 1.0                 # dim 7: a response was seen, at <tool_call>
        head[tc, 0] = 30.0
        head[cb, 1], head[ch, 1] = 30.0, 30.0
        head[cf, 1], head[cf, 7] = 30.0, 5000.0
        head[etc, 2], head[etc, 3], head[etc, 8] = 30.0, 30.0, 30.0
        head[tokenizer.eos_token_id, 4] = 30.0
    return model, tokenizer
'''

# two GRPO steps with the package's environment; per rollout: the trainer's reward and advantage, the apps the
# environment scored, the tool answers the policy read
TRAIN = POLICY + r'''
import math, os, sys, tempfile
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRL_EXPERIMENTAL_SILENCE="1")
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer
from rubricrl_webapp.trl import WebAppToolEnv, webapp_reward

url, rows, broken, fixed, huge = json.loads(sys.stdin.read())
model, tokenizer = policy(broken, fixed, huge)
seen = []

class Record(TrainerCallback):
    def on_step_end(self, args, state, control, **kw):
        logs = trainer._logs
        for i, env in enumerate(trainer.environments):
            calls = [c["function"]["arguments"]["app"] for m in logs["completion"][i] if m["role"] == "assistant"
                     for c in m.get("tool_calls") or []]
            seen.append({"step": state.global_step, "group": i // args.num_generations, "max_turns": env._max_turns,
                         "reward": logs["rewards"]["webapp_reward"][i],
                         "advantage": logs["advantages"][i], "env_rewards": env._rewards,
                         "apps": [{broken: "broken", fixed: "fixed", huge: "huge"}[a] for a in calls],
                         "tool": [m["content"] for m in logs["completion"][i] if m["role"] == "tool"]})

args = GRPOConfig(output_dir=tempfile.mkdtemp(), max_steps=2, per_device_train_batch_size=12, num_generations=6,
                  max_completion_length=8192, max_tool_calling_iterations=2, learning_rate=1e-5, logging_steps=1,
                  report_to="none", save_strategy="no", use_cpu=True, seed=0, dataloader_num_workers=0)
trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=args, reward_funcs=webapp_reward,
                      train_dataset=Dataset.from_list(rows), callbacks=[Record()],
                      environment_factory=lambda: WebAppToolEnv(service_url=url, timeout_s=120))
trainer.train()
print(json.dumps({"rollouts": seen, "steps": trainer.state.global_step}))
'''


MAX_CHARS = 20_000  # the service's service.max_response_chars here: HUGE is refused (413), its reward missing
HUGE = FIXED + "<!-- " + "x" * MAX_CHARS + " -->"


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    with offline_service(tmp_path_factory.mktemp("trl") / "data", f"service.max_response_chars={MAX_CHARS}") as running:
        yield running


@pytest.fixture(scope="module")
def run(svc):
    line = json.loads(task_lines([TASK])[0])
    rows = [{"prompt": line["prompt"], "task": json.dumps(line["task"]), "max_turns": k} for k in (1, 2)]
    return in_stack("trl", TRAIN, [svc.url, rows, BROKEN, FIXED, HUGE])


@pytest.fixture(scope="module")
def alone_rewards(svc):
    offline = get_provider("offline")
    return {name: alone(svc.engine.project, TASK, app, offline)["reward"] for name, app in
            (("broken", BROKEN), ("fixed", FIXED))}


def groups(run: dict) -> list[list[dict]]:
    keyed: dict[tuple[int, int], list[dict]] = {}
    for r in run["rollouts"]:
        keyed.setdefault((r["step"], r["group"]), []).append(r)
    return list(keyed.values())


def test_grpo_trainer_gets_the_environments_rewards(run, alone_rewards):
    broken, fixed = alone_rewards["broken"], alone_rewards["fixed"]
    assert run["steps"] == 2 and len(run["rollouts"]) == 24 and fixed > broken
    for r in run["rollouts"]:
        scored = r["apps"][:len(r["env_rewards"])]  # later calls are past the episode's end, not scored
        assert len(scored) == len(r["env_rewards"]) and len(scored) <= r["max_turns"]
        assert r["env_rewards"] == [pytest.approx(alone_rewards[a]) if a != "huge" else None for a in scored]
        if r["env_rewards"][-1] is not None:  # the episode's reward: its last app's, as the trainer got it
            assert r["reward"] == pytest.approx(r["env_rewards"][-1])
    single = {r["apps"][0] for r in run["rollouts"] if r["max_turns"] == 1 and r["env_rewards"] != [None]}
    assert single == {"broken", "fixed"}  # one group's apps differ, and so do their rewards
    repairs = [r for r in run["rollouts"] if r["max_turns"] == 2 and r["apps"][:2] == ["broken", "fixed"]]
    assert repairs  # the second app, written after reading what was found, is the episode's reward
    for r in repairs:
        assert r["tool"][0].startswith(f"Your app scored {broken:g}") and "TypeError" in r["tool"][0]
        assert r["env_rewards"] == [pytest.approx(broken), pytest.approx(fixed)] and r["reward"] == pytest.approx(fixed)


def test_a_missing_reward_is_nan_with_no_advantage_and_its_group_keeps_theirs(run):
    missing = [r for r in run["rollouts"] if r["env_rewards"][-1] is None]
    assert missing and all(math.isnan(r["reward"]) and r["advantage"] == 0.0 for r in missing)
    assert all(r["tool"][0].startswith("{'error'") and "answered 413" in r["tool"][0] for r in missing)
    mixed = [g for g in groups(run) if any(r in missing for r in g) and len({r["reward"] for r in g
                                                                              if r not in missing}) > 1]
    assert mixed  # a group holding a missing reward and scored ones that differ
    for g in mixed:  # GRPO's advantage over the scored alone: (r - mean) / (std + 1e-4), sample std
        scored = [r["reward"] for r in g if r not in missing]
        mean, std = statistics.mean(scored), statistics.stdev(scored)
        for r in g:
            if r not in missing:
                assert r["advantage"] == pytest.approx((r["reward"] - mean) / (std + 1e-4), rel=1e-4)
