"""Automatic mutants of a QEMU tree's ``hw/sd`` (``sdqtest mutants --auto N``).

The hand-written sets (:mod:`mutants`, :mod:`mutants_unnamed`) are few and
chosen by us.  This module draws mutation sites from the tree's own source,
at run time, with the classic operators a human slip resembles: a
relational operator flipped (``<``/``<=``, ``>``/``>=``, ``==``/``!=``),
``&&``/``||`` swapped, an integer constant moved by one or a bit mask losing
one bit, a ``!`` removed, a ``break``/``return`` or a single statement (an
assignment, a call) deleted, ``+=``/``-=`` swapped, ``|=`` made ``=``.

Only function bodies are mutated, and not the code a guest cannot reach
through the device: statements calling ``trace_*``, ``qemu_log*``,
``error_report``/``warn_report``/``error_setg*``, ``g_assert*``/``assert``,
``fprintf``/``printf``/``g_print*``/``g_warning`` (host output only),
``DEFINE_PROP*``/``VMSTATE*``; the vmstate and migration functions
(``*vmstate*``, ``*_pre_save``, ``*_post_load``, ``*_needed`` ...),
``*_class_init`` and ``*_register_types``; comments, strings and
preprocessor lines never.  Static tables (anything after ``=`` at file
scope) are data, not code, and are not mutated either.

Each drawn site becomes a :class:`mutants.Mutant` of the usual form: an
anchor of a few tokens, widened with context until it occurs exactly once
in the file (a site whose anchor never becomes unique is dropped), and its
replacement.  Nothing of the tree is stored: the mutants exist only while
the command runs.  The draw is a function of the seed and the files' text
only: the same seed and the same tree give the same mutants.  A mutant in a
file x86 compiles is judged by the default x86 check (:data:`CHECK_ARGS`);
one in a file only ARM SoCs compile (``--files hw/sd/pl181.c``) by the
default check's boards on the tree's ``qemu-system-aarch64``
(:func:`board_check_args`; the tree is then built with the ARM target).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.bisect.mutants import ARM_FILES, Mutant, MutantError, MutantOutcome

#: ``sdqtest check`` arguments of every automatic mutant in a file x86
#: compiles: the default x86 check a packager runs, boards aside.
CHECK_ARGS = ("--no-boards", "-j", "2")


def board_check_args() -> tuple[str, ...]:
    """``sdqtest check`` arguments of an automatic mutant in a file only ARM
    SoCs compile (:data:`mutants.ARM_FILES`): the default check's boards, on
    the tree's ``qemu-system-aarch64``."""
    from harness.check.boards import DEFAULT_BOARDS

    return ("--board", ",".join(DEFAULT_BOARDS), "-j", "2")


def check_args_for(path: str) -> tuple[str, ...]:
    """The check that judges a mutant of ``path`` (see :data:`CHECK_ARGS`)."""
    return board_check_args() if path in ARM_FILES else CHECK_ARGS
DEFAULT_FILES = ("hw/sd/sd.c", "hw/sd/sdhci.c")

#: Operator kinds, in the order the report counts them.
OPERATORS = ("relop", "logic", "const", "mask-bit", "not-removed", "break-return-deleted",
             "statement-deleted", "compound-swap", "or-assign")

_TOKEN = re.compile(r"""
 (?P<comment>/\*.*?\*/|//[^\n]*)
|(?P<pp>^[ \t]*\#(?:\\\n|[^\n])*)
|(?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
|(?P<num>(?:0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*(?![.\w]))
|(?P<id>[A-Za-z_]\w*)
|(?P<op><<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|[^\s\w])
|(?P<ws>[ \t\r\f\v]+|\n)
""", re.S | re.M | re.X)

_SKIP_IDENT = re.compile(r"^(trace_|qemu_log|error_report|warn_report|error_setg|error_prepend|"
                         r"g_assert|assert$|DEFINE_PROP|VMSTATE|fprintf$|printf$|g_print|g_warning$)")
