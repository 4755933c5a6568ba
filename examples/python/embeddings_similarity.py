#!/usr/bin/env python3
"""Which sentence is closest to a query: embeddings as a numpy array, cosine similarity as a
matrix product (the rows are L2-normalised).

    python3 examples/python/embeddings_similarity.py EMBEDDING_MODEL.gguf  (e.g. Qwen3-Embedding)"""
import sys

import minfer

DOCUMENTS = [
    "The cat sleeps on the warm windowsill.",
    "Interest rates rose by a quarter point.",
    "A kitten naps in the afternoon sun.",
    "The train to Oslo leaves at nine.",
]


def main():
    model = minfer.Model(sys.argv[1] if len(sys.argv) > 1 else "models/stories260K.gguf")
    query = sys.argv[2] if len(sys.argv) > 2 else "Where is the cat resting?"
    docs = model.embed(DOCUMENTS)    # float32 [4, dim]
    q = model.embed(query)[0]        # float32 [dim]
    scores = docs @ q                # cosine similarities
    for i in scores.argsort()[::-1]:
        print(f"{scores[i]:+.3f}  {DOCUMENTS[i]}")


if __name__ == "__main__":
    main()
