/* Candidate scoring for the array path (cuemap_integrations/kernel.py loads it with ctypes),
 * and the exact evidence of the memories it chose (cm_evidence).
 *
 * Plain C: no Python.h, no NumPy C API, so one build serves every Python version. The caller
 * passes the index's posting buffers as they are (sequence numbers as 4- or 8-byte ints,
 * values none / uint8 / float / double), the view's seq -> slot map and per-slot lengths, and
 * scratch arrays of the namespace's slot count that are all zero on entry and are left all
 * zero on return (only the slots a call reached are reset, found from a bitmap).
 *
 * Every index read is bounds-checked: a sequence number outside the seq -> slot map or a slot
 * outside the scratch ends the call with a negative code (after resetting the scratch), never
 * an out-of-bounds read or write.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The layout of every argument below: kernel.py refuses a library reporting another one (a
 * stale build next to newer sources). Raise it with any change to an argument or descriptor. */
#define ABI_VERSION 15

int64_t cm_abi_version(void) { return ABI_VERSION; }

/* list descriptor: LIST_INTS int64 and LIST_DOUBLES doubles per list */
enum { L_SIGNAL, L_GAIN, L_MEMBERS, L_SPECIAL, LIST_INTS };
enum { L_VALUE, L_SPECIAL_VALUE, L_K1, L_B, L_AVG, LIST_DOUBLES };
/* member (one posting list) descriptor: MEMBER_INTS int64 per member */
enum { M_SEQS, M_WIDTH, M_COUNT, M_VALUES, M_VALUE_TYPE, MEMBER_INTS };

/* How many rows ahead the loops that read a per-slot array at a slot taken from another array
 * (a candidate's cell, a row's update time, type code or seq) prefetch it: at 1M memories those
 * arrays are far larger than the caches and nearly every such read missed them. Recall CPU ms
 * at 1M memories, median, every loop prefetching against none (one store, the builds in turn,
 * 200 bench queries x 5): x0.857 at 32 rows, x0.907 at 16 (paired per query x0.91, x0.93);
 * benchmarks/recall_ab.py at 1M, this change alone: x0.796 (x0.824 with --new-first). The
 * loops over the bitmap (collect, keep_only's scan) read ascending slots, which the CPU
 * prefetches itself: prefetching them too measured x1.00; add_marked, prefetching the slots of
 * the marked postings ahead, measured x1.04-1.06 (most of its postings are not marked, and the
 * test ahead doubled the loop's work). */
#define ROW_AHEAD 32

enum { SIG_CUE, SIG_TAG, SIG_CONTENT, SIG_SESSION };
enum { GAIN_CONSTANT, GAIN_TERM };
enum { VAL_NONE, VAL_U8, VAL_F32, VAL_F64 };

#define E_SEQ (-1)     /* a sequence number outside the seq -> slot map */
#define E_SLOT (-2)    /* no slot, or a slot outside the scratch */
#define E_TYPE (-3)    /* an unknown code in a descriptor */
#define E_OUTPUT (-4)  /* more touched slots than the output holds */
#define E_MEMORY (-5)  /* no memory for the lists' offsets */

/* One slot's sums (32 bytes: the five read together on every posting share a cache line). */
typedef struct {
    double linear;   /* w_cue*cue + w_tag*tag + w_content*content */
    double session;  /* raw session sum */
    int32_t matched; /* cue, tag and content lists reaching the slot */
    int32_t tagged;  /* tag lists reaching the slot */
    int32_t mark;    /* 1 + the last list that reached the slot; 0: untouched */
    int32_t dropped; /* a candidate refining dropped (it cannot reach theta): not emitted */
} Cell;

typedef struct {
    Cell *cells;
    uint64_t *bits; /* one bit per slot: reached by this call (a scan finds them in order) */
    int64_t size;   /* slots of `cells`; `bits` has (size + 63) / 64 words */
} Scratch;

/* What the caller's output arrays receive, o_cap rows each: all that arrays._ranked_walk
 * reads of the sums (writing the raw sums too would double the output's memory traffic). */
typedef struct {
    int64_t *slots;
    double *evidence;
    double *jump; /* what matching the query later adds to a session-only memory (else 0) */
    uint8_t *tag_only;
    /* a row whose evidence + prior stays below cut is not written (-INFINITY: every row) */
    double prior, cut;
} Output;

/* The query-dependent part of a score (arrays.py _evidence), from the session weight,
 * saturation cap and session-only factor. */
typedef struct {
    double w_session, cap, only;
} Evidence;

/* The view's seq -> slot map: slot_by_seq (n_seqs entries, -1: no slot), or, when base >= 0,
 * slot = seq - base for every seq below n_seqs (the view gave its slots in seq order from
 * base, arrays.ArrayView.seq_base: then slot_by_seq holds just that, and is not read). */
typedef struct {
    const int64_t *slot_by_seq;
    int64_t n_seqs, base;
} SeqMap;

/* The slot of a seq below map->n_seqs (negative: none). */
static inline int64_t slot_of(const SeqMap *map, int64_t seq) {
    return map->base >= 0 ? seq - map->base : map->slot_by_seq[seq];
}

static int64_t seq_at(const void *seqs, int64_t width, int64_t i) {
    return width == 4 ? (int64_t)((const int32_t *)seqs)[i] : ((const int64_t *)seqs)[i];
}

static double value_at(const void *values, int64_t type, int64_t i) {
    switch (type) {
    case VAL_U8: return (double)((const uint8_t *)values)[i];
    case VAL_F32: return (double)((const float *)values)[i];
    case VAL_F64: return ((const double *)values)[i];
    default: return 1.0;
    }
}

/* A list's gain constants (its doubles), with the parts of term_gain that do not depend on
 * the posting (1 - b, k1 + 1) computed once a list instead of once a posting: the same
 * operations on the same values, so the same floats. */
typedef struct {
    double value, special_value, k1, k1_plus_1, b, one_less_b, avg;
} Gain;

static Gain gain_of(const double *ld) {
    Gain g = {ld[L_VALUE], ld[L_SPECIAL_VALUE], ld[L_K1], ld[L_K1] + 1.0,
              ld[L_B],     1.0 - ld[L_B],       ld[L_AVG]};
    return g;
}

/* BM25 gain of a posting with term frequency tf in a memory of length len:
 * value * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avg))), k1 alone when avg <= 0. */
static inline double term_gain(const Gain *g, double tf, double len) {
    double norm = g->avg > 0 ? g->k1 * (g->one_less_b + g->b * len / g->avg) : g->k1;
    return g->value * (tf * g->k1_plus_1 / (tf + norm));
}

/* A constant gain list's gain of seq: its special value for its special seq. */
static inline double constant_gain(const Gain *g, int64_t special, int64_t seq) {
    return seq == special ? g->special_value : g->value;
}

static int check_member(const int64_t *mi) {
    if (mi[M_WIDTH] != 4 && mi[M_WIDTH] != 8) return E_TYPE;
    if (mi[M_VALUE_TYPE] < VAL_NONE || mi[M_VALUE_TYPE] > VAL_F64) return E_TYPE;
    if (mi[M_COUNT] < 0 || (mi[M_COUNT] > 0 && mi[M_SEQS] == 0)) return E_TYPE;
    if (mi[M_VALUE_TYPE] != VAL_NONE && mi[M_COUNT] > 0 && mi[M_VALUES] == 0) return E_TYPE;
    return 0;
}

/* Whether a list descriptor's signal and gain codes are known ones. */
static int known_list(const int64_t *li) {
    return li[L_SIGNAL] >= SIG_CUE && li[L_SIGNAL] <= SIG_SESSION && li[L_GAIN] >= GAIN_CONSTANT &&
           li[L_GAIN] <= GAIN_TERM;
}

/* Whether the first n_lists list descriptors and their members are well formed: known codes,
 * no negative member count, at most INT32_MAX lists (a cell's mark holds a list number).
 * Returns how many members they have, or E_TYPE. */