_SKIP_FUNC = re.compile(r"(vmstate|_pre_save$|_post_save$|_pre_load$|_post_load$|_needed$|"
                        r"_class_init$|_register_types$|_migrat)")
_CONTROL = {"if", "else", "for", "while", "do", "switch", "goto", "case", "default", "sizeof"}
_TYPE_WORDS = {"int", "unsigned", "signed", "char", "short", "long", "bool", "const", "static",
               "struct", "union", "enum", "void", "float", "double", "volatile", "register"}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}
_FLIP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
         "&&": "||", "||": "&&", "+=": "-=", "-=": "+=", "|=": "="}


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Site:
    """One place an operator can change: ``text[start:end]`` becomes ``new``."""

    path: str
    operator: str
    start: int
    end: int
    new: str
    first: int                          #: index of the site's first token
    last: int                           #: index of its last token


@dataclass(frozen=True)
class AutoMutant(Mutant):
    """A drawn mutant: where it is and what it does, for the report."""

    line: int = 0
    operator: str = ""
    old_line: str = ""
    new_line: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.rsplit('/', 1)[-1]}:{self.line}"

    @property
    def diff(self) -> str:
        return f"-{self.old_line} / +{self.new_line}"


def tokens(text: str) -> list[Token]:
    """The C tokens of ``text`` that code is made of (no comments, blanks or
    preprocessor lines; a string literal is one token)."""
    out: list[Token] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "op"
        if kind in ("comment", "pp", "ws"):
            continue
        out.append(Token(kind, m.group(), m.start(), m.end()))
    return out


