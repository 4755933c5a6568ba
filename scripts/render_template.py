#!/usr/bin/python3
"""Reference chat-template renderer: renders a Jinja chat template the way Hugging Face
transformers' apply_chat_template does, so minfer's own interpreter can be compared with it
byte for byte.

Run it with Debian's /usr/bin/python3 (which has python3-jinja2):

  /usr/bin/python3 scripts/render_template.py TEMPLATE.jinja REQUEST.json [--bos B] [--eos E]
      prints the rendered prompt (no newline added); on a template error prints one line on
      stderr and exits 1.
  /usr/bin/python3 scripts/render_template.py --batch CASES.json
      CASES is a JSON array of {"template", "request", "bos_token", "eos_token"}; prints a JSON
      array of {"ok": true, "output": ...} or {"ok": false, "error": ...}, one per case.

REQUEST is an OpenAI-style body: messages, optional tools, add_generation_prompt (default
true), and template variables from chat_template_kwargs or from any other top-level key that is
not a request/sampling field (the same rule as minfer's ChatTemplate::render_request).
"""

import argparse
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

# Request fields that configure generation, not the template (kept in sync with
# src/chat/chat_template.cpp).
REQUEST_FIELDS = {
    "messages", "tools", "add_generation_prompt", "chat_template_kwargs", "model", "stream",
    "stream_options", "temperature", "top_p", "top_k", "min_p", "max_tokens",
    "max_completion_tokens", "n", "stop", "seed", "frequency_penalty", "presence_penalty",
    "repeat_penalty", "logit_bias", "logprobs", "top_logprobs", "user", "response_format",
    "tool_choice", "parallel_tool_calls",
}


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers overrides Jinja2's tojson (which HTML-escapes) with plain json.dumps.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


_compiled = {}


def compile_template(source):
    if source not in _compiled:
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                            extensions=[loopcontrols])
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = strftime_now
        _compiled[source] = env.from_string(source)
    return _compiled[source]


def render(source, request, bos_token, eos_token):
    template = compile_template(source)
    extra = {k: v for k, v in request.items() if k not in REQUEST_FIELDS}
    # The OpenAI field reasoning_effort: none and minimal reach the template as low (minfer's
    # chat::template_reasoning_effort); chat_template_kwargs pass as given.
    if extra.get("reasoning_effort") in ("none", "minimal"):
        extra["reasoning_effort"] = "low"
    extra.update(request.get("chat_template_kwargs") or {})
    variables = {
        "messages": request["messages"],
        "tools": request.get("tools"),
        "documents": None,
        "add_generation_prompt": request.get("add_generation_prompt", True),
        "bos_token": bos_token,
        "eos_token": eos_token,
    }
    variables.update(extra)
    return template.render(**variables)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("template", nargs="?")
    parser.add_argument("request", nargs="?")
    parser.add_argument("--bos", default="")
    parser.add_argument("--eos", default="")
    parser.add_argument("--batch")
    args = parser.parse_args()

    if args.batch:
        with open(args.batch, encoding="utf-8") as f:
            cases = json.load(f)
        results = []
        for case in cases:
            try:
                out = render(case["template"], case["request"], case.get("bos_token", ""),
                             case.get("eos_token", ""))
                results.append({"ok": True, "output": out})
            except Exception as e:  # noqa: BLE001 - every failure is a result to compare
                results.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
        sys.stdout.write(json.dumps(results, ensure_ascii=True))
        return 0

    if not args.template or not args.request:
        parser.error("TEMPLATE and REQUEST are required without --batch")
    with open(args.template, encoding="utf-8", newline="") as f:
        source = f.read()
    with open(args.request, encoding="utf-8") as f:
        request = json.load(f)
    try:
        out = render(source, request, args.bos, args.eos)
    except Exception as e:  # noqa: BLE001
        print(f"{type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
        return 1
    sys.stdout.buffer.write(out.encode("utf-8", "surrogatepass"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