static int64_t check_lists(int64_t n_lists, const int64_t *list_ints, const int64_t *member_ints) {
    int64_t n_members = 0;
    if (n_lists > INT32_MAX) return E_TYPE;
    for (int64_t l = 0; l < n_lists; l++) {
        const int64_t *li = list_ints + l * LIST_INTS;
        if (!known_list(li) || li[L_MEMBERS] < 0) return E_TYPE;
        for (int64_t m = 0; m < li[L_MEMBERS]; m++)
            if (check_member(member_ints + (n_members + m) * MEMBER_INTS) != 0) return E_TYPE;
        n_members += li[L_MEMBERS];
    }
    return n_members;
}

/* One list, ready for its postings to be added. */
typedef struct {
    int32_t list;     /* its number: a cell's mark is 1 + the last list that reached it */
    int term;         /* BM25 gain (else constant) */
    int session, tag; /* its signal */
    int64_t special;  /* the seq with the special constant gain, or -1 */
    double weight;    /* its signal's weight (1: session sums are raw) */
    Gain gain;        /* its doubles */
    const void *seqs, *values;
    int64_t width, vtype;
} List;

static List list_of(int32_t list, const int64_t *li, const double *ld, const double *w,
                    const int64_t *mi) {
    List l = {list, li[L_GAIN] == GAIN_TERM, li[L_SIGNAL] == SIG_SESSION,
              li[L_SIGNAL] == SIG_TAG, li[L_GAIN] == GAIN_CONSTANT ? li[L_SPECIAL] : -1,
              li[L_SIGNAL] == SIG_SESSION ? 1.0 : w[li[L_SIGNAL]], gain_of(ld),
              (const void *)(intptr_t)mi[M_SEQS], (const void *)(intptr_t)mi[M_VALUES],
              mi[M_WIDTH], mi[M_VALUE_TYPE]};
    return l;
}

/* Add list l's gain to cell c: to the session sum, or weighted to the linear sum with the
 * counts. A macro, not a function: the dense loop's copy measured slower as a forced-inline
 * function (see dense_run). */
#define ADD_GAIN(c, l, gain)                                                                   \
    do {                                                                                       \
        if ((l)->session) {                                                                    \
            (c)->session += (gain);                                                            \
        } else {                                                                               \
            (c)->linear += (l)->weight * (gain);                                               \
            (c)->matched += 1;                                                                 \
            (c)->tagged += (l)->tag;                                                           \
        }                                                                                      \
    } while (0)

/* Add posting i (of seq, at slot) of list l: a candidate's (see dense_run for the rest). */
static void add_posting(Scratch *s, const List *l, int64_t i, int64_t seq, int64_t slot,
                        const double *length) {
    Cell *c = s->cells + slot;
    if (c->mark == l->list + 1) return; /* a concept counts a memory once */
    c->mark = l->list + 1;
    double gain = l->term ? term_gain(&l->gain, value_at(l->values, l->vtype, i), length[slot])
                          : constant_gain(&l->gain, l->special, seq);
    ADD_GAIN(c, l, gain);
}

/* One bit per seq (n_seqs of them), set for the n candidates' seqs: what add_marked tests a
 * posting against. NULL when out of memory. */
static uint64_t *seq_marks(int64_t n, const int64_t *seqs, int64_t n_seqs) {
    uint64_t *marks = calloc((size_t)((n_seqs + 63) / 64 + 1), sizeof *marks);
    if (!marks) return NULL;
    for (int64_t c = 0; c < n; c++) marks[seqs[c] >> 6] |= UINT64_C(1) << (seqs[c] & 63);
    return marks;
}

static inline int has_bit(const uint64_t *bits, int64_t i) {
    return (bits[i >> 6] >> (i & 63)) & 1;
}

/* Add the postings of one member held by the candidates (`marks`: their seqs, seq_marks;
 * NULL with a direct map). A posting is tested by its seq, in a bitmap of n_seqs / 8 bytes
 * (small enough to stay in the cache), and only a candidate's posting is looked up in the
 * seq -> slot map: testing the slot's bit looked every posting up there first, a read at
 * random (the map is 8 bytes a seq) that missed the cache on most postings of the lists read
 * whole for the candidates (kernel time median x0.86-0.90 at 100k memories,
 * benchmarks/kernel_ab.py both orders). With a direct map (base >= 0) a slot is its seq less
 * the base, no read: the posting is tested in the scratch's own bitmap, which holds just the
 * candidates' slots (take_candidates; a slot outside the scratch is no candidate's, theirs are
 * checked), and no bitmap of the seqs is made and zeroed for the call (n_seqs / 8 bytes: 25 KB
 * at 100k memories, 250 KB at 1M). The same postings are added in the same order; a posting
 * of another memory is no longer looked up, so its missing slot is not reported here (as
 * probing never reported it). Returns 0, or a negative code. */
static inline __attribute__((always_inline)) int64_t
marked_run(Scratch *s, const List *l, int64_t count, const uint64_t *marks, const SeqMap *map,
           const double *length, const int direct) {
    /* in locals: add_posting's stores may change them as far as the compiler knows */
    const void *seqs = l->seqs;
    const uint64_t *bits = s->bits;
    const int64_t width = l->width, n_seqs = map->n_seqs, base = map->base, size = s->size;
    /* direct: a seq in [base, base + span) is in the map and at a slot of the scratch */
    const int64_t hi = direct && size < n_seqs - base ? base + size : n_seqs;
    const uint64_t span = direct && hi > base ? (uint64_t)hi - (uint64_t)base : 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t seq = seq_at(seqs, width, i), slot;
        if (direct) {
            if ((uint64_t)seq - (uint64_t)base >= span) {
                if (seq < 0 || seq >= n_seqs) return E_SEQ;
                continue; /* a slot outside the scratch: no candidate's */
            }
            slot = seq - base;
            if (!has_bit(bits, slot)) continue;
        } else {
            if (seq < 0 || seq >= n_seqs) return E_SEQ;
            if (!has_bit(marks, seq)) continue;
            slot = map->slot_by_seq[seq];
            if (slot < 0 || slot >= size) return E_SLOT;
        }
        add_posting(s, l, i, seq, slot, length);
    }
    return 0;
}

static int64_t add_marked(Scratch *s, const List *l, int64_t count, const uint64_t *marks,
                          const SeqMap *map, const double *length) {
    return map->base >= 0 ? marked_run(s, l, count, marks, map, length, 1)
                          : marked_run(s, l, count, marks, map, length, 0);
}

/* How far ahead dense_run prefetches: a posting's cell and length DENSE_AHEAD postings ahead,
 * its seq -> slot entry twice that (measured, cold caches at 100k memories: prefetching at
 * all made a pass's kernel call x0.69). 8 and 16 were too short for a cell's first touch in a
 * call (a miss to L3 or memory, ~30x a posting's work): 32 measured kernel time x0.91-0.97
 * (median) against them at 100k memories (benchmarks/kernel_ab.py, both orders); 64 gained
 * nothing more. */
#define DENSE_AHEAD 32

/* Add the postings of one member from posting *at on while their seqs are below `stop`
 * (INT64_MAX: to its end), marking the slots they reach first. Leaves *at at the first posting
 * not added. Returns how many slots are reached now, or a negative code.
 *
 * The seq width, gain kind and value type are constants at each call site (add_dense), so the
 * compiler makes a loop per kind of list without a switch on them per posting, and a slot's
 * bit and the count take `first` without a branch on it (0 or 1 by the data, unpredictable):
 * kernel time x0.84-0.90 at 300k memories, x0.77-0.82 at 1M (benchmarks/kernel_ab.py). The
 * gain is add_posting's, written out again with the constants: calling it (forced inline,
 * with the constants) measured x1.07-1.20 slower, with the prefetch a function too, the
 * compiler then laying the loop out worse. `direct` (a constant too): the map's base is set,
 * a slot is its seq less the base, and the seq -> slot map is neither read nor prefetched.
 * `session`: the list's l->session, a constant for a constant gain list (session lists are),
 * so ADD_GAIN's test of it leaves the loop. */
