"""A strict QC checker that follows the Source SDK's QC tokenizer (``utils/common/scriplib.cpp``) and ``studiomdl``'s
top-level loop, so a QC we write is one ``studiomdl`` reads the way we meant it.

Facts of the tokenizer this follows (learnt from the SDK; no code taken):
- Bytes up to 32 separate tokens; ``char`` is signed there, so a byte of 128 or more is *also* a separator outside
  quotes: an unquoted UTF-8 or Latin-1 name would be cut in pieces. Such names must be quoted (an error here).
- ``;``, ``#`` and ``//`` at the start of a token comment to the end of the line; ``/* ... */`` comments may span lines.
- A quoted token runs to the next ``"``: there is no escape, so a name cannot hold a ``"``; the tokenizer would run
  past a newline, and off the end of a truncated file: both errors here.
- An unquoted token ends at a byte up to 32 or at ``;``. Inside one, ``$word$`` is a variable (``$definevariable``)
  or macro parameter: an unknown one stops ``studiomdl``, so an unquoted token may not hold a second ``$``.
- A token is at most 1023 bytes (``MAXTOKEN`` 1024).
- ``{`` and ``}`` are only braces when they stand alone as tokens (``studiomdl`` compares whole tokens).

``studiomdl`` reads a command's first arguments from the same line, and at the top level expects only ``$commands``:
a statement here is a ``$command`` and every token up to the next ``$command`` outside braces. Numbers are plain
decimal floats; ``nan``/``inf`` in any spelling (``1.#QNAN``, ``-nan(ind)``) are refused in any unquoted token.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

MAXTOKEN = 1024

# Commands studiomdl (Source 2013 and GoldSrc) knows; an unknown one is "bad command" there, an error here.
_COMMAND_LIST = """
    $modelname $internalname $cd $cdmaterials $cdtexture $pushd $popd $scale $root $controller $screenalign $model
    $collisionmodel $collisionjoints $collisiontext $appendsource $body $bodygroup $bodygroupnames $animblocksize
    $animation $autocenter $sequence $append $prepend $continue $declaresequence $declareanimation $cmdlist
    $animgroup $weightlist $defaultweightlist $ikchain $ikautoplaylock $eyeposition $illumposition $origin $upaxis
    $bbox $cbox $gamma $texturegroup $hgroup $hbox $hboxset $surfaceprop $jointsurfaceprop $contents
    $jointcontents $attachment $bonemerge $bonesaveframe $externaltextures $cliptotextures $skinnedlods
    $renamebone $stripboneprefix $renameboneprefix $collapsebones $collapsebonesaggressive $alwayscollapse
    $proceduralbones $skiptransition $calctransitions $staticprop $zbrush $realignbones $forcerealign $lod
    $shadowlod $poseparameter $heirarchy $hierarchy $insertbone $limitrotation $definebone $jigglebone
    $includemodel $opaque $mostlyopaque $keyvalues $obsolete $renamematerial $overridematerial $fakevta
    $noforcedfade $skipboneinbbox $forcephonemecrossfade $lockbonelengths $unlockdefinebones
    $constantdirectionallight $minlod $allowrootlods $ambientboost $centerbonesonverts $donotcastshadows
    $casttextureshadows $motionrollback $sectionframes $clampworldspace $maxeyedeflection $addsearchdir
    $phyname $subd $boneflexdriver $maxverts $preservetriangleorder $qcassert $lcaseallsequences
    $allowactivityname $collisionprecision $contentsflags $predefinedbodygroup $lodscale $sequencegroup
    $sequencegroupsize $texrendermode $mirrorbone $flatshade $rotate $flags $realignrootbone $noautodmxrules
    $include $definemacro $definevariable $bodygroupname $animblockname $bonemergealwayscollapse
    $modelnotesfile $alwaysbuildbones $boxlist $notes
