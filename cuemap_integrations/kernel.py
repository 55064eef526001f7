"""The compiled scoring kernel of the array path (``_kernel.c``), loaded with :mod:`ctypes`.

:func:`accumulate` sums a pass's evidence lists per memory in one C call, reading the index's
posting buffers directly: the work of the NumPy mirrors, unions and narrowing in
:mod:`.arrays`, which stays the reference and the fallback. :func:`evidence` then gives the
chosen memories their exact evidence (the Python pass's sums, :mod:`.topk`) in one more call.
:func:`top` orders the best few candidates by score for the walks that pick the k-th best;
:func:`bounds` and :func:`keep` give a narrowing check its candidates' lower bounds and the
candidates it keeps.
The library is built at install (``hatch_build.py``); without it (no compiler then)
:func:`available` is False and recall uses the NumPy path. ``CUEMAP_KERNEL=0`` in the
environment turns the kernel off as well (the tests compare the two paths that way).

Safety: C gets only addresses of live buffers, with their lengths and type codes checked here,
and bounds-checks every sequence number and slot itself (a failed check raises
:class:`KernelError`, never reads out of bounds). The scratch arrays belong to each
:class:`Scratch` (one per namespace view), not to C globals; the library is loaded with
:class:`ctypes.PyDLL`, which keeps the GIL for the call, so two threads never run the kernel on
one scratch at once and no Python code changes a buffer while C reads it.
"""

from __future__ import annotations

import ctypes
import math
import os
import struct
import threading
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .errors import CueMapError
from .postings import Postings
from .text import _C as _textc
from .topk import _Gain, _List, _TermGain

if TYPE_CHECKING:
    from .arrays import ArrayView

__all__ = [
    "ABI_VERSION", "Bounds", "Floor", "KernelError", "KernelSums", "Kept", "Ranking", "RawEvidence",
    "Refine", "Scratch", "Top", "accumulate", "available", "bounds", "describe", "enabled",
    "evidence", "keep", "load", "priors", "rank", "top", "union_size",
]  # fmt: skip

ABI_VERSION = 15  # the argument layout _kernel.c implements (its ABI_VERSION)
# Every memory the lists reach is summed this many sequence numbers at a time (all lists for
# one block, then the next; the same floats): a block's 32-byte cells, lengths and seq -> slot
# entries (400 KB) stay in a core's L2 cache here (2 MB) while each list adds to them. CPU ms
# of the kernel calls per recall, median (mean), on one store, the sizes in turn query by
# query (benchmarks/kernel_blocks.py, 200 queries): 1M memories, whole lists 13.70 (20.29),
# blocks of 32,768 12.51 (16.40), 8,192 12.24 (15.95), 2,048 12.50 (16.08); 300k, whole
# lists 3.48 (4.91), blocks of 32,768 2.91 (3.74), 4,096 2.72 (3.68).
BLOCK_SEQS = 8_192
_SIGNALS = {"cue": 0, "tag": 1, "content": 2, "session": 3}
_WIDTHS = {"i": 4, "q": 8}  # array typecodes of sequence numbers -> bytes
_VALUE_TYPES = {"B": 1, "f": 2, "d": 3}  # array typecodes of values -> the kernel's codes
_ERRORS = {
    -1: "a sequence number outside the view's seq -> slot map",
    -2: "a posting or candidate of a memory without that slot in the view",
    -3: "an unknown type code in a descriptor",
    -4: "more reached memories than the output holds",
    -5: "no memory for its work",
}
_NAMES = ("_kernel.so", "_kernel.pyd")  # plus the interpreter's own suffix, see _candidates
# the results' NamedTuples are made by tuple.__new__: their own __new__ is a Python function
# (a frame each, ~0.3 us), and a recall makes some twenty of them here
_new = tuple.__new__


class KernelError(CueMapError):
    """The kernel refused its input (the view and the index are out of step)."""


def _candidates(folder: Path) -> list[Path]:
    """Library files the build may have left in ``folder``, the interpreter's suffix first."""
    import sysconfig

    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    return [folder / f"_kernel{suffix}", *(folder / name for name in _NAMES)]


def load(folder: Path | None = None) -> Any:
    """The kernel library from ``folder`` (default: this package's), or None if absent or
    unloadable; with its argument types declared."""
    folder = Path(__file__).resolve().parent if folder is None else folder
    for path in _candidates(folder):
        if path.is_file():
            try:
                lib = _declared(ctypes.PyDLL(str(path)))  # keeps the GIL: see the docstring
            except (OSError, AttributeError):  # not a library, or not this one
                continue
            if lib.cm_abi_version() == ABI_VERSION:  # else a stale build: its layout differs
                return lib
    return None