static inline __attribute__((always_inline)) int64_t
dense_run(Scratch *s, int64_t touched, const List *l, int64_t *at, int64_t count, int64_t stop,
          const SeqMap *map, const double *length, const int width, const int term,
          const int vtype, const int direct, const int session) {
    int64_t i = *at;
    /* the list and the scratch in locals: as far as the compiler knows, the loop's stores to
     * the cells and bits may change them (an int32_t or uint64_t store may alias their fields),
     * so it loaded each field again for every posting */
    List list = *l;
    list.session = session;
    Cell *const cells = s->cells;
    uint64_t *const bits = s->bits;
    const int32_t mark = list.list + 1;
    const int64_t *slot_by_seq = map->slot_by_seq, n_seqs = map->n_seqs, base = map->base;
    const int64_t size = s->size;
    /* a seq in [lo, lo + span) is below stop, in the map and, with `direct`, at a slot in the
     * scratch: one unsigned test a posting where there were three (~6 instructions less a
     * posting, callgrind); a seq outside it is told apart there */
    const int64_t lo = direct ? base : 0, to_map = stop < n_seqs ? stop : n_seqs;
    const int64_t hi = direct && size < to_map - base ? base + size : to_map;
    const uint64_t span = hi > lo ? (uint64_t)hi - (uint64_t)lo : 0;
    for (; i < count; i++) {
        if (!direct && i + 2 * DENSE_AHEAD < count) {
            int64_t ahead = seq_at(list.seqs, width, i + 2 * DENSE_AHEAD);
            if (ahead >= 0 && ahead < n_seqs) __builtin_prefetch(slot_by_seq + ahead);
        }
        if (i + DENSE_AHEAD < count) {
            int64_t ahead = seq_at(list.seqs, width, i + DENSE_AHEAD);
            int64_t to = direct ? ahead - base
                                : (ahead >= 0 && ahead < n_seqs ? slot_by_seq[ahead] : -1);
            if ((uint64_t)to < (uint64_t)size) { /* 0 <= to < size */
                __builtin_prefetch(cells + to, 1);
                if (term) __builtin_prefetch(length + to);
            }
        }
        int64_t seq = seq_at(list.seqs, width, i);
        if ((uint64_t)seq - (uint64_t)lo >= span) {
            if (seq >= stop) break;
            return seq < 0 || seq >= n_seqs ? E_SEQ : E_SLOT;
        }
        int64_t slot = direct ? seq - base : slot_by_seq[seq];
        if (!direct && (uint64_t)slot >= (uint64_t)size) return E_SLOT; /* 0 <= slot < size */
        Cell *c = cells + slot;
        if (c->mark == mark) continue; /* a concept counts a memory once */
        int32_t first = c->mark == 0;
        c->mark = mark;
        double gain = term ? term_gain(&list.gain, value_at(list.values, vtype, i), length[slot])
                           : constant_gain(&list.gain, list.special, seq);
        ADD_GAIN(c, &list, gain);
        bits[slot >> 6] |= (uint64_t)first << (slot & 63); /* no branch on `first` */
        touched += first;
    }
    *at = i;
    return touched;
}

#define DENSE(W, T, V, S)                                                                      \
    (direct ? dense_run(s, touched, l, at, count, stop, map, length, W, T, V, 1, S)            \
            : dense_run(s, touched, l, at, count, stop, map, length, W, T, V, 0, S))

/* dense_run for list l's kind of list and the map's kind. */
static int64_t add_dense(Scratch *s, int64_t touched, const List *l, int64_t *at, int64_t count,
                         int64_t stop, const SeqMap *map, const double *length) {
    int wide = l->width == 8, direct = map->base >= 0, session = l->session;
    if (!l->term && session) return wide ? DENSE(8, 0, VAL_NONE, 1) : DENSE(4, 0, VAL_NONE, 1);
    if (!l->term) return wide ? DENSE(8, 0, VAL_NONE, 0) : DENSE(4, 0, VAL_NONE, 0);
    switch (l->vtype) {
    case VAL_U8: return wide ? DENSE(8, 1, VAL_U8, session) : DENSE(4, 1, VAL_U8, session);
    case VAL_F32: return wide ? DENSE(8, 1, VAL_F32, session) : DENSE(4, 1, VAL_F32, session);
    case VAL_F64: return wide ? DENSE(8, 1, VAL_F64, session) : DENSE(4, 1, VAL_F64, session);
    default: return wide ? DENSE(8, 1, VAL_NONE, session) : DENSE(4, 1, VAL_NONE, session);
    }
}

#undef DENSE

/* The lowest seq among the members' next postings (next[m]: the first not added yet), or
 * INT64_MAX when every posting has been added. */
static int64_t first_left(const int64_t *member_ints, int64_t n_members, const int64_t *next) {
    int64_t low = INT64_MAX;
    for (int64_t m = 0; m < n_members; m++) {
        const int64_t *mi = member_ints + m * MEMBER_INTS;
        if (next[m] < mi[M_COUNT]) {
            int64_t seq = seq_at((const void *)(intptr_t)mi[M_SEQS], mi[M_WIDTH], next[m]);
            low = seq < low ? seq : low;
        }
    }
    return low;
}

/* Sum the first n_lists lists (checked: n_members members) over every slot they reach,
 * `block` seqs at a time: each list's postings of the block's seqs, in list and member order,
 * then the next block (from the lowest seq left: a namespace's seqs may be sparse among the
 * store's). Every cell gets the same additions in the same order as when each list is added
 * whole, so the sums are the same floats; but a block's cells stay in the cache while every
 * list adds to them, where each long list added whole streams the whole namespace's cells (32
 * bytes a slot) again, missing the cache on nearly every posting in a large namespace.
 * Returns how many slots are reached, or a negative code. */
static int64_t add_blocked(Scratch *s, int64_t n_lists, int64_t n_members,
                           const int64_t *list_ints, const double *list_doubles, const double *w,
                           const int64_t *member_ints, const SeqMap *map, const double *length,
                           int64_t block) {
    int64_t touched = 0;
    if (block < 1) return E_TYPE;
    int64_t *next = calloc((size_t)(n_members > 0 ? n_members : 1), sizeof *next);
    if (!next) return E_MEMORY;
    while (touched >= 0) {
        int64_t low = first_left(member_ints, n_members, next), stop;
        if (low == INT64_MAX) break; /* every posting added */
        if (low < 0 || low >= map->n_seqs) {
            touched = E_SEQ;
            break;
        }
        int64_t n_seqs = map->n_seqs;
        stop = low < n_seqs - block ? low + block : n_seqs; /* a block from the lowest seq left */
        const int64_t *mi = member_ints;
        int64_t at = 0;
        for (int64_t l = 0; l < n_lists && touched >= 0; l++) {
            const int64_t *li = list_ints + l * LIST_INTS;
            const double *ld = list_doubles + l * LIST_DOUBLES;
            for (int64_t m = 0; m < li[L_MEMBERS] && touched >= 0; m++, mi += MEMBER_INTS) {
                List list = list_of((int32_t)l, li, ld, w, mi);
                touched = add_dense(s, touched, &list, next + at++, mi[M_COUNT], stop, map,
                                    length);
            }
        }
    }
    free(next);
    return touched;
}

/* The first index of the count ascending seqs (width 4 or 8 bytes) whose seq is >= want.
 * Branch-free: each halving picks its half with a conditional move, not a jump, so the CPU
 * mispredicts none (a jump's direction is a coin toss at every step of a search: probing the
 * candidates was most of a narrowed pass's last kernel call). */
#define LOWER_BOUND(type)                                                                       \
    static int64_t lower_bound_##type(const type *seqs, int64_t count, int64_t want) {          \
        const type *base = seqs;                                                                \
        int64_t n = count;                                                                      \
        if (n == 0) return 0;                                                                   \
        while (n > 1) {                                                                         \
            int64_t half = n / 2;                                                               \
            base = (int64_t)base[half] < want ? base + half : base;                             \
            n -= half;                                                                          \
        }                                                                                       \
        return (base - seqs) + ((int64_t)*base < want);                                         \
    }