"""
COMMANDS = frozenset(name.lower() for name in _COMMAND_LIST.split())

NUMBER = re.compile(rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
NOT_FINITE = re.compile(rb"(?i)^[-+]?(?:nan|inf|infinity|1\.#(?:qnan|snan|ind|inf)\d*|-?nan\(\w*\))$|#(?:qnan|ind|inf)")

# Arguments the same line must hold: (minimum count, which of them must be numbers).
ARITY: dict[str, tuple[int, tuple[int, ...]]] = {
    "$modelname": (1, ()),
    "$cd": (1, ()),
    "$cdtexture": (1, ()),
    "$cdmaterials": (1, ()),
    "$surfaceprop": (1, ()),
    "$scale": (1, (0,)),
    "$bbox": (6, (0, 1, 2, 3, 4, 5)),
    "$cbox": (6, (0, 1, 2, 3, 4, 5)),
    "$eyeposition": (3, (0, 1, 2)),
    "$illumposition": (3, (0, 1, 2)),
    "$origin": (3, (0, 1, 2)),
    "$attachment": (5, (2, 3, 4)),
    "$hbox": (8, (0, 2, 3, 4, 5, 6, 7)),
    "$hboxset": (1, ()),
    "$definebone": (14, tuple(range(2, 14))),
    "$poseparameter": (3, (1, 2)),
    "$body": (2, ()),
    "$bodygroup": (1, ()),
    "$texturegroup": (1, ()),
    "$model": (2, ()),
    "$sequence": (1, ()),
    "$animation": (2, ()),
    "$includemodel": (1, ()),
    "$collisionmodel": (1, ()),
    "$collisionjoints": (1, ()),
    "$lod": (1, (0,)),
    "$bonemerge": (1, ()),
    "$jigglebone": (1, ()),
    "$ikchain": (2, ()),
    "$weightlist": (1, ()),
    "$contents": (1, ()),
    "$texrendermode": (2, ()),
    "$sequencegroup": (1, ()),
    "$controller": (5, (3, 4)),
    "$externaltextures": (0, ()),
    "$staticprop": (0, ()),
}

# Commands whose arguments name source files, and which of them (a path without extension means .smd).
FILE_ARGUMENTS = {"$body": 1, "$model": 1, "$collisionmodel": 0, "$collisionjoints": 0, "$include": 0}
FILE_KEYWORDS = {b"studio", b"replacemodel", b"flexfile"}  # the token after them names a file


class QcError(ValueError):
    """The QC breaks the tokenizer's or studiomdl's rules; the message names the file and line."""


@dataclass
class Token:
    text: bytes
    line: int
    quoted: bool

    @property
    def value(self) -> str:
        """The token as the compiled model would store it: UTF-8 when it is, Latin-1 otherwise (both are kept)."""
        try:
            return self.text.decode("utf-8")
        except UnicodeDecodeError:
            return self.text.decode("latin-1")


@dataclass
class Statement:
    command: str  # lower case
    line: int
    args: list[Token] = field(default_factory=list)

    def values(self) -> list[str]:
        return [t.value for t in self.args]


def tokenize(data: bytes, name: str = "QC") -> list[Token]:
    """Split ``data`` the way ``studiomdl`` does, refusing everything it would read differently than it looks."""
    tokens: list[Token] = []
    i, line, end = 0, 1, len(data)

    def fail(message: str) -> QcError:
        return QcError(f"{name}:{line}: {message}")

    while i < end:
        c = data[i]
        if c == 10:
            line += 1
            i += 1
            continue
        if c <= 32:
            i += 1
            continue
        if c >= 128:
            raise fail(f"byte 0x{c:02x} outside quotes (studiomdl reads it as a space): quote the name")
        if c in b";#" or data.startswith(b"//", i):
            stop = data.find(b"\n", i)
            i = end if stop < 0 else stop
            continue
        if data.startswith(b"/*", i):
            stop = data.find(b"*/", i + 2)
            if stop < 0:
                raise fail("/* comment never closed (a truncated file?)")
            line += data.count(b"\n", i, stop)
            i = stop + 2
            continue
        if c == 34:  # "
            stop = data.find(b'"', i + 1)
            if stop < 0:
                raise fail("quote never closed (a truncated file?)")
            text = data[i + 1 : stop]
            if b"\n" in text or b"\r" in text:
                raise fail("a quoted token runs over the end of its line")
            tokens.append(Token(text, line, True))
            i = stop + 1
        else:
            j = i
            while j < end and data[j] > 32 and data[j] != 59 and data[j] < 128:  # ';'
                j += 1
            if j < end and data[j] >= 128:
                raise fail(f"byte 0x{data[j]:02x} inside an unquoted token (studiomdl cuts the token there)")
            text = data[i:j]
            if text.count(b"$") > 1:
                raise fail(f"unquoted token {text!r} holds a $...$ variable studiomdl would expand")
            if len(text) > 1 and (b"{" in text or b"}" in text):
                raise fail(f"brace inside the token {text!r}: braces must stand alone")
            if b'"' in text:
                raise fail(f"quote inside the unquoted token {text!r}")
            tokens.append(Token(text, line, False))
            i = j
        if len(tokens[-1].text) >= MAXTOKEN:
            raise fail(f"token of {len(tokens[-1].text)} bytes (studiomdl's limit is {MAXTOKEN - 1})")
        if not tokens[-1].quoted and NOT_FINITE.search(tokens[-1].text):
            raise fail(f"not a finite number: {tokens[-1].text!r}")
    return tokens


def parse(data: bytes, name: str = "QC", strict: bool = True) -> list[Statement]:
    """The statements of a QC: each a known ``$command`` with its arguments; raises :class:`QcError`. With
    ``strict`` off (for a harness that only wants the statements), unbalanced braces and arities are let be."""
    tokens = tokenize(data, name)
    if data and not data.endswith(b"\n"):
        raise QcError(f"{name}: the last line has no newline (a truncated file?)")
    statements: list[Statement] = []
    depth = 0
    for token in tokens:
        text = token.text
        if not token.quoted and text in (b"{", b"}"):
            if not statements:
                raise QcError(f"{name}:{token.line}: a brace before any $command")
            depth += 1 if text == b"{" else -1
            if depth < 0 and strict:
                raise QcError(f"{name}:{token.line}: '}}' without its '{{'")
            statements[-1].args.append(token)
            continue
        if depth == 0 and not token.quoted and text.startswith(b"$"):
            command = text.decode("ascii").lower()
            if command not in COMMANDS:
                raise QcError(f"{name}:{token.line}: unknown command {command} (studiomdl: bad command)")
            statements.append(Statement(command, token.line))
            continue
        if not statements:
            raise QcError(f"{name}:{token.line}: {text!r} before any $command")
        statements[-1].args.append(token)
    if depth and strict:
        raise QcError(f"{name}: {depth} brace(s) never closed (a truncated file?)")
    for statement in statements if strict else ():
        check_arity(statement, name)
        check_eyelids(statement, name)
    return statements


EYELID_OPTIONS = {b"lowerer": 2, b"neutral": 2, b"raiser": 2, b"split": 1, b"eyeball": 1}  # words after each


def eyelid_lines(statement: Statement) -> list[list[Token]]:
    """A ``$model`` block's ``eyelid`` lines, each its tokens after the word (studiomdl reads them from that line;
    the word elsewhere on a line, as a controller in a rule's expression, is not an option)."""
    if statement.command != "$model":
        return []
    args = statement.args
    return [
        [t for t in args[i + 1 :] if t.line == token.line]
        for i, token in enumerate(args)
        if not token.quoted and token.text.lower() == b"eyelid" and (i == 0 or args[i - 1].line != token.line)
    ]