def _declared(lib: Any) -> Any:
    """``lib`` with the C functions' signatures (every argument an int64 or an address)."""
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.cm_abi_version.argtypes, lib.cm_abi_version.restype = [], i64
    lib.cm_accumulate.argtypes = [i64, ptr, ptr, ptr, ptr, i64, i64, i64, ptr, ptr, i64, ptr, ptr]
    lib.cm_accumulate.argtypes += [i64, *[ptr] * 4, ctypes.c_double, i64, i64, i64]
    lib.cm_accumulate.argtypes += [ctypes.c_double, ctypes.c_double, *[ptr] * 4, i64]
    lib.cm_accumulate.restype = i64
    lib.cm_reset.argtypes, lib.cm_reset.restype = [i64, ptr, ptr], None
    lib.cm_union_size.argtypes = [i64, ptr, ptr, i64, i64, ptr, ptr]
    lib.cm_union_size.restype = i64
    lib.cm_evidence.argtypes = [i64, ptr, ptr, ptr, i64, ptr, i64, ptr, ptr, ptr, ptr]
    lib.cm_evidence.restype = i64
    lib.cm_top.argtypes = [i64, ptr, ptr, ptr, i64, ptr, i64, i64, ptr, ptr]
    lib.cm_top.restype = i64
    lib.cm_rank.argtypes = [i64, *[ptr] * 3, i64, ptr, i64, *[ptr] * 3, i64, ptr, i64, ptr, ptr]
    lib.cm_rank.restype = i64
    lib.cm_bounds.argtypes = [*lib.cm_rank.argtypes[:-2], ptr, ptr, ptr, ptr]
    lib.cm_bounds.restype = i64
    lib.cm_keep.argtypes = [i64, *[ptr] * 4, i64, ptr, i64, *[ptr] * 4]
    lib.cm_keep.restype = i64
    lib.cm_priors.argtypes = [i64, ptr, i64, *[ptr] * 3, i64, ptr, ptr]
    lib.cm_priors.restype = i64
    for name in ("cm_accumulate_packed", *_PACKED_CALLS.values()):
        packed = getattr(lib, name)
        packed.argtypes, packed.restype = [ctypes.c_char_p], i64
    return lib


_lib: Any = None
_loaded = False
# the C functions called with their (int64 and address) arguments packed in one buffer: ctypes
# made an object for each argument, ~0.12 us, and these take 11-17 (see _call)
_PACKED_CALLS = {
    "cm_rank": "cm_rank_packed", "cm_bounds": "cm_bounds_packed", "cm_keep": "cm_keep_packed",
    "cm_evidence": "cm_evidence_packed",
}  # fmt: skip


def _call(name: str, *args: int) -> int:
    """The kernel's function ``name`` (a key of :data:`_PACKED_CALLS`) of ``args`` (int64 and
    addresses as integers), through its packed twin: one struct pack (~1 us) where ctypes
    converted each argument (~2 us for 15)."""
    return int(getattr(_library(), _PACKED_CALLS[name])(_packer("q", len(args)).pack(*args)))


def _library() -> Any:
    global _lib, _loaded
    if not _loaded:
        _lib, _loaded = load(), True
    return _lib


def available() -> bool:
    """True when the compiled kernel is present and loads."""
    return _library() is not None


def enabled() -> bool:
    """True when recall should use the kernel: available, and not ``CUEMAP_KERNEL=0``."""
    return os.environ.get("CUEMAP_KERNEL", "1") != "0" and available()


_HUGE_PAGE = 2 << 20  # bytes of a huge page on x86-64 and arm64 Linux
_HUGE_MIN = 1 << 20  # arrays smaller than this are made as they are


def huge_zeros(np: Any, count: int, dtype: Any) -> Any:
    """A zeroed NumPy array of ``count`` items starting at a huge-page boundary, inside a
    buffer of 4 MiB more: NumPy asks Linux for transparent huge pages for buffers of 4 MiB or
    more (``madvise``), and only the aligned 2 MiB pages inside one can be huge.

    The kernel reads per-slot arrays at random (a scratch cell, a length, a seq's slot per
    posting): at 100k memories each is 0.8-3.6 MB, so in 4 KiB pages every posting missed
    the TLB, most of a narrowing check's held call on a cold cache (median 130 -> 86 us per
    call, bench queries at 100k). The 4 MiB more are address space: the pages outside the
    array are never touched. Arrays under 1 MiB are plain ``np.zeros``."""
    size = count * np.dtype(dtype).itemsize
    if size < _HUGE_MIN:
        return np.zeros(count, dtype=dtype)
    raw = np.zeros(size + 2 * _HUGE_PAGE, dtype=np.uint8)
    start = -_data(raw) % _HUGE_PAGE
    return raw[start : start + size].view(dtype)