LOWER_BOUND(int32_t)
LOWER_BOUND(int64_t)

static int64_t lower_bound(const void *seqs, int64_t width, int64_t count, int64_t want) {
    return width == 4 ? lower_bound_int32_t((const int32_t *)seqs, count, want)
                      : lower_bound_int64_t((const int64_t *)seqs, count, want);
}

/* lower_bound of want among the count seqs, all of those before `from` known to be below it:
 * steps of 1, 2, 4... from `from` until one reaches want, then a binary search within the last
 * step. Candidates come in ascending seqs (mostly: slot order), so each search starts where
 * the previous one ended and reads a few nearby cache lines, where a binary search over the
 * whole list misses the cache at nearly every step of a long list. Same index: a lower bound. */
static int64_t gallop(const void *seqs, int64_t width, int64_t from, int64_t count, int64_t want) {
    int64_t lo = from, step = 1;
    while (lo + step <= count && seq_at(seqs, width, lo + step - 1) < want) {
        lo += step;
        step *= 2;
    }
    /* hi: a seq >= want is there, or hi is count */
    int64_t hi = lo + step - 1 < count ? lo + step - 1 : count;
    return lo + lower_bound((const char *)seqs + lo * width, width, hi - lo, want);
}

/* Add the postings of one member (seqs ascending) held by the n candidates, each found by a
 * binary search: for a list much longer than the candidates. */
static void probe_member(Scratch *s, const List *l, int64_t count, int64_t n,
                         const int64_t *cand_slots, const int64_t *cand_seqs,
                         const double *length) {
    int64_t last = INT64_MIN, from = 0; /* the previous candidate's seq, and where it would be */
    for (int64_t c = 0; c < n; c++) {
        if (c + ROW_AHEAD < n) __builtin_prefetch(s->cells + cand_slots[c + ROW_AHEAD], 1);
        int64_t want = cand_seqs[c];
        int64_t lo = want >= last ? gallop(l->seqs, l->width, from, count, want)
                                  : lower_bound(l->seqs, l->width, count, want);
        last = want, from = lo;
        if (lo < count && seq_at(l->seqs, l->width, lo) == want)
            add_posting(s, l, lo, want, cand_slots[c], length);
    }
}

/* Candidates searched together by probe_batched: their searches' loads are independent, so
 * the CPU has that many cache misses in flight where one search waits for each of its own. */
#define BATCH 16

/* probe_member for a list far longer than the candidates (each far from the last in it, so
 * galloping gains nothing): BATCH candidates at a time binary-searched in lockstep (the same
 * steps as lower_bound, one halving of all of them at a time), the next step's two possible
 * probes prefetched. The same postings found, added in candidate order: the same sums. */
static void probe_batched(Scratch *s, const List *l, int64_t count, int64_t n,
                          const int64_t *cand_slots, const int64_t *cand_seqs,
                          const double *length) {
    int64_t base[BATCH];
    for (int64_t c0 = 0; c0 < n; c0 += BATCH) {
        int64_t g = n - c0 < BATCH ? n - c0 : BATCH, left = count;
        const int64_t *want = cand_seqs + c0;
        for (int64_t j = 0; j < g; j++) base[j] = 0;
        for (int64_t j = 0; j < g; j++) __builtin_prefetch(s->cells + cand_slots[c0 + j], 1);
        while (left > 1) {
            int64_t half = left / 2, next = (left - half) / 2;
            for (int64_t j = 0; j < g; j++) {
                int64_t at = base[j];
                at = seq_at(l->seqs, l->width, at + half) < want[j] ? at + half : at;
                base[j] = at;
                __builtin_prefetch((const char *)l->seqs + (at + next) * l->width);
            }
            left -= half;
        }
        for (int64_t j = 0; j < g; j++) {
            int64_t lo = base[j] + (seq_at(l->seqs, l->width, base[j]) < want[j]);
            if (lo < count && seq_at(l->seqs, l->width, lo) == want[j])
                add_posting(s, l, lo, want[j], cand_slots[c0 + j], length);
        }
    }
}

/* Cell c's evidence (the score's query-dependent part, arrays.py _evidence) and *jump, what
 * matching the query later would add to it (arrays.py _jump). Inline: called for every slot a
 * call emits or refines, the call cost ~20 instructions a slot (callgrind, 100k memories). */
static inline double evidence_of(const Cell *c, const Evidence *e, double *jump) {
    double score = c->linear;
    *jump = 0.0;
    if (e->w_session != 0.0 && c->session > 0) {
        double boost = e->w_session * (e->cap * (1.0 - exp(-c->session / e->cap)));
        score += boost * (c->matched > 0 ? 1.0 : e->only);
        if (c->matched == 0) *jump = boost * (1.0 - e->only);
    }
    return score;
}

/* Copy slot's sums to output row n if any list gave it evidence, refining kept it and it
 * reaches the output's cut; zero its scratch unless `hold`. */
static int64_t emit(Scratch *s, int64_t slot, int64_t n, const Output *o, const Evidence *e,
                    int hold) {
    Cell *c = s->cells + slot;
    if (!c->dropped && (c->matched > 0 || c->session > 0)) {
        double jump, score = evidence_of(c, e, &jump);
        if (score + o->prior >= o->cut) { /* arrays._within_reach's test, the same floats */
            o->slots[n] = slot;
            o->evidence[n] = score;
            o->jump[n] = jump;
            o->tag_only[n] = c->tagged > 0 && c->matched == c->tagged && c->session == 0;
            n++;
        }
    }
    if (!hold) *c = (Cell){0};
    return n;
}

/* Write the reached slots ascending (a memory that got no evidence, e.g. from a zero self
 * factor, is left out) and reset the scratch (with `hold`, leave it as it is: see
 * cm_accumulate): a scan of the bitmap (a word per 64 slots) reads only the reached cells,
 * where a scan of the cells would read them all. With `o` NULL, only reset. Returns the rows
 * written. */
static int64_t collect(Scratch *s, const Output *o, const Evidence *e, int hold) {
    int64_t n = 0, words = (s->size + 63) / 64;
    for (int64_t w = 0; w < words; w++) {
        uint64_t word = s->bits[w];
        while (word) {
            int64_t slot = w * 64 + __builtin_ctzll(word);
            word &= word - 1;
            if (o)
                n = emit(s, slot, n, o, e, hold);
            else
                s->cells[slot] = (Cell){0};
        }
        if (!hold) s->bits[w] = 0;
    }
    return n;
}

/* Refining candidates list by list (arrays.py _compiled_narrowed): before a list l >= from, a
 * candidate whose evidence so far, jump, base (its prior and the largest bonus) and rest[l] (the
 * most that lists l.. add) stay below cut (theta less the margin) cannot reach the k-th best,
 * so l and the lists after it are not probed for it and it is not emitted. base NULL: no
 * refining. */
typedef struct {
    const double *base, *rest;
    double cut;
    int64_t from;
} Refine;

/* The n candidates (slots, seqs and bases, compacted in place, order kept) that can still reach
 * r->cut with lists l.. to come; the others' cells are marked dropped. Returns how many are
 * left. */
static int64_t refine(Scratch *s, int64_t l, int64_t n, int64_t *slots, int64_t *seqs,
                      double *base, const Refine *r, const Evidence *e) {
    int64_t kept = 0;
    double rest = r->rest[l];
    for (int64_t c = 0; c < n; c++) {
        if (c + ROW_AHEAD < n) __builtin_prefetch(s->cells + slots[c + ROW_AHEAD], 1);
        Cell *cell = s->cells + slots[c];
        double jump, evidence = evidence_of(cell, e, &jump);
        if (evidence + jump + base[c] + rest < r->cut) {
            cell->dropped = 1;
            continue;
        }
        slots[kept] = slots[c], seqs[kept] = seqs[c], base[kept] = base[c];
        kept++;
    }
    return kept;
}

