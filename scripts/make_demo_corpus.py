#!/usr/bin/env python3
"""Write the demo corpus: a synthetic English -> French-like pair with real reordering.

Noun phrases move their adjectives after the noun in reverse order, as "European Economic Area"
becomes "zone économique européenne", and determiners and adjectives agree with the noun's gender,
which the decoder only learns by looking ahead in the source. The output is deterministic for a
given --seed, and no valid or test sentence occurs in the training split.
"""

import argparse
import random
from pathlib import Path

# English noun -> (French noun, gender)
NOUNS = {
    "dog": ("chien", "m"),
    "cat": ("chat", "m"),
    "house": ("maison", "f"),
    "car": ("voiture", "f"),
    "area": ("zone", "f"),
    "market": ("marché", "m"),
    "bank": ("banque", "f"),
    "city": ("ville", "f"),
    "garden": ("jardin", "m"),
    "book": ("livre", "m"),
    "table": ("table", "f"),
    "child": ("enfant", "m"),
    "woman": ("femme", "f"),
    "man": ("homme", "m"),
    "door": ("porte", "f"),
    "tree": ("arbre", "m"),
    "river": ("rivière", "f"),
    "road": ("route", "f"),
    "boat": ("bateau", "m"),
    "bird": ("oiseau", "m"),
}
# English adjective -> (masculine, feminine)
ADJECTIVES = {
    "big": ("grand", "grande"),
    "small": ("petit", "petite"),
    "red": ("rouge", "rouge"),
    "green": ("vert", "verte"),
    "black": ("noir", "noire"),
    "white": ("blanc", "blanche"),
    "old": ("ancien", "ancienne"),
    "new": ("neuf", "neuve"),
    "european": ("européen", "européenne"),
    "economic": ("économique", "économique"),
    "free": ("libre", "libre"),
    "quiet": ("calme", "calme"),
    "happy": ("heureux", "heureuse"),
    "blue": ("bleu", "bleue"),
    "public": ("public", "publique"),
}
DETERMINERS = {"the": ("le", "la"), "a": ("un", "une"), "this": ("ce", "cette")}
VERBS = {
    "sees": "voit",
    "likes": "aime",
    "follows": "suit",
    "finds": "trouve",
    "leaves": "quitte",
    "watches": "regarde",
    "takes": "prend",
    "opens": "ouvre",
}
PREPOSITIONS = {
    "with": "avec",
    "without": "sans",
    "behind": "derrière",
    "under": "sous",
    "on": "sur",
    "near": "vers",
}


def noun_phrase(rng: random.Random, max_adjectives: int):
    determiner = rng.choice(sorted(DETERMINERS))
    adjectives = rng.sample(sorted(ADJECTIVES), rng.randint(0, max_adjectives))
    noun = rng.choice(sorted(NOUNS))
    french_noun, gender = NOUNS[noun]
    form = 0 if gender == "m" else 1
    english = [determiner, *adjectives, noun]
    french = [DETERMINERS[determiner][form], french_noun]
    french += [ADJECTIVES[adjective][form] for adjective in reversed(adjectives)]
    return english, french


def sentence(rng: random.Random, max_adjectives: int):
    subject_en, subject_fr = noun_phrase(rng, max_adjectives)
    verb = rng.choice(sorted(VERBS))
    object_en, object_fr = noun_phrase(rng, max_adjectives)
    english = subject_en + [verb] + object_en
    french = subject_fr + [VERBS[verb]] + object_fr
    if rng.random() < 0.5:
        preposition = rng.choice(sorted(PREPOSITIONS))
        extra_en, extra_fr = noun_phrase(rng, max_adjectives)
        english += [preposition] + extra_en
        french += [PREPOSITIONS[preposition]] + extra_fr
    return " ".join(english), " ".join(french)


def generate(seed: int, sizes: dict, max_adjectives: int):
    """Distinct sentence pairs per split, held-out splits first so training never sees them."""
    rng = random.Random(seed)
    seen = set()
    splits = {}
    for split in sorted(sizes, key=lambda name: name == "train"):
        pairs = []
        while len(pairs) < sizes[split]:
            pair = sentence(rng, max_adjectives)
            if pair[0] not in seen:
                seen.add(pair[0])
                pairs.append(pair)
        splits[split] = pairs
    return splits


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, required=True, help="folder for {train,valid,test}.{en,fr}"
    )
    parser.add_argument("--train", type=int, default=20000, help="training pairs")
    parser.add_argument("--valid", type=int, default=500, help="validation pairs")
    parser.add_argument("--test", type=int, default=500, help="test pairs")
    parser.add_argument("--max-adjectives", type=int, default=3, help="adjectives per noun phrase")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sizes = {"train": args.train, "valid": args.valid, "test": args.test}
    args.out.mkdir(parents=True, exist_ok=True)
    for split, pairs in generate(args.seed, sizes, args.max_adjectives).items():
        for side, lang in enumerate(("en", "fr")):
            text = "".join(pair[side] + "\n" for pair in pairs)
            (args.out / f"{split}.{lang}").write_text(text, encoding="utf-8")
    print(f"wrote {sizes} sentence pairs to {args.out}")


if __name__ == "__main__":
    main()
