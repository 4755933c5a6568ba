"""grammar=, response_format (json_object, json_schema), tools and tool_choice, and reasoning:
constrained replies and the engine's errors for bad grammars and schemas."""
import json

import pytest

import minfer
from conftest import chat_text

USER = [{"role": "user", "content": "Answer me"}]

SCHEMA = {"type": "object",
          "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "enum": [1, 2, 3]}},
          "required": ["ok", "n"], "additionalProperties": False}

WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}},
                   "required": ["city"], "additionalProperties": False}}}]


def test_a_grammar_constrains_the_reply(qwen3):
    for seed in range(3):
        reply = qwen3.chat(USER, grammar='root ::= "yes" | "no"', max_tokens=16, seed=seed,
                           temperature=1.0)
        assert chat_text(reply) in ("yes", "no")
        assert reply["choices"][0]["finish_reason"] == "stop"


def test_a_grammar_that_does_not_parse_raises_the_engines_message(qwen3):
    with pytest.raises(minfer.InvalidArgumentError, match=r"^\[grammar\] gbnf:1:\d+: "):
        qwen3.chat(USER, grammar="root ::= [abc")


def test_json_schema_reply_follows_the_schema(qwen3):
    reply = qwen3.chat(USER, max_tokens=200, temperature=0.7, seed=3, response_format={
        "type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}})
    assert reply["choices"][0]["finish_reason"] == "stop"
    value = json.loads(chat_text(reply))
    assert set(value) == {"ok", "n"} and isinstance(value["ok"], bool) and value["n"] in (1, 2, 3)


def test_json_object_reply_is_one_object(stories):
    reply = stories.complete("Once", max_tokens=300, temperature=0.7, seed=5,
                             response_format={"type": "json_object"})
    if reply["choices"][0]["finish_reason"] == "stop":
        assert isinstance(json.loads(reply["choices"][0]["text"]), dict)
    else:  # a long object cut by max_tokens: still the start of one
        assert reply["choices"][0]["text"].lstrip().startswith("{")


def test_a_bad_schema_raises_the_engines_message(qwen3):
    with pytest.raises(minfer.InvalidArgumentError, match=r"^\[json_schema\]") as e:
        qwen3.chat(USER, response_format={"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": "object", "properties": {"a": {"type": "frobnicate"}}}}})
    assert "frobnicate" in str(e.value)
    with pytest.raises(minfer.InvalidArgumentError, match="response_format type"):
        qwen3.chat(USER, response_format={"type": "yaml"})
    with pytest.raises(minfer.InvalidArgumentError, match="together"):
        qwen3.chat(USER, grammar='root ::= "a"', response_format={"type": "json_object"})


def test_a_required_tool_call_comes_back_as_tool_calls(qwen3):
    # One call (this random model would call again until max_tokens, and a reply cut by the
    # budget ends with finish_reason "length", its complete calls kept).
    reply = qwen3.chat([{"role": "user", "content": "Weather in Paris?"}], tools=WEATHER,
                       tool_choice="required", parallel_tool_calls=False, max_tokens=120,
                       temperature=0)
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    calls = choice["message"]["tool_calls"]
    assert len(calls) == 1
    call = calls[0]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"])["city"] in ("Paris", "Oslo")
    # The streamed pieces put together are the same call.
    chunks = list(qwen3.chat([{"role": "user", "content": "Weather in Paris?"}], tools=WEATHER,
                             tool_choice="required", parallel_tool_calls=False, max_tokens=120,
                             temperature=0, stream=True))
    pieces = [d for c in chunks for d in c["choices"][0]["delta"].get("tool_calls", [])]
    # (Each request draws its own call ids.)
    assert pieces[0]["function"]["name"] == "get_weather" and pieces[0]["id"].startswith("call_")
    assert "".join(p["function"]["arguments"] for p in pieces if p["index"] == 0) == \
        call["function"]["arguments"]


def test_tool_choice_naming_a_missing_tool_list_is_refused(qwen3):
    with pytest.raises(minfer.InvalidArgumentError, match="tool_choice"):
        qwen3.chat(USER, tool_choice="required")


def test_a_reasoning_budget_closes_the_thinking(qwen3):
    # The grammar makes the reply think in words; after 5 reasoning tokens the engine closes the
    # block itself ("\n</think>\n\n") and the rest is content; unbudgeted, it thinks to the end.
    grammar = r'root ::= "<think>" [a-z ]* [\n]* "</think>" [\n]* [a-z ]*'
    free = qwen3.chat(USER, max_tokens=30, temperature=0, grammar=grammar)
    assert len(qwen3.tokenize(free["choices"][0]["message"]["reasoning_content"],
                              add_special=False)) > 20
    reply = qwen3.chat(USER, max_tokens=30, temperature=0, reasoning_budget=5, grammar=grammar)
    message = reply["choices"][0]["message"]
    assert message["reasoning_content"].strip() != ""
    assert len(qwen3.tokenize(message["reasoning_content"], add_special=False)) <= 6
    assert "think>" not in message["content"]
    assert reply["usage"]["completion_tokens"] == 30