/* The postings of list l (its members mi on). */
static int64_t postings_of(const int64_t *li, const int64_t *mi) {
    int64_t count = 0;
    for (int64_t m = 0; m < li[L_MEMBERS]; m++) count += mi[m * MEMBER_INTS + M_COUNT];
    return count;
}

/* The candidates in cand (slots, seqs, bases: a copy, compacted as refining drops some).
 * Refining reads the bases only where r->base is set. */
typedef struct {
    int64_t n, *slots, *seqs;
    double *base;
} Cand;

/* Add the postings of lists first..n_lists-1 held by the candidates, list by list (a long one probed for
 * each candidate, a short one read whole for those marked), refining them before each list of
 * at least as many postings as candidates, if the rest bound has fallen since the last time:
 * a candidate's evidence and jump only grow, so only a lower rest can drop one, and checking
 * them costs less than reading or probing such a list (not so before each of a pass's dozens
 * of short session lists). Returns 0 or a negative code. */
static int64_t add_candidates(Scratch *s, int64_t first, int64_t n_lists,
                              const int64_t *list_ints, const double *list_doubles,
                              const double *w, const int64_t *member_ints,
                              const SeqMap *map, const double *length, Cand *c,
                              const Refine *r, const Evidence *e) {
    const int64_t *mi = member_ints;
    double last = r->base && r->from < n_lists ? r->rest[r->from] : 0.0; /* the checked rest */
    uint64_t *marks = NULL; /* the candidates' seqs, made for the first member read whole */
    int64_t code = 0;
    for (int64_t l = 0; l < first; l++) mi += list_ints[l * LIST_INTS + L_MEMBERS] * MEMBER_INTS;
    for (int64_t l = first; l < n_lists && code == 0; l++) {
        const int64_t *li = list_ints + l * LIST_INTS;
        const double *ld = list_doubles + l * LIST_DOUBLES;
        if (r->base && l >= r->from && r->rest[l] < last && postings_of(li, mi) >= c->n) {
            c->n = refine(s, l, c->n, c->slots, c->seqs, c->base, r, e);
            last = r->rest[l];
        }
        for (int64_t m = 0; m < li[L_MEMBERS] && code == 0; m++, mi += MEMBER_INTS) {
            int64_t count = mi[M_COUNT];
            List list = list_of((int32_t)l, li, ld, w, mi);
            if (count > 64 * c->n) {
                probe_batched(s, &list, count, c->n, c->slots, c->seqs, length);
            } else if (count > 8 * c->n) {
                probe_member(s, &list, count, c->n, c->slots, c->seqs, length);
            } else if (map->base < 0 && !marks &&
                       !(marks = seq_marks(c->n, c->seqs, map->n_seqs))) {
                code = E_MEMORY;
            } else {
                /* the candidates refining dropped since the marks were made (or, with a
                 * direct map, since their bits were set) are still marked: their cells get
                 * sums no one reads (they are not emitted), as before */
                code = add_marked(s, &list, count, marks, map, length);
            }
        }
    }
    free(marks);
    return code;
}

/* Reset every reached cell of the scratch but the n candidates' (slots checked), whose sums
 * are kept (a held call's: see cm_accumulate); the candidates' bits are set again after. */
static void keep_only(Scratch *s, int64_t n, const int64_t *slots) {
    for (int64_t i = 0; i < n; i++) {
        if (i + ROW_AHEAD < n) __builtin_prefetch(s->cells + slots[i + ROW_AHEAD], 1);
        s->cells[slots[i]].dropped = -1; /* a flag until the scan */
    }
    for (int64_t w = 0; w < (s->size + 63) / 64; w++) {
        uint64_t word = s->bits[w];
        while (word) {
            int64_t slot = w * 64 + __builtin_ctzll(word);
            word &= word - 1;
            Cell *c = s->cells + slot;
            if (c->dropped == -1) continue;
            *c = (Cell){0};
            s->bits[w] &= ~(UINT64_C(1) << (slot & 63));
        }
    }
    for (int64_t i = 0; i < n; i++) s->cells[slots[i]].dropped = 0;
}

/* Mark the n candidates' slots in the scratch's bitmap and copy them into c (bases too, when
 * refining); with `resume`, first reset every other reached cell (keep_only). Returns 0, or a
 * negative code (a slot that is not its seq's). */
static int64_t take_candidates(Scratch *s, int64_t n, const int64_t *slots, const int64_t *seqs,
                               const SeqMap *map, const Refine *r, int resume, Cand *c) {
    size_t rows = (size_t)(n > 0 ? n : 1);
    c->n = n;
    c->slots = malloc(rows * sizeof *c->slots);
    c->seqs = malloc(rows * sizeof *c->seqs);
    c->base = malloc(rows * sizeof *c->base);
    if (!c->slots || !c->seqs || !c->base) return E_MEMORY;
    if (r->base && r->from < 0) return E_TYPE; /* add_candidates reads rest[from] */
    for (int64_t i = 0; i < n; i++) {
        int64_t slot = slots[i];
        if (slot < 0 || slot >= s->size) return E_SLOT;
    }
    if (resume) keep_only(s, n, slots);
    for (int64_t i = 0; i < n; i++) {
        if (map->base < 0 && i + ROW_AHEAD < n) {
            int64_t ahead = seqs[i + ROW_AHEAD];
            if (ahead >= 0 && ahead < map->n_seqs) __builtin_prefetch(map->slot_by_seq + ahead);
        }
        int64_t slot = slots[i], seq = seqs[i];
        if (slot < 0 || slot >= s->size || seq < 0 || seq >= map->n_seqs ||
            slot_of(map, seq) != slot)
            return E_SLOT;
        s->bits[slot >> 6] |= UINT64_C(1) << (slot & 63);
        c->slots[i] = slot, c->seqs[i] = seq, c->base[i] = r->base ? r->base[i] : 0.0;
    }
    return 0;
}

/* Sum the evidence of n_lists lists per slot: of every slot they reach (n_cand < 0), or of
 * the n_cand candidates only (their slots and seqs; a long list is then binary-searched for
 * each instead of read whole), refined list by list when cand_base is given (see Refine).
 *
 * list_ints / list_doubles: LIST_INTS / LIST_DOUBLES values per list; member_ints:
 * MEMBER_INTS per member, the members of list 0 first. weights: w_cue, w_tag, w_content,
 * w_session, session cap, session-only factor. block: seqs per block of the dense sums
 * (add_blocked). cells / bits: `size` slots, all zero (left all zero). cand_base (n_cand),
 * rest (n_lists + 1), cut, refine_from: Refine's. Output: the reached slots ascending (less
 * those refining dropped) with their evidence (the score's query-dependent part), jump and
 * tag-only flag, at most o_cap rows. Returns the number of rows, or a negative code.
 *
 * floor_cut, prior_max (every slot, without hold; else ignored): a slot whose evidence +
 * prior_max stays below floor_cut is not written (-INFINITY: none is left out). The caller
 * passes an earlier pass's k-th best score less the rounding margin (arrays.py _compiled): such
 * a memory cannot reach the k-th best, and arrays._within_reach would drop it by the same test.
 *
 * hold (every slot the lists reach, n_cand < 0): leave the reached cells' sums and bits in the
 * scratch after writing the output, for a call with `resume` to go on from (or cm_reset).
 * resume > 0 (candidates only): the scratch holds what a held call over lists 0..resume-1 left
 * (the candidates among its slots); every other cell is reset, the candidates keep their sums
 * and only lists resume.. are added to them, in the same order: the same floats as summing
 * every list for them, without reading the first lists again (arrays.py _compiled_narrowed).
 *
 * seq_base >= 0: slot = seq - seq_base for every seq (see SeqMap), slot_by_seq is not read.
 */