class Scratch:
    """One view's working memory for the kernel: zeroed per-slot sums it adds into (and leaves
    zeroed), 32 bytes a slot (``Cell`` in ``_kernel.c``) and a bit for whether a call reached
    it; and the output arrays, 25 bytes a row, grown to the most rows a call has needed.

    Its output arrays are reused by the next call: hold :attr:`lock` from the call until the
    results are no longer read (:func:`~cuemap_integrations.arrays.select` does).
    """

    def __init__(self, np: Any, size: int) -> None:
        self.np, self.size, self.lock = np, size, threading.RLock()
        if not _DTYPES:
            _dtypes(np)
        self.cells = huge_zeros(np, 4 * size, np.float64)  # four 8-byte fields per slot
        self.bits = huge_zeros(np, (size + 63) // 64, np.uint64)
        # addresses are asked once per array: NumPy's ``.ctypes.data`` costs microseconds, and
        # a recall makes about ten kernel calls
        self.addresses = (self.cells.ctypes.data, self.bits.ctypes.data)
        self.rows = 0
        self.outputs: tuple[Any, Any, Any, Any] = ((), (), (), ())
        self.output_addresses: tuple[int, ...] = ()
        self._view_arrays: dict[str, tuple[Any, int]] = {}  # a view array's name -> it, its address
        # (described lists, how many) whose sums a held call left in the cells (see accumulate)
        self.held: tuple[_Descriptors, int] | None = None

    def holds(self, described: _Descriptors, lists: int) -> bool:
        """Whether the cells hold the sums of the first ``lists`` of ``described`` that a call
        with ``hold`` left (no other call since)."""
        held = self.held
        return held is not None and held[0] is described and held[1] == lists

    def reset(self) -> None:
        """Zero what a held call left in the cells (nothing to do when none did)."""
        if self.held is not None:
            self.held = None
            _library().cm_reset(self.size, *self.addresses)

    def output(self, rows: int) -> tuple[Any, Any, Any, Any]:
        """Slot, evidence, jump and tag-only arrays of at least ``rows`` rows (made once; their
        addresses in :attr:`output_addresses`)."""
        if rows > self.rows:
            np, self.rows = self.np, max(rows, min(2 * self.rows, self.size))
            self.outputs = (
                np.empty(self.rows, dtype=np.int64), np.empty(self.rows), np.empty(self.rows),
                np.empty(self.rows, dtype=np.bool_),
            )  # fmt: skip
            self.output_addresses = tuple(held.ctypes.data for held in self.outputs)
        return self.outputs

    def view_addresses(self, view: ArrayView) -> tuple[int, int]:
        """The addresses of the view's seq -> slot map and per-slot lengths."""
        return self._view_address("slot_by_seq", view), self._view_address("length", view)

    def seq_address(self, view: ArrayView) -> int:
        """The address of the view's slot -> seq map."""
        return self._view_address("seq_at", view)

    def prior_addresses(self, view: ArrayView) -> tuple[int, int, int]:
        """The addresses of the view's slot -> seq map, per-slot update times and type codes
        (what a memory's prior reads)."""
        return (
            self._view_address("seq_at", view), self._view_address("updated", view),
            self._view_address("type_code", view),
        )  # fmt: skip

    def _view_address(self, name: str, view: ArrayView) -> int:
        """The address of the view's array ``name``, asked again only when the view has made
        it anew (it grows its arrays into new ones)."""
        current = getattr(view, name)
        held = self._view_arrays.get(name)
        if held is None or held[0] is not current:
            held = self._view_arrays[name] = (current, current.ctypes.data)
        return held[1]


class KernelSums(NamedTuple):
    """What :func:`accumulate` found (views of the scratch's output: see :class:`Scratch`)."""

    slots: Any  # the reached slots, ascending
    evidence: Any  # the query-dependent part of each one's score (arrays._evidence)
    jump: Any  # what matching the query later would add to each (arrays._jump)
    tag_only: Any  # whether each matched tags and nothing else


class _Descriptors:
    """The packed descriptors of some lists (see ``_kernel.c``) and the buffers they point at
    (kept alive here: a one-posting list's buffers are made on the spot)."""

    __slots__ = ("doubles", "ints", "keep", "lists", "members", "memo", "postings")

    def __init__(self, memo: dict[Any, Any] | None = None) -> None:
        self.ints, self.doubles, self.members = array("q"), array("d"), array("q")
        self.keep: list[Any] = []
        self.lists = self.postings = 0
        self.memo = memo

    def member(self, postings: Postings) -> None:
        """Describe one posting list's buffers."""
        ints, buffers, count = _member(postings)
        self.members.extend(ints)
        self.keep += buffers
        self.postings += count


def _member(postings: Postings) -> tuple[tuple[int, ...], list[Any], int]:
    """One posting list's descriptor (seqs address, width, count, values address, type), the
    buffers it points at (to keep alive while C reads them) and its count of postings."""
    seqs, values = postings.buffers()
    count = len(seqs)
    if values is None:
        return (seqs.buffer_info()[0], _WIDTHS[seqs.typecode], count, 0, 0), [seqs], count
    if len(values) != count:
        raise KernelError(f"a posting list holds {count} seqs but {len(values)} values")
    ints = (seqs.buffer_info()[0], _WIDTHS[seqs.typecode], count, values.buffer_info()[0],
            _VALUE_TYPES[values.typecode])  # fmt: skip
    return ints, [values, seqs], count


class _Members(NamedTuple):
    """The packed member descriptors of one list's posting lists, and the buffers they point at."""

    members: array[int]
    keep: list[Any]
    postings: int

    @classmethod
    def of(cls, postings: Sequence[Postings]) -> _Members:
        """:meth:`_Descriptors.member` of each of ``postings``, without the descriptors' other
        arrays made (a feedback pass describes ~15 concepts never described before)."""
        if len(postings) != 1:
            described = _Descriptors()
            for member in postings:
                described.member(member)
            return _new(cls, (described.members, described.keep, described.postings))
        ints, buffers, count = _member(postings[0])
        # five ints: the array's own constructor (0.50 us) beats packing them (1.04)
        return _new(cls, (array("q", ints), buffers, count))


def describe(
    lists: Sequence[_List], memo: dict[Any, Any] | None = None,
    given: Sequence[_Members] | None = None,
) -> _Descriptors | None:  # fmt: skip
    """The descriptors of ``lists``; None when one has a gain the kernel does not know.

    ``memo`` keeps each list's member descriptors by its index keys (the buffer addresses of
    its posting lists): it must be dropped whenever a posting changes, like
    ``NamespaceIndex.derived`` (a buffer may move then). Every pass of a recall describes the
    query's own lists again and the feedback pass carries some fifty concepts that come back
    recall after recall. ``given``: each list's member descriptors, when the caller has them
    already (:func:`members_of`; ``memo`` is then not read).

    With ``given``, packed by ``_textc.describe_lists`` when it is built (the same bytes as
    :func:`_py_describe`'s: a loop step per list in Python, ~1 us each, was 23 of a pass's
    ~25 us here, a bench pass at 100k describing ~24 lists)."""
    if given is not None and _textc is not None:
        packed = _textc.describe_lists(lists, given, _TermGain, _Gain, _SIGNALS)
        if packed is not None:  # else a gain of another type: the Python way decides
            ints, doubles, members, postings = packed
            described = _Descriptors.__new__(_Descriptors)
            described.ints, described.doubles = array("q", ints), array("d", doubles)
            described.members, described.keep = array("q", members), list(given)
            described.lists, described.postings, described.memo = len(lists), postings, memo
            return described
    return _py_describe(lists, memo, given)


def _py_describe(
    lists: Sequence[_List], memo: dict[Any, Any] | None = None,
    given: Sequence[_Members] | None = None,
) -> _Descriptors | None:  # fmt: skip
    """:func:`describe` in Python (the reference of ``_textc.describe_lists``)."""
    described = _Descriptors(memo)
    # one loop over the lists, the integers and doubles gathered in lists and packed once: a
    # method and three array calls per list were ~3 us of its ~25 per pass
    ints: list[int] = []
    doubles: list[float] = []
    extend, hold, postings = described.members.extend, described.keep.append, 0
    for i, (signal, _, members, gain, keys) in enumerate(lists):
        kind = _GAIN_KINDS.get(type(gain)) or _gain_kind(gain)
        if kind == 1:  # BM25
            ints += (_SIGNALS[signal], 1, len(members), -1)
            doubles += (gain.idf, 0.0, gain.k1, gain.b, gain.avg)  # type: ignore[union-attr]
        elif kind == 2:  # constant
            value, special, special_value = gain  # type: ignore[misc]
            ints += (_SIGNALS[signal], 0, len(members), -1 if special is None else special)
            doubles += (value, special_value, 0.0, 0.0, 0.0)
        else:
            return None
        held = members_of(members, keys, memo) if given is None else given[i]
        extend(held.members)
        postings += held.postings
        hold(held)  # its buffers
    described.ints, described.doubles = _packed("q", ints), _packed("d", doubles)
    described.lists, described.postings = len(lists), postings
    return described


_PACKERS: dict[tuple[str, int], struct.Struct] = {}  # (typecode, count) -> its packer


def _packed(typecode: str, values: Sequence[Any]) -> array[Any]:
    """``array(typecode, values)`` for ``"q"`` (ints) or ``"d"`` (floats), packed in one call
    by a :class:`struct.Struct` of that many (kept per count): the array's own constructor
    converts each item through a generic argument parser, ~2.3x the time for a pass's some
    sixty lists' numbers (describe's ~240 ints and ~300 floats: 4.5 -> 1.9 us for the floats).
    The same values either way (native byte order, 8-byte items)."""
    return array(typecode, _packer(typecode, len(values)).pack(*values))


def _packer(typecode: str, count: int) -> struct.Struct:
    """The :class:`struct.Struct` of ``count`` native items of ``typecode`` (kept per count,
    for :func:`_packed` and :func:`_call`)."""
    key = (typecode, count)
    packer = _PACKERS.get(key)
    if packer is None:
        if len(_PACKERS) >= 1024:  # many distinct counts: start over
            _PACKERS.clear()
        packer = _PACKERS[key] = struct.Struct(f"={count}{typecode}")
    return packer


def members_of(
    postings: Sequence[Postings], keys: Sequence[Any], memo: dict[Any, Any] | None
) -> _Members:
    """The member descriptors of one list's ``postings`` (index keys ``keys``), from ``memo``
    when it has them (see :func:`describe`), else made (and kept there)."""
    if memo is None or not keys or len(keys) != len(postings):
        return _Members.of(postings)
    held: _Members | None = memo.get(keys)
    if held is None:
        held = memo[keys] = _Members.of(postings)
    return held


_GAIN_KINDS = {_TermGain: 1, _Gain: 2}  # a list's gain class -> its kind (0: the kernel's none)


def _gain_kind(gain: object) -> int:
    """A gain's kind by ``isinstance`` (a subclass of a known gain): 1 BM25, 2 constant, 0 else."""
    return 1 if isinstance(gain, _TermGain) else 2 if isinstance(gain, _Gain) else 0


class Refine(NamedTuple):
    """How the candidate mode of :func:`accumulate` drops candidates list by list: before a
    list ``l >= start`` (in the described order) of at least as many postings as candidates
    left, if ``rest[l]`` is below the rest last checked (``rest[start]`` first), a candidate
    whose evidence so far, jump, ``base`` and ``rest[l]`` stay below ``cut`` is left out (no
    later list is probed for it)."""

    base: Any  # per candidate, a float64 array: its prior and the largest bonus
    rest: Sequence[float]  # rest[l]: the most the described lists l.. add to a score
    cut: float  # the k-th best lower bound, less the rounding margin
    start: int  # the first list after which to refine


class Floor(NamedTuple):
    """What :func:`accumulate` leaves out of a call over every memory the lists reach: a
    memory whose evidence plus ``prior_max`` stays below ``cut`` (an earlier pass's k-th best
    score less the rounding margin) cannot be among the k best, and is not written."""

    prior_max: float  # the most a memory's prior (recency, type, bonus) adds to its score
    cut: float


_NO_FLOOR = Floor(0.0, -math.inf)
# cm_accumulate_packed's buffer: 26 int64 (addresses as integers, 0 for none), then 3 doubles
_ACCUMULATE_ARGUMENTS = struct.Struct("=26q3d")


def accumulate(
    view: ArrayView, described: _Descriptors, weights: Sequence[float], *, lists: int = -1,
    cand: tuple[Any, Any] | None = None, refine: Refine | None = None, hold: bool = False,
    resume: int = 0, floor: Floor | None = None,
) -> KernelSums:  # fmt: skip
    """The slots the described lists reach, ascending, with their evidence (one C call).

    Hold ``view.scratch().lock`` while calling this and reading the result.

    Args:
        view: the namespace's array view (its seq -> slot map, lengths and scratch).
        described: the pass's lists, from :func:`describe`.
        weights: the cue, tag, content and session weights, the session saturation cap (> 0)
            and the session-only factor.
        lists: how many of the described lists to sum (from the first; -1: all).
        cand: ``(slots, seqs)`` int64 arrays: sum for these memories only (each list probed for
            them), which the lists must reach; None: every memory the lists reach.
        refine: with ``cand``, leave out the candidates that cannot reach the cut (see
            :class:`Refine`); their sums are the same floats either way.
        hold: without ``cand``, leave the sums in the scratch (see :meth:`Scratch.holds`) for
            a call with ``resume`` to go on from; any other call resets them first.
        resume: with ``cand``, the first list to add: the scratch holds the sums of lists
            ``..resume`` (``scratch.holds(described, resume)``, the candidates among the
            memories they reach), which the candidates keep (the same floats as summing
            every list for them). 0: every list.
        floor: without ``cand`` or ``hold``, leave out the memories that cannot reach it (see
            :class:`Floor`).

    Raises:
        KernelError: a posting the view has no slot for (the view is out of step), a
            candidate that is not one, or a ``resume`` the scratch does not hold.
    """
    if len(weights) != 6:
        raise KernelError(f"the kernel takes 6 weights, got {len(weights)}")
    lists = described.lists if lists < 0 else min(lists, described.lists)
    scratch = view.scratch()
    if resume and (cand is None or not scratch.holds(described, resume)):
        raise KernelError(f"resuming at list {resume}, which the scratch does not hold")
    if hold and cand is not None:
        raise KernelError("only a call without candidates holds its sums")
    if floor is not None and (hold or cand is not None):
        raise KernelError("only a call over every memory, not held, leaves out those below a floor")
    least = _NO_FLOOR if floor is None else floor
    if not resume:
        scratch.reset()
    rows = described.postings if cand is None else len(cand[0])
    slots, evidence, jump, only = scratch.output(max(1, min(rows, view.size)))
    given = -1 if cand is None else len(cand[0])
    cand_slots, cand_seqs = (None, None) if cand is None else _int64s(cand, given)
    base, rest, cut, start = _refined(refine, given, lists)
    packed = array("d", weights)
    seq_map, lengths = scratch.view_addresses(view)
    # cm_accumulate's arguments packed in one buffer (cm_accumulate_packed): ctypes made an
    # object for each of 33 arguments, ~4 us a call; the doubles last
    found = _library().cm_accumulate_packed(
        _ACCUMULATE_ARGUMENTS.pack(
            lists, described.ints.buffer_info()[0], described.doubles.buffer_info()[0],
            described.members.buffer_info()[0], seq_map, len(view.slot_by_seq), view.seq_base,
            BLOCK_SEQS, lengths, packed.buffer_info()[0], _slots(view, scratch),
            *scratch.addresses, given, cand_slots or 0, cand_seqs or 0, base or 0,
            rest.buffer_info()[0], start, int(hold), resume, *scratch.output_addresses,
            len(slots), cut, float(least.cut), float(least.prior_max),
        )
    )  # fmt: skip
    scratch.held = (described, lists) if hold and found >= 0 else None
    found = _checked(found)
    return _new(KernelSums, (slots[:found], evidence[:found], jump[:found], only[:found]))


class RawEvidence(NamedTuple):
    """What :func:`evidence` found for each memory asked about, in the order asked."""

    raw: array[float]  # 4 per memory: its cue, tag, content and session sums (before weights)
    held: bytes  # per memory, a bit per signal (cue 1, tag 2, content 4, session 8): a list held it


def evidence(
    described: _Descriptors, order: Sequence[int], seqs: Sequence[int], lengths: Sequence[float]
) -> RawEvidence:
    """The raw evidence of the memories ``seqs`` (of these ``lengths``) from the described
    lists, added in ``order`` (their numbers): the same sums as the Python pass's, which adds
    the lists in that order (one C call, each list binary-searched for each memory).

    Raises:
        KernelError: a list number outside the described ones.
    """
    n = len(seqs)
    if len(lengths) != n:
        raise KernelError(f"{n} memories but {len(lengths)} lengths")
    asked, wanted, sizes = _packed("q", order), array("q", seqs), array("d", lengths)
    raw, held = array("d", bytes(32 * n)), array("B", bytes(n))
    _checked(
        _call(
            "cm_evidence", described.lists, described.ints.buffer_info()[0],
            described.doubles.buffer_info()[0], described.members.buffer_info()[0], len(asked),
            asked.buffer_info()[0], n, wanted.buffer_info()[0], sizes.buffer_info()[0],
            raw.buffer_info()[0], held.buffer_info()[0],
        )
    )  # fmt: skip
    return _new(RawEvidence, (raw, held.tobytes()))


class Top(NamedTuple):
    """What :func:`top` found: the best rows' sequence numbers and keys, best first."""

    seqs: array[int]
    keys: array[float]


def top(view: ArrayView, slots: Any, key: Any, m: int, skip: Any = None) -> Top:
    """The best ``m`` rows by ``key`` (float64, one per slot of ``slots``, int64) leaving out
    those ``skip`` (a bool array, or None) marks: by key descending, ties by sequence number
    ascending, as ``np.lexsort((seqs, -key))`` orders them (one C call).

    Raises:
        KernelError: arrays of other types or lengths, or a slot outside the view.
    """
    n = len(slots)
    if len(key) != n or (skip is not None and len(skip) != n):
        raise KernelError(f"{n} slots but {len(key)} keys")
    m = max(0, min(int(m), n))
    seqs, keys = array("q", bytes(8 * m)), array("d", bytes(8 * m))
    found = _checked(
        _library().cm_top(
            n, _address(key, "<f8"), None if skip is None else _address(skip, "|b1"),
            _address(slots, "<i8"), _view_size(view), view.scratch().seq_address(view),
            view.seq_base, m, seqs.buffer_info()[0], keys.buffer_info()[0],
        )
    )  # fmt: skip
    return _top(seqs, keys, found)


class Ranking(NamedTuple):
    """What :func:`rank` scores rows by (``arrays._priors`` without a bonus or frequency
    penalty): the clock, the recency weight and rate, each type code's bonus, the most a prior
    adds, and the score below which a row is left out."""

    now_ts: float
    per_second: float
    w_recency: float
    type_bonus: Any  # float64, one per type code of the view (or one for every type)
    prior_max: float
    cut: float


def rank(view: ArrayView, slots: Any, evidence: Any, skip: Any, by: Ranking, m: int) -> Top:
    """The best ``m`` rows by score, ``evidence`` (float64, one per slot of ``slots``, int64)
    plus each memory's prior, leaving out those ``skip`` (a bool array) marks and those scoring
    below ``by.cut``: ordered as :func:`top` orders them by the scores ``arrays._scores``
    computes (the same floats, one C call).

    Raises:
        KernelError: arrays of other types or lengths, a slot outside the view, or a type code
            without a bonus.
    """
    m, packed = max(0, min(int(m), len(slots))), _params(by)
    seqs, keys = array("q", bytes(8 * m)), array("d", bytes(8 * m))
    found = _checked(
        _call(
            "cm_rank", *_scored(view, slots, evidence, skip, by, packed), m,
            seqs.buffer_info()[0], keys.buffer_info()[0],
        )
    )  # fmt: skip
    return _top(seqs, keys, found)


def priors(view: ArrayView, slots: Any, by: Ranking) -> Any:
    """Each row's prior (float64, one per slot of ``slots``, int64), as :func:`rank` and
    :func:`bounds` compute it (``by.prior_max`` and ``by.cut`` are not read): for
    ``arrays._priors``, so that the NumPy path and the kernel take the same floats.

    Raises:
        KernelError: a slot outside the view, or a type code without a bonus.
    """
    n, packed = len(slots), _params(by)
    scratch = view.scratch()
    prior = scratch.np.empty(n)
    _, updated, type_code = scratch.prior_addresses(view)
    _checked(
        _library().cm_priors(
            n, _address(slots, "<i8"), _prior_size(view), updated, type_code,
            packed.bonus, len(by.type_bonus), packed.address, _data(prior),
        )
    )  # fmt: skip
    return prior


class Bounds(NamedTuple):
    """What :func:`bounds` found: each row's prior and lower bound (float64 arrays, in row
    order), and the best rows by lower bound."""

    prior: Any
    lower: Any
    best: Top


def bounds(view: ArrayView, slots: Any, evidence: Any, skip: Any, by: Ranking, m: int) -> Bounds:
    """Each row's prior (``arrays._priors`` without a bonus or frequency penalty, by ``by``) and
    lower bound, ``evidence`` (float64, one per slot of ``slots``, int64) plus that prior, the
    same floats as NumPy's; and the best ``m`` rows by lower bound leaving out those ``skip``
    (a bool array) marks, ordered as :func:`top` orders them (one C call; ``by.prior_max`` and
    ``by.cut`` are not read).

    Raises:
        KernelError: arrays of other types or lengths, a slot outside the view, or a type code
            without a bonus.
    """
    n, packed = len(slots), _params(by)
    m = max(0, min(int(m), n))
    np = view.scratch().np
    prior, lower = np.empty(n), np.empty(n)
    seqs, keys = array("q", bytes(8 * m)), array("d", bytes(8 * m))
    found = _checked(
        _call(
            "cm_bounds", *_scored(view, slots, evidence, skip, by, packed), m, _data(prior),
            _data(lower), seqs.buffer_info()[0], keys.buffer_info()[0],
        )
    )  # fmt: skip
    return _new(Bounds, (prior, lower, _top(seqs, keys, found)))


def _scored(
    view: ArrayView, slots: Any, evidence: Any, skip: Any, by: Ranking, packed: _Packed
) -> tuple[Any, ...]:
    """The arguments :func:`rank` and :func:`bounds` pass first, checked: the rows, the view's
    per-slot arrays, the type bonuses of ``by`` and the address of its numbers (``packed``,
    from :func:`_params`; the caller keeps it alive while C reads it)."""
    n = len(slots)
    if len(evidence) != n or len(skip) != n:
        raise KernelError(f"{n} slots but {len(evidence)} evidence values, {len(skip)} flags")
    seq_at, updated, type_code = view.scratch().prior_addresses(view)
    return (
        n, _address(evidence, "<f8"), _address(skip, "|b1"), _address(slots, "<i8"),
        _prior_size(view), seq_at, view.seq_base, updated, type_code, packed.bonus,
        len(by.type_bonus), packed.address,
    )  # fmt: skip


class _Packed(NamedTuple):
    """A :class:`Ranking`'s numbers as :func:`rank`, :func:`bounds` and :func:`priors` pass
    them (``RANK_DOUBLES``), their address and that of its type bonuses (checked)."""

    by: Ranking
    numbers: array[float]  # kept alive while C reads them: hold this tuple across the call
    address: int
    bonus: int


_last_packed: _Packed | None = None  # what _params packed last


def _params(by: Ranking) -> _Packed:
    """``by`` packed for the kernel: once per Ranking (``arrays._ranking`` gives a pass's
    calls the same one), not once per call (an array made and a NumPy array checked each)."""
    global _last_packed
    held = _last_packed
    if held is None or held.by is not by:
        numbers = array("d", (by.now_ts, -by.per_second, by.w_recency, by.prior_max, by.cut))
        held = _last_packed = _new(
            _Packed, (by, numbers, numbers.buffer_info()[0], _address(by.type_bonus, "<f8"))
        )
    return held


def _top(seqs: array[int], keys: array[float], found: int) -> Top:
    """:class:`Top` of the first ``found`` rows a call wrote."""
    if found < len(seqs):
        del seqs[found:], keys[found:]
    return _new(Top, (seqs, keys))


class Kept(NamedTuple):
    """What :func:`keep` found: the rows kept (in row order), as the candidates of
    :func:`accumulate` and the base of :class:`Refine`."""

    slots: Any  # int64
    seqs: Any  # int64, each slot's sequence number
    base: Any  # float64, each one's prior plus the largest bonus


def keep(
    view: ArrayView, slots: Any, lower: Any, jump: Any, prior: Any, rest: float, bonus_max: float,
    cut: float,
) -> Kept:  # fmt: skip
    """The rows (``slots``, int64, with float64 ``lower`` bounds, ``jump`` and ``prior`` each)
    whose upper bound, ``lower + rest + jump + bonus_max`` added in that order, reaches ``cut``:
    the candidates a narrowing check keeps, as ``arrays._upper`` and its test find them (the
    same floats, one C call).

    Raises:
        KernelError: arrays of other types or lengths, or a slot outside the view.
    """
    n = len(slots)
    if len(lower) != n or len(jump) != n or len(prior) != n:
        raise KernelError(f"{n} slots but {len(lower)}, {len(jump)}, {len(prior)} values")
    np = view.scratch().np
    kept_slots, kept_seqs, base = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    params = array("d", (rest, bonus_max, cut))
    found = _checked(
        _call(
            "cm_keep", n, _address(lower, "<f8"), _address(jump, "<f8"), _address(prior, "<f8"),
            _address(slots, "<i8"), _view_size(view), view.scratch().seq_address(view),
            view.seq_base, params.buffer_info()[0], _data(kept_slots), _data(kept_seqs),
            _data(base),
        )
    )  # fmt: skip
    return _new(Kept, (kept_slots[:found], kept_seqs[:found], base[:found]))


def _address(held: Any, dtype: str) -> int:
    """The address of a contiguous NumPy array of ``dtype`` (its ``dtype.str``)."""
    kind = held.dtype  # _is and _contiguous_address inlined: some forty calls a recall
    if kind is _DTYPES.get(dtype) or kind.str == dtype:
        if _buffer_address is not None:
            try:
                return _buffer_address(held)  # type: ignore[no-any-return]
            except (BufferError, ValueError):  # not C-contiguous (NumPy raises ValueError)
                pass
        elif held.flags.c_contiguous:
            return _data(held)
    got = f"{'a' if held.flags.c_contiguous else 'a strided'} {held.dtype.str} one"
    raise KernelError(f"the kernel takes a contiguous {dtype} array, not {got}")


def _contiguous_address(held: Any) -> int | None:
    """The address of a NumPy array's data, or None when it is not C-contiguous: by
    ``_textc.buffer_address`` when built (one buffer request, ~0.1 us, where the contiguity
    flag and :func:`_data` took ~1 us, some forty times a recall at 100k), else those."""
    if _buffer_address is None:
        return _data(held) if held.flags.c_contiguous else None
    try:
        return _buffer_address(held)  # type: ignore[no-any-return]
    except (BufferError, ValueError):  # not C-contiguous (NumPy raises ValueError)
        return None


_BYTE = ctypes.c_char
_DTYPES: dict[str, Any] = {}  # a dtype's str -> NumPy's dtype of it (see _dtypes)


def _dtypes(np: Any) -> None:
    """Fill :data:`_DTYPES` with NumPy's dtype objects of the arrays the kernel reads."""
    _DTYPES.update((code, np.dtype(code)) for code in ("<f8", "<i8", "|b1", "<i4"))


def _data(held: Any) -> int:
    """The address of a contiguous NumPy array's data: by ``_textc.buffer_address`` when built
    (see :func:`_contiguous_address`), else :func:`_py_data`."""
    if _buffer_address is not None:
        try:
            return _buffer_address(held)  # type: ignore[no-any-return]
        except (BufferError, ValueError, TypeError):  # not C-contiguous: ctypes' way
            pass
    return _py_data(held)


def _py_data(held: Any) -> int:
    """The address of a contiguous NumPy array's data, through the buffer protocol: 0.8 us
    where ``.ctypes.data`` took 3.3 (it builds a helper object), and a recall asks about
    twenty. ``.ctypes.data`` still for an array that exports no writable buffer of a byte or
    more (an empty or read-only one)."""
    try:
        return ctypes.addressof(_BYTE.from_buffer(held))
    except (TypeError, ValueError, BufferError):
        return int(held.ctypes.data)


_buffer_address: Any = None if _textc is None else _textc.buffer_address


def _view_size(view: ArrayView) -> int:
    """The view's memories, once its per-slot arrays are sure to hold that many."""
    if len(view.seq_at) < view.size:
        raise KernelError(f"{view.size} memories but a shorter slot -> seq map")
    return int(view.size)


def _prior_size(view: ArrayView) -> int:
    """The view's memories, once the arrays a prior reads are sure to hold that many."""
    size = _view_size(view)
    if len(view.updated) < size or len(view.type_code) < size:
        raise KernelError(f"{size} memories but shorter per-slot arrays")
    return size


def _slots(view: ArrayView, scratch: Scratch) -> int:
    """The bound C checks every slot against: the view's memories, once it is sure that the
    scratch and the per-slot lengths hold that many."""
    if scratch.size < view.size or len(view.length) < view.size:
        raise KernelError(f"{view.size} memories but arrays of {scratch.size} slots")
    return int(view.size)


def _refined(
    refine: Refine | None, given: int, lists: int
) -> tuple[int | None, array[float], float, int]:
    """The base's address (None: no refining), the rest bounds (kept alive by the caller), the
    cut and the first list of :class:`Refine`, checked against the candidates and lists."""
    if refine is None:
        return None, _NO_REST, 0.0, 0
    base = refine.base
    address = None if given < 0 or not _is(base, "<f8") else _contiguous_address(base)
    if address is None or len(base) != given:
        raise KernelError("refining takes a contiguous float64 base per candidate")
    if len(refine.rest) < lists + 1 or refine.start < 0:
        raise KernelError(f"refining {lists} lists takes {lists + 1} rest bounds and a start >= 0")
    return address, _packed("d", refine.rest), float(refine.cut), int(refine.start)


_NO_REST = array("d", [0.0])  # what a call without refining passes (C reads it only refining)


def _is(held: Any, dtype: str) -> bool:
    """Whether a NumPy array's type is ``dtype`` (its ``dtype.str``): NumPy's own dtype object
    compared first (``.str`` makes a string, ~0.8 us)."""
    kind = held.dtype
    return kind is _DTYPES.get(dtype) or kind.str == dtype


def _int64s(arrays: tuple[Any, Any], count: int) -> tuple[int, int]:
    """The addresses of two contiguous int64 arrays of ``count`` items each."""
    addresses = []
    for held in arrays:
        address = _contiguous_address(held) if _is(held, "<i8") else None
        if address is None or len(held) != count:
            raise KernelError("candidates must be two contiguous int64 arrays of equal length")
        addresses.append(address)
    return addresses[0], addresses[1]


def union_size(view: ArrayView, postings: Sequence[Postings]) -> int:
    """How many memories hold at least one of ``postings`` (one C call, no mirror made)."""
    described = _Members.of(postings)  # keeps the buffers alive for the call
    scratch, members = view.scratch(), described.members.buffer_info()[0]
    seq_map, size = scratch.view_addresses(view)[0], _slots(view, scratch)
    with scratch.lock:  # its bitmap: not while a held call's sums are in it (see accumulate)
        scratch.reset()
        return _checked(
            _library().cm_union_size(
                len(postings), members, seq_map, len(view.slot_by_seq), size, *scratch.addresses
            )
        )


def _checked(found: int) -> int:
    """A kernel call's count, or :class:`KernelError` for its error code (< 0)."""
    found = int(found)
    if found < 0:
        raise KernelError(f"the scoring kernel found {_ERRORS.get(found, found)}")
    return found
