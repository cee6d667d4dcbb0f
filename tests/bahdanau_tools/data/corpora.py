"""Small corpora in the published formats: a Multi30k-style folder and a WMT'14-style release."""

import gzip
import io
import tarfile
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from bahdanau_tools.data import wmt14

SUBJECTS = [
    ("The Commission", "La Commission"),
    ("The Parliament", "Le Parlement"),
    ("My colleague", "Mon collègue"),
    ("The Council", "Le Conseil"),
]
VERBS = [("supports", "soutient"), ("rejects", "rejette"), ("discusses", "examine")]
OBJECTS = [
    ("the new report", "le nouveau rapport"),
    ("this proposal", "cette proposition"),
    ("the budget for 2014", "le budget pour 2014"),
]
Pair = Tuple[bytes, bytes]


def sentence_pairs(count: int, offset: int = 0) -> List[Pair]:
    """Distinct-enough cased English-French pairs, in UTF-8."""
    pairs = []
    for index in range(offset, offset + count):
        (se, sf), (ve, vf), (oe, of) = (
            SUBJECTS[index % 4],
            VERBS[index // 4 % 3],
            OBJECTS[index // 12 % 3],
        )
        pairs.append((f"{se} {ve} {oe}.".encode(), f"{sf} {vf} {of}.".encode()))
    return pairs


# One pair for each cleaning step that drops pairs, as the real corpora have them.
EMPTY = (b"The Council agrees.", b"")
EXTREME_RATIO = (b"Yes.", b" ".join([b"oui"] * 30))
TOO_LONG = (b" ".join([b"word"] * 40) + b".", b" ".join([b"mot"] * 40) + b".")
LONG_WORD = (b"The key is " + b"Qm9u" * 40 + b".", b"La cl\xc3\xa9 est " + b"Qm9u" * 40 + b".")
# And a pair that is not UTF-8 (Latin-1): no reason to drop a pair, a reason to stop.
INVALID_UTF8 = (b"The caf\xe9 is open.", "Le café est ouvert.".encode())


def write_gzip_lines(path: Path, lines: Sequence[bytes]) -> None:
    with gzip.open(path, "wb") as out:
        out.writelines(line + b"\n" for line in lines)


def write_corpus(
    directory: Path, prefixes: Dict[str, List[Pair]], languages: Sequence[str]
) -> Path:
    """prefix -> pairs, as PREFIX.SRC and PREFIX.TGT (gzip'd for a prefix ending in -gz), the
    input of bahdanau-prepare-data corpus."""
    directory.mkdir(parents=True, exist_ok=True)
    for prefix, pairs in prefixes.items():
        for side, language in enumerate(languages):
            lines = [pair[side] for pair in pairs]
            if prefix.endswith("-gz"):
                write_gzip_lines(directory / f"{prefix}.{language}.gz", lines)
            else:
                text = b"".join(line + b"\n" for line in lines)
                (directory / f"{prefix}.{language}").write_bytes(text)
    return directory


def write_multi30k(directory: Path, splits: Dict[str, List[Pair]]) -> Path:
    """Write <stem>.en.gz and <stem>.fr.gz for each split stem."""
    directory.mkdir(parents=True, exist_ok=True)
    for stem, pairs in splits.items():
        for side, language in enumerate(("en", "fr")):
            write_gzip_lines(directory / f"{stem}.{language}.gz", [pair[side] for pair in pairs])
    return directory


def sgml(segments: Sequence[bytes], set_tag: str, language: str) -> bytes:
    """A WMT test set file: one `<seg id="N">` line per sentence inside <doc> elements."""
    head = (
        f'<{set_tag} setid="newstest2014" srclang="any" trglang="{language}">\n'
        '<doc sysid="ref" docid="1" genre="news" origlang="en">\n'
    )
    body = b"".join(
        b'<seg id="%d">%s</seg>\n' % (number, text) for number, text in enumerate(segments, start=1)
    )
    return head.encode() + b"<p>\n" + body + b"</p>\n</doc>\n" + f"</{set_tag}>\n".encode()


TEST_PAIRS = sentence_pairs(5, offset=20) + [
    (b"AT&T and R&D grew.", b"AT&T et R&D ont grandi."),
    (b"", b""),
]


def release_members() -> Dict[str, Dict[str, bytes]]:
    """archive name -> member name -> content, for every member the pipeline reads, and some it does
    not."""

    def plain(pairs: List[Pair], side: int) -> bytes:
        return b"".join(pair[side] + b"\n" for pair in pairs)

    bad_pairs = [LONG_WORD, EMPTY, EXTREME_RATIO, TOO_LONG]
    members: Dict[str, Dict[str, bytes]] = {}
    for index, corpus in enumerate(wmt14.TRAIN):
        pairs = sentence_pairs(30, offset=7 * index) + bad_pairs[index : index + 1]
        english, french = plain(pairs, 0), plain(pairs, 1)
        if corpus.english.endswith(".gz"):
            english, french = gzip.compress(english), gzip.compress(french)
        members[corpus.archive] = {corpus.english: english, corpus.french: french}
    newstest = {
        "newstest2012": sentence_pairs(4, offset=3),
        "newstest2013": sentence_pairs(3, offset=11),
    }
    members["dev.tgz"] = {
        f"dev/{name}.{language}": plain(pairs, side)
        for name, pairs in newstest.items()
        for side, language in enumerate(("en", "fr"))
    }
    members["dev.tgz"]["dev/newstest2013-src.en.sgm"] = sgml(
        [pair[0] for pair in newstest["newstest2013"]], "srcset", "en"
    )
    segments = {side: [pair[side] for pair in TEST_PAIRS] for side in (0, 1)}
    members["test-full.tgz"] = {
        "test-full/newstest2014-fren-src.en.sgm": sgml(segments[0], "srcset", "en"),
        "test-full/newstest2014-fren-ref.fr.sgm": sgml(segments[1], "refset", "fr"),
        "test-full/newstest2014-fren-src.fr.sgm": sgml(segments[1], "srcset", "fr"),
        "test-full/newstest2014-fren-ref.en.sgm": sgml(segments[0], "refset", "en"),
    }
    return members


def write_wmt14_release(directory: Path) -> Path:
    """The release archives under their published names and formats (.tgz, and a plain .tar of .gz
    files)."""
    directory.mkdir(parents=True, exist_ok=True)
    for archive, members in release_members().items():
        write_tar(directory / archive, members)
    return directory


def write_tar(path: Path, members: Dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz" if path.suffix == ".tgz" else "w") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