int64_t cm_accumulate(int64_t n_lists, const int64_t *list_ints, const double *list_doubles,
                      const int64_t *member_ints, const int64_t *slot_by_seq, int64_t n_seqs,
                      int64_t seq_base, int64_t block, const double *length,
                      const double *weights, int64_t size, Cell *cells, uint64_t *bits,
                      int64_t n_cand, const int64_t *cand_slots, const int64_t *cand_seqs,
                      const double *cand_base, const double *rest, double cut,
                      int64_t refine_from, int64_t hold, int64_t resume, double floor_cut,
                      double prior_max, int64_t *o_slots, double *o_evidence, double *o_jump,
                      uint8_t *o_tag_only, int64_t o_cap) {
    Scratch s = {cells, bits, size};
    int dense = n_cand < 0 && !hold;
    Output o = {o_slots, o_evidence, o_jump, o_tag_only, dense ? prior_max : 0.0,
                dense ? floor_cut : -INFINITY};
    Evidence e = {weights[3], weights[4], weights[5]};
    Refine r = {cand_base, rest, cut, refine_from};
    Cand c = {0, NULL, NULL, NULL};
    SeqMap map = {slot_by_seq, n_seqs, seq_base};
    int64_t touched = n_cand > 0 ? n_cand : 0, code = 0;
    if (e.w_session != 0.0 && !(e.cap > 0)) code = E_TYPE;
    if ((hold && n_cand >= 0) || resume < 0 || resume > n_lists || (resume && n_cand < 0))
        code = E_TYPE;
    if (n_cand >= 0 && code == 0)
        code = take_candidates(&s, n_cand, cand_slots, cand_seqs, &map, &r, resume > 0, &c);
    int64_t n_members = code == 0 ? check_lists(n_lists, list_ints, member_ints) : 0;
    if (n_members < 0) code = n_members;
    if (n_cand < 0 && code == 0) {
        int64_t got = add_blocked(&s, n_lists, n_members, list_ints, list_doubles, weights,
                                  member_ints, &map, length, block);
        code = got < 0 ? got : 0;
        touched = got < 0 ? touched : got;
    }
    if (n_cand >= 0 && code == 0)
        code = add_candidates(&s, resume, n_lists, list_ints, list_doubles, weights,
                              member_ints, &map, length, &c, &r, &e);
    free(c.slots), free(c.seqs), free(c.base);
    if (code == 0 && touched > o_cap) code = E_OUTPUT;
    if (code != 0) {
        collect(&s, NULL, &e, 0);
        return code;
    }
    return collect(&s, &o, &e, hold != 0);
}

/* Reset the scratch a held cm_accumulate call left (cells and bits to zero). */
void cm_reset(int64_t size, Cell *cells, uint64_t *bits) {
    Scratch s = {cells, bits, size};
    collect(&s, NULL, NULL, 0);
}

/* How many distinct slots the n_members posting lists reach together (a concept's document
 * frequency), with the same scratch (its bitmap only; left zero). Returns the count or a
 * negative code. */
/* Set the bits of the slots that the count seqs (of `width` bytes: a constant at each call
 * site, so a loop per width without a test of it per posting) reach. Returns how many bits
 * were not set yet, or a negative code. The member's fields come as arguments: read through
 * its descriptor, each was loaded again after every store to the bitmap (an int64_t may alias
 * a uint64_t). */
static inline __attribute__((always_inline)) int64_t
union_run(const void *seqs, const int width, int64_t count, const int64_t *slot_by_seq,
          int64_t n_seqs, int64_t size, uint64_t *bits) {
    int64_t touched = 0;
    for (int64_t i = 0; i < count; i++) {
        if (i + ROW_AHEAD < count) {
            int64_t ahead = seq_at(seqs, width, i + ROW_AHEAD);
            if (ahead >= 0 && ahead < n_seqs) __builtin_prefetch(slot_by_seq + ahead);
        }
        int64_t seq = seq_at(seqs, width, i), slot;
        if (seq < 0 || seq >= n_seqs) return E_SEQ;
        if ((slot = slot_by_seq[seq]) < 0 || slot >= size) return E_SLOT;
        uint64_t bit = UINT64_C(1) << (slot & 63);
        touched += !(bits[slot >> 6] & bit);
        bits[slot >> 6] |= bit;
    }
    return touched;
}

/* cm_accumulate with its arguments packed in one buffer (kernel.accumulate packs them): its 26
   integer and address arguments in order as int64 (n_lists .. o_cap, leaving out the three
   doubles), then cut, floor_cut and prior_max as doubles. One ctypes argument where ctypes
   converted 33, an object made for each (~4 us a call, some four calls a recall). */
int64_t cm_accumulate_packed(const char *packed) {
    int64_t a[26];
    double d[3];
    memcpy(a, packed, sizeof a); /* the buffer's alignment is not promised */
    memcpy(d, packed + sizeof a, sizeof d);
    return cm_accumulate(a[0], (const int64_t *)a[1], (const double *)a[2], (const int64_t *)a[3],
                         (const int64_t *)a[4], a[5], a[6], a[7], (const double *)a[8],
                         (const double *)a[9], a[10], (Cell *)a[11], (uint64_t *)a[12], a[13],
                         (const int64_t *)a[14], (const int64_t *)a[15], (const double *)a[16],
                         (const double *)a[17], d[0], a[18], a[19], a[20], d[1], d[2],
                         (int64_t *)a[21], (double *)a[22], (double *)a[23], (uint8_t *)a[24],
                         a[25]);
}

int64_t cm_union_size(int64_t n_members, const int64_t *member_ints, const int64_t *slot_by_seq,
                      int64_t n_seqs, int64_t size, Cell *cells, uint64_t *bits) {
    int64_t touched = 0, code = 0;
    (void)cells;
    for (int64_t m = 0; m < n_members && code == 0; m++) {
        const int64_t *mi = member_ints + m * MEMBER_INTS;
        const void *seqs = (const void *)(intptr_t)mi[M_SEQS];
        code = check_member(mi);
        if (code != 0) break;
        int64_t got = mi[M_WIDTH] == 4
                          ? union_run(seqs, 4, mi[M_COUNT], slot_by_seq, n_seqs, size, bits)
                          : union_run(seqs, 8, mi[M_COUNT], slot_by_seq, n_seqs, size, bits);
        code = got < 0 ? got : 0;
        touched += got < 0 ? 0 : got;
    }
    for (int64_t w = 0; w < (size + 63) / 64; w++) bits[w] = 0;
    return code != 0 ? code : touched;
}

/* Whether member mi holds seq (its seqs ascend): its index, or -1. */
static int64_t find_seq(const int64_t *mi, int64_t seq) {
    const void *seqs = (const void *)(intptr_t)mi[M_SEQS];
    int64_t width = mi[M_WIDTH], lo = lower_bound(seqs, width, mi[M_COUNT], seq);
    return lo < mi[M_COUNT] && seq_at(seqs, width, lo) == seq ? lo : -1;
}

/* Add list l's gain of each of the n memories that one of its members holds (each once). */
static void add_evidence(const int64_t *li, const double *ld, const int64_t *members, int64_t n,
                         const int64_t *seqs, const double *lengths, double *o_raw,
                         uint8_t *o_held) {
    int64_t signal = li[L_SIGNAL];
    Gain g = gain_of(ld);
    for (int64_t c = 0; c < n; c++) {
        for (int64_t m = 0; m < li[L_MEMBERS]; m++) {
            const int64_t *mi = members + m * MEMBER_INTS;
            int64_t at = find_seq(mi, seqs[c]);
            if (at < 0) continue;
            double gain = li[L_GAIN] == GAIN_TERM
                              ? term_gain(&g, value_at((const void *)(intptr_t)mi[M_VALUES],
                                                       mi[M_VALUE_TYPE], at),
                                          lengths[c])
                              : constant_gain(&g, li[L_SPECIAL], seqs[c]);
            o_raw[c * 4 + signal] += gain;
            o_held[c] |= (uint8_t)(1 << signal);
            break;
        }
    }
}