def check_eyelids(statement: Statement, name: str) -> None:
    """``eyelid type vta [lowerer F T] [neutral F T] [raiser F T] [split S] [eyeball name]`` (``Option_Eyelid``):
    an unknown option stops studiomdl; frames are integers, targets and the split numbers."""
    for words in eyelid_lines(statement):
        where = f"{name}:{words[0].line if words else statement.line}"
        if len(words) < 2:
            raise QcError(f"{where}: eyelid needs its type and VTA")
        i = 2
        while i < len(words):
            option = words[i].text.lower()
            count = EYELID_OPTIONS.get(option) if not words[i].quoted else None
            if count is None or i + count >= len(words):
                raise QcError(f"{where}: eyelid option {words[i].text!r} unknown or short (studiomdl: unknown option)")
            values = words[i + 1 : i + 1 + count]
            numeric = values if option != b"eyeball" else []
            if option in (b"lowerer", b"neutral", b"raiser") and not re.fullmatch(rb"\d+", values[0].text):
                raise QcError(f"{where}: eyelid {option.decode()} frame {values[0].text!r} is not a frame number")
            for token in numeric:
                if token.quoted or not NUMBER.fullmatch(token.text):
                    raise QcError(f"{where}: eyelid {option.decode()} value {token.text!r} is not a number")
            i += 1 + count


