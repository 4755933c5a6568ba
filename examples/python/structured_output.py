#!/usr/bin/env python3
"""Structured output: a reply that must follow a JSON Schema, parsed straight into Python.

    python3 examples/python/structured_output.py MODEL.gguf"""
import json
import sys

import minfer

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "languages": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
    },
    "required": ["name", "age", "languages"],
    "additionalProperties": False,
}


def main():
    model = minfer.Model(sys.argv[1] if len(sys.argv) > 1 else "models/stories260K.gguf")
    reply = model.chat(
        [{"role": "user", "content": "Invent a programmer and describe them as JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}},
        max_tokens=256,
    )
    person = json.loads(reply["choices"][0]["message"]["content"])
    print(json.dumps(person, indent=2))


if __name__ == "__main__":
    main()