/* The exact raw evidence of n memories (their seqs and lengths): per memory and signal (cue,
 * tag, content, session), the sum of the gains of the lists that hold it, added in the order
 * `order` gives (numbers of described lists), as the Python pass (topk.py) adds them, so the
 * sums are the same floats; and a bit per signal that some list held it. Each list is
 * binary-searched for each memory. o_raw (4 per memory) and o_held (1) are zeroed here.
 * Returns 0 or a negative code. */
int64_t cm_evidence(int64_t n_lists, const int64_t *list_ints, const double *list_doubles,
                    const int64_t *member_ints, int64_t n_order, const int64_t *order, int64_t n,
                    const int64_t *seqs, const double *lengths, double *o_raw, uint8_t *o_held) {
    int64_t *first = malloc((size_t)(n_lists > 0 ? n_lists : 1) * sizeof *first), at = 0;
    if (!first) return E_MEMORY;
    int64_t code = n_lists < 0 || n < 0 ? E_TYPE : check_lists(n_lists, list_ints, member_ints);
    code = code < 0 ? code : 0;
    for (int64_t l = 0; l < n_lists && code == 0; l++) {
        first[l] = at;
        at += list_ints[l * LIST_INTS + L_MEMBERS];
    }
    for (int64_t i = 0; code == 0 && i < n_order; i++)
        if (order[i] < 0 || order[i] >= n_lists) code = E_TYPE;
    for (int64_t c = 0; c < 4 * n; c++) o_raw[c] = 0.0;
    for (int64_t c = 0; c < n; c++) o_held[c] = 0;
    for (int64_t i = 0; code == 0 && i < n_order; i++) {
        int64_t l = order[i];
        add_evidence(list_ints + l * LIST_INTS, list_doubles + l * LIST_DOUBLES,
                     member_ints + first[l] * MEMBER_INTS, n, seqs, lengths, o_raw, o_held);
    }
    free(first);
    return code;
}

/* The seq of a slot: seq_at[slot], or seq_base + slot when seq_base >= 0 (see SeqMap). */
static inline int64_t seq_of(const int64_t *seq_at, int64_t seq_base, int64_t slot) {
    return seq_base >= 0 ? seq_base + slot : seq_at[slot];
}

/* A row of cm_top's heap: its key and sequence number (its place in the order). */
typedef struct {
    double key;
    int64_t seq;
} Ranked;

/* Whether a ranks before b: the larger key first, ties by the smaller seq (a total order: seqs
 * are distinct). */
static int before(const Ranked *a, const Ranked *b) {
    return a->key > b->key || (a->key == b->key && a->seq < b->seq);
}

/* Restore heap order from node i down (the root is the row that ranks last). */
static void sift_down(Ranked *heap, int64_t n, int64_t i) {
    for (;;) {
        int64_t last = i, l = 2 * i + 1, r = l + 1;
        if (l < n && before(heap + last, heap + l)) last = l;
        if (r < n && before(heap + last, heap + r)) last = r;
        if (last == i) return;
        Ranked t = heap[i];
        heap[i] = heap[last], heap[last] = t;
        i = last;
    }
}

/* The heap of the best m rows so far (held of them) given one more row; returns how many it
 * holds now. */
static int64_t offer(Ranked *heap, int64_t held, int64_t m, Ranked row) {
    if (held < m) { /* sift up */
        int64_t at = held++;
        while (at > 0 && before(heap + (at - 1) / 2, &row)) {
            heap[at] = heap[(at - 1) / 2];
            at = (at - 1) / 2;
        }
        heap[at] = row;
    } else if (before(&row, heap)) {
        heap[0] = row;
        sift_down(heap, held, 0);
    }
    return held;
}

/* The heap's rows written to o_seq and o_key best first, the heap freed; returns their count. */
static int64_t drained(Ranked *heap, int64_t held, int64_t *o_seq, double *o_key) {
    for (int64_t left = held; left > 0; left--) { /* the last-ranked out first: fill backwards */
        o_seq[left - 1] = heap[0].seq, o_key[left - 1] = heap[0].key;
        heap[0] = heap[left - 1];
        sift_down(heap, left - 1, 0);
    }
    free(heap);
    return held;
}

/* The best m of the n rows not skipped (skip NULL: none), in order: by key descending, ties
 * by sequence number (seq_of a row's slot) ascending; their seqs and keys written to o_seq and
 * o_key. A heap of m rows keeps the best so far, its root the one that ranks last: one pass
 * over the keys, where NumPy's argpartition, gathers and lexsort made a dozen calls and
 * arrays. Only the slots of rows that may enter the heap are read (and checked). Returns how
 * many rows are written (min(m, rows not skipped)) or a negative code. */
int64_t cm_top(int64_t n, const double *key, const uint8_t *skip, const int64_t *slots,
               int64_t size, const int64_t *seq_at, int64_t seq_base, int64_t m, int64_t *o_seq,
               double *o_key) {
    if (m < 0) return E_TYPE;
    Ranked *heap = malloc((size_t)(m > 0 ? m : 1) * sizeof *heap);
    if (!heap) return E_MEMORY;
    int64_t held = 0;
    for (int64_t i = 0; i < n && m > 0; i++) {
        int64_t ahead = seq_base < 0 && i + ROW_AHEAD < n ? i + ROW_AHEAD : -1;
        if (ahead >= 0 && (held < m || key[ahead] >= heap[0].key)) {
            ahead = slots[ahead];
            if (ahead >= 0 && ahead < size) __builtin_prefetch(seq_at + ahead);
        }
        if (skip && skip[i]) continue;
        /* a row below a full heap's last cannot enter: its seq is not read (a random access
         * into seq_at, a cache miss per row in a large namespace) */
        if (held == m && key[i] < heap[0].key) continue;
        int64_t slot = slots[i];
        if (slot < 0 || slot >= size) {
            free(heap);
            return E_SLOT;
        }
        held = offer(heap, held, m, (Ranked){key[i], seq_of(seq_at, seq_base, slot)});
    }
    return drained(heap, held, o_seq, o_key);
}

/* cm_rank's and cm_bounds' scoring parameters (arrays.py _priors without a bonus or frequency
 * penalty). */
enum { R_NOW, R_NEG_PER_SECOND, R_W_RECENCY, R_PRIOR_MAX, R_CUT, RANK_DOUBLES };

/* The prior of the memory at `slot` into *prior: w_recency * 2^((now - updated) * -per_second)
 * (the age clamped at 0), plus its type's bonus (type_bonus[type_code]; the one bonus of all
 * types when n_types is 1, its type code not read) -- the same operations in the same order as
 * arrays.py _priors, which takes this very function (cm_priors) whenever the library is built,
 * so the same floats. Returns 0, or E_TYPE for a type code without a bonus. */
static int prior_at(int64_t slot, const double *updated, const int32_t *type_code,
                    const double *type_bonus, int64_t n_types, const double *p, double *prior) {
    int32_t code = n_types == 1 ? 0 : type_code[slot];
    if (code < 0 || code >= n_types) return E_TYPE;
    double value = type_bonus[code];
    if (p[R_W_RECENCY] != 0.0) {
        double age = p[R_NOW] - updated[slot];
        age = age < 0.0 ? 0.0 : age; /* np.maximum(age, 0.0) */
        value = exp2(age * p[R_NEG_PER_SECOND]) * p[R_W_RECENCY] + value;
    }
    *prior = value;
    return 0;
}

/* Each of the n rows' prior (prior_at) in o_prior, for arrays.py _priors: libm's exp2 for the
 * NumPy path too, so that both paths take the same floats on any machine. NumPy's own exp2 is a
 * SIMD routine on a CPU with AVX-512, 1 ulp apart from libm's on ~5% of inputs (stop 29: the
 * differential test of cm_rank found a row ranked apart by it). Returns 0, or a negative code. */