def _match(toks: Sequence[Token], i: int) -> int:
    """Index of the brace closing the one at ``i`` (the last token if none)."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text == "{":
            depth += 1
        elif toks[j].text == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def _name(header: Sequence[str]) -> str:
    """The function's name: the identifier before its parameter list (the
    parenthesis group that ends the header)."""
    depth = 0
    for k in range(len(header) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(header[k], 0)
        if depth == 0:
            return header[k - 1] if k > 0 else ""
    return ""


def function_bodies(toks: Sequence[Token]) -> Iterator[tuple[str, int, int]]:
    """``(name, first, last)`` token indices of each function body at file
    scope (between its braces); initialisers, structs and enums are not."""
    i, head = 0, 0
    while i < len(toks):
        t = toks[i].text
        if t == "{":
            end = _match(toks, i)
            header = toks[head:i]
            texts = [h.text for h in header]
            if texts and texts[-1] == ")" and "=" not in texts:
                yield _name(texts), i + 1, end
            i = head = end + 1
            if i < len(toks) and toks[i].text == ";":
                i = head = i + 1
            continue
        if t == ";":
            head = i + 1
        i += 1


def _segments(toks: Sequence[Token], first: int, last: int) -> Iterator[tuple[int, int, str]]:
    """``(a, b, end)``: token ranges between ``;``/``{``/``}`` outside
    parentheses in a body, with the delimiter that ends each."""
    depth, a = 0, first
    for j in range(first, last):
        t = toks[j].text
        if t in "([":
            depth += 1
        elif t in ")]":
            depth -= 1
        elif depth == 0 and t in (";", "{", "}"):
            if j > a:
                yield a, j, t
            a = j + 1
    if last > a:
        yield a, last, ""


def _label_end(toks: Sequence[Token], a: int, b: int) -> int:
    """First token after the ``case X:``/``default:``/``name:`` labels at ``a``."""
    while a < b:
        if toks[a].text in ("case", "default"):
            k = next((j for j in range(a, b) if toks[j].text == ":"), b)
            a = k + 1
        elif (toks[a].kind == "id" and a + 1 < b and toks[a + 1].text == ":"
              and toks[a].text not in _CONTROL):
            a += 2
        else:
            break
    return a


def _declaration(toks: Sequence[Token], a: int, b: int) -> bool:
    t = [x.text for x in toks[a:min(b, a + 4)]]
    if not t:
        return False
    if t[0] in _TYPE_WORDS:
        return True
    kinds = [x.kind for x in toks[a:min(b, a + 3)]]
    if kinds[:2] == ["id", "id"]:
        return True
    return len(t) >= 3 and kinds[0] == "id" and t[1] == "*" and kinds[2] == "id" and (
        len(t) == 3 or t[3] in ("=", ",", "[", ";"))


def _number(tok: Token, rng: random.Random) -> tuple[str, str] | None:
    """A constant moved by one, or a mask with one set bit dropped."""
    m = re.fullmatch(r"(0[xX])?([0-9a-fA-F]+)([uUlL]*)", tok.text)
    if m is None:
        return None
    prefix, digits, suffix = m.groups()
    if not prefix and len(digits) > 1 and digits.startswith("0"):
        return None                          # octal: leave it alone
    value = int(digits, 16 if prefix else 10)
    if prefix and bin(value).count("1") >= 2:
        bits = [b for b in range(value.bit_length()) if value >> b & 1]
        new, op = value & ~(1 << rng.choice(bits)), "mask-bit"
    else:
        new, op = (value + 1 if value == 0 or rng.random() < 0.5 else value - 1), "const"
    if prefix:
        hexd = f"{new:x}".rjust(len(digits), "0")
        return prefix + (hexd.upper() if digits.isupper() else hexd) + suffix, op
    return str(new) + suffix, op


def _rng(seed: int, path: str, tok: Token) -> random.Random:
    return random.Random(f"{seed}:{path}:{tok.start}:{tok.text}")


def _segment_sites(path: str, toks: Sequence[Token], a: int, b: int, end: str,
                   seed: int) -> Iterator[Site]:
    body = _label_end(toks, a, b)
    for j in range(body, b):
        t = toks[j]
        if t.text in ("<", "<=", ">", ">=", "==", "!="):
            yield Site(path, "relop", t.start, t.end, _FLIP[t.text], j, j)
        elif t.text in ("&&", "||"):
            yield Site(path, "logic", t.start, t.end, _FLIP[t.text], j, j)
        elif t.text in ("+=", "-="):
            yield Site(path, "compound-swap", t.start, t.end, _FLIP[t.text], j, j)
        elif t.text == "|=":
            yield Site(path, "or-assign", t.start, t.end, "=", j, j)
        elif t.text == "!":
            yield Site(path, "not-removed", t.start, t.end, "", j, j)
        elif t.kind == "num":
            got = _number(t, _rng(seed, path, t))
            if got is not None:
                yield Site(path, got[1], t.start, t.end, got[0], j, j)
    if end != ";" or body >= b:
        return
    head = toks[body].text
    stop = toks[b]                                    # the ';'
    if head in ("break", "return"):
        yield Site(path, "break-return-deleted", toks[body].start, stop.end,
                   ";" if body > a else "", body, b)
        return
    if head in _CONTROL or _declaration(toks, body, b):
        return
    texts = {x.text for x in toks[body:b]}
    if texts & _ASSIGN or "(" in texts:
        yield Site(path, "statement-deleted", toks[body].start, stop.end,
                   ";" if body > a else "", body, b)


def sites(path: str, text: str, seed: int = 1) -> list[Site]:
    """Every mutation site of ``text`` (see the module doc for what is left out)."""
    toks = tokens(text)
    out: list[Site] = []
    for name, first, last in function_bodies(toks):
        if _SKIP_FUNC.search(name):
            continue
        for a, b, end in _segments(toks, first, last):
            if any(x.kind == "id" and _SKIP_IDENT.match(x.text) for x in toks[a:b]):
                continue
            out.extend(_segment_sites(path, toks, a, b, end, seed))
    return out


def _unique(text: str, s: str) -> bool:
    i = text.find(s)
    return i >= 0 and text.find(s, i + 1) < 0


def anchor(text: str, toks: Sequence[Token], site: Site, widest: int = 24) -> str | None:
    """The shortest span of whole tokens around ``site``, at least one token
    either side, that occurs exactly once in ``text`` (None: never unique)."""
    for k in range(1, widest + 1):
        a = toks[max(0, site.first - k)].start
        b = toks[min(len(toks) - 1, site.last + k)].end
        if _unique(text, text[a:b]):
            return text[a:b]
    return None


def _lines(text: str, start: int, end: int) -> str:
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    return " ".join(x.strip() for x in text[a:b if b >= 0 else len(text)].splitlines())


def mutant(text: str, toks: Sequence[Token], site: Site, index: int,
           seed: int) -> AutoMutant | None:
    """The :class:`AutoMutant` of ``site`` (None when its anchor is never unique)."""
    anc = anchor(text, toks, site)
    if anc is None:
        return None
    off = text.find(anc)
    rel_a, rel_b = site.start - off, site.end - off
    replacement = anc[:rel_a] + site.new + anc[rel_b:]
    changed = text[:site.start] + site.new + text[site.end:]
    line = text.count("\n", 0, site.start) + 1
    new_line = _lines(changed, site.start, site.start + len(site.new)) or "(line deleted)"
    base = site.path.rsplit("/", 1)[-1].replace(".", "-")
    return AutoMutant(
        name=f"auto{seed}-{index:03d}-{base}-{line}-{site.operator}",
        stands_for=f"automatic, seed {seed}: {site.operator}",
        path=site.path, anchor=anc, replacement=replacement, check_args=check_args_for(site.path),
        expect="", line=line, operator=site.operator,
        old_line=_lines(text, site.start, site.end)[:120], new_line=new_line[:120])


def draw(texts: dict[str, str], n: int, seed: int = 1) -> tuple[AutoMutant, ...]:
    """``n`` mutants drawn uniformly from every site of ``texts`` (path ->
    file text), deterministically from ``seed`` and the texts."""
    pool: list[tuple[str, Site]] = []
    toks = {p: tokens(t) for p, t in sorted(texts.items())}
    for p in sorted(texts):
        pool += [(p, s) for s in sites(p, texts[p], seed)]
    random.Random(f"automut:{seed}").shuffle(pool)
    out: list[AutoMutant] = []
    for p, s in pool:
        if len(out) == n:
            break
        m = mutant(texts[p], toks[p], s, len(out) + 1, seed)
        if m is not None:
            out.append(m)
    return tuple(out)


def read_files(src: Path, files: Sequence[str]) -> dict[str, str]:
    """The files' text (a clear error for one the tree does not have)."""
    texts: dict[str, str] = {}
    for p in files:
        f = src / p
        if not f.is_file():
            raise MutantError(f"{src} has no {p} (--files names paths inside the tree)")
        texts[p] = f.read_text(errors="replace")
    return texts


