"""tokenize(), detokenize() and apply_template(): llama.cpp's ids, and the prompt `minfer
template` renders."""
import json

import pytest

import minfer
from conftest import data_path, run_minfer


def test_tokenize_gives_llamacpps_ids(stories):
    golden = json.loads(data_path("golden/stories260K.once.json").read_text())
    ids = stories.tokenize(golden["prompt"])
    assert ids == golden["prompt_tokens"]
    assert stories.tokenize(golden["prompt"], add_special=False) == ids[1:]
    assert stories.detokenize(ids).strip() == golden["prompt"]  # SentencePiece's leading space


def test_detokenize_inverts_tokenize(qwen3):
    text = "Hello, world! Ünïcödé → 数学 and emoji 🙂 with  two spaces\n\tand a tab."
    ids = qwen3.tokenize(text, add_special=False)
    assert qwen3.detokenize(ids) == text


def test_special_tokens_are_matched_only_when_asked(qwen3):
    plain = qwen3.tokenize("<|im_start|>", add_special=False)
    special = qwen3.tokenize("<|im_start|>", add_special=False, special=True)
    assert len(special) == 1 and len(plain) > 1
    assert qwen3.detokenize(plain) == "<|im_start|>"


def test_detokenize_refuses_an_id_outside_the_vocabulary(stories):
    with pytest.raises(minfer.InvalidArgumentError) as e:
        stories.detokenize([1, 512])
    assert isinstance(e.value, ValueError) and isinstance(e.value, minfer.Error)
    assert "512" in str(e.value)


def test_apply_template_renders_what_minfer_template_renders(qwen3, tmp_path):
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "What is 2+2?"}]
    tools = [{"type": "function", "function": {
        "name": "add", "description": "Adds two numbers",
        "parameters": {"type": "object", "properties": {"a": {"type": "number"},
                                                         "b": {"type": "number"}}}}}]
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"messages": messages, "tools": tools}))
    expected = run_minfer("template", "-m", data_path("models/qwen3-qwentok-tiny-q8_0.gguf"),
                          "-i", request).decode()
    assert qwen3.apply_template(messages, tools=tools) == expected
    prompt = qwen3.apply_template(messages[1:])
    assert prompt.endswith("<|im_start|>assistant\n")
    assert not qwen3.apply_template(messages[1:], add_generation_prompt=False).endswith(
        "<|im_start|>assistant\n")


def test_model_facts(qwen3):
    assert qwen3.architecture == "qwen3"
    assert qwen3.n_vocab == 151936
    assert qwen3.n_ctx == 2048
    assert qwen3.n_parallel == 4
    assert "<|im_start|>" in qwen3.chat_template
    assert "qwen3" in qwen3.describe()
