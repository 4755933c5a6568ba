#!/usr/bin/env python3
"""A chat in the terminal, each reply streamed as it is generated.

    python3 examples/python/chat_stream.py MODEL.gguf      (or hf:org/repo[:QUANT])
Ctrl-C stops a reply; Ctrl-D ends the chat."""
import sys

import minfer


def load(name):
    return minfer.Model(hf=name[3:]) if name.startswith("hf:") else minfer.Model(name)


def main():
    model = load(sys.argv[1] if len(sys.argv) > 1 else "models/stories260K.gguf")
    messages = [{"role": "system", "content": "You are a helpful assistant."}]
    while True:
        try:
            messages.append({"role": "user", "content": input("> ")})
        except EOFError:
            return
        reply = ""
        try:
            for chunk in model.chat(messages, max_tokens=512, stream=True):
                delta = chunk["choices"][0]["delta"]
                text = delta.get("content", "")
                reply += text
                print(delta.get("reasoning_content", "") + text, end="", flush=True)
        except KeyboardInterrupt:
            print(" [stopped]", end="")
        print()
        messages.append({"role": "assistant", "content": reply})


if __name__ == "__main__":
    main()