def rows(drawn: Sequence[AutoMutant], outcomes: Sequence[MutantOutcome]) -> list[list[str]]:
    """One table row per mutant: id, file:line, operator, change, verdict,
    catching groups, first finding, seconds."""
    by_name = {o.mutant: o for o in outcomes}
    out: list[list[str]] = []
    for m in drawn:
        o = by_name.get(m.name)
        status = "not run" if o is None else (
            "not compiled" if o.status == "build failed" else o.status)
        out.append([m.name.split("-", 2)[1], m.where, m.operator, m.diff[:90], status,
                    "" if o is None else o.groups[:60],
                    o.detail[:90] if o is not None and o.status == "caught" else "",
                    "" if o is None else f"{o.seconds:.0f}"])
    return out


def summary(table: Sequence[Sequence[str]]) -> list[str]:
    """Counts by verdict, and by operator for the compiled mutants."""
    verdicts = Counter(r[4].split(" (")[0] for r in table)
    lines = ["by verdict: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items()))]
    ops: dict[str, Counter[str]] = {}
    for r in table:
        if r[4] not in ("not compiled", "not run", "not applicable"):
            ops.setdefault(r[2], Counter())[r[4].split(" (")[0]] += 1
    for op in OPERATORS:
        if op in ops:
            lines.append(f"  {op:22} " + ", ".join(f"{k} {v}" for k, v in sorted(ops[op].items())))
    return lines