int64_t cm_priors(int64_t n, const int64_t *slots, int64_t size, const double *updated,
                  const int32_t *type_code, const double *type_bonus, int64_t n_types,
                  const double *p, double *o_prior) {
    if (n_types < 1) return E_TYPE;
    for (int64_t i = 0; i < n; i++) {
        if (i + ROW_AHEAD < n) {
            int64_t ahead = slots[i + ROW_AHEAD];
            if (ahead >= 0 && ahead < size) {
                __builtin_prefetch(updated + ahead);
                if (n_types != 1) __builtin_prefetch(type_code + ahead);
            }
        }
        int64_t slot = slots[i];
        if (slot < 0 || slot >= size) return E_SLOT;
        int code = prior_at(slot, updated, type_code, type_bonus, n_types, p, o_prior + i);
        if (code != 0) return code;
    }
    return 0;
}

/* The best m rows not skipped by score, in cm_top's order, where a row's score is its evidence
 * plus its prior (prior_at): the same floats as arrays.py _scores. Rows scoring below the cut
 * are left out. A row whose evidence plus the largest prior cannot enter a full heap is passed
 * over without its prior computed (its slot not read): at 100k memories a dense pass has ~30k
 * rows. Returns how many rows are written, or a negative code. */
int64_t cm_rank(int64_t n, const double *evidence, const uint8_t *skip, const int64_t *slots,
                int64_t size, const int64_t *seq_at, int64_t seq_base, const double *updated,
                const int32_t *type_code, const double *type_bonus, int64_t n_types,
                const double *p, int64_t m, int64_t *o_seq, double *o_key) {
    if (m < 0 || n_types < 1) return E_TYPE;
    Ranked *heap = malloc((size_t)(m > 0 ? m : 1) * sizeof *heap);
    if (!heap) return E_MEMORY;
    int64_t held = 0;
    for (int64_t i = 0; i < n && m > 0; i++) {
        /* only a row that may enter the heap is read: the same test, ahead */
        int64_t ahead = i + ROW_AHEAD < n ? i + ROW_AHEAD : -1;
        if (ahead >= 0 && (held < m || evidence[ahead] + p[R_PRIOR_MAX] >= heap[0].key)) {
            ahead = slots[ahead];
            if (ahead >= 0 && ahead < size) {
                __builtin_prefetch(updated + ahead);
                if (n_types != 1) __builtin_prefetch(type_code + ahead);
                if (seq_base < 0) __builtin_prefetch(seq_at + ahead);
            }
        }
        if (skip && skip[i]) continue;
        if (held == m && evidence[i] + p[R_PRIOR_MAX] < heap[0].key) continue;
        int64_t slot = slots[i];
        double prior;
        int code = slot < 0 || slot >= size
                       ? E_SLOT
                       : prior_at(slot, updated, type_code, type_bonus, n_types, p, &prior);
        if (code != 0) {
            free(heap);
            return code;
        }
        double score = evidence[i] + prior;
        if (score < p[R_CUT]) continue;
        held = offer(heap, held, m, (Ranked){score, seq_of(seq_at, seq_base, slot)});
    }
    return drained(heap, held, o_seq, o_key);
}

/* What a narrowing check asks of the n rows the lists taken reach (arrays.py _bounds): each
 * row's prior (prior_at) in o_prior and lower bound, its evidence plus that prior, in o_lower
 * (the same floats as arrays.py _priors and the sum _taken made), and the best m rows not
 * skipped by lower bound, in cm_top's order, in o_seq and o_key (cm_top of o_lower). Where
 * NumPy made some ten arrays of the rows. p: cm_rank's parameters (the largest prior and the
 * cut are not read). Returns how many rows are written to o_seq and o_key, or a negative code. */
int64_t cm_bounds(int64_t n, const double *evidence, const uint8_t *skip, const int64_t *slots,
                  int64_t size, const int64_t *seq_at, int64_t seq_base, const double *updated,
                  const int32_t *type_code, const double *type_bonus, int64_t n_types,
                  const double *p, int64_t m, double *o_prior, double *o_lower, int64_t *o_seq,
                  double *o_key) {
    if (m < 0) return E_TYPE;
    int64_t code = cm_priors(n, slots, size, updated, type_code, type_bonus, n_types, p, o_prior);
    if (code != 0) return code;
    for (int64_t i = 0; i < n; i++) o_lower[i] = evidence[i] + o_prior[i];
    return cm_top(n, o_lower, skip, slots, size, seq_at, seq_base, m, o_seq, o_key);
}

/* cm_keep's parameters. */
enum { K_REST, K_BONUS_MAX, K_CUT, KEEP_DOUBLES };

/* The rows of a narrowing check that can still reach theta (arrays.py _kept_by_kernel): a row's
 * upper bound is its lower bound plus the most the lists not taken add (rest), its jump (what
 * matching the query later adds to a session-only memory) and the largest bonus, added in that
 * order as arrays.py _upper adds them; the rows whose upper bound reaches the cut (theta less
 * the rounding margin) are kept. Their slots, seqs and base (prior plus the largest bonus,
 * Refine's) are written in row order to o_slots, o_seqs and o_base. Returns how many rows are
 * kept, or a negative code. */
int64_t cm_keep(int64_t n, const double *lower, const double *jump, const double *prior,
                const int64_t *slots, int64_t size, const int64_t *seq_at, int64_t seq_base,
                const double *p, int64_t *o_slots, int64_t *o_seqs, double *o_base) {
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        if (seq_base < 0 && i + ROW_AHEAD < n) {
            int64_t ahead = slots[i + ROW_AHEAD];
            if (ahead >= 0 && ahead < size) __builtin_prefetch(seq_at + ahead);
        }
        double upper = lower[i] + p[K_REST];
        upper += jump[i];
        upper += p[K_BONUS_MAX];
        if (!(upper >= p[K_CUT])) continue;
        int64_t slot = slots[i];
        if (slot < 0 || slot >= size) return E_SLOT;
        o_slots[kept] = slot, o_seqs[kept] = seq_of(seq_at, seq_base, slot);
        o_base[kept++] = prior[i] + p[K_BONUS_MAX];
    }
    return kept;
}

/* cm_rank, cm_bounds, cm_keep and cm_evidence with their arguments packed as int64 (addresses
   as integers), in their order (kernel._call packs them): one ctypes argument where ctypes
   made an object for each of 11-17, ~1.5 us a call and some eight calls a recall. */
#define UNPACKED(count)                                                                       \
    int64_t a[count];                                                                         \
    memcpy(a, packed, sizeof a) /* the buffer's alignment is not promised */

int64_t cm_rank_packed(const char *packed) {
    UNPACKED(15);
    return cm_rank(a[0], (const double *)a[1], (const uint8_t *)a[2], (const int64_t *)a[3], a[4],
                   (const int64_t *)a[5], a[6], (const double *)a[7], (const int32_t *)a[8],
                   (const double *)a[9], a[10], (const double *)a[11], a[12], (int64_t *)a[13],
                   (double *)a[14]);
}

int64_t cm_bounds_packed(const char *packed) {
    UNPACKED(17);
    return cm_bounds(a[0], (const double *)a[1], (const uint8_t *)a[2], (const int64_t *)a[3],
                     a[4], (const int64_t *)a[5], a[6], (const double *)a[7],
                     (const int32_t *)a[8], (const double *)a[9], a[10], (const double *)a[11],
                     a[12], (double *)a[13], (double *)a[14], (int64_t *)a[15], (double *)a[16]);
}

int64_t cm_keep_packed(const char *packed) {
    UNPACKED(12);
    return cm_keep(a[0], (const double *)a[1], (const double *)a[2], (const double *)a[3],
                   (const int64_t *)a[4], a[5], (const int64_t *)a[6], a[7], (const double *)a[8],
                   (int64_t *)a[9], (int64_t *)a[10], (double *)a[11]);
}

int64_t cm_evidence_packed(const char *packed) {
    UNPACKED(11);
    return cm_evidence(a[0], (const int64_t *)a[1], (const double *)a[2], (const int64_t *)a[3],
                       a[4], (const int64_t *)a[5], a[6], (const int64_t *)a[7],
                       (const double *)a[8], (double *)a[9], (uint8_t *)a[10]);
}