def check_arity(statement: Statement, name: str) -> None:
    """A command's leading arguments lie on its own line (studiomdl reads them with GetToken(false))."""
    minimum, numbers = ARITY.get(statement.command, (0, ()))
    same_line = [t for t in statement.args if t.line == statement.line]
    if len(same_line) < minimum:
        raise QcError(
            f"{name}:{statement.line}: {statement.command} needs {minimum} arguments on its line, has {len(same_line)}"
        )
    for index in numbers:
        token = same_line[index]
        if token.quoted or not NUMBER.fullmatch(token.text):
            raise QcError(
                f"{name}:{statement.line}: {statement.command} argument {index + 1} is not a number: {token.text!r}"
            )


def named_files(statements: list[Statement]) -> list[str]:
    """The source files a QC names ($body/$model/studio/replacemodel/flexfile/$collision*/$include and the first
    file argument of $sequence/$animation when it names one), as written."""
    found: list[str] = []
    for statement in statements:
        args = statement.args
        position = FILE_ARGUMENTS.get(statement.command)
        if position is not None and len(args) > position:
            found.append(args[position].value)
        for before, after in itertools.pairwise(args):
            if not before.quoted and before.text.lower() in FILE_KEYWORDS:
                found.append(after.value)
        found += [words[1].value for words in eyelid_lines(statement) if len(words) > 1]  # eyelid type VTA
        if statement.command in ("$sequence", "$animation") and len(args) > 1:
            candidate = args[1].value
            if candidate.lower().endswith((".smd", ".vta", ".dmx")):
                found.append(candidate)
            for token in args[2:]:  # blends: further file names inside the option list
                if token.value.lower().endswith(".smd"):
                    found.append(token.value)
    return found


def resolve(qc: Path, name: str) -> Path:
    """Where studiomdl finds a named source: beside the QC, ``.smd`` added when the name has no extension."""
    path = qc.parent / name.replace("\\", "/")
    return path if path.suffix else path.with_suffix(".smd")


def check_file(qc: Path) -> list[Statement]:
    """Parse a QC and every ``.qci`` it includes, and check every source file it names exists; returns its
    statements (the included ones in place)."""
    statements = parse(qc.read_bytes(), str(qc))
    expanded: list[Statement] = []
    for statement in statements:
        if statement.command == "$include":
            expanded.extend(check_file(resolve(qc, statement.args[0].value)))
        else:
            expanded.append(statement)
    for name in named_files(statements):
        if name.lower().endswith(".qci"):
            continue
        path = resolve(qc, name)
        if not path.is_file():
            raise QcError(f"{qc}: names {name!r}, which is not there ({path.name})")
    return expanded
