/* The ASCII fast path of the text rules (cuemap_integrations/text.py), as a CPython extension.
 *
 * Each function returns exactly what its Python reference in text.py returns for ASCII input
 * (tests/core/test_textc.py compares them): text.py stays the reference and the fallback, and
 * picks these once at import (CUEMAP_TEXTC=0 keeps the Python code). Non-ASCII text is refused
 * with ValueError: the Python code handles it.
 *
 *   porter(word)                  text._porter: Porter stemmer (reference implementation)
 *   drop_apostrophes(text)        text._drop_apostrophes
 *   latin_tokens(text)            text._latin_tokens (apostrophes dropped, identifiers found)
 *   normalize(text)               text.normalize
 *   stems_terms(tokens, stop, stems)   text.stems_and_terms, from the text's tokens
 *   salient(tokens, stop, calendar, web)   text._salient_cues, from the text's tokens
 *   name_cues(text, stop, calendar, units) the cues of text._capitalized_runs (no "/" in text)
 *   identifier_cues(tokens, stop)      text._identifier_cues, from the text's tokens
 *   first_valid(buckets, limit, worded)   text._first_valid (any str)
 *   quoted_cues(text, stop)            text._quoted_cues
 *   derive_keys(content, text, rest, names, hosts, numbers, dates, limit, stop, calendar,
 *               units, web, stems, vocab)   text.derive_cues_and_keys: the cues and the stems
 *                                      (those in vocab, unless None) and terms of ASCII
 *                                      content in one call
 *   derive_plain(content, limit, stop, calendar, units, web, stems, vocab)   the same,
 *                                      normalizing content itself, for content without a
 *                                      digit, "`" or "/"
 *   pack_cues(cues, held, codes, names, max_codes)   recordtable._packed_cues (any str)
 *   flush_postings(pending, tables, kinds)   index.NamespaceIndex.flush's postings: a batch's
 *                                      deferred postings grouped by key and appended to the
 *                                      tables (any keys; index.py's _flush_reference is the
 *                                      reference, and what this leaves to the tables' extend)
 *   id_slot(slots, ids, memory_id)     keytables._id_slot: SeqOf's probe
 *   digest_slot(slots, digests, digest)   keytables._digest_slot: SeqsByDigest's probe
 *   record_rows(records, fields, row_of, strings_json, metadata_json)   store._py_record_rows:
 *                                      the SQLite parameters of a batch's records (any str)
 *   insert_groups(rows, size, sets, twin)   store._py_insert_groups: each full group of rows
 *                                      as one multi-row INSERT's parameters, shared values once
 *   packed_row(layout, reference, packed, record, codes, kinds, room)   recordtable._py_packed_row:
 *                                      a record's shared kind and packed fields (any str)
 *   record_of(layout, table, seq)      recordtable._py_record_at: the record of a packed row
 *   screen_table(keys), screen(text, table)   redact._triggered_rules: the secret rules of
 *                                      which a trigger occurs in ASCII text
 *   new_record(item, layout)          core.CueMap._build of the usual add_many item
 *   holding(held, seqs)               postings._py_holding: the seqs an array of them holds
 *   unpacked_cues(packed, start, stop, names)   recordtable._py_unpacked_cues: a packed row's cues
 *   plainly_clean(records, held, clean_keys, scalars, metadata_clean)
 *                                      redact._py_plainly_clean_records: which records of a
 *                                      batch redaction returns as they are
 *   index_cues_of(records, keys, derived, terms, keys_type, expand)
 *                                      textkeys.TextMemo._py_index_cues_of: a batch's index
 *                                      cues, the derived ones as they are
 *   content_digests(namespaces, texts, reference)   lifecycle._py_content_digests: each
 *                                      pair's BLAKE2b-128 digest (any str)
 *   turns(records, event, keys, thread_of)   threads._py_turns: which records of a batch
 *                                      are transcript turns
 *
 * Every index is checked against its buffer's length; buffers are sized from the input.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#define IS_UPPER(c) ((c) >= 'A' && (c) <= 'Z')
#define IS_LOWER(c) ((c) >= 'a' && (c) <= 'z')
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')

/* A byte's classes, one load: the scans test every byte of a text, and IS_AW as four range
 * tests was most of identifier_end and name_token_end (~4 % of derive_plain). Filled by
 * fill_classes at import. */
enum {
    C_UPPER = 1,
    C_LOWER = 2,
    C_DIGIT = 4,
    C_UNDER = 8,   /* "_" */
    C_SEP = 16,    /* - . : @ (the separators of identifiers and names but "/") */
    C_SLASH = 32,  /* "/" */
    C_TICK = 64,   /* "`" */
    C_BLANK = 128, /* what normalize turns into a space: a control character or a space */
};
#define C_ALNUM (C_UPPER | C_LOWER | C_DIGIT)
#define C_AW (C_ALNUM | C_UNDER)
static unsigned char CLASS[256];
#define CLS(c) CLASS[(unsigned char)(c)]

static void fill_classes(void) {
    for (int c = 0; c < 256; c++) {
        CLASS[c] = (unsigned char)((IS_UPPER(c) ? C_UPPER : 0) | (IS_LOWER(c) ? C_LOWER : 0) |
                                   (IS_DIGIT(c) ? C_DIGIT : 0) | (c == '_' ? C_UNDER : 0) |
                                   (c == '-' || c == '.' || c == ':' || c == '@' ? C_SEP : 0) |
                                   (c == '/' ? C_SLASH : 0) | (c == '`' ? C_TICK : 0) |
                                   (c <= ' ' || c == 0x7f ? C_BLANK : 0));
    }
}

#define IS_LETTER(c) ((CLS(c) & (C_UPPER | C_LOWER)) != 0)
#define IS_ALNUM(c) ((CLS(c) & C_ALNUM) != 0)
#define IS_AW(c) ((CLS(c) & C_AW) != 0) /* text._AW: an ASCII word character */
#define IS_ID_SEP(c) ((CLS(c) & (C_SEP | C_SLASH)) != 0)
#define IS_NAME_SEP(c) ((CLS(c) & C_SEP) != 0)
#define IS_PART_SEP(c) ((CLS(c) & (C_SEP | C_UNDER)) != 0)

/* ---------------------------------------------------------------------------------------- */
/* Arguments and results                                                                     */
/* ---------------------------------------------------------------------------------------- */

/* The bytes of an ASCII str; -1 with TypeError or ValueError otherwise. */
static int ascii_arg(PyObject *obj, const char **data, Py_ssize_t *size) {
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "expected str, got %.80s", Py_TYPE(obj)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(obj) < 0) return -1;
#endif
    if (!PyUnicode_IS_ASCII(obj)) {
        PyErr_SetString(PyExc_ValueError, "ASCII text only (text.py handles the rest)");
        return -1;
    }
    *data = (const char *)PyUnicode_1BYTE_DATA(obj);
    *size = PyUnicode_GET_LENGTH(obj);
    return 0;
}

static int set_arg(PyObject *obj, const char *name) {
    if (!PyAnySet_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a set or frozenset, got %.80s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

/* A str's hash without a call when it is cached (defined with flush_postings, below): a call
 * of PyObject_Hash for each stem and cue was ~4 % of derive_plain. */
static Py_hash_t key_hash(PyObject *key);

static uint64_t load64(const char *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

static uint64_t load32(const char *p) {
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

/* A new ASCII str of data[0:size]. */
static PyObject *ascii_str(const char *data, Py_ssize_t size) {
    PyObject *out = PyUnicode_New(size, 127);
    if (out != NULL && size > 0) memcpy(PyUnicode_1BYTE_DATA(out), data, (size_t)size);
    return out;
}

/* Append a new ASCII str of data[0:size] to list; -1 on error. */
static int append_str(PyObject *list, const char *data, Py_ssize_t size) {
    PyObject *item = ascii_str(data, size);
    if (item == NULL) return -1;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Porter stemmer: text._porter, step by step (the same rules in the same order)               */
/* ---------------------------------------------------------------------------------------- */

/* text._shape of w[0:n] into s: 'v' or 'c' per letter (y is a vowel after a consonant). */
static void shape(const char *w, Py_ssize_t n, char *s) {
    for (Py_ssize_t i = 0; i < n; i++) {
        char ch = w[i];
        if (ch == 'y')
            s[i] = (i > 0 && s[i - 1] == 'c') ? 'v' : 'c';
        else
            s[i] = (ch == 'a' || ch == 'e' || ch == 'i' || ch == 'o' || ch == 'u') ? 'v' : 'c';
    }
}

static Py_ssize_t measure(const char *w, Py_ssize_t n, char *s) {
    Py_ssize_t m = 0;
    shape(w, n, s);
    for (Py_ssize_t i = 1; i < n; i++)
        if (s[i - 1] == 'v' && s[i] == 'c') m++;
    return m;
}

static int has_vowel(const char *w, Py_ssize_t n, char *s) {
    shape(w, n, s);
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] == 'v') return 1;
    return 0;
}

/* Whether w[0:n] ends with suffix[0:k]; the last letter first, which rules most out. */
static int ends_with(const char *w, Py_ssize_t n, const char *suffix, Py_ssize_t k) {
    return n >= k && w[n - 1] == suffix[k - 1] && memcmp(w + n - k, suffix, (size_t)k) == 0;
}

#define ends(w, n, literal) ends_with((w), (n), (literal), (Py_ssize_t)sizeof(literal) - 1)

static int ends_double_consonant(const char *w, Py_ssize_t n, char *s) {
    if (n < 2 || w[n - 1] != w[n - 2]) return 0;
    shape(w, n, s);
    return s[n - 1] == 'c';
}

static int ends_cvc(const char *w, Py_ssize_t n, char *s) {
    if (n < 3 || w[n - 1] == 'w' || w[n - 1] == 'x' || w[n - 1] == 'y') return 0;
    shape(w, n, s);
    return s[n - 3] == 'c' && s[n - 2] == 'v' && s[n - 1] == 'c';
}

static void step1a(char *w, Py_ssize_t *n) {
    if (ends(w, *n, "sses") || ends(w, *n, "ies"))
        *n -= 2;
    else if (ends(w, *n, "s") && !ends(w, *n, "ss"))
        *n -= 1;
}

/* The buffer holds the original word, so adding one "e" after removing 2+ letters fits. */
static void step1b_repair(char *w, Py_ssize_t *n, char *s) {
    if (ends(w, *n, "at") || ends(w, *n, "bl") || ends(w, *n, "iz")) {
        w[(*n)++] = 'e';
    } else if (ends_double_consonant(w, *n, s)) {
        char last = w[*n - 1];
        if (last != 'l' && last != 's' && last != 'z') *n -= 1;
    } else if (measure(w, *n, s) == 1 && ends_cvc(w, *n, s)) {
        w[(*n)++] = 'e';
    }
}

static void step1b(char *w, Py_ssize_t *n, char *s) {
    if (ends(w, *n, "eed")) {
        if (measure(w, *n - 3, s) > 0) *n -= 1;
        return;
    }
    if (ends(w, *n, "ed") && has_vowel(w, *n - 2, s)) {
        *n -= 2;
        step1b_repair(w, n, s);
    } else if (ends(w, *n, "ing") && has_vowel(w, *n - 3, s)) {
        *n -= 3;
        step1b_repair(w, n, s);
    }
}

static void step1c(char *w, Py_ssize_t *n, char *s) {
    if (ends(w, *n, "y") && has_vowel(w, *n - 1, s)) w[*n - 1] = 'i';
}

/* A suffix and its replacement with their lengths (a strlen of each rule's tried was ~half
 * of the stemmer, ~3 % of derive_plain with the memo's misses). */
typedef struct {
    const char *suffix;
    Py_ssize_t size;
    const char *replacement;
    Py_ssize_t replaced;
} Rule;

#define RULE(suffix, replacement) \
    {suffix, (Py_ssize_t)sizeof(suffix) - 1, replacement, (Py_ssize_t)sizeof(replacement) - 1}

static const Rule STEP2[] = {
    RULE("ational", "ate"),  RULE("tional", "tion"),  RULE("enci", "ence"),
    RULE("anci", "ance"),    RULE("izer", "ize"),     RULE("bli", "ble"),
    RULE("alli", "al"),      RULE("entli", "ent"),    RULE("eli", "e"),
    RULE("ousli", "ous"),    RULE("ization", "ize"),  RULE("ation", "ate"),
    RULE("ator", "ate"),     RULE("alism", "al"),     RULE("iveness", "ive"),
    RULE("fulness", "ful"),  RULE("ousness", "ous"),  RULE("aliti", "al"),
    RULE("iviti", "ive"),    RULE("biliti", "ble"),   RULE("logi", "log"),
    {NULL, 0, NULL, 0},
};
static const Rule STEP3[] = {
    RULE("icate", "ic"),  RULE("ative", ""),    RULE("alize", "al"),
    RULE("iciti", "ic"),  RULE("ical", "ic"),   RULE("ful", ""),
    RULE("ness", ""),     {NULL, 0, NULL, 0},
};
/* step 4 removes its suffix (the replacement is unused) */
static const Rule STEP4[] = {
    RULE("al", ""),      RULE("ance", ""),    RULE("ence", ""),
    RULE("er", ""),      RULE("ic", ""),      RULE("able", ""),
    RULE("ible", ""),    RULE("ant", ""),     RULE("ement", ""),
    RULE("ment", ""),    RULE("ent", ""),     RULE("ion", ""),
    RULE("ou", ""),      RULE("ism", ""),     RULE("ate", ""),
    RULE("iti", ""),     RULE("ous", ""),     RULE("ive", ""),
    RULE("ize", ""),     {NULL, 0, NULL, 0},
};

/* The first rule whose suffix matches decides, even when its (m > 0) condition fails. Every
 * replacement is no longer than its suffix, so the word never grows. */
static void replace_suffix(char *w, Py_ssize_t *n, char *s, const Rule *rules) {
    for (const Rule *rule = rules; rule->suffix != NULL; rule++) {
        if (!ends_with(w, *n, rule->suffix, rule->size)) continue;
        Py_ssize_t base = *n - rule->size;
        if (measure(w, base, s) > 0) {
            memcpy(w + base, rule->replacement, (size_t)rule->replaced);
            *n = base + rule->replaced;
        }
        return;
    }
}

static void step4(char *w, Py_ssize_t *n, char *s) {
    for (const Rule *rule = STEP4; rule->suffix != NULL; rule++) {
        if (!ends_with(w, *n, rule->suffix, rule->size)) continue;
        Py_ssize_t base = *n - rule->size;
        int st = base > 0 && (w[base - 1] == 's' || w[base - 1] == 't');
        if (rule->size == 3 && memcmp(rule->suffix, "ion", 3) == 0 && !st) return;
        if (measure(w, base, s) > 1) *n = base;
        return;
    }
}

static void step5(char *w, Py_ssize_t *n, char *s) {
    if (ends(w, *n, "e")) {
        Py_ssize_t m = measure(w, *n - 1, s);
        if (m > 1 || (m == 1 && !ends_cvc(w, *n - 1, s))) *n -= 1;
    }
    if (ends(w, *n, "ll") && measure(w, *n, s) > 1) *n -= 1;
}

static PyObject *textc_porter(PyObject *self, PyObject *word) {
    const char *data;
    Py_ssize_t n;
    if (!PyUnicode_Check(word)) {
        PyErr_Format(PyExc_TypeError, "expected str, got %.80s", Py_TYPE(word)->tp_name);
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(word) < 0) return NULL;
#endif
    n = PyUnicode_GET_LENGTH(word);
    if (n < 3 || !PyUnicode_IS_ASCII(word)) return Py_NewRef(word); /* not [a-z]{3,}: as is */
    data = (const char *)PyUnicode_1BYTE_DATA(word);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!IS_LOWER(data[i])) return Py_NewRef(word);
    char *buffer = PyMem_Malloc((size_t)n * 2);
    if (buffer == NULL) return PyErr_NoMemory();
    char *w = buffer, *s = buffer + n; /* the word, then its shape scratch */
    Py_ssize_t size = n;
    memcpy(w, data, (size_t)n);
    step1a(w, &size);
    step1b(w, &size, s);
    step1c(w, &size, s);
    replace_suffix(w, &size, s, STEP2);
    replace_suffix(w, &size, s, STEP3);
    step4(w, &size, s);
    step5(w, &size, s);
    PyObject *out = (size == n && memcmp(w, data, (size_t)n) == 0) ? Py_NewRef(word)
                                                                    : ascii_str(w, size);
    PyMem_Free(buffer);
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* Apostrophes and identifiers                                                               */
/* ---------------------------------------------------------------------------------------- */

/* Whether text._ASCII_APOS_RE matches at i: a letter after "<word char>'" with no word
 * character after it, or a letter with no word character before it and "'<word char>" after. */
static int apostrophe_letter(const char *t, Py_ssize_t n, Py_ssize_t i) {
    if (!IS_LETTER(t[i])) return 0;
    if (i >= 2 && t[i - 1] == '\'' && IS_AW(t[i - 2]) && (i + 1 >= n || !IS_AW(t[i + 1])))
        return 1;
    return (i == 0 || !IS_AW(t[i - 1])) && i + 2 < n && t[i + 1] == '\'' && IS_AW(t[i + 2]);
}

/* t without its apostrophe letters into out (room for n bytes); the new length. Only a byte
 * next to an apostrophe can be one, so the runs between apostrophes are copied whole (memchr
 * finds the next): testing every byte of a text with one "I'm" was ~2 % of a bulk ingest. */
static Py_ssize_t drop_into(const char *t, Py_ssize_t n, char *out) {
    Py_ssize_t m = 0, done = 0; /* t[0:done] is decided */
    const char *q;
    for (Py_ssize_t from = 0; (q = memchr(t + from, '\'', (size_t)(n - from))) != NULL;) {
        Py_ssize_t p = q - t, start = p > done ? p - 1 : done, end = p + 2 < n ? p + 2 : n;
        memcpy(out + m, t + done, (size_t)(start - done));
        m += start - done;
        for (Py_ssize_t i = start; i < end; i++)
            if (!apostrophe_letter(t, n, i)) out[m++] = t[i];
        done = end;
        from = p + 1; /* an apostrophe at p + 1 makes p + 2 a candidate too */
    }
    memcpy(out + m, t + done, (size_t)(n - done));
    return m + n - done;
}

static PyObject *textc_drop_apostrophes(PyObject *self, PyObject *text) {
    const char *t;
    Py_ssize_t n;
    if (ascii_arg(text, &t, &n) < 0) return NULL;
    if (memchr(t, '\'', (size_t)n) == NULL) return Py_NewRef(text);
    char *buffer = PyMem_Malloc((size_t)n + 1);
    if (buffer == NULL) return PyErr_NoMemory();
    Py_ssize_t m = drop_into(t, n, buffer);
    PyObject *out = m == n ? Py_NewRef(text) : ascii_str(buffer, m);
    PyMem_Free(buffer);
    return out;
}

/* End of the text._ASCII_ID_RE match at i, or -1 when none starts there. An optional "/"
 * (not after a word character, ":" or "/"), word characters, then separator + word runs.
 * *classes: the classes (C_*) of the match's bytes, or'ed. Inlined in its loops (a call per
 * token was ~2 % of derive_plain). */
static inline Py_ALWAYS_INLINE Py_ssize_t identifier_end(const char *d, Py_ssize_t m,
                                                         Py_ssize_t i, unsigned *classes) {
    Py_ssize_t j;
    unsigned seen = CLS(d[i]), c;
    if (d[i] == '/') {
        if (i > 0 && (IS_AW(d[i - 1]) || d[i - 1] == ':' || d[i - 1] == '/')) return -1;
        if (i + 1 >= m || !IS_AW(d[i + 1])) return -1;
        j = i + 1;
    } else if (seen & C_AW) {
        j = i + 1;
    } else {
        return -1;
    }
    for (;;) {
        while (j < m && ((c = CLS(d[j])) & C_AW)) {
            seen |= c;
            j++;
        }
        if (!(j + 1 < m && IS_ID_SEP(d[j]) && IS_AW(d[j + 1]))) break;
        seen |= CLS(d[j++]);
    }
    *classes = seen;
    return j;
}

/* The tokens of t[0:n] (text._latin_tokens of ASCII text): a new tuple. */
static PyObject *tokens_of(const char *t, Py_ssize_t n) {
    char *d = PyMem_Malloc((size_t)n + 1);
    if (d == NULL) return PyErr_NoMemory();
    Py_ssize_t m = drop_into(t, n, d);
    PyObject *out = PyList_New(0);
    if (out == NULL) goto fail;
    unsigned classes;
    for (Py_ssize_t i = 0; i < m;) {
        Py_ssize_t end = identifier_end(d, m, i, &classes);
        if (end < 0) {
            i++;
            continue;
        }
        if (append_str(out, d + i, end - i) < 0) goto fail;
        i = end;
    }
    PyMem_Free(d);
    PyObject *tuple = PyList_AsTuple(out);
    Py_DECREF(out);
    return tuple;
fail:
    PyMem_Free(d);
    Py_XDECREF(out);
    return NULL;
}

static PyObject *textc_latin_tokens(PyObject *self, PyObject *text) {
    const char *t;
    Py_ssize_t n;
    if (ascii_arg(text, &t, &n) < 0) return NULL;
    return tokens_of(t, n);
}

/* ---------------------------------------------------------------------------------------- */
/* normalize                                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* normalize of ASCII t[0:n] into out (room for n): lower case, control characters and
 * whitespace runs to one space, none at the ends (text._normalize_ascii_pass, a fixed point at
 * once). The new length; *classes: the classes of t's bytes, or'ed. A blank (C_BLANK: the
 * controls, which include \t \n \v \f \r \x1c-\x1f) is written as a space and undone when
 * it follows another or starts the text, so a byte costs a load, a store and one test. */
static Py_ssize_t normalize_into(const char *t, Py_ssize_t n, char *out, unsigned *classes) {
    Py_ssize_t m = 0;
    unsigned seen = 0;
    int gap = 1; /* out ends with a space written for a blank, or is empty */
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        unsigned k = CLASS[c];
        seen |= k;
        if (k & C_BLANK) {
            if (!gap) out[m++] = ' ';
            gap = 1;
            continue;
        }
        out[m++] = (char)(c | ((k & C_UPPER) << 5)); /* C_UPPER is 1: A-Z + 32 is a-z */
        gap = 0;
    }
    if (m > 0 && gap) m--; /* no space at the end */
    *classes = seen;
    return m;
}

/* normalize of ASCII text: a new str, or text itself when that is unchanged. */
static PyObject *normalized_str(PyObject *text, const char *t, Py_ssize_t n, unsigned *classes) {
    char *out = PyMem_Malloc((size_t)n + 1);
    if (out == NULL) return PyErr_NoMemory();
    Py_ssize_t m = normalize_into(t, n, out, classes);
    PyObject *result = (m == n && memcmp(out, t, (size_t)n) == 0) ? Py_NewRef(text)
                                                                    : ascii_str(out, m);
    PyMem_Free(out);
    return result;
}

static PyObject *textc_normalize(PyObject *self, PyObject *text) {
    const char *t;
    Py_ssize_t n;
    unsigned classes;
    if (ascii_arg(text, &t, &n) < 0) return NULL;
    return normalized_str(text, t, n, &classes);
}

/* ---------------------------------------------------------------------------------------- */
/* Words: a token and its parts (text._expand, text._parts, text._atoms)                     */
/* ---------------------------------------------------------------------------------------- */

/* Call piece(ctx, ...) on each non-empty piece of seg[0:n] split at - . _ : @ runs; on none
 * when it holds no such separator (text._atoms). -1 as soon as a call fails. */
static int for_atoms(const char *seg, Py_ssize_t n, void *ctx,
                     int (*piece)(void *ctx, const char *w, Py_ssize_t size)) {
    Py_ssize_t start = 0;
    int split = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (IS_PART_SEP(seg[i])) split = 1;
    if (!split) return 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i == n || IS_PART_SEP(seg[i])) {
            if (i > start && piece(ctx, seg + start, i - start) < 0) return -1;
            start = i + 1;
        }
    }
    return 0;
}

static int append_piece(void *list, const char *w, Py_ssize_t n) {
    return append_str((PyObject *)list, w, n);
}

/* The pieces for_atoms finds, appended to list. */
static int append_atoms(PyObject *list, const char *seg, Py_ssize_t n) {
    return for_atoms(seg, n, list, append_piece);
}

/* Append the token, then its parts (text._parts), to list. */
static int append_words(PyObject *list, PyObject *token) {
    const char *t;
    Py_ssize_t n;
    if (ascii_arg(token, &t, &n) < 0) return -1;
    if (PyList_Append(list, token) < 0) return -1;
    if (memchr(t, '/', (size_t)n) == NULL) return append_atoms(list, t, n);
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i == n || t[i] == '/') {
            if (i > start) {
                if (append_str(list, t + start, i - start) < 0) return -1;
                if (append_atoms(list, t + start, i - start) < 0) return -1;
            }
            start = i + 1;
        }
    }
    return 0;
}

/* The words of a tuple of ASCII tokens (text._expand): a new list. */
static PyObject *expand(PyObject *tokens) {
    if (!PyTuple_Check(tokens)) {
        PyErr_Format(PyExc_TypeError, "tokens: expected a tuple, got %.80s",
                     Py_TYPE(tokens)->tp_name);
        return NULL;
    }
    PyObject *words = PyList_New(0);
    if (words == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tokens); i++) {
        if (append_words(words, PyTuple_GET_ITEM(tokens, i)) < 0) {
            Py_DECREF(words);
            return NULL;
        }
    }
    return words;
}

/* stems_terms(tokens, stop_words, stems): text.stems_and_terms of an ASCII text from its
 * tokens: (the set of its words' stems, the stems of its non-stop words in order). ``stems``
 * maps a word to its stem (text._STEMS, whose misses it fills itself). */
static PyObject *textc_stems_terms(PyObject *self, PyObject *args) {
    PyObject *tokens, *stop, *memo;
    if (!PyArg_ParseTuple(args, "OOO:stems_terms", &tokens, &stop, &memo)) return NULL;
    if (set_arg(stop, "stop_words") < 0) return NULL;
    PyObject *words = expand(tokens), *stems = NULL, *terms = NULL;
    if (words == NULL) return NULL;
    if ((stems = PySet_New(NULL)) == NULL || (terms = PyList_New(0)) == NULL) goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(words); i++) {
        PyObject *word = PyList_GET_ITEM(words, i); /* borrowed: the list holds it */
        PyObject *stem = PyObject_GetItem(memo, word);
        if (stem == NULL) goto fail;
        int is_stop = PySet_Contains(stop, word);
        int rc = is_stop < 0 ? -1 : PySet_Add(stems, stem);
        if (rc == 0 && !is_stop) rc = PyList_Append(terms, stem);
        Py_DECREF(stem);
        if (rc < 0) goto fail;
    }
    Py_DECREF(words);
    PyObject *pair = PyTuple_Pack(2, stems, terms);
    Py_DECREF(stems);
    Py_DECREF(terms);
    return pair;
fail:
    Py_DECREF(words);
    Py_XDECREF(stems);
    Py_XDECREF(terms);
    return NULL;
}

/* The shape test of text._is_salient_word on w[0:n]: -1 for an identifier (a separator or "_")
 * or a number (digits only), which are never salient; else whether it holds a digit. */
static int salient_shape(const char *w, Py_ssize_t n) {
    int digits = 0, all_digits = n > 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (IS_ID_SEP(w[i]) || w[i] == '_') return -1;
        if (IS_DIGIT(w[i]))
            digits = 1;
        else
            all_digits = 0;
    }
    return all_digits ? -1 : digits;
}

/* Whether word is salient (text._is_salient_word): -1 on error. */
static int salient_word(PyObject *word, PyObject *calendar, PyObject *web) {
    const char *w = (const char *)PyUnicode_1BYTE_DATA(word); /* checked by append_words */
    Py_ssize_t n = PyUnicode_GET_LENGTH(word);
    int digits = salient_shape(w, n);
    if (digits < 0) return 0;
    int found = PySet_Contains(calendar, word);
    if (found != 0) return found < 0 ? -1 : 0;
    found = PySet_Contains(web, word);
    if (found != 0) return found < 0 ? -1 : 0;
    return n >= 3 || digits;
}

static PyObject *salient_of(PyObject *tokens, PyObject *stop, PyObject *calendar, PyObject *web);

/* salient(tokens, stop_words, calendar_words, web_parts): text._salient_cues of an ASCII
 * text from its tokens. */
static PyObject *textc_salient(PyObject *self, PyObject *args) {
    PyObject *tokens, *stop, *calendar, *web;
    if (!PyArg_ParseTuple(args, "OOOO:salient", &tokens, &stop, &calendar, &web)) return NULL;
    if (set_arg(stop, "stop_words") < 0 || set_arg(calendar, "calendar_words") < 0 ||
        set_arg(web, "web_parts") < 0)
        return NULL;
    return salient_of(tokens, stop, calendar, web);
}

/* The salient words of a tuple of ASCII tokens (text._salient_cues): a new list. */
static PyObject *salient_of(PyObject *tokens, PyObject *stop, PyObject *calendar, PyObject *web) {
    PyObject *words = expand(tokens), *out;
    if (words == NULL) return NULL;
    if ((out = PyList_New(0)) == NULL) goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(words); i++) {
        PyObject *word = PyList_GET_ITEM(words, i);
        int keep = PySet_Contains(stop, word);
        if (keep < 0) goto fail;
        keep = keep ? 0 : salient_word(word, calendar, web);
        if (keep < 0 || (keep && PyList_Append(out, word) < 0)) goto fail;
    }
    Py_DECREF(words);
    return out;
fail:
    Py_DECREF(words);
    Py_XDECREF(out);
    return NULL;
}

/* Whether token[0:n] is a salient identifier (text._is_salient_identifier): a part between
 * - . _ : @ / runs has a digit, or 2+ characters and is no stop word. -1 on error. */
static int salient_identifier(const char *t, Py_ssize_t n, PyObject *stop) {
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i < n && !(IS_PART_SEP(t[i]) || t[i] == '/')) continue;
        int digit = 0;
        for (Py_ssize_t k = start; k < i; k++) digit |= IS_DIGIT(t[k]);
        if (digit) return 1;
        if (i - start >= 2) {
            PyObject *part = ascii_str(t + start, i - start);
            if (part == NULL) return -1;
            int found = PySet_Contains(stop, part);
            Py_DECREF(part);
            if (found <= 0) return found < 0 ? -1 : 1;
        }
        start = i + 1;
    }
    return 0;
}

static PyObject *identifiers_of(PyObject *tokens, PyObject *stop);

/* identifier_cues(tokens, stop_words): text._identifier_cues of an ASCII text from its tokens:
 * each salient identifier, then for a path its segments that are identifiers themselves. */
static PyObject *textc_identifier_cues(PyObject *self, PyObject *args) {
    PyObject *tokens, *stop;
    if (!PyArg_ParseTuple(args, "O!O:identifier_cues", &PyTuple_Type, &tokens, &stop)) return NULL;
    if (set_arg(stop, "stop_words") < 0) return NULL;
    return identifiers_of(tokens, stop);
}

/* The identifier cues of a tuple of ASCII tokens (text._identifier_cues): a new list. */
static PyObject *identifiers_of(PyObject *tokens, PyObject *stop) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tokens); i++) {
        PyObject *token = PyTuple_GET_ITEM(tokens, i);
        const char *t;
        Py_ssize_t n, k;
        int slash = 0, alnum = 1;
        if (ascii_arg(token, &t, &n) < 0) goto fail;
        for (k = 0; k < n; k++) {
            alnum &= IS_ALNUM(t[k]);
            slash |= t[k] == '/';
        }
        if (alnum && n > 0) continue; /* a plain word, no identifier */
        int salient = salient_identifier(t, n, stop);
        if (salient < 0) goto fail;
        if (!salient) continue;
        if (PyList_Append(out, token) < 0) goto fail;
        if (!slash) continue;
        Py_ssize_t start = 0;
        int separator = 0;
        for (k = 0; k <= n; k++) {
            if (k < n && t[k] != '/') {
                separator |= IS_PART_SEP(t[k]);
                continue;
            }
            if (separator && append_str(out, t + start, k - start) < 0) goto fail;
            start = k + 1;
            separator = 0;
        }
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* Whether cue is a valid cue (text._is_valid_cue): 1 to 128 characters, one alphanumeric. */
static int valid_cue(PyObject *cue) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(cue);
    if (n == 0 || n > 128) return 0;
    int kind = PyUnicode_KIND(cue);
    const void *data = PyUnicode_DATA(cue);
    for (Py_ssize_t i = 0; i < n; i++)
        if (Py_UNICODE_ISALNUM(PyUnicode_READ(kind, data, i))) return 1;
    return 0;
}

/* The cues first_valid keeps, in order, each once: an open-addressing set of str (by hash, as
 * a set compares them) over the kept array, on the stack for a memory's cues. A set of them
 * and the list appends were ~60 % of first_valid. Borrowed: the caller's buckets hold them. */
#define KEPT_SMALL 64
typedef struct {
    PyObject **cues;   /* the kept cues, in order */
    Py_hash_t *hashes; /* theirs */
    int32_t *index;    /* slot -> position in cues, or -1 */
    Py_ssize_t used, cap, mask;
    PyObject *small_cues[KEPT_SMALL];
    Py_hash_t small_hashes[KEPT_SMALL];
    int32_t small_index[2 * KEPT_SMALL];
} Kept;

static void kept_init(Kept *k) {
    k->cues = k->small_cues;
    k->hashes = k->small_hashes;
    k->index = k->small_index;
    k->used = 0;
    k->cap = KEPT_SMALL;
    k->mask = 2 * KEPT_SMALL - 1;
    memset(k->small_index, 0xff, sizeof k->small_index);
}

static void kept_free(Kept *k) {
    if (k->cues == k->small_cues) return;
    PyMem_Free(k->cues);
    PyMem_Free(k->hashes);
    PyMem_Free(k->index);
}

/* Whether str a equals str b as a set finds it (1, 0; -1 on error): equal exact strs have the
 * same kind and code units. */
static int same_cue(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (!PyUnicode_CheckExact(a) || !PyUnicode_CheckExact(b))
        return PyObject_RichCompareBool(a, b, Py_EQ);
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    int kind = PyUnicode_KIND(a);
    return n == PyUnicode_GET_LENGTH(b) && kind == PyUnicode_KIND(b) &&
           memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * (size_t)kind) == 0;
}

/* The slot of cue (hash h): the one holding an equal cue, or the empty one it would take
 * (*found says which); -1 on error. */
static Py_ssize_t kept_slot(const Kept *k, PyObject *cue, Py_hash_t h, int *found) {
    size_t i = (size_t)h & (size_t)k->mask, perturb = (size_t)h;
    for (;;) {
        int32_t at = k->index[i];
        if (at < 0) {
            *found = 0;
            return (Py_ssize_t)i;
        }
        if (k->hashes[at] == h) {
            int eq = same_cue(k->cues[at], cue);
            if (eq != 0) {
                *found = 1;
                return eq < 0 ? -1 : (Py_ssize_t)i;
            }
        }
        perturb >>= 5;
        i = (i * 5 + perturb + 1) & (size_t)k->mask;
    }
}

/* Twice the room, the kept cues in a new index. -1 on error. */
static int kept_grow(Kept *k) {
    Py_ssize_t cap = k->cap * 2, slots = 2 * cap;
    if (cap > INT32_MAX / 2) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject **cues = PyMem_Malloc(sizeof(PyObject *) * (size_t)cap);
    Py_hash_t *hashes = PyMem_Malloc(sizeof(Py_hash_t) * (size_t)cap);
    int32_t *index = PyMem_Malloc(sizeof(int32_t) * (size_t)slots);
    if (cues == NULL || hashes == NULL || index == NULL) {
        PyMem_Free(cues);
        PyMem_Free(hashes);
        PyMem_Free(index);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(cues, k->cues, sizeof(PyObject *) * (size_t)k->used);
    memcpy(hashes, k->hashes, sizeof(Py_hash_t) * (size_t)k->used);
    memset(index, 0xff, sizeof(int32_t) * (size_t)slots);
    kept_free(k);
    k->cues = cues;
    k->hashes = hashes;
    k->index = index;
    k->cap = cap;
    k->mask = slots - 1;
    for (Py_ssize_t at = 0; at < k->used; at++) { /* distinct: each takes the first empty slot */
        size_t i = (size_t)hashes[at] & (size_t)k->mask, perturb = (size_t)hashes[at];
        while (index[i] >= 0) {
            perturb >>= 5;
            i = (i * 5 + perturb + 1) & (size_t)k->mask;
        }
        index[i] = (int32_t)at;
    }
    return 0;
}

/* Keep cue unless an equal one is kept: 0 or -1 on error. */
static int kept_add(Kept *k, PyObject *cue) {
    Py_hash_t h = key_hash(cue);
    int found;
    if (h == -1) return -1;
    Py_ssize_t slot = kept_slot(k, cue, h, &found);
    if (slot < 0) return -1;
    if (found) return 0;
    if (k->used == k->cap) {
        if (kept_grow(k) < 0) return -1;
        slot = kept_slot(k, cue, h, &found); /* the empty slot in the new index */
    }
    k->index[slot] = (int32_t)k->used;
    k->cues[k->used] = cue;
    k->hashes[k->used++] = h;
    return 0;
}

/* first_valid(buckets, limit, worded): text._first_valid: the cues of the buckets in order,
 * valid (the last ``worded`` buckets: 128 characters at most), without duplicates, at most
 * ``limit``. */
static PyObject *first_valid_of(PyObject *const *buckets, Py_ssize_t count, Py_ssize_t limit,
                                Py_ssize_t worded);

static PyObject *textc_first_valid(PyObject *self, PyObject *args) {
    PyObject *buckets;
    Py_ssize_t limit, worded;
    if (!PyArg_ParseTuple(args, "Onn:first_valid", &buckets, &limit, &worded)) return NULL;
    PyObject *all = PySequence_Fast(buckets, "buckets: expected a sequence");
    if (all == NULL) return NULL;
    PyObject *out = first_valid_of(PySequence_Fast_ITEMS(all), PySequence_Fast_GET_SIZE(all),
                                   limit, worded);
    Py_DECREF(all);
    return out;
}

/* text._first_valid(buckets[0:count], limit, worded=worded): a new list. */
static PyObject *first_valid_of(PyObject *const *buckets, Py_ssize_t count, Py_ssize_t limit,
                                Py_ssize_t worded) {
    PyObject *out = NULL, *fast = NULL;
    Py_ssize_t split = count - worded;
    Kept kept;
    kept_init(&kept);
    for (Py_ssize_t b = 0; b < count && kept.used < limit; b++) {
        fast = PySequence_Fast(buckets[b], "a bucket: expected a sequence");
        if (fast == NULL) goto done;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); i++) {
            PyObject *cue = PySequence_Fast_GET_ITEM(fast, i);
            if (!PyUnicode_Check(cue)) {
                PyErr_SetString(PyExc_TypeError, "a cue: expected str");
                goto done;
            }
#if PY_VERSION_HEX < 0x030C0000
            if (PyUnicode_READY(cue) < 0) goto done;
#endif
            if (b < split ? !valid_cue(cue) : PyUnicode_GET_LENGTH(cue) > 128) continue;
            if (kept_add(&kept, cue) < 0) goto done;
            if (kept.used >= limit) break;
        }
        Py_CLEAR(fast);
    }
    if ((out = PyList_New(kept.used)) != NULL)
        for (Py_ssize_t i = 0; i < kept.used; i++) PyList_SET_ITEM(out, i, Py_NewRef(kept.cues[i]));
done:
    Py_XDECREF(fast);
    kept_free(&kept);
    return out;
}

/* ---------------------------------------------------------------------------------------- */
/* Quotations: text._quoted_cues                                                             */
/* ---------------------------------------------------------------------------------------- */

/* Python's whitespace in ASCII (str.isspace, and re's \s): \t \n \v \f \r, \x1c-\x1f, space. */
#define IS_SPACE(c) ((c) == ' ' || ((c) >= '\t' && (c) <= '\r') || ((c) >= 0x1c && (c) <= 0x1f))

/* t with text._FENCE_RE's matches (```...``` without a newline inside) blanked, into u. */
static void unfence(const char *t, Py_ssize_t n, char *u) {
    memcpy(u, t, (size_t)n);
    for (Py_ssize_t p = 0; p + 3 <= n;) {
        if (memcmp(u + p, "```", 3) != 0) {
            p++;
            continue;
        }
        Py_ssize_t q = p + 3;
        while (q + 3 <= n && memcmp(u + q, "```", 3) != 0 && u[q] != '\n') q++;
        if (q + 3 > n || u[q] == '\n') { /* no closing fence on this line */
            p++;
            continue;
        }
        memset(u + p, ' ', (size_t)(q + 3 - p));
        p = q + 3;
    }
}

typedef struct {
    Py_ssize_t start, from, to; /* the match's start, its group u[from:to] */
    int backtick;
} Quote;

/* The matches of "([^"]+)" (or with backticks) in u, appended to out; the new count. */
static Py_ssize_t simple_quotes(const char *u, Py_ssize_t n, char mark, Quote *out, Py_ssize_t k) {
    for (Py_ssize_t p = 0; p < n;) {
        const char *open = memchr(u + p, mark, (size_t)(n - p));
        if (open == NULL) break;
        Py_ssize_t o = open - u;
        const char *close = o + 1 < n ? memchr(u + o + 1, mark, (size_t)(n - o - 1)) : NULL;
        if (close == NULL) break;
        Py_ssize_t c = close - u;
        if (c == o + 1) { /* "" is no quotation; the second mark may open one */
            p = o + 1;
            continue;
        }
        out[k++] = (Quote){o, o + 1, c, mark == '`'};
        p = c + 1;
    }
    return k;
}

/* The matches of text._QUOTE_RES[1] in u: a quote not after a word character, a group that
 * neither starts nor ends with a space (nor holds a quote), a quote not before a word
 * character. The group ends at the first quote after its first character, so that is the
 * only closing quote to test. */
static Py_ssize_t single_quotes(const char *u, Py_ssize_t n, Quote *out, Py_ssize_t k) {
    for (Py_ssize_t p = 0; p < n; p++) {
        const char *quote = memchr(u + p, '\'', (size_t)(n - p));
        if (quote == NULL) break;
        p = quote - u;
        if (p >= 1 && IS_AW(u[p - 1])) continue;
        if (p + 1 >= n || u[p + 1] == '\'' || IS_SPACE(u[p + 1])) continue;
        const char *close = p + 2 < n ? memchr(u + p + 2, '\'', (size_t)(n - p - 2)) : NULL;
        if (close == NULL) break; /* no later quote: nothing more can match */
        Py_ssize_t c = close - u;
        if (IS_SPACE(u[c - 1]) || (c + 1 < n && IS_AW(u[c + 1]))) continue;
        out[k++] = (Quote){p, p + 1, c, 0};
        p = c; /* the loop's p++ resumes after the closing quote */
    }
    return k;
}

/* Append text._quote_cue(u[from:to]) to cues, if any. */
static int append_quote_cue(PyObject *cues, const char *u, Py_ssize_t from, Py_ssize_t to) {
    static const char strip[] = " .,;:!?";
    while (from < to && memchr(strip, u[from], sizeof strip - 1) != NULL) from++;
    while (to > from && memchr(strip, u[to - 1], sizeof strip - 1) != NULL) to--;
    Py_ssize_t words = 0;
    for (Py_ssize_t i = from; i < to; i++)
        if (!IS_SPACE(u[i]) && (i == from || IS_SPACE(u[i - 1]))) words++;
    if (to == from || words > 6) return 0; /* text._MAX_QUOTE_WORDS */
    return append_str(cues, u + from, to - from);
}

/* Append text._command_cue(u[from:to]) to cues, if any: the first word of a span of 2+ words
 * that looks like a program name and is no stop word. */
static int append_command_cue(PyObject *cues, const char *u, Py_ssize_t from, Py_ssize_t to,
                              PyObject *stop) {
    while (from < to && IS_SPACE(u[from])) from++;
    Py_ssize_t end = from;
    while (end < to && !IS_SPACE(u[end])) end++;
    Py_ssize_t next = end;
    while (next < to && IS_SPACE(u[next])) next++;
    if (end == from || next == to || !IS_LOWER(u[from])) return 0;
    for (Py_ssize_t i = from + 1; i < end; i++) {
        char c = u[i];
        if (!(IS_LOWER(c) || IS_DIGIT(c) || c == '_' || c == '.' || c == '+' || c == '-')) return 0;
    }
    PyObject *name = ascii_str(u + from, end - from);
    if (name == NULL) return -1;
    int found = PySet_Contains(stop, name);
    int rc = found < 0 ? -1 : found ? 0 : PyList_Append(cues, name);
    Py_DECREF(name);
    return rc;
}

static int by_start(const void *a, const void *b) {
    Py_ssize_t x = ((const Quote *)a)->start, y = ((const Quote *)b)->start;
    return (x > y) - (x < y);
}

/* quoted_cues(text, stop_words): text._quoted_cues of ASCII text. */
static PyObject *quoted_of(const char *t, Py_ssize_t n, PyObject *stop);

static PyObject *textc_quoted_cues(PyObject *self, PyObject *args) {
    PyObject *text, *stop;
    const char *t;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OO:quoted_cues", &text, &stop)) return NULL;
    if (ascii_arg(text, &t, &n) < 0 || set_arg(stop, "stop_words") < 0) return NULL;
    return quoted_of(t, n, stop);
}

/* The quoted cues of ASCII t[0:n] (text._quoted_cues): a new list. */
static PyObject *quoted_of(const char *t, Py_ssize_t n, PyObject *stop) {
    PyObject *cues = NULL;
    Py_ssize_t k = 0;
    if (memchr(t, '"', (size_t)n) == NULL && memchr(t, '\'', (size_t)n) == NULL &&
        memchr(t, '`', (size_t)n) == NULL)
        return PyList_New(0);
    /* a match holds two marks, so at most n / 2 of them (a memory's on the stack); the text
     * itself when it has no fence to blank (its copy and the two allocations were ~10 % of
     * quoted_of) */
    Quote small[64];
    int fenced = memchr(t, '`', (size_t)n) != NULL;
    char *blanked = fenced ? PyMem_Malloc((size_t)n + 1) : NULL;
    Quote *found = n / 2 + 1 <= 64 ? small : PyMem_Malloc(sizeof(Quote) * (size_t)(n / 2 + 1));
    const char *u = fenced ? blanked : t;
    if ((fenced && blanked == NULL) || found == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (fenced) unfence(t, n, blanked);
    k = simple_quotes(u, n, '"', found, k);
    k = single_quotes(u, n, found, k);
    k = simple_quotes(u, n, '`', found, k);
    qsort(found, (size_t)k, sizeof(Quote), by_start); /* starts differ: their marks do */
    if ((cues = PyList_New(0)) == NULL) goto done;
    for (Py_ssize_t i = 0; i < k; i++) {
        Quote *q = &found[i];
        if (append_quote_cue(cues, u, q->from, q->to) < 0 ||
            (q->backtick && append_command_cue(cues, u, q->from, q->to, stop) < 0)) {
            Py_CLEAR(cues);
            break;
        }
    }
done:
    PyMem_Free(blanked);
    if (found != small) PyMem_Free(found);
    return cues;
}

/* ---------------------------------------------------------------------------------------- */
/* Names: text._ascii_name_runs and text._run_cues                                           */
/* ---------------------------------------------------------------------------------------- */

/* End of the text._NAME_TOKEN match at i, or -1: a whole alphanumeric token starting with a
 * capital or a digit, with no word character (or separator joined to one) on either side. */
static Py_ssize_t name_token_end(const char *d, Py_ssize_t m, Py_ssize_t i) {
    if (!(IS_UPPER(d[i]) || IS_DIGIT(d[i]))) return -1;
    if (i >= 1 && IS_AW(d[i - 1])) return -1;
    if (i >= 2 && IS_NAME_SEP(d[i - 1]) && IS_AW(d[i - 2])) return -1;
    Py_ssize_t e = i + 1;
    while (e < m && IS_ALNUM(d[e])) e++;
    if (e < m && IS_AW(d[e])) return -1;
    if (e + 1 < m && IS_NAME_SEP(d[e]) && IS_AW(d[e + 1])) return -1;
    return e;
}

typedef struct {
    PyObject *word; /* the token, original case */
    int common;     /* its lower case is a stop or calendar word (text._is_common) */
} NameWord;

typedef struct StemMemo StemMemo; /* the stem memo (below) */

/* What a memo entry also knows of its word: the word lists it is in (the memo's own sets). */
#define WORD_STOP 1L
#define WORD_CALENDAR 2L
#define WORD_WEB 4L
#define WORD_UNIT 8L
#define WORD_FLAGS 15u

/* The WORD_* flags the stem memo holds for ASCII word p[0:n] and *word its str (borrowed; it
 * adds none); -1 for a word it does not hold. */
static long memo_flags(StemMemo *m, const char *p, Py_ssize_t n, PyObject **word);

#define NAME_FOLD_MAX 64 /* the longest name word folded on the stack */

/* Whether the lower case f[0:n] of a name word is a unit (*unit) or a stop or calendar word
 * (*common), from the memo's flags when it holds the word (memo: a StemMemo of these lists,
 * or NULL; *held: its str of the word, borrowed, else NULL), else from the lists: a name's
 * words are words of the text, which the memo met just before (three set lookups of a new str
 * for each were ~25 % of names_of). -1 on error. */
static int name_lists(const char *f, Py_ssize_t n, PyObject *stop, PyObject *calendar,
                      PyObject *units, StemMemo *memo, int *unit, int *common, PyObject **held) {
    *held = NULL;
    long flags = memo == NULL ? -1 : memo_flags(memo, f, n, held);
    if (flags >= 0) {
        *unit = (flags & WORD_UNIT) != 0;
        *common = (flags & (WORD_STOP | WORD_CALENDAR)) != 0;
        return 0;
    }
    PyObject *folded = ascii_str(f, n);
    if (folded == NULL) return -1;
    int found = PySet_Contains(units, folded); /* "10 GB": a unit, not a name */
    int is_common = found != 0 ? 0 : PySet_Contains(stop, folded);
    if (found == 0 && is_common == 0) is_common = PySet_Contains(calendar, folded);
    Py_DECREF(folded);
    if (found < 0 || is_common < 0) return -1;
    *unit = found;
    *common = is_common;
    return 0;
}

/* Classify d[i:e]: 1 and *out filled for a name word (text._is_name_word), 0 if not, -1.
 * With fold, out->word is the word in lower case (the memo's str of it, when it has one). */
static int name_word(const char *d, Py_ssize_t i, Py_ssize_t e, PyObject *stop,
                     PyObject *calendar, PyObject *units, StemMemo *memo, int fold,
                     NameWord *out) {
    int lower = 0, upper = 0;
    for (Py_ssize_t k = i; k < e; k++) {
        lower |= IS_LOWER(d[k]);
        upper += IS_UPPER(d[k]);
    }
    int capitalized = IS_UPPER(d[i]) && lower, acronym = !lower && upper >= 2;
    if (!capitalized && !acronym) return 0;
    char small[NAME_FOLD_MAX];
    char *f = e - i <= NAME_FOLD_MAX ? small : PyMem_Malloc((size_t)(e - i));
    if (f == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = i; k < e; k++) f[k - i] = IS_UPPER(d[k]) ? d[k] + ('a' - 'A') : d[k];
    int found, common;
    PyObject *held;
    int rc = name_lists(f, e - i, stop, calendar, units, memo, &found, &common, &held);
    if (rc == 0 && !found) {
        out->word = !fold ? ascii_str(d + i, e - i) : held != NULL ? Py_NewRef(held)
                                                                   : ascii_str(f, e - i);
        rc = out->word == NULL ? -1 : 1;
        out->common = common;
    }
    if (f != small) PyMem_Free(f);
    return rc;
}

/* run[lo:hi]'s words joined by spaces: a new ASCII str. */
static PyObject *joined_run(NameWord *run, Py_ssize_t lo, Py_ssize_t hi) {
    Py_ssize_t size = hi - lo - 1;
    for (Py_ssize_t k = lo; k < hi; k++) size += PyUnicode_GET_LENGTH(run[k].word);
    PyObject *whole = PyUnicode_New(size, 127);
    if (whole == NULL) return NULL;
    char *to = (char *)PyUnicode_1BYTE_DATA(whole);
    for (Py_ssize_t k = lo; k < hi; k++) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(run[k].word);
        if (k > lo) *to++ = ' ';
        memcpy(to, PyUnicode_1BYTE_DATA(run[k].word), (size_t)n);
        to += n;
    }
    return whole;
}

/* Append text._run_cues of run[0:n] to cues. */
static int append_run_cues(PyObject *cues, NameWord *run, Py_ssize_t n) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi && run[lo].common) lo++;
    while (hi > lo && run[hi - 1].common) hi--;
    if (hi - lo >= 2 && hi - lo <= 4) { /* text._MAX_NAME_WORDS */
        PyObject *whole = joined_run(run, lo, hi);
        if (whole == NULL) return -1;
        int rc = PyList_Append(cues, whole);
        Py_DECREF(whole);
        if (rc < 0) return -1;
    }
    for (Py_ssize_t k = lo; k < hi; k++)
        if (!run[k].common && PyList_Append(cues, run[k].word) < 0) return -1;
    return 0;
}

static void clear_run(NameWord *run, Py_ssize_t *n) {
    for (Py_ssize_t k = 0; k < *n; k++) Py_CLEAR(run[k].word);
    *n = 0;
}

/* The first capital or digit at or after i in ASCII d[0:m], or m: where a name can start.
 * Eight bytes at a time, each byte's range tests in its top bit (an ASCII byte plus 0x50 does
 * not carry into the next): testing each byte was ~40 % of names_of. */
static Py_ssize_t name_start(const char *d, Py_ssize_t m, Py_ssize_t i) {
    const uint64_t ones = 0x0101010101010101ULL, top = ones * 0x80;
    for (; i + 8 <= m; i += 8) {
        uint64_t x = load64(d + i);
        uint64_t upper = (x + ones * (0x80 - 'A')) & ~(x + ones * (0x80 - 'Z' - 1));
        uint64_t digit = (x + ones * (0x80 - '0')) & ~(x + ones * (0x80 - '9' - 1));
        if ((upper | digit) & top) break; /* one of these 8 bytes */
    }
    while (i < m && !(CLS(d[i]) & (C_UPPER | C_DIGIT))) i++;
    return i;
}

/* name_cues(text, stop_words, calendar_words, units): the cues of the name runs of ASCII text
 * without "/" whose apostrophes are already dropped: [c for run in _ascii_name_runs(text) for
 * c in _run_cues(run)]. */
static PyObject *names_of(const char *d, Py_ssize_t m, PyObject *stop, PyObject *calendar,
                          PyObject *units, StemMemo *memo, int fold);

static PyObject *textc_name_cues(PyObject *self, PyObject *args) {
    PyObject *text, *stop, *calendar, *units;
    const char *d;
    Py_ssize_t m;
    if (!PyArg_ParseTuple(args, "OOOO:name_cues", &text, &stop, &calendar, &units)) return NULL;
    if (ascii_arg(text, &d, &m) < 0 || set_arg(stop, "stop_words") < 0 ||
        set_arg(calendar, "calendar_words") < 0 || set_arg(units, "units") < 0)
        return NULL;
    return names_of(d, m, stop, calendar, units, NULL, 0);
}

/* The name cues of ASCII d[0:m] without "/" whose apostrophes are dropped (memo: a StemMemo
 * of these lists, or NULL), with fold in lower case (normalized: the words hold no blank):
 * a new list. */
static PyObject *names_of(const char *d, Py_ssize_t m, PyObject *stop, PyObject *calendar,
                          PyObject *units, StemMemo *memo, int fold) {
    Py_ssize_t size = 0;
    if (memchr(d, '/', (size_t)m) != NULL) {
        PyErr_SetString(PyExc_ValueError, "text without '/' only");
        return NULL;
    }
    /* a run's words are separate tokens, so at most (m + 1) / 2 of them; a memory's fit on
     * the stack (PyMem_Calloc of room for them was 10 % of names_of) */
    NameWord small[128];
    NameWord *run = m / 2 + 1 <= 128 ? small : PyMem_Malloc(sizeof(NameWord) * (size_t)(m / 2 + 1));
    PyObject *cues = PyList_New(0);
    if (run == NULL || cues == NULL) goto fail;
    for (Py_ssize_t i = 0; i < m;) {
        /* a name starts with a capital or a digit (testing a start at each byte was ~half
         * of names_of) */
        if ((i = name_start(d, m, i)) == m) break;
        Py_ssize_t e = name_token_end(d, m, i);
        if (e < 0) {
            i++;
            continue;
        }
        for (Py_ssize_t start = i;;) { /* the candidate: tokens separated by spaces or tabs */
            int kind = name_word(d, start, e, stop, calendar, units, memo, fold, &run[size]);
            if (kind < 0) goto fail;
            if (kind) {
                size++;
            } else if (size > 0) {
                if (append_run_cues(cues, run, size) < 0) goto fail;
                clear_run(run, &size);
            }
            Py_ssize_t f = e;
            while (f < m && (d[f] == ' ' || d[f] == '\t')) f++;
            Py_ssize_t next = (f > e && f < m) ? name_token_end(d, m, f) : -1;
            if (next < 0) break;
            start = f;
            e = next;
        }
        if (size > 0) {
            if (append_run_cues(cues, run, size) < 0) goto fail;
            clear_run(run, &size);
        }
        i = e;
    }
    if (run != small) PyMem_Free(run);
    return cues;
fail:
    if (run != NULL) {
        clear_run(run, &size);
        if (run != small) PyMem_Free(run);
    }
    Py_XDECREF(cues);
    return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* The stem memo (text._STEMS): text._Memo of text._interned_stem, keyed by a word's bytes     */
/* ---------------------------------------------------------------------------------------- */

#define INFO_SIZE_MAX ((1u << 28) - 1) /* the largest len(word) an entry holds exactly */

typedef struct {
    PyObject *word; /* the key: an interned ASCII str */
    PyObject *stem; /* fn(word) */
    uint64_t head;  /* the word's head (WordKey.head) */
    uint32_t hash;  /* the low bits of its WordKey.hash */
    uint32_t info;  /* WORD_* in the low 4 bits, then min(len(word), INFO_SIZE_MAX) */
} Entry;

/* An entry's info: the flags and the size, compared before the word's bytes are. */
static uint32_t entry_info(Py_ssize_t n, long flags) {
    uint32_t size = (size_t)n > INFO_SIZE_MAX ? INFO_SIZE_MAX : (uint32_t)n;
    return (size << 4) | (uint32_t)flags;
}

/* Open addressing over a compact array of entries (as CPython's dict): index[i] is -1 or the
 * position of an entry; at most cap entries, and size (a power of two) > cap slots, so a
 * probe always reaches an empty slot. The arrays are allocated at the first entry (32 bytes an
 * entry and 4 a slot: 0.6 MB for a generation of 16,384 words, where a dict of them takes
 * about 0.4 MB and a str for each word looked up). An entry holds its word's first bytes
 * (its head), so that a probe for a word of 8 bytes or fewer (most) reads no str. */
typedef struct {
    int32_t *index;
    Entry *entries;
    Py_ssize_t size, used;
} Table;

struct StemMemo {
    PyObject_HEAD
    PyObject *fn;                           /* word -> stem, called on a miss */
    PyObject *stop, *calendar, *web, *units; /* the word lists of the flags */
    Py_ssize_t maxsize;                     /* entries per generation */
    Table young, old;                       /* this generation and the one before (text._Memo) */
};

static PyTypeObject StemMemoType;

#if PY_VERSION_HEX >= 0x030E0000
#define HASH_BYTES(p, n) Py_HashBuffer((p), (n))
#else
#define HASH_BYTES(p, n) _Py_HashBytes((p), (n)) /* hash() of an ASCII str of those bytes */
#endif

/* The memo's own hash of a word, which nothing else reads (an entry's hash only steers its
 * table's probes): siphash of every word was ~8 % of derive_plain's instructions. Seeded by
 * str's hash at import, so which words collide differs from process to process (unless
 * PYTHONHASHSEED fixes it). Every byte reaches the mix (loads that overlap for sizes not a
 * multiple of 8), and a word of 8 bytes or fewer gets a hash no other word of its size has. */
static uint64_t memo_seed;

static uint64_t mix64(uint64_t h) {
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return h;
}

/* A word as the memo looks it up: its bytes, hash and head (its bytes packed in 8 for a word
 * of 8 bytes or fewer, so that words of one such size differ in head; else its first 8). */
typedef struct {
    const char *p;
    Py_ssize_t n;
    Py_hash_t hash;
    uint64_t head;
} WordKey;

static WordKey word_key(const char *p, Py_ssize_t n) {
    WordKey key = {p, n, 0, 0};
    uint64_t h = memo_seed ^ ((uint64_t)n * 0x9e3779b97f4a7c15ULL), x;
    if (n > 8) {
        key.head = load64(p);
        for (; n > 8; p += 8, n -= 8) h = mix64(h ^ load64(p)) * 0xbf58476d1ce4e5b9ULL;
        x = load64(p + n - 8);
    } else if (n >= 4) {
        x = key.head = load32(p) | (load32(p + n - 4) << 32);
    } else {
        x = key.head = n == 0 ? 0
                              : (uint64_t)(unsigned char)p[0] |
                                    ((uint64_t)(unsigned char)p[n / 2] << 8) |
                                    ((uint64_t)(unsigned char)p[n - 1] << 16);
    }
    key.hash = (Py_hash_t)mix64(h ^ x);
    return key;
}

static int table_init(Table *t, Py_ssize_t cap) {
    Py_ssize_t size = 8;
    while (size <= cap + cap / 2) size *= 2; /* at most 2/3 full */
    t->index = PyMem_Malloc(sizeof(int32_t) * (size_t)size);
    t->entries = PyMem_Malloc(sizeof(Entry) * (size_t)cap);
    if (t->index == NULL || t->entries == NULL) {
        PyMem_Free(t->index);
        PyMem_Free(t->entries);
        t->index = NULL;
        t->entries = NULL;
        PyErr_NoMemory();
        return -1;
    }
    memset(t->index, 0xff, sizeof(int32_t) * (size_t)size); /* every slot -1 */
    t->size = size;
    t->used = 0;
    return 0;
}

/* Drop every entry (the arrays stay). */
static void table_clear(Table *t) {
    Py_ssize_t used = t->used;
    t->used = 0; /* empty before any decref can run code that reads the memo */
    if (t->index != NULL) memset(t->index, 0xff, sizeof(int32_t) * (size_t)t->size);
    for (Py_ssize_t i = 0; i < used; i++) {
        Py_DECREF(t->entries[i].word);
        Py_DECREF(t->entries[i].stem);
    }
}

static void table_free(Table *t) {
    table_clear(t);
    PyMem_Free(t->index);
    PyMem_Free(t->entries);
    t->index = NULL;
    t->entries = NULL;
}

/* Whether entry e is the word of key: its head and exact size decide for 8 bytes or fewer. */
static int entry_is(const Entry *e, const WordKey *k) {
    if (e->hash != (uint32_t)k->hash || e->head != k->head ||
        e->info >> 4 != entry_info(k->n, 0) >> 4)
        return 0;
    if (k->n <= 8) return 1;
    const char *word = (const char *)PyUnicode_1BYTE_DATA(e->word);
    Py_ssize_t n = k->n;
    return PyUnicode_GET_LENGTH(e->word) == n && memcmp(word + 8, k->p + 8, (size_t)n - 8) == 0;
}

/* The slot of the key's word: its entry's, or the empty one where it would go. */
static Py_ssize_t table_slot(const Table *t, const WordKey *k) {
    size_t mask = (size_t)t->size - 1, i = (size_t)k->hash & mask, perturb = (size_t)k->hash;
    for (;;) {
        int32_t ix = t->index[i];
        if (ix < 0 || entry_is(&t->entries[ix], k)) return (Py_ssize_t)i;
        perturb >>= 5;
        i = (i * 5 + perturb + 1) & mask;
    }
}

static Entry *table_find(const Table *t, const WordKey *k) {
    if (t->used == 0) return NULL;
    int32_t ix = t->index[table_slot(t, k)];
    return ix < 0 ? NULL : &t->entries[ix];
}

/* The word's flags from the memo's lists; -1 on error. */
static long word_flags(StemMemo *m, PyObject *word) {
    int stop = PySet_Contains(m->stop, word), calendar, web, unit;
    if (stop < 0 || (calendar = PySet_Contains(m->calendar, word)) < 0 ||
        (web = PySet_Contains(m->web, word)) < 0 || (unit = PySet_Contains(m->units, word)) < 0)
        return -1;
    return (stop ? WORD_STOP : 0) | (calendar ? WORD_CALENDAR : 0) | (web ? WORD_WEB : 0) |
           (unit ? WORD_UNIT : 0);
}

static long memo_flags(StemMemo *m, const char *p, Py_ssize_t n, PyObject **word) {
    WordKey key = word_key(p, n);
    Entry *e = table_find(&m->young, &key);
    if (e == NULL) e = table_find(&m->old, &key);
    if (e == NULL) return -1;
    *word = e->word;
    return (long)(e->info & WORD_FLAGS);
}

/* The young entry of ASCII word p[0:n] (key: the str of those bytes if the caller has it, else
 * NULL), added on a miss: copied from the older generation, or fn called. Valid until the next
 * call; NULL on error. */
static Entry *memo_entry(StemMemo *m, const char *p, Py_ssize_t n, PyObject *key) {
    WordKey k = word_key(p, n);
    Entry *e = table_find(&m->young, &k);
    if (e != NULL) return e;
    PyObject *word, *stem;
    long flags;
    if ((e = table_find(&m->old, &k)) != NULL) {
        word = Py_NewRef(e->word);
        stem = Py_NewRef(e->stem);
        flags = (long)(e->info & WORD_FLAGS);
    } else {
        word = key != NULL ? Py_NewRef(key) : ascii_str(p, n);
        if (word == NULL) return NULL;
        PyUnicode_InternInPlace(&word); /* a cue's word: the index interns it as a flag check */
        stem = PyObject_CallOneArg(m->fn, word);
        flags = stem == NULL ? -1 : word_flags(m, word);
        if (flags < 0 || (e = table_find(&m->young, &k)) != NULL) { /* fn added it */
            Py_DECREF(word);
            Py_XDECREF(stem);
            return e;
        }
    }
    if (m->young.used >= m->maxsize) { /* a new generation; the young one becomes the older */
        Table older = m->old;
        m->old = m->young;
        m->young = older;
        table_clear(&m->young);
    }
    Table *t = &m->young;
    if (t->index == NULL && table_init(t, m->maxsize) < 0) {
        Py_DECREF(word);
        Py_DECREF(stem);
        return NULL;
    }
    Py_ssize_t slot = table_slot(t, &k);
    e = &t->entries[t->used];
    *e = (Entry){word, stem, k.head, (uint32_t)k.hash, entry_info(n, flags)};
    t->index[slot] = (int32_t)t->used++;
    return e;
}

static PyObject *memo_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *fn, *stop, *calendar, *web, *units;
    Py_ssize_t maxsize;
    static char *names[] = {"fn",        "maxsize", "stop_words", "calendar_words",
                            "web_parts", "units",   NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OnOOOO:StemMemo", names, &fn, &maxsize, &stop,
                                     &calendar, &web, &units))
        return NULL;
    if (set_arg(stop, "stop_words") < 0 || set_arg(calendar, "calendar_words") < 0 ||
        set_arg(web, "web_parts") < 0 || set_arg(units, "units") < 0)
        return NULL;
    if (maxsize < 1 || maxsize > (1 << 28)) {
        PyErr_SetString(PyExc_ValueError, "maxsize: 1 to 2**28");
        return NULL;
    }
    StemMemo *m = (StemMemo *)type->tp_alloc(type, 0);
    if (m == NULL) return NULL;
    m->fn = Py_NewRef(fn);
    m->stop = Py_NewRef(stop);
    m->calendar = Py_NewRef(calendar);
    m->web = Py_NewRef(web);
    m->units = Py_NewRef(units);
    m->maxsize = maxsize; /* the tables' arrays: at their first entry (tp_alloc zeroed them) */
    return (PyObject *)m;
}

static void memo_dealloc(StemMemo *m) {
    table_free(&m->young);
    table_free(&m->old);
    Py_XDECREF(m->fn);
    Py_XDECREF(m->stop);
    Py_XDECREF(m->calendar);
    Py_XDECREF(m->web);
    Py_XDECREF(m->units);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* memo[word]: fn(word), remembered for an exact ASCII str (anything else: fn called). */
static PyObject *memo_getitem(StemMemo *m, PyObject *key) {
    if (!PyUnicode_CheckExact(key) || !PyUnicode_IS_ASCII(key))
        return PyObject_CallOneArg(m->fn, key);
    Entry *e = memo_entry(m, (const char *)PyUnicode_1BYTE_DATA(key), PyUnicode_GET_LENGTH(key),
                          key);
    return e == NULL ? NULL : Py_NewRef(e->stem);
}

static Py_ssize_t memo_length(StemMemo *m) { return m->young.used; }

static PyMappingMethods memo_mapping = {
    .mp_length = (lenfunc)memo_length,
    .mp_subscript = (binaryfunc)memo_getitem,
};

static PyObject *memo_get_maxsize(StemMemo *m, void *closure) {
    return PyLong_FromSsize_t(m->maxsize);
}

static PyObject *memo_get_older(StemMemo *m, void *closure) {
    return PyLong_FromSsize_t(m->old.used);
}

static PyGetSetDef memo_getset[] = {
    {"maxsize", (getter)memo_get_maxsize, NULL, "Entries per generation.", NULL},
    {"older", (getter)memo_get_older, NULL, "Entries in the older generation.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject StemMemoType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cuemap_integrations._textc.StemMemo",
    .tp_basicsize = sizeof(StemMemo),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "StemMemo(fn, maxsize, stop_words, calendar_words, web_parts, units): memo[word] is "
              "fn(word), remembered as text._Memo does; an ASCII word is looked up by its bytes.",
    .tp_new = memo_new,
    .tp_dealloc = (destructor)memo_dealloc,
    .tp_as_mapping = &memo_mapping,
    .tp_getset = memo_getset,
};

/* A vocab (below) and a filter of its hashes: a stem whose bit is clear is not in it. Kept
 * for a frozenset (which cannot change) from call to call: the alias table hands the same
 * one to every memory. A lookup of each stem in the vocab was ~4 % of derive_plain. */
#define FILTER_BITS 1024
static struct {
    PyObject *vocab; /* a frozenset, or NULL */
    uint64_t bits[FILTER_BITS / 64];
} vocab_filter;

static int filter_has(const uint64_t *bits, Py_hash_t h) {
    size_t bit = (size_t)h & (FILTER_BITS - 1);
    return (int)((bits[bit / 64] >> (bit % 64)) & 1);
}

/* The filter of vocab (a set, or NULL): its bits, or NULL for none (vocab NULL or not a
 * frozenset); NULL with an exception set on error. */
static const uint64_t *filter_of(PyObject *vocab, int *error) {
    *error = 0;
    if (vocab == NULL || !PyFrozenSet_CheckExact(vocab)) return NULL;
    if (vocab == vocab_filter.vocab) return vocab_filter.bits;
    Py_CLEAR(vocab_filter.vocab);
    memset(vocab_filter.bits, 0, sizeof vocab_filter.bits);
    PyObject *it = PyObject_GetIter(vocab), *item;
    if (it == NULL) goto fail;
    while ((item = PyIter_Next(it)) != NULL) {
        Py_hash_t h = PyObject_Hash(item);
        Py_DECREF(item);
        if (h == -1) goto fail;
        size_t bit = (size_t)h & (FILTER_BITS - 1);
        vocab_filter.bits[bit / 64] |= (uint64_t)1 << (bit % 64);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) goto fail;
    vocab_filter.vocab = Py_NewRef(vocab); /* held: its address names no other set meanwhile */
    return vocab_filter.bits;
fail:
    Py_XDECREF(it);
    *error = 1;
    return NULL;
}

/* Add stem to the set stems, if vocab is NULL or holds it (bits: vocab's filter, or NULL).
 * The caller that passes a vocab (the alias table's stems, AliasTable.stems_read) needs no
 * other stem: the set of every stem of a memory was ~9 % of derive_plain. */
static int stem_into(PyObject *stems, PyObject *stem, PyObject *vocab, const uint64_t *bits) {
    if (vocab != NULL) {
        if (bits != NULL) {
            Py_hash_t h = key_hash(stem); /* an interned str's: cached */
            if (h == -1) return -1;
            if (!filter_has(bits, h)) return 0;
        }
        int found = PySet_Contains(vocab, stem);
        if (found <= 0) return found;
    }
    return PySet_Add(stems, stem);
}

/* The stems, terms and (with salient a list) salient words of ASCII text t[0:n] through a
 * StemMemo whose word lists are the caller's: what stem_words does with the words of its
 * tokens, without a str made for a word the memo holds (an entry's flags answer the list
 * tests, and a salient word is the memo's interned key). *identifiers: whether some token
 * holds a separator or "_" (then identifiers_of has work). */
/* New references gathered for a list made at the end at its size: a list's appends and
 * growth were ~3 % of derive_plain. On the stack up to REFS_SMALL. */
#define REFS_SMALL 128
typedef struct {
    PyObject **items;
    Py_ssize_t size, cap;
    PyObject *small[REFS_SMALL];
} Refs;

static void refs_init(Refs *r) {
    r->items = r->small;
    r->size = 0;
    r->cap = REFS_SMALL;
}

static int refs_push(Refs *r, PyObject *item) {
    if (r->size == r->cap) {
        size_t cap = (size_t)r->cap * 2;
        PyObject **items = r->items == r->small ? PyMem_Malloc(cap * sizeof(PyObject *))
                                                : PyMem_Realloc(r->items, cap * sizeof(PyObject *));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (r->items == r->small) memcpy(items, r->small, sizeof r->small);
        r->items = items;
        r->cap = (Py_ssize_t)cap;
    }
    r->items[r->size++] = Py_NewRef(item);
    return 0;
}

static void refs_clear(Refs *r) {
    for (Py_ssize_t i = 0; i < r->size; i++) Py_DECREF(r->items[i]);
    if (r->items != r->small) PyMem_Free(r->items);
    refs_init(r);
}

/* A new list of the references (which it takes); r is left empty. */
static PyObject *refs_list(Refs *r) {
    PyObject *list = PyList_New(r->size);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < r->size; i++) PyList_SET_ITEM(list, i, r->items[i]);
    r->size = 0;
    refs_clear(r);
    return list;
}

typedef struct {
    StemMemo *memo;
    PyObject *vocab;      /* NULL, or the only stems to put in stems (stem_into) */
    const uint64_t *bits; /* vocab's filter, or NULL */
    PyObject *stems;
    Refs *terms, *salient;
} Visit;

#define SHAPE_UNKNOWN 2 /* no salient_shape value */

/* text._is_salient_word of a word that is no stop word, from its bytes and flags (shape: its
 * salient_shape, or SHAPE_UNKNOWN). */
static int salient_bytes(const char *w, Py_ssize_t n, long flags, int shape) {
    int digits = shape == SHAPE_UNKNOWN ? salient_shape(w, n) : shape;
    if (digits < 0 || (flags & (WORD_CALENDAR | WORD_WEB))) return 0;
    return n >= 3 || digits;
}

/* The word w[0:n]: its stem into stems and, unless it is a stop word, terms and (if salient)
 * salient. shape: salient_shape(w, n), or SHAPE_UNKNOWN to have it computed when needed. */
static int visit_word(Visit *v, const char *w, Py_ssize_t n, int shape) {
    Entry *e = memo_entry(v->memo, w, n, NULL);
    if (e == NULL || stem_into(v->stems, e->stem, v->vocab, v->bits) < 0) return -1;
    long flags = (long)(e->info & WORD_FLAGS);
    if (flags & WORD_STOP) return 0;
    if (refs_push(v->terms, e->stem) < 0) return -1;
    if (v->salient != NULL && salient_bytes(w, n, flags, shape))
        return refs_push(v->salient, e->word);
    return 0;
}

static int visit_piece(void *v, const char *w, Py_ssize_t n) {
    return visit_word((Visit *)v, w, n, SHAPE_UNKNOWN);
}

/* visit_word of seg[0:n]'s atoms (append_atoms' pieces). */
static int visit_atoms(Visit *v, const char *seg, Py_ssize_t n) {
    return for_atoms(seg, n, v, visit_piece);
}

/* salient_shape of a token from its classes (identifier_end's): the token is made of word
 * characters and separators only. */
static int token_shape(unsigned classes) {
    if (classes & (C_SEP | C_SLASH | C_UNDER)) return -1;
    if (!(classes & (C_UPPER | C_LOWER))) return -1; /* digits only */
    return (classes & C_DIGIT) != 0;
}

/* visit_word of the token t[0:n] (classes: its bytes', or'ed) and then of its parts
 * (append_words' words). The classes spare most tokens (plain words) the scans for parts. */
static int visit_token(Visit *v, const char *t, Py_ssize_t n, unsigned classes) {
    if (visit_word(v, t, n, token_shape(classes)) < 0) return -1;
    if (!(classes & (C_SEP | C_UNDER | C_SLASH))) return 0; /* no part: for_atoms finds none */
    if (!(classes & C_SLASH)) return visit_atoms(v, t, n);
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        if (i == n || t[i] == '/') {
            if (i > start && (visit_word(v, t + start, i - start, SHAPE_UNKNOWN) < 0 ||
                              visit_atoms(v, t + start, i - start) < 0))
                return -1;
            start = i + 1;
        }
    }
    return 0;
}

static int memo_words(Visit *v, const char *t, Py_ssize_t n, int *identifiers) {
    char *d = PyMem_Malloc((size_t)n + 1);
    if (d == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t m = drop_into(t, n, d);
    int rc = 0;
    unsigned classes, all = 0;
    for (Py_ssize_t i = 0; i < m && rc == 0;) {
        if (!(CLS(d[i]) & (C_AW | C_SLASH))) { /* no token starts here */
            i++;
            continue;
        }
        Py_ssize_t end = identifier_end(d, m, i, &classes);
        if (end < 0) {
            i++;
            continue;
        }
        all |= classes;
        rc = visit_token(v, d + i, end - i, classes);
        i = end;
    }
    *identifiers = (all & (C_SEP | C_SLASH | C_UNDER)) != 0; /* a token not all alphanumeric */
    PyMem_Free(d);
    return rc;
}

/* memo if it is a StemMemo of the word lists sets (stop, calendar, units, web: its flags
 * answer for them), else NULL. */
static StemMemo *own_memo(PyObject *memo, PyObject **sets) {
    if (!PyObject_TypeCheck(memo, &StemMemoType)) return NULL;
    StemMemo *m = (StemMemo *)memo;
    int same = m->stop == sets[0] && m->calendar == sets[1] && m->units == sets[2] &&
               m->web == sets[3];
    return same ? m : NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* A memory's cues and text keys in one call: text.derive_cues_and_keys                      */
/* ---------------------------------------------------------------------------------------- */

/* Each str of list normalized in place (textc_normalize: the same object when unchanged). */
static int normalize_all(PyObject *list) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *cue = textc_normalize(NULL, PyList_GET_ITEM(list, i));
        if (cue == NULL || PyList_SetItem(list, i, cue) < 0) return -1; /* drops the old one */
    }
    return 0;
}

/* The stems of words into stems (a set) and, for non-stop words, terms (a list), as
 * textc_stems_terms; with salient a list, also the salient words (textc_salient's test). */
static int stem_words(PyObject *words, PyObject *stop, PyObject *calendar, PyObject *web,
                      PyObject *memo, PyObject *vocab, PyObject *stems, PyObject *terms,
                      PyObject *salient) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(words); i++) {
        PyObject *word = PyList_GET_ITEM(words, i); /* borrowed: the list holds it */
        PyObject *stem = PyObject_GetItem(memo, word);
        if (stem == NULL) return -1;
        int is_stop = PySet_Contains(stop, word);
        int rc = is_stop < 0 ? -1 : stem_into(stems, stem, vocab, NULL);
        if (rc == 0 && !is_stop) rc = PyList_Append(terms, stem);
        Py_DECREF(stem);
        if (rc == 0 && !is_stop && salient != NULL) {
            int keep = salient_word(word, calendar, web);
            rc = keep < 0 ? -1 : keep ? PyList_Append(salient, word) : 0;
        }
        if (rc < 0) return -1;
    }
    return 0;
}

/* The name cues of ASCII content without "`" and "/" (text._name_cues: no code span, URL or
 * path to blank, apostrophes dropped here), normalized: a new list. sets: stop, calendar,
 * units; memo: a StemMemo of them, or NULL. */
static PyObject *content_names(PyObject *content, PyObject **sets, StemMemo *memo) {
    const char *t;
    Py_ssize_t n;
    if (ascii_arg(content, &t, &n) < 0) return NULL;
    if (memchr(t, '`', (size_t)n) != NULL || memchr(t, '/', (size_t)n) != NULL) {
        PyErr_SetString(PyExc_ValueError, "names: content without '`' or '/' only");
        return NULL;
    }
    char *d = PyMem_Malloc((size_t)n + 1);
    if (d == NULL) return PyErr_NoMemory();
    /* folded as they are found: a name's words, the memo's strs of them (normalize of each
     * cue made a new str: ~3 % of derive_plain) */
    PyObject *names = names_of(d, drop_into(t, n, d), sets[0], sets[1], sets[2], memo, 1);
    PyMem_Free(d);
    return names;
}

/* The stems and terms of ASCII t[0:n] into out[3..4] and, when same (rest is text), its
 * salient words into out[2]; the tokens identifiers_of needs into *tokens (none when no token
 * is an identifier). 0, or -1 with out[] and *tokens to clear. */
static int keys_of(const char *t, Py_ssize_t n, int same, PyObject **sets, PyObject *memo,
                   PyObject *vocab, PyObject **out, PyObject **tokens) {
    PyObject *words = NULL, *stop = sets[0], *calendar = sets[1], *web = sets[3];
    StemMemo *own = own_memo(memo, sets);
    int rc = -1;
    if ((out[3] = PySet_New(NULL)) == NULL) return -1;
    if (own != NULL) {
        int error, identifiers;
        const uint64_t *bits = filter_of(vocab, &error);
        if (error) return -1;
        Refs terms, salient;
        refs_init(&terms);
        refs_init(&salient);
        Visit v = {own, vocab, bits, out[3], &terms, same ? &salient : NULL};
        rc = memo_words(&v, t, n, &identifiers);
        if (rc == 0 && ((out[4] = refs_list(&terms)) == NULL ||
                        (out[2] = refs_list(&salient)) == NULL))
            rc = -1;
        refs_clear(&terms);
        refs_clear(&salient);
        if (rc < 0) return -1;
        *tokens = identifiers ? tokens_of(t, n) : PyTuple_New(0);
        return *tokens == NULL ? -1 : 0;
    }
    if ((out[2] = PyList_New(0)) == NULL || (out[4] = PyList_New(0)) == NULL) return -1;
    if ((*tokens = tokens_of(t, n)) == NULL || (words = expand(*tokens)) == NULL) return -1;
    rc = stem_words(words, stop, calendar, web, memo, vocab, out[3], out[4],
                    same ? out[2] : NULL);
    Py_DECREF(words);
    return rc;
}

/* The derive_cues buckets that come from text and rest (rest: text with its URLs and dates
 * blanked) and the text's keys: quoted, identifiers and salient words into out[0..2], the
 * stems and terms into out[3..4]. 0, or -1 with out[] to clear. */
static int text_parts(PyObject *text, PyObject *rest, PyObject **sets, PyObject *memo,
                      PyObject *vocab, PyObject **out) {
    PyObject *stop = sets[0], *calendar = sets[1], *web = sets[3];
    const char *t, *r;
    Py_ssize_t n, m;
    if (ascii_arg(text, &t, &n) < 0 || ascii_arg(rest, &r, &m) < 0) return -1;
    int same = n == m && memcmp(t, r, (size_t)n) == 0, rc = -1;
    PyObject *tokens = NULL, *rest_tokens = NULL;
    if (keys_of(t, n, same, sets, memo, vocab, out, &tokens) < 0) goto done;
    if ((rest_tokens = same ? Py_NewRef(tokens) : tokens_of(r, m)) == NULL) goto done;
    if (!same) {
        Py_SETREF(out[2], salient_of(rest_tokens, stop, calendar, web));
        if (out[2] == NULL) goto done;
    }
    if ((out[0] = quoted_of(t, n, stop)) == NULL || normalize_all(out[0]) < 0) goto done;
    rc = (out[1] = identifiers_of(rest_tokens, stop)) == NULL ? -1 : 0;
done:
    Py_XDECREF(tokens);
    Py_XDECREF(rest_tokens);
    return rc;
}

/* derive_keys' work, its arguments checked: (cues, stems, terms), or with text_item
 * (cues, text_item, stems, terms): a new tuple. */
static PyObject *derive_core(PyObject *content, PyObject *text, PyObject *rest, PyObject *names,
                             PyObject *hosts, PyObject *numbers, PyObject *dates,
                             Py_ssize_t limit, PyObject **sets, PyObject *memo, PyObject *vocab,
                             PyObject *text_item) {
    PyObject *parts[5] = {NULL, NULL, NULL, NULL, NULL}, *found = NULL;
    PyObject *cues = NULL, *result = NULL;
    if (text_parts(text, rest, sets, memo, vocab, parts) < 0) goto done;
    /* the text's words are in the memo now: the names' list tests read their flags there */
    found = names == Py_None ? content_names(content, sets, own_memo(memo, sets))
                             : Py_NewRef(names);
    if (found == NULL) goto done;
    /* derive_cues' order: quoted, identifiers, hosts, numbers, dates, names, Chinese (none in
     * ASCII text: left out), salient words; the last four here hold only worded cues */
    PyObject *buckets[7] = {parts[0], parts[1], hosts, numbers, dates, found, parts[2]};
    if ((cues = first_valid_of(buckets, 7, limit, 4)) == NULL) goto done;
    Py_ssize_t at = text_item != NULL;
    if ((result = PyTuple_New(3 + at)) == NULL) goto done;
    PyTuple_SET_ITEM(result, 0, cues); /* the tuple takes the references */
    if (text_item != NULL) PyTuple_SET_ITEM(result, 1, Py_NewRef(text_item));
    PyTuple_SET_ITEM(result, 1 + at, parts[3]);
    PyTuple_SET_ITEM(result, 2 + at, parts[4]);
    cues = parts[3] = parts[4] = NULL;
done:
    for (int i = 0; i < 5; i++) Py_XDECREF(parts[i]);
    Py_XDECREF(found);
    Py_XDECREF(cues);
    return result;
}

static int sets_arg(PyObject **sets) {
    return set_arg(sets[0], "stop_words") < 0 || set_arg(sets[1], "calendar_words") < 0 ||
                   set_arg(sets[2], "units") < 0 || set_arg(sets[3], "web_parts") < 0
               ? -1
               : 0;
}

/* A vocab argument: None (every stem) or a set; NULL with TypeError otherwise. */
static int vocab_arg(PyObject **vocab) {
    if (*vocab == Py_None) {
        *vocab = NULL;
        return 0;
    }
    return set_arg(*vocab, "vocab");
}

/* derive_keys(content, text, rest, names, hosts, numbers, dates, limit, stop_words,
 * calendar_words, units, web_parts, stems, vocab): (text.derive_cues(content, limit=limit),
 * *the stems_and_terms of text) for ASCII content, where text is its normalized text and rest,
 * names (None: derived here, for content without "`" and "/"), hosts, numbers and dates are
 * what derive_cues' regex rules gave; with a set vocab, only the stems in it. */
static PyObject *textc_derive_keys(PyObject *self, PyObject *args) {
    PyObject *content, *text, *rest, *names, *hosts, *numbers, *dates, *sets[4], *memo, *vocab;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "OOOOOOOnOOOOOO:derive_keys", &content, &text, &rest, &names,
                          &hosts, &numbers, &dates, &limit, &sets[0], &sets[1], &sets[2],
                          &sets[3], &memo, &vocab))
        return NULL;
    if (sets_arg(sets) < 0 || vocab_arg(&vocab) < 0) return NULL;
    return derive_core(content, text, rest, names, hosts, numbers, dates, limit, sets, memo,
                       vocab, NULL);
}

/* derive_plain(content, limit, stop_words, calendar_words, units, web_parts, stems, vocab):
 * for ASCII content without a digit, "`" or "/" (no date, number, URL, code span or path: the
 * regex rules find nothing), (derive_cues(content, limit=limit), normalize(content), *its
 * stems_and_terms), the text normalized here too (stems: only those in vocab, a set, unless
 * it is None); None for other ASCII content. */
static PyObject *textc_derive_plain(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* a fast call: parsing a tuple of its 8 arguments was ~2 % of it */
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "derive_plain: 8 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *content = args[0], *sets[4] = {args[2], args[3], args[4], args[5]}, *memo = args[6];
    PyObject *vocab = args[7];
    Py_ssize_t limit = PyNumber_AsSsize_t(args[1], PyExc_OverflowError), n;
    const char *t;
    if ((limit == -1 && PyErr_Occurred()) || sets_arg(sets) < 0 || vocab_arg(&vocab) < 0 ||
        ascii_arg(content, &t, &n) < 0)
        return NULL;
    unsigned classes;
    PyObject *text = normalized_str(content, t, n, &classes), *empty = NULL, *result = NULL;
    if (text != NULL && (classes & (C_DIGIT | C_TICK | C_SLASH))) { /* not plain (~3 %) */
        Py_DECREF(text);
        Py_RETURN_NONE;
    }
    if (text != NULL && (empty = PyList_New(0)) != NULL)
        result = derive_core(content, text, text, Py_None, empty, empty, empty, limit, sets, memo,
                             vocab, text);
    Py_XDECREF(text);
    Py_XDECREF(empty);
    return result;
}

/* A new instance of the tuple subclass cls (a NamedTuple: textkeys.TextKeys) holding a, b, c
 * (new references taken); NULL on error. What tuple.__new__(cls, (a, b, c)) makes, without
 * the Python __new__ a NamedTuple's call runs. */
static PyObject *subtuple3(PyTypeObject *cls, PyObject *a, PyObject *b, PyObject *c) {
    PyObject *t = cls->tp_alloc(cls, 3);
    if (t == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(c);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, a);
    PyTuple_SET_ITEM(t, 1, b);
    PyTuple_SET_ITEM(t, 2, c);
    return t;
}

/* The spec memo_derived reads: (keys, derived, TextKeys, find_in, fallback, limit, stop_words,
 * calendar_words, units, web_parts, stems, vocab), see textkeys.TextMemo.derive. */
enum {
    MD_KEYS, MD_DERIVED, MD_TEXTKEYS, MD_FIND_IN, MD_FALLBACK, MD_LIMIT, MD_SETS, MD_STEMS = 10,
    MD_VOCAB, MD_SIZE
};

/* The text keys of plain content into keys[content] (unless there) from derive_plain's
 * (cues, text, stems, terms); its cues as a new tuple into derived[content], returned. */
static PyObject *memo_keep(PyObject *const *spec, PyObject *content, PyObject *plain) {
    PyObject *cues = PyTuple_GET_ITEM(plain, 0), *text = PyTuple_GET_ITEM(plain, 1);
    PyObject *stems = PyTuple_GET_ITEM(plain, 2), *terms = PyTuple_GET_ITEM(plain, 3);
    int held = PyDict_Contains(spec[MD_KEYS], content);
    if (held < 0) return NULL;
    if (!held) {
        /* TextMemo.derived_cues: no stem of the alias table's terms (most texts), nothing to
         * find in ASCII text */
        PyObject *found = PySet_GET_SIZE(stems)
                              ? PyObject_CallFunctionObjArgs(spec[MD_FIND_IN], text, stems, NULL)
                              : PyList_New(0);
        if (found == NULL) return NULL;
        PyObject *keys = subtuple3((PyTypeObject *)spec[MD_TEXTKEYS], Py_NewRef(text), found,
                                   Py_NewRef(terms));
        int rc = keys == NULL ? -1 : PyDict_SetItem(spec[MD_KEYS], content, keys);
        Py_XDECREF(keys);
        if (rc < 0) return NULL;
    }
    PyObject *derived = PyList_AsTuple(cues);
    if (derived == NULL || PyDict_SetItem(spec[MD_DERIVED], content, derived) < 0) {
        Py_XDECREF(derived);
        return NULL;
    }
    return derived;
}

/* memo_derived(spec, content): textkeys.TextMemo.derived_cues(content) (spec: see MD_*) for
 * plain ASCII content (derive_plain's), its text keys and cues kept in the memo's dicts as
 * that method keeps them; any other content goes to the method (spec's fallback). */
static PyObject *textc_memo_derived(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_CheckExact(args[0]) || PyTuple_GET_SIZE(args[0]) != MD_SIZE ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(args[0], MD_KEYS)) ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(args[0], MD_DERIVED)) ||
        !PyType_Check(PyTuple_GET_ITEM(args[0], MD_TEXTKEYS)) ||
        !PyType_IsSubtype((PyTypeObject *)PyTuple_GET_ITEM(args[0], MD_TEXTKEYS),
                          &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "memo_derived(spec, content): see TextMemo.derive");
        return NULL;
    }
    PyObject *const *spec = &PyTuple_GET_ITEM(args[0], 0), *content = args[1];
    if (!PyUnicode_CheckExact(content) || !PyUnicode_IS_ASCII(content))
        return PyObject_CallOneArg(spec[MD_FALLBACK], content);
    PyObject *call[8] = {content,           spec[MD_LIMIT],     spec[MD_SETS],
                         spec[MD_SETS + 1], spec[MD_SETS + 2], spec[MD_SETS + 3],
                         spec[MD_STEMS],    spec[MD_VOCAB]};
    PyObject *plain = textc_derive_plain(self, call, 8);
    if (plain == NULL) return NULL;
    if (plain == Py_None) { /* a digit, "`" or "/": the regex rules' (~3 %) */
        Py_DECREF(plain);
        return PyObject_CallOneArg(spec[MD_FALLBACK], content);
    }
    PyObject *derived = PyTuple_CheckExact(plain) && PyTuple_GET_SIZE(plain) == 4
                            ? memo_keep(spec, content, plain)
                            : NULL;
    if (derived == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_SystemError, "memo_derived: derive_plain's result");
    Py_DECREF(plain);
    return derived;
}

/* ---------------------------------------------------------------------------------------- */
/* A record row's packed cues: recordtable._packed_cues                                      */
/* ---------------------------------------------------------------------------------------- */

/* How many leading cues have a code, giving one to each held cue without (recordtable's
 * _coded_prefix, in one pass: a cue's code is looked up when it is reached, so one given
 * twice finds the code its first time gave); their codes into out. -1 on error. */
static Py_ssize_t coded_prefix(PyObject *cues, PyObject *held, PyObject *codes, PyObject *names,
                               Py_ssize_t max_codes, uint16_t *out) {
    Py_ssize_t k = 0;
    for (; k < PyTuple_GET_SIZE(cues); k++) {
        PyObject *cue = PyTuple_GET_ITEM(cues, k);
        PyObject *code = PyDict_GetItemWithError(codes, cue); /* borrowed */
        long value;
        if (code == NULL) {
            if (PyErr_Occurred()) return -1;
            if (PyList_GET_SIZE(names) >= max_codes) break;
            int found = PySequence_Contains(held, cue);
            if (found <= 0) {
                if (found < 0) return -1;
                break;
            }
            value = (long)PyList_GET_SIZE(names);
            PyObject *number = PyLong_FromLong(value);
            int rc = number == NULL ? -1 : PyDict_SetItem(codes, cue, number);
            Py_XDECREF(number);
            if (rc < 0 || PyList_Append(names, cue) < 0) return -1;
        } else if ((value = PyLong_AsLong(code)) == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (value < 0 || value > 0xFFFF) {
            PyErr_SetString(PyExc_ValueError, "pack_cues: a code outside 0..65535");
            return -1;
        }
        out[k] = (uint16_t)value;
    }
    return k;
}

/* The packed row of the coded cues' codes and the UTF-8 text of the rest (cues[k:], joined
 * by NUL); the cues tuple itself (a new reference) when they cannot be packed: more than
 * 255 coded, a rest cue empty or holding a NUL, a lone surrogate. NULL on error. */
static PyObject *packed_row(PyObject *cues, Py_ssize_t k, const uint16_t *coded) {
    Py_ssize_t count = PyTuple_GET_SIZE(cues);
    if (k > 255) return Py_NewRef(cues);
    PyObject *rest = PyTuple_GetSlice(cues, k, count), *text = NULL, *utf8 = NULL, *row = NULL;
    if (rest == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count - k; i++) {
        PyObject *cue = PyTuple_GET_ITEM(rest, i);
        if (!PyUnicode_Check(cue)) {
            PyErr_SetString(PyExc_TypeError, "pack_cues: a cue must be a str");
            goto done;
        }
        if (PyUnicode_GET_LENGTH(cue) == 0 || PyUnicode_FindChar(cue, 0, 0, PY_SSIZE_T_MAX, 1) != -1) {
            row = PyErr_Occurred() ? NULL : Py_NewRef(cues);
            goto done;
        }
    }
    PyObject *nul = PyUnicode_FromOrdinal(0);
    text = nul == NULL ? NULL : PyUnicode_Join(nul, rest);
    Py_XDECREF(nul);
    if (text == NULL) goto done;
    if ((utf8 = PyUnicode_AsUTF8String(text)) == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) { /* a lone surrogate */
            PyErr_Clear();
            row = Py_NewRef(cues);
        }
        goto done;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(utf8);
    if ((row = PyBytes_FromStringAndSize(NULL, 1 + 2 * k + size)) == NULL) goto done;
    char *out = PyBytes_AS_STRING(row);
    out[0] = (char)k;
    if (k > 0) memcpy(out + 1, coded, 2 * (size_t)k); /* native order, as struct's "=H" */
    if (size > 0) memcpy(out + 1 + 2 * k, PyBytes_AS_STRING(utf8), (size_t)size);
done:
    Py_DECREF(rest);
    Py_XDECREF(text);
    Py_XDECREF(utf8);
    return row;
}

/* pack_cues(cues, held, codes, names, max_codes): recordtable._packed_cues with _CODES_MAX
 * max_codes (codes: a dict of cue -> code, names: the list of cues by code, both added to). */
static PyObject *textc_pack_cues(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* a fast call: parsing a tuple of its 5 arguments was ~750 instructions a bulk row */
    if (nargs != 5 || !PyTuple_Check(args[0]) || !PyDict_Check(args[2]) || !PyList_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "pack_cues(cues: tuple, held, codes: dict, names: list, "
                                         "max_codes: int)");
        return NULL;
    }
    PyObject *cues = args[0], *held = args[1], *codes = args[2], *names = args[3];
    Py_ssize_t max_codes = PyNumber_AsSsize_t(args[4], PyExc_OverflowError);
    if (max_codes == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(cues);
    if (count == 0) return Py_NewRef(cues); /* the one empty tuple */
    uint16_t *coded = PyMem_Malloc(sizeof(uint16_t) * (size_t)count);
    if (coded == NULL) return PyErr_NoMemory();
    Py_ssize_t k = coded_prefix(cues, held, codes, names, max_codes, coded);
    PyObject *row = k < 0 ? NULL : packed_row(cues, k, coded);
    PyMem_Free(coded);
    return row;
}

/* ---------------------------------------------------------------------------------------- */
/* A batch's deferred postings: index.NamespaceIndex.flush                                   */
/* ---------------------------------------------------------------------------------------- */

/* One deferred posting: its seq (the object and its value) and its value. Borrowed: the
 * pending lists hold them for the whole call, and nothing else can reach those lists. */
typedef struct {
    PyObject *seq_obj;
    PyObject *value; /* NULL: none (1.0), a byte of a bytes object or a count (in byte) */
    int64_t seq;
    int byte; /* the value as an exact int 0..255 (1 without a value), a count; else -1 */
} Posting;

/* The postings of one key, in a Grouping's groups (first-posted order). */
typedef struct {
    PyObject *key; /* the key object as first posted (interned if counted): a new reference */
    Py_hash_t hash;
    Py_ssize_t start, n; /* posts[start .. start + n) once placed */
    int64_t last;
    Py_ssize_t memory; /* the memory of the last posting (counted keys add up in it) */
    int count;         /* that posting's count, for a counted memory */
    int regular; /* seqs ascending in 0..INT32_MAX and byte values: the fast path applies */
    int removed; /* posted by post_shared: neither extended nor compared */
} Group;

/* A slot of a Grouping's hash table: a key (NULL: an empty slot; borrowed from its group)
 * and its group. 16 bytes: the table of a batch's keys, probed once a posting, stays in the
 * caches (its slots were the 72-byte groups themselves: flush_postings took ~9 % longer,
 * 4.0 -> 3.7 us a memory, process time of 30,000 bench memories, six alternating runs). */
typedef struct {
    PyObject *key;
    int32_t index;
    uint32_t hash; /* the hash's low 32 bits (the table's positions: at most 2^32 slots) */
} Slot;

/* One pending kind's postings grouped by key (_Pending.by_key), keys in first-posted order. */
typedef struct {
    Slot *table; /* open addressing on the key's hash, at most half full */
    Py_ssize_t mask, count;
    Group *groups; /* count groups in first-posted order, room for size */
    Py_ssize_t size;
    Posting *posts;
    Py_ssize_t npost;
    int32_t *owner; /* each key's group index in input order; -1 - it: a repeat, counted */
} Grouping;

/* What flush_postings works with: the classes and array templates, and the length from which
 * a Postings' own arrays grow in place (postings.GROW_IN_PLACE). */
typedef struct {
    PyObject *postings, *one, *array_type, *seqs_template, *bytes_template;
    Py_ssize_t in_place;
} Kinds;

/* A postings table's dicts: its own, the one shared with its twin, the twin's own (NULL
 * without a twin), and its extend method (the reference, for what the fast path leaves). */
typedef struct {
    PyObject *held, *both, *twin_held, *extend;
} TableDicts;

static PyObject *SEQS_NAME, *VALUES_NAME, *SHARED_NAME;

static void grouping_free(Grouping *g) {
    for (Py_ssize_t i = 0; i < g->count; i++) Py_DECREF(g->groups[i].key);
    PyMem_Free(g->table);
    PyMem_Free(g->groups);
    PyMem_Free(g->posts);
    PyMem_Free(g->owner);
}

/* A str's hash without a call when it is cached (it is for every key seen before). */
static Py_hash_t key_hash(PyObject *key) {
    if (PyUnicode_CheckExact(key)) {
        Py_hash_t h = ((PyASCIIObject *)key)->hash;
        if (h != -1) return h;
    }
    return PyObject_Hash(key);
}

/* The table slot of key (hash h): the one holding it, or the empty slot it would take.
 * NULL with an exception set. */
static Slot *grouping_slot(const Grouping *g, PyObject *key, Py_hash_t h) {
    Py_ssize_t at = (Py_ssize_t)((size_t)h & (size_t)g->mask);
    for (;; at = (at + 1) & g->mask) {
        Slot *slot = &g->table[at];
        if (slot->key == key || slot->key == NULL) return slot;
        if (slot->hash == (uint32_t)h) {
            int same = PyObject_RichCompareBool(slot->key, key, Py_EQ);
            if (same) return same < 0 ? NULL : slot;
        }
    }
}

/* The group index of key, or -1 when it has none; -2 with an exception set. */
static Py_ssize_t grouping_find(const Grouping *g, PyObject *key, Py_hash_t h) {
    if (g->table == NULL) return -1;
    Slot *slot = grouping_slot(g, key, h);
    return slot == NULL ? -2 : slot->key == NULL ? -1 : slot->index;
}

/* Twice the slots (at least 64), the keys in them again. -1 on error. */
static int grouping_grow(Grouping *g) {
    Py_ssize_t size = g->table == NULL ? 64 : 2 * (g->mask + 1);
    Slot *table = PyMem_Calloc((size_t)size, sizeof(Slot));
    if (table == NULL) return -1;
    for (Py_ssize_t i = 0; g->table != NULL && i <= g->mask; i++) {
        Slot *old = &g->table[i];
        if (old->key == NULL) continue;
        Py_ssize_t at = (Py_ssize_t)((size_t)old->hash & (size_t)(size - 1));
        while (table[at].key != NULL) at = (at + 1) & (size - 1);
        table[at] = *old;
    }
    PyMem_Free(g->table);
    g->table = table;
    g->mask = size - 1;
    return 0;
}

/* Room for twice the groups (at least 64). -1 on error. */
static int groups_grow(Grouping *g) {
    Py_ssize_t size = g->size ? 2 * g->size : 64;
    Group *groups = PyMem_Realloc(g->groups, sizeof(Group) * (size_t)size);
    if (groups == NULL) return -1;
    g->groups = groups;
    g->size = size;
    return 0;
}

/* key as a counted memory's keys are posted: interned (recordtable.interned), a new
 * reference. */
static PyObject *interned_key(PyObject *key) {
    PyObject *text = PyUnicode_CheckExact(key) ? Py_NewRef(key) : PyObject_Str(key);
    if (text != NULL && PyUnicode_CheckExact(text)) PyUnicode_InternInPlace(&text);
    return text;
}

/* Count a posting of seq (with its byte) under key, made by memory (counted: its keys may
 * repeat, each repeat counted in its first posting); the key's group index, -1 - it for a
 * repeat, or INT32_MIN on error. */
static int32_t grouping_count(Grouping *g, PyObject *key, int64_t seq, int byte,
                              Py_ssize_t memory, int counted) {
    Py_hash_t h = key_hash(key);
    if (h == -1) return INT32_MIN;
    if (g->table == NULL || 2 * (g->count + 1) > g->mask + 1) {
        if (g->count >= INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "flush_postings: more keys than an int32 counts");
            return INT32_MIN;
        }
        if (grouping_grow(g) < 0) return INT32_MIN;
    }
    Slot *slot = grouping_slot(g, key, h);
    if (slot == NULL) return INT32_MIN;
    Group *group;
    if (slot->key == NULL) {
        if (g->count == g->size && groups_grow(g) < 0) return INT32_MIN;
        PyObject *kept = counted ? interned_key(key) : Py_NewRef(key);
        if (kept == NULL) return INT32_MIN;
        *slot = (Slot){kept, (int32_t)g->count, (uint32_t)h};
        group = &g->groups[g->count++];
        *group = (Group){kept, h, 0, 0, seq, memory, 0, 1, 0};
    } else {
        group = &g->groups[slot->index];
        if (counted && group->memory == memory) { /* a repeat: counted in its posting */
            if (++group->count > 255) group->regular = 0;
            return -1 - slot->index;
        }
        if (seq <= group->last) group->regular = 0;
    }
    if (seq < 0 || seq > INT32_MAX || byte < 0) group->regular = 0;
    group->last = seq;
    group->memory = memory;
    group->count = 1;
    group->n++;
    return slot->index;
}

/* The value at i of values (bytes, or a fast sequence), as a posting keeps it: its byte and
 * the object itself (NULL for a byte of bytes: made when needed). */
static PyObject *value_at(PyObject *values, Py_ssize_t i, int *byte) {
    if (PyBytes_CheckExact(values)) {
        *byte = (unsigned char)PyBytes_AS_STRING(values)[i];
        return NULL;
    }
    PyObject *value = PySequence_Fast_GET_ITEM(values, i);
    int overflow = 0;
    long v = PyLong_CheckExact(value) ? PyLong_AsLongAndOverflow(value, &overflow) : -1;
    *byte = !overflow && v >= 0 && v <= 255 ? (int)v : -1;
    return value;
}

/* The value object of a posting: a new reference. */
static PyObject *value_object(const Posting *p) {
    return p->value != NULL ? Py_NewRef(p->value) : PyLong_FromLong(p->byte);
}

/* One memory's keys, and values (NULL: none) as bytes or a fast sequence: new references,
 * checked to be as long as each other. -1 on error. */
static int memory_args(PyObject *keys, PyObject *values, PyObject **fast, PyObject **vals) {
    *vals = NULL;
    if ((*fast = PySequence_Fast(keys, "flush_postings: keys must be a sequence")) == NULL)
        return -1;
    if (values == NULL) return 0;
    *vals = PyBytes_CheckExact(values)
                ? Py_NewRef(values)
                : PySequence_Fast(values, "flush_postings: values must be a sequence");
    if (*vals != NULL) {
        Py_ssize_t n = PyBytes_CheckExact(*vals) ? PyBytes_GET_SIZE(*vals)
                                                 : PySequence_Fast_GET_SIZE(*vals);
        if (n == PySequence_Fast_GET_SIZE(*fast)) return 0;
        PyErr_SetString(PyExc_ValueError, "flush_postings: keys and values differ in length");
        Py_CLEAR(*vals);
    }
    Py_CLEAR(*fast);
    return -1;
}

/* Read memory's postings (values NULL: none; None: its keys counted): count them under
 * their keys (next NULL), or put each where its group's next one goes (next holds those
 * places). -1 on error. */
static int grouping_memory(Grouping *g, Py_ssize_t memory, PyObject *seq_obj, PyObject *keys,
                           PyObject *values, Py_ssize_t *at, Py_ssize_t *next) {
    int64_t seq = PyLong_AsLongLong(seq_obj);
    int counted = values == Py_None;
    PyObject *fast, *vals;
    if ((seq == -1 && PyErr_Occurred()) ||
        memory_args(keys, counted ? NULL : values, &fast, &vals) < 0)
        return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast) && rc == 0; i++, (*at)++) {
        int byte = 1;
        PyObject *value = vals == NULL ? NULL : value_at(vals, i, &byte);
        if (*at >= g->npost) { /* a key's __eq__ lengthened a list of keys */
            PyErr_SetString(PyExc_RuntimeError, "flush_postings: pending keys changed");
            rc = -1;
            break;
        }
        if (next == NULL) {
            int32_t gi = grouping_count(g, PySequence_Fast_GET_ITEM(fast, i), seq, byte, memory,
                                        counted);
            if (gi == INT32_MIN) rc = -1;
            else g->owner[*at] = gi;
        } else if (g->owner[*at] < 0) { /* a repeat: one more in the key's last posting */
            g->posts[next[-1 - g->owner[*at]] - 1].byte++;
        } else {
            g->posts[next[g->owner[*at]]++] = (Posting){seq_obj, value, seq, byte};
        }
    }
    Py_DECREF(fast);
    Py_XDECREF(vals);
    return rc;
}

/* Every memory's postings through grouping_memory (count, or place with next). */
static int grouping_pass(Grouping *g, PyObject *seqs, PyObject *keys_of, PyObject *values_of,
                         Py_ssize_t *next) {
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seqs); i++) {
        PyObject *values = values_of == Py_None ? NULL : PyList_GET_ITEM(values_of, i);
        if (grouping_memory(g, i, PyList_GET_ITEM(seqs, i), PyList_GET_ITEM(keys_of, i), values,
                            &at, next) < 0)
            return -1;
    }
    return 0;
}

/* How many postings the memories' keys make. -1 on error. */
static Py_ssize_t postings_count(PyObject *keys_of) {
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys_of); i++) {
        Py_ssize_t n = PyObject_Length(PyList_GET_ITEM(keys_of, i));
        if (n < 0) return -1;
        total += n;
    }
    return total;
}

/* Each group given its place (in first-posted order); next: a copy of the places. */
static Py_ssize_t *grouping_order(Grouping *g) {
    Py_ssize_t *next = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(g->count ? g->count : 1));
    if (next == NULL) return NULL;
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i < g->count; i++) {
        next[i] = g->groups[i].start = start;
        start += g->groups[i].n;
    }
    return next;
}

/* Group seqs[i]'s keys_of[i] (with values_of[i] if values_of is a list: None there for
 * keys counted, as index._counted counts them), each key's postings in the order posted.
 * -1 on error. */
static int grouping_fill(Grouping *g, PyObject *seqs, PyObject *keys_of, PyObject *values_of) {
    if (!PyList_Check(seqs) || !PyList_Check(keys_of) ||
        (values_of != Py_None && !PyList_Check(values_of))) {
        PyErr_SetString(PyExc_TypeError, "flush_postings: pending postings must be lists");
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(seqs);
    if (PyList_GET_SIZE(keys_of) != n || (values_of != Py_None && PyList_GET_SIZE(values_of) != n)) {
        PyErr_SetString(PyExc_ValueError, "flush_postings: pending lists differ in length");
        return -1;
    }
    if ((g->npost = postings_count(keys_of)) < 0) return -1;
    size_t room = (size_t)(g->npost ? g->npost : 1);
    g->owner = PyMem_Malloc(sizeof(int32_t) * room);
    g->posts = PyMem_Malloc(sizeof(Posting) * room);
    if (g->owner == NULL || g->posts == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (grouping_pass(g, seqs, keys_of, values_of, NULL) < 0) return -1;
    Py_ssize_t *next = grouping_order(g);
    if (next == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = grouping_pass(g, seqs, keys_of, values_of, next);
    PyMem_Free(next);
    return rc;
}

/* A new array like template (one item) of exactly size items, and its writable buffer. */
static PyObject *sized_array(PyObject *template, Py_ssize_t size, Py_buffer *view) {
    PyObject *array = PySequence_Repeat(template, size); /* exactly the size, as array + array */
    if (array != NULL && PyObject_GetBuffer(array, view, PyBUF_WRITABLE) < 0) Py_CLEAR(array);
    return array;
}

/* The items of array (of the typecode format, itemsize bytes each) as a read buffer; 0 when
 * it is not such an array (no exception), -1 on error. */
static int array_view(const Kinds *k, PyObject *array, char format, Py_ssize_t itemsize,
                      Py_buffer *view) {
    if (!Py_IS_TYPE(array, (PyTypeObject *)k->array_type)) return 0;
    if (PyObject_GetBuffer(array, view, PyBUF_FORMAT) < 0) return -1;
    if (view->itemsize != itemsize || view->format == NULL || view->format[0] != format ||
        view->format[1] != '\0') {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* A new exact-size array like template with old's items (old: an array of format and itemsize,
 * or NULL) and room for more after them; *view is its buffer (released by the caller, who fills
 * the room from (*head)). NULL on error. */
static PyObject *grown_array(const Kinds *k, PyObject *old, char format, Py_ssize_t itemsize,
                             PyObject *template, Py_ssize_t more, Py_buffer *view,
                             Py_ssize_t *head) {
    Py_buffer was = {0};
    *head = 0;
    if (old != NULL) {
        if (array_view(k, old, format, itemsize, &was) <= 0) return NULL; /* checked by caller */
        *head = was.len / itemsize;
    }
    PyObject *array = sized_array(template, *head + more, view);
    if (array != NULL && *head) memcpy(view->buf, was.buf, (size_t)was.len);
    if (old != NULL) PyBuffer_Release(&was);
    return array;
}

/* old's seqs (an "i" array, or NULL), then lead (if lead >= 0), then the group's seqs: a new
 * exact-size "i" array. */
static PyObject *seqs_array(const Kinds *k, PyObject *old, int64_t lead, const Posting *p,
                            Py_ssize_t n) {
    Py_buffer view;
    Py_ssize_t head;
    PyObject *array = grown_array(k, old, 'i', 4, k->seqs_template, (lead >= 0) + n, &view, &head);
    if (array != NULL) {
        int32_t *out = view.buf;
        if (lead >= 0) out[head++] = (int32_t)lead;
        for (Py_ssize_t i = 0; i < n; i++) out[head + i] = (int32_t)p[i].seq;
        PyBuffer_Release(&view);
    }
    return array;
}

/* old's values (a "B" array, or NULL), then ones 1s, then the group's bytes: a new "B" array. */
static PyObject *bytes_array(const Kinds *k, PyObject *old, Py_ssize_t ones, const Posting *p,
                             Py_ssize_t n) {
    Py_buffer view;
    Py_ssize_t head;
    PyObject *array = grown_array(k, old, 'B', 1, k->bytes_template, ones + n, &view, &head);
    if (array != NULL) {
        unsigned char *out = view.buf;
        memset(out + head, 1, (size_t)ones);
        for (Py_ssize_t i = 0; i < n; i++) out[head + ones + i] = (unsigned char)p[i].byte;
        PyBuffer_Release(&view);
    }
    return array;
}

/* Whether a posting's value is not 1.0 (the group is regular: its values are bytes). */
static int any_not_one(const Posting *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i].byte != 1) return 1;
    return 0;
}

/* A new object of class cls (Postings or _OnePosting) with its three slots. NULL on error. */
static PyObject *new_postings(PyObject *cls, PyObject *seqs, PyObject *values) {
    static PyObject *no_args = NULL;
    if (no_args == NULL && (no_args = PyTuple_New(0)) == NULL) return NULL;
    PyObject *obj = ((PyTypeObject *)cls)->tp_new((PyTypeObject *)cls, no_args, NULL);
    if (obj != NULL && (PyObject_SetAttr(obj, SEQS_NAME, seqs) < 0 ||
                        PyObject_SetAttr(obj, VALUES_NAME, values) < 0 ||
                        PyObject_SetAttr(obj, SHARED_NAME, Py_False) < 0))
        Py_CLEAR(obj);
    return obj;
}

/* The Postings holding lead (a bare seq's value, or -1 for none) and the group's postings;
 * held[key] = it. -1 on error. */
static int post_new(const Kinds *k, PyObject *held, Group *g, const Posting *p, int64_t lead) {
    PyObject *seqs = seqs_array(k, NULL, lead, p, g->n);
    PyObject *values = NULL, *obj = NULL;
    int rc = -1;
    if (seqs == NULL) return -1;
    if (!any_not_one(p, g->n)) values = Py_NewRef(Py_None);
    else if ((values = bytes_array(k, NULL, lead >= 0, p, g->n)) == NULL) goto done;
    if ((obj = new_postings(k->postings, seqs, values)) != NULL)
        rc = PyDict_SetItem(held, g->key, obj);
done:
    Py_DECREF(seqs);
    Py_XDECREF(values);
    Py_XDECREF(obj);
    return rc;
}

/* PostingsTable.put of a new key's one posting: a bare seq (shared with the twin when it
 * holds the same bare seq), or a _OnePosting for a value not 1.0. -1 on error. */
static int post_one(const Kinds *k, const TableDicts *t, Group *g, const Posting *p) {
    if (p->byte != 1) {
        PyObject *value = value_object(p);
        PyObject *obj = value == NULL ? NULL : new_postings(k->one, p->seq_obj, value);
        int rc = obj == NULL ? -1 : PyDict_SetItem(t->held, g->key, obj);
        Py_XDECREF(value);
        Py_XDECREF(obj);
        return rc;
    }
    if (PyDict_SetItem(t->held, g->key, p->seq_obj) < 0) return -1;
    if (t->twin_held == NULL) return 0;
    PyObject *other = PyDict_GetItemWithError(t->twin_held, g->key); /* borrowed */
    if (other == NULL) return PyErr_Occurred() ? -1 : 0;
    if (!PyLong_CheckExact(other)) return 0;
    int same = PyObject_RichCompareBool(other, p->seq_obj, Py_EQ);
    if (same <= 0) return same;
    if (PyDict_DelItem(t->held, g->key) < 0 || PyDict_DelItem(t->twin_held, g->key) < 0) return -1;
    return PyDict_SetItem(t->both, g->key, p->seq_obj);
}

/* array += more, in place (the array's own resize: a sixteenth more room kept). 1 when done, 0
 * when array exports its buffer (a reader holds a view: it must not move; nothing changed, no
 * exception), -1 on error. */
static int extend_in_place(PyObject *array, PyObject *more) {
    PyObject *same = PySequence_InPlaceConcat(array, more);
    if (same != NULL) {
        Py_DECREF(same);
        return 1;
    }
    if (!PyErr_ExceptionMatches(PyExc_BufferError)) return -1;
    PyErr_Clear();
    return 0;
}

/* post_more's appending in place, for a Postings whose seqs array is its own (not shared) and
 * at least k->in_place long (postings.GROW_IN_PLACE): each batch copying whole arrays into new
 * ones of exactly the size was a memory-bound cost that grew with the store (bench scale: the
 * flush took 13 us a memory at 1M against 7 at 100k). Values first made (None until a value
 * is not 1) are a new array. 1 when appended, 0 when not (nothing changed), -1 on error. The
 * same arrays as the reference (Postings.extend) grows in place. */
static int grow_in_place(const Kinds *k, PyObject *held, PyObject *seqs, PyObject *values,
                         const Posting *p, Py_ssize_t n) {
    Py_ssize_t size = PyObject_Length(seqs);
    if (size < 0) return -1;
    if (size < k->in_place) return 0;
    PyObject *shared = PyObject_GetAttr(held, SHARED_NAME);
    if (shared == NULL) return -1;
    int own = shared == Py_False;
    Py_DECREF(shared);
    if (!own) return 0;
    PyObject *more_seqs = seqs_array(k, NULL, -1, p, n), *more_values = NULL, *made = NULL;
    int rc = -1;
    if (more_seqs == NULL) return -1;
    if (values != Py_None) {
        if ((more_values = bytes_array(k, NULL, 0, p, n)) == NULL ||
            (rc = extend_in_place(values, more_values)) <= 0)
            goto done;
    } else if (any_not_one(p, n) && (made = bytes_array(k, NULL, size, p, n)) == NULL) {
        goto done;
    }
    if ((rc = extend_in_place(seqs, more_seqs)) == 0 && values != Py_None &&
        PySequence_DelSlice(values, size, size + n) < 0) /* back as it was */
        rc = -1;
    if (rc == 1 && made != NULL && PyObject_SetAttr(held, VALUES_NAME, made) < 0) rc = -1;
done:
    Py_DECREF(more_seqs);
    Py_XDECREF(more_values);
    Py_XDECREF(made);
    return rc;
}

/* Append the group's postings to the Postings held (an exact Postings of an "i" array below
 * them, values None or a "B" array); 0 when held is not such a one (nothing changed). */
static int post_more(const Kinds *k, PyObject *held, Group *g, const Posting *p) {
    PyObject *seqs = PyObject_GetAttr(held, SEQS_NAME);
    PyObject *values = seqs == NULL ? NULL : PyObject_GetAttr(held, VALUES_NAME);
    PyObject *more_seqs = NULL, *more_values = NULL;
    Py_buffer view;
    int rc = -1, fits;
    if (values == NULL) goto done;
    if ((fits = array_view(k, seqs, 'i', 4, &view)) <= 0) {
        rc = fits;
        goto done;
    }
    fits = view.len > 0 && ((const int32_t *)view.buf)[view.len / 4 - 1] < p[0].seq;
    PyBuffer_Release(&view);
    if (fits && values != Py_None) {
        if ((fits = array_view(k, values, 'B', 1, &view)) < 0) goto done;
        if (fits) PyBuffer_Release(&view);
    }
    if (!fits) {
        rc = 0;
        goto done;
    }
    if ((rc = grow_in_place(k, held, seqs, values, p, g->n)) != 0) goto done;
    rc = -1;
    if ((more_seqs = seqs_array(k, seqs, -1, p, g->n)) == NULL) goto done;
    if (values != Py_None) more_values = bytes_array(k, values, 0, p, g->n);
    else if (any_not_one(p, g->n)) more_values = bytes_array(k, NULL, PyObject_Length(seqs), p, g->n);
    else more_values = Py_NewRef(Py_None);
    if (more_values == NULL) goto done;
    if (PyObject_SetAttr(held, SEQS_NAME, more_seqs) < 0 ||
        PyObject_SetAttr(held, SHARED_NAME, Py_False) < 0 ||
        PyObject_SetAttr(held, VALUES_NAME, more_values) < 0)
        goto done;
    rc = 1;
done:
    Py_XDECREF(seqs);
    Py_XDECREF(values);
    Py_XDECREF(more_seqs);
    Py_XDECREF(more_values);
    return rc;
}

/* The group's seqs and values (None when it has none) as lists, for its extend. -1 on error
 * (what was made is in *seqs and *values all the same). */
static int reference_lists(const Group *g, const Posting *p, int valued, PyObject **seqs,
                           PyObject **values) {
    *seqs = PyList_New(g->n);
    *values = valued ? PyList_New(g->n) : Py_NewRef(Py_None);
    if (*seqs == NULL || *values == NULL) return -1;
    for (Py_ssize_t i = 0; i < g->n; i++) {
        PyList_SET_ITEM(*seqs, i, Py_NewRef(p[i].seq_obj));
        if (!valued) continue;
        PyObject *value = value_object(&p[i]);
        if (value == NULL) return -1;
        PyList_SET_ITEM(*values, i, value);
    }
    return 0;
}

/* The reference: PostingsTable.extend(key, seqs, values) with the group's postings. */
static int post_by_reference(const TableDicts *t, Group *g, const Posting *p, int valued) {
    PyObject *seqs, *values, *done = NULL;
    if (reference_lists(g, p, valued, &seqs, &values) == 0)
        done = PyObject_CallFunctionObjArgs(t->extend, g->key, seqs, values, NULL);
    Py_XDECREF(seqs);
    Py_XDECREF(values);
    if (done == NULL) return -1;
    Py_DECREF(done);
    return 0;
}

/* PostingsTable._unshare of key, shared as the bare seq: back to both tables' own dicts. */
static int unshare_key(const TableDicts *t, PyObject *key, PyObject *seq) {
    Py_INCREF(seq);
    int rc = PyDict_DelItem(t->both, key) < 0 || PyDict_SetItem(t->held, key, seq) < 0 ||
             PyDict_SetItem(t->twin_held, key, seq) < 0;
    Py_DECREF(seq);
    return rc ? -1 : 0;
}

/* PostingsTable.extend(key, the group's seqs, values): the fast path where the key is new,
 * a bare seq (shared or not) or an array Postings below the group's seqs, else the reference. */
static int post_group(const Kinds *k, const TableDicts *t, const Grouping *g, Group *group,
                      int valued) {
    const Posting *p = g->posts + group->start;
    if (!group->regular) return post_by_reference(t, group, p, valued);
    PyObject *held = PyDict_GetItemWithError(t->held, group->key); /* borrowed */
    if (held == NULL && PyErr_Occurred()) return -1;
    PyObject *shared = held != NULL ? NULL : PyDict_GetItemWithError(t->both, group->key);
    if (held == NULL && shared == NULL) {
        if (PyErr_Occurred()) return -1;
        return group->n == 1 ? post_one(k, t, group, p) : post_new(k, t->held, group, p, -1);
    }
    PyObject *bare = held != NULL ? held : shared;
    if (PyLong_CheckExact(bare)) {
        int overflow = 0;
        long long lead = PyLong_AsLongLongAndOverflow(bare, &overflow);
        if (lead == -1 && PyErr_Occurred()) return -1;
        if (overflow || lead < 0 || lead > INT32_MAX || lead >= p[0].seq ||
            (shared != NULL && t->twin_held == NULL))
            return post_by_reference(t, group, p, valued);
        if (shared != NULL && unshare_key(t, group->key, bare) < 0) return -1;
        return post_new(k, t->held, group, p, lead);
    }
    if (held != NULL && Py_IS_TYPE(held, (PyTypeObject *)k->postings)) {
        Py_INCREF(held);
        int done = post_more(k, held, group, p);
        Py_DECREF(held);
        if (done != 0) return done < 0 ? -1 : 0;
    }
    return post_by_reference(t, group, p, valued);
}

/* Whether a posting's value equals 1 (as _post_shared's comparison). -1 on error. */
static int is_one(const Posting *p) {
    if (p->value == NULL || p->byte >= 0) return p->byte == 1;
    PyObject *one = PyLong_FromLong(1);
    int same = one == NULL ? -1 : PyObject_RichCompareBool(p->value, one, Py_EQ);
    Py_XDECREF(one);
    return same;
}

/* NamespaceIndex._post_shared: a batch's new key one memory has as a cue (one posting) and
 * as a term used once goes straight into the shared dict; both its groups are then done. */
static int post_shared(const TableDicts *cue, const TableDicts *term, Grouping *cues,
                       Grouping *terms) {
    for (Py_ssize_t i = 0; i < cues->count && terms->count; i++) {
        Group *g = &cues->groups[i];
        if (g->n != 1) continue;
        Py_ssize_t ti = grouping_find(terms, g->key, g->hash);
        if (ti == -2) return -1;
        if (ti < 0 || terms->groups[ti].n != 1) continue;
        const Posting *mine = &cues->posts[g->start], *theirs = &terms->posts[terms->groups[ti].start];
        int one = mine->seq == theirs->seq ? is_one(theirs) : 0;
        if (one <= 0) {
            if (one < 0) return -1;
            continue;
        }
        int held = PyDict_Contains(cue->held, g->key);
        if (!held) held = PyDict_Contains(cue->both, g->key);
        if (!held) held = PyDict_Contains(term->held, g->key);
        if (held) {
            if (held < 0) return -1;
            continue;
        }
        if (PyDict_SetItem(cue->both, g->key, mine->seq_obj) < 0) return -1;
        g->removed = terms->groups[ti].removed = 1;
    }
    return 0;
}

/* share_equal_seqs's table: a mark (typecode, length, first, middle, last seq) -> the
 * first Postings seen with it. */
typedef struct {
    int64_t mark[5];
    PyObject *postings; /* borrowed (the tables hold it); NULL: an empty slot */
} MarkSlot;

typedef struct {
    MarkSlot *slots;
    Py_ssize_t mask;
} Marks;

/* The mark of a seqs buffer ("i" or "q"); 0 for an empty or other buffer. */
static int mark_of(const Py_buffer *view, int64_t *mark) {
    Py_ssize_t n = view->itemsize ? view->len / view->itemsize : 0;
    if (n == 0 || view->format == NULL || view->format[1] != '\0') return 0;
    char format = view->format[0];
    if (!((format == 'i' && view->itemsize == 4) || (format == 'q' && view->itemsize == 8)))
        return 0;
    Py_ssize_t at[3] = {0, n / 2, n - 1};
    mark[0] = format;
    mark[1] = n;
    for (int j = 0; j < 3; j++)
        mark[2 + j] = format == 'i' ? ((const int32_t *)view->buf)[at[j]]
                                    : ((const int64_t *)view->buf)[at[j]];
    return 1;
}

/* The slot of mark: the one holding it, or the empty one it would take. */
static MarkSlot *mark_slot(Marks *m, const int64_t *mark) {
    uint64_t h = 1469598103934665603ULL;
    for (int j = 0; j < 5; j++) h = (h ^ (uint64_t)mark[j]) * 1099511628211ULL;
    Py_ssize_t at = (Py_ssize_t)(h & (uint64_t)m->mask);
    while (m->slots[at].postings != NULL && memcmp(m->slots[at].mark, mark, sizeof(int64_t) * 5))
        at = (at + 1) & m->mask;
    return &m->slots[at];
}

/* Postings.share_seqs(postings, other): postings reads other's seqs array when they hold the
 * same seqs (same typecode, length and items). -1 on error. */
static int share_seqs(PyObject *postings, PyObject *other) {
    PyObject *mine = PyObject_GetAttr(postings, SEQS_NAME);
    PyObject *theirs = mine == NULL ? NULL : PyObject_GetAttr(other, SEQS_NAME);
    Py_buffer a, b;
    int rc = -1, same = 0;
    if (theirs == NULL) goto done;
    if (mine == theirs) {
        rc = 0;
        goto done;
    }
    if (PyObject_GetBuffer(mine, &a, PyBUF_FORMAT) < 0) goto done;
    if (PyObject_GetBuffer(theirs, &b, PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&a);
        goto done;
    }
    same = a.len == b.len && a.itemsize == b.itemsize && a.format && b.format &&
           strcmp(a.format, b.format) == 0 && memcmp(a.buf, b.buf, (size_t)a.len) == 0;
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    if (same && (PyObject_SetAttr(postings, SEQS_NAME, theirs) < 0 ||
                 PyObject_SetAttr(postings, SHARED_NAME, Py_True) < 0 ||
                 PyObject_SetAttr(other, SHARED_NAME, Py_True) < 0))
        goto done;
    rc = 0;
done:
    Py_XDECREF(mine);
    Py_XDECREF(theirs);
    return rc;
}

/* share_equal_seqs over what the table holds for each key of the grouping (not removed). */
static int share_group_seqs(const Kinds *k, Marks *m, const TableDicts *t, const Grouping *g) {
    for (Py_ssize_t i = 0; i < g->count; i++) {
        if (g->groups[i].removed) continue;
        PyObject *held = PyDict_GetItemWithError(t->held, g->groups[i].key); /* borrowed */
        if (held == NULL) {
            if (PyErr_Occurred()) return -1;
            continue; /* a bare seq (shared) */
        }
        if (!Py_IS_TYPE(held, (PyTypeObject *)k->postings)) continue;
        PyObject *seqs = PyObject_GetAttr(held, SEQS_NAME);
        if (seqs == NULL) return -1;
        int64_t mark[5];
        Py_buffer view;
        int marked = 0;
        if (PyObject_CheckBuffer(seqs)) {
            if (PyObject_GetBuffer(seqs, &view, PyBUF_FORMAT) < 0) {
                Py_DECREF(seqs);
                return -1;
            }
            marked = mark_of(&view, mark);
            PyBuffer_Release(&view);
        }
        Py_DECREF(seqs);
        if (!marked) continue;
        MarkSlot *slot = mark_slot(m, mark);
        if (slot->postings == NULL) {
            memcpy(slot->mark, mark, sizeof(mark));
            slot->postings = held;
        } else if (slot->postings != held && share_seqs(held, slot->postings) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The keys of the grouping that the table does not hold (before the flush): a list. */
static PyObject *new_keys(const TableDicts *t, const Grouping *g) {
    PyObject *keys = PyList_New(0);
    for (Py_ssize_t i = 0; keys != NULL && i < g->count; i++) {
        PyObject *key = g->groups[i].key;
        int held = PyDict_Contains(t->held, key);
        if (!held) held = PyDict_Contains(t->both, key);
        if (held < 0 || (!held && PyList_Append(keys, key) < 0)) Py_CLEAR(keys);
    }
    return keys;
}

/* A table's dicts from (held, both, twin_held or None, extend). -1 on error. */
static int table_arg(PyObject *item, TableDicts *t) {
    PyObject *twin;
    if (!PyArg_ParseTuple(item, "O!O!OO:flush_postings table", &PyDict_Type, &t->held,
                          &PyDict_Type, &t->both, &twin, &t->extend))
        return -1;
    if (twin != Py_None && !PyDict_Check(twin)) {
        PyErr_SetString(PyExc_TypeError, "flush_postings: a twin's dict or None");
        return -1;
    }
    t->twin_held = twin == Py_None ? NULL : twin;
    return 0;
}

/* Post the kind's groupings (plain, then valued) in the order the reference does. */
static int post_kind(const Kinds *k, const TableDicts *t, Grouping *plain, Grouping *valued) {
    for (Py_ssize_t i = 0; i < plain->count; i++)
        if (!plain->groups[i].removed && post_group(k, t, plain, &plain->groups[i], 0) < 0)
            return -1;
    for (Py_ssize_t i = 0; i < valued->count; i++)
        if (!valued->groups[i].removed && post_group(k, t, valued, &valued->groups[i], 1) < 0)
            return -1;
    return 0;
}

/* After the postings: share_equal_seqs of every key posted, kind by kind. -1 on error. */
static int share_all(const Kinds *k, const TableDicts *tables, Grouping *groupings) {
    Py_ssize_t total = 0, size = 64;
    for (int i = 0; i < 6; i++) total += groupings[i].count;
    while (size < 2 * total) size *= 2;
    Marks m = {PyMem_Calloc((size_t)size, sizeof(MarkSlot)), size - 1};
    if (m.slots == NULL) return -1;
    int rc = 0;
    for (int i = 0; i < 6 && rc == 0; i++) rc = share_group_seqs(k, &m, &tables[i / 2], &groupings[i]);
    PyMem_Free(m.slots);
    return rc;
}

/* flush_postings(pending, tables, kinds): NamespaceIndex.flush's postings.
 *   pending  per kind (cue, tag, term): (plain seqs, plain keys, valued seqs, valued keys,
 *            valued values), _Pending's lists
 *   tables   per kind: (its _held, its _both, its twin's _held or None, its extend)
 *   kinds    (Postings, _OnePosting, array.array, array("i", [0]), array("B", [0]),
 *            postings.GROW_IN_PLACE)
 * Returns the new cue keys and the new tag keys (for the lexicons), as the reference finds
 * them. */
static PyObject *textc_flush_postings(PyObject *self, PyObject *args) {
    PyObject *pending, *tables_arg, *result = NULL, *new_cues = NULL, *new_tags = NULL;
    Kinds k;
    TableDicts tables[3];
    Grouping groupings[6];
    memset(groupings, 0, sizeof(groupings));
    if (!PyArg_ParseTuple(args, "O!O!(OOOOOn):flush_postings", &PyTuple_Type, &pending,
                          &PyTuple_Type, &tables_arg, &k.postings, &k.one, &k.array_type,
                          &k.seqs_template, &k.bytes_template, &k.in_place))
        return NULL;
    if (PyTuple_GET_SIZE(pending) != 3 || PyTuple_GET_SIZE(tables_arg) != 3 ||
        !PyType_Check(k.postings) || !PyType_Check(k.one) || !PyType_Check(k.array_type)) {
        PyErr_SetString(PyExc_TypeError, "flush_postings: three kinds, and classes");
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        PyObject *kind = PyTuple_GET_ITEM(pending, i), *plain_seqs, *plain_keys, *seqs, *keys,
                 *values;
        if (table_arg(PyTuple_GET_ITEM(tables_arg, i), &tables[i]) < 0 ||
            !PyArg_ParseTuple(kind, "OOOOO:flush_postings pending", &plain_seqs, &plain_keys,
                              &seqs, &keys, &values) ||
            grouping_fill(&groupings[2 * i], plain_seqs, plain_keys, Py_None) < 0 ||
            grouping_fill(&groupings[2 * i + 1], seqs, keys, values) < 0)
            goto done;
    }
    if ((new_cues = new_keys(&tables[0], &groupings[0])) == NULL ||
        (new_tags = new_keys(&tables[1], &groupings[2])) == NULL ||
        post_shared(&tables[0], &tables[2], &groupings[0], &groupings[5]) < 0)
        goto done;
    for (int i = 0; i < 3; i++)
        if (post_kind(&k, &tables[i], &groupings[2 * i], &groupings[2 * i + 1]) < 0) goto done;
    if (share_all(&k, tables, groupings) == 0) result = PyTuple_Pack(2, new_cues, new_tags);
done:
    for (int i = 0; i < 6; i++) grouping_free(&groupings[i]);
    Py_XDECREF(new_cues);
    Py_XDECREF(new_tags);
    return result;
}

/* ---------------------------------------------------------------------------------------- */
/* The store's open-addressing id and digest tables: keytables.py's probes                   */
/* ---------------------------------------------------------------------------------------- */

/* The seq in slot at of a table's slots (signed items of 1, 2, 4 or 8 bytes). */
static int64_t slot_seq(const Py_buffer *slots, Py_ssize_t at) {
    switch (slots->itemsize) {
    case 1: return ((const int8_t *)slots->buf)[at];
    case 2: return ((const int16_t *)slots->buf)[at];
    case 4: return ((const int32_t *)slots->buf)[at];
    default: return ((const int64_t *)slots->buf)[at];
    }
}

/* The slots array's buffer: signed integers ("i" or "q" as the tables keep them), a power of
 * two of them. -1 on error. */
static int slots_view(PyObject *slots, Py_buffer *view) {
    if (PyObject_GetBuffer(slots, view, PyBUF_FORMAT) < 0) return -1;
    Py_ssize_t n = view->itemsize ? view->len / view->itemsize : 0;
    const char *format = view->format == NULL ? "" : view->format;
    Py_ssize_t size = format[0] == 'b' ? 1 : format[0] == 'h' ? 2 : format[0] == 'i' ? 4
                      : format[0] == 'l' || format[0] == 'q' ? 8 : 0;
    if (format[0] == 'l') size = (Py_ssize_t)sizeof(long);
    if (format[1] != '\0' || size != view->itemsize || n == 0 || (n & (n - 1)) != 0) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "keytables: slots must be a power-of-two integer array");
        return -1;
    }
    return 0;
}

/* Probe from the slot of hash h to the slot whose seq matches (match 1) or an empty one:
 * the slot's index, or -1 - (the empty slot's); PY_SSIZE_T_MIN with an exception set. */
typedef int (*SeqMatch)(void *ctx, int64_t seq);

static Py_ssize_t probe(const Py_buffer *slots, uint64_t h, SeqMatch match, void *ctx) {
    Py_ssize_t mask = slots->len / slots->itemsize - 1, at = (Py_ssize_t)(h & (uint64_t)mask);
    for (Py_ssize_t tried = 0; tried <= mask; tried++, at = (at + 1) & mask) {
        int64_t seq = slot_seq(slots, at);
        if (seq == -1) return -1 - at; /* keytables._EMPTY */
        if (seq >= 0) {
            int found = match(ctx, seq);
            if (found) return found < 0 ? PY_SSIZE_T_MIN : at;
        }
    }
    PyErr_SetString(PyExc_RuntimeError, "keytables: a table without an empty slot");
    return PY_SSIZE_T_MIN;
}

typedef struct {
    PyObject *ids, *memory_id;
} IdProbe;

/* Whether ids[seq] == memory_id (IndexError past the list, as the reference). */
static int id_matches(void *ctx, int64_t seq) {
    IdProbe *p = ctx;
    if (seq >= PyList_GET_SIZE(p->ids)) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return -1;
    }
    PyObject *held = PyList_GET_ITEM(p->ids, (Py_ssize_t)seq);
    return held == p->memory_id ? 1 : PyObject_RichCompareBool(held, p->memory_id, Py_EQ);
}

/* id_slot(slots, ids, memory_id): keytables._id_slot. */
static PyObject *textc_id_slot(PyObject *self, PyObject *args) {
    PyObject *slots;
    IdProbe p;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OO!O:id_slot", &slots, &PyList_Type, &p.ids, &p.memory_id))
        return NULL;
    Py_hash_t h = PyObject_Hash(p.memory_id);
    if (h == -1 || slots_view(slots, &view) < 0) return NULL;
    Py_ssize_t at = probe(&view, (uint64_t)h, id_matches, &p);
    PyBuffer_Release(&view);
    return at == PY_SSIZE_T_MIN ? NULL : PyLong_FromSsize_t(at);
}

typedef struct {
    const unsigned char *digests, *digest;
    Py_ssize_t size, length;
} DigestProbe;

/* Whether digests[16 * seq : 16 * seq + 16] == digest (a slice: short past the end). */
static int digest_matches(void *ctx, int64_t seq) {
    DigestProbe *p = ctx;
    int64_t start = 16 * seq, rest = p->size - start;
    Py_ssize_t held = rest <= 0 ? 0 : rest < 16 ? (Py_ssize_t)rest : 16;
    return held == p->length && memcmp(p->digests + (held ? start : 0), p->digest, (size_t)held) == 0;
}

/* digest_slot(slots, digests, digest): keytables._digest_slot. */
static PyObject *textc_digest_slot(PyObject *self, PyObject *args) {
    PyObject *slots, *digests, *digest;
    Py_buffer view, held, key;
    if (!PyArg_ParseTuple(args, "OOO:digest_slot", &slots, &digests, &digest)) return NULL;
    if (PyObject_GetBuffer(digest, &key, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(digests, &held, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&key);
        return NULL;
    }
    Py_ssize_t at = PY_SSIZE_T_MIN;
    if (slots_view(slots, &view) == 0) {
        uint64_t h = 0; /* int.from_bytes(digest[:8], "little") */
        for (Py_ssize_t i = (key.len < 8 ? key.len : 8) - 1; i >= 0; i--)
            h = (h << 8) | ((const unsigned char *)key.buf)[i];
        DigestProbe p = {held.buf, key.buf, held.len, key.len};
        at = probe(&view, h, digest_matches, &p);
        PyBuffer_Release(&view);
    }
    PyBuffer_Release(&held);
    PyBuffer_Release(&key);
    return at == PY_SSIZE_T_MIN ? NULL : PyLong_FromSsize_t(at);
}

/* Whether seq fits a slot of the table (an array "i" or "q": a seq past 2**31 - 1 widens "i"). */
static int slot_fits(const Py_buffer *slots, int64_t seq) {
    return slots->itemsize >= 8 || seq < ((int64_t)1 << (8 * slots->itemsize - 1));
}

static void slot_write(const Py_buffer *slots, Py_ssize_t at, int64_t seq) {
    switch (slots->itemsize) {
    case 1: ((int8_t *)slots->buf)[at] = (int8_t)seq; break;
    case 2: ((int16_t *)slots->buf)[at] = (int16_t)seq; break;
    case 4: ((int32_t *)slots->buf)[at] = (int32_t)seq; break;
    default: ((int64_t *)slots->buf)[at] = seq;
    }
}

/* seqs[i] as a seq a table takes (an exact int >= 0 that fits its slots), or -1. */
static int64_t place_seq(const Py_buffer *slots, PyObject *const *seqs, Py_ssize_t i) {
    if (!PyLong_CheckExact(seqs[i])) return -1;
    int overflow;
    long long seq = PyLong_AsLongLongAndOverflow(seqs[i], &overflow);
    return overflow || seq < 0 || !slot_fits(slots, seq) ? -1 : (int64_t)seq;
}

/* The writable slots and the two sequences of a place call (n: their common length, -1
 * when they differ). 0, or -1 with an error (nothing to release). */
static int place_args(PyObject *slots, PyObject *keys, PyObject *seqs, Py_buffer *view,
                      PyObject **fast, Py_ssize_t *n) {
    if (slots_view(slots, view) < 0) return -1;
    if (view->readonly) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "keytables: slots must be writable");
        return -1;
    }
    fast[0] = PySequence_Fast(keys, "keytables: keys must be a sequence");
    fast[1] = fast[0] == NULL ? NULL : PySequence_Fast(seqs, "keytables: seqs must be a sequence");
    if (fast[1] == NULL) {
        Py_XDECREF(fast[0]);
        PyBuffer_Release(view);
        return -1;
    }
    *n = PySequence_Fast_GET_SIZE(fast[0]);
    if (*n != PySequence_Fast_GET_SIZE(fast[1])) *n = -1;
    return 0;
}

/* digests_place(slots, held, digests, seqs, start, room): SeqsByDigest.add_many's step for
 * each digest from digests[start] on, at most room of them: a 16-byte digest no slot holds,
 * written at its seq in held (a bytearray already long enough) and its seq into the probe's
 * free slot. Returns where it stopped: at the end, past room, or at the first pair it leaves
 * to the Python step (a digest held, or not 16 bytes of bytes; a seq < 0, past held or
 * past the slots' width; sequences of different lengths). */
static PyObject *textc_digests_place(PyObject *self, PyObject *args) {
    PyObject *slots, *held, *keys, *seqs, *fast[2];
    Py_ssize_t i, room, n;
    Py_buffer view, buf;
    if (!PyArg_ParseTuple(args, "OOOOnn:digests_place", &slots, &held, &keys, &seqs, &i, &room))
        return NULL;
    if (place_args(slots, keys, seqs, &view, fast, &n) < 0) return NULL;
    if (PyObject_GetBuffer(held, &buf, PyBUF_WRITABLE) < 0) {
        n = PY_SSIZE_T_MIN;
    } else {
        PyObject *const *digests = PySequence_Fast_ITEMS(fast[0]);
        PyObject *const *numbers = PySequence_Fast_ITEMS(fast[1]);
        for (Py_ssize_t end = i + room; i >= 0 && i < n && i < end; i++) {
            PyObject *digest = digests[i];
            int64_t seq = place_seq(&view, numbers, i);
            if (!PyBytes_CheckExact(digest) || PyBytes_GET_SIZE(digest) != 16 || seq < 0 ||
                seq > ((int64_t)buf.len - 16) / 16)
                break;
            const unsigned char *key = (const unsigned char *)PyBytes_AS_STRING(digest);
            uint64_t h = 0; /* int.from_bytes(digest[:8], "little") */
            for (int b = 7; b >= 0; b--) h = (h << 8) | key[b];
            DigestProbe p = {buf.buf, key, buf.len, 16};
            Py_ssize_t at = probe(&view, h, digest_matches, &p);
            if (at == PY_SSIZE_T_MIN) {
                n = PY_SSIZE_T_MIN;
                break;
            }
            if (at >= 0) break; /* held: its seqs join the dict of several */
            memcpy((unsigned char *)buf.buf + 16 * seq, key, 16);
            slot_write(&view, -1 - at, seq);
        }
        PyBuffer_Release(&buf);
    }
    PyBuffer_Release(&view);
    Py_DECREF(fast[0]);
    Py_DECREF(fast[1]);
    return n == PY_SSIZE_T_MIN ? NULL : PyLong_FromSsize_t(i);
}

/* ids_place(slots, ids, memory_ids, seqs, start, room): SeqOf.set_many's step for each id
 * from memory_ids[start] on, at most room of them, into one namespace's table: an id no slot
 * holds, whose seq (>= 0, within ids, fitting the slots) stands for no id yet, written at its
 * seq in ids (a list) and its seq into the probe's free slot. Returns where it stopped, as
 * digests_place. */
static PyObject *textc_ids_place(PyObject *self, PyObject *args) {
    PyObject *slots, *ids, *keys, *seqs, *fast[2];
    Py_ssize_t i, room, n;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "OO!OOnn:ids_place", &slots, &PyList_Type, &ids, &keys, &seqs,
                          &i, &room))
        return NULL;
    if (place_args(slots, keys, seqs, &view, fast, &n) < 0) return NULL;
    PyObject *const *memory_ids = PySequence_Fast_ITEMS(fast[0]);
    PyObject *const *numbers = PySequence_Fast_ITEMS(fast[1]);
    for (Py_ssize_t end = i + room; i >= 0 && i < n && i < end; i++) {
        int64_t seq = place_seq(&view, numbers, i);
        if (seq < 0 || seq >= PyList_GET_SIZE(ids) || PyList_GET_ITEM(ids, seq) != Py_None)
            break;
        IdProbe p = {ids, memory_ids[i]};
        Py_hash_t h = PyObject_Hash(p.memory_id);
        Py_ssize_t at = h == -1 ? PY_SSIZE_T_MIN : probe(&view, (uint64_t)h, id_matches, &p);
        if (at == PY_SSIZE_T_MIN) {
            n = PY_SSIZE_T_MIN;
            break;
        }
        /* held, or the probe's comparison changed the list (not for str ids) */
        if (at >= 0 || seq >= PyList_GET_SIZE(ids) || PyList_GET_ITEM(ids, seq) != Py_None)
            break;
        PyList_SET_ITEM(ids, seq, Py_NewRef(p.memory_id));
        Py_DECREF(Py_None);
        slot_write(&view, -1 - at, seq);
    }
    PyBuffer_Release(&view);
    Py_DECREF(fast[0]);
    Py_DECREF(fast[1]);
    return n == PY_SSIZE_T_MIN ? NULL : PyLong_FromSsize_t(i);
}

/* ---------------------------------------------------------------------------------------- */
/* A memory's SQLite row (store._py_record_rows): each record's statement parameters in one
 * call for a whole batch. What is not plain (a cue or metadata string JSON escapes, nested or
 * float metadata, a datetime not in timezone.utc, a record without its fields in __dict__)
 * goes to the Python functions passed in, so every row is exactly store.record_to_row's. */

/* The order of the keys of the records' __dict__s a batch reads by a tuple of ``names``: each
 * key (borrowed from names) and its position in names, learned from a dict holding names'
 * own strings and nothing else; a dict holding them in that order is then read in one pass
 * (dict_order_read), where a lookup of each name was ~150 instructions. */
#define DICT_ORDER_MAX 32
typedef struct {
    PyObject *names; /* the tuple learned for (a strong reference), NULL before */
    PyObject *order[DICT_ORDER_MAX];
    signed char index_of[DICT_ORDER_MAX];
    int learned;
} DictOrder;

/* Learn o's order for ``names`` from ``values`` (o->learned: whether it fits). */
static void dict_order_learn(DictOrder *o, PyObject *names, PyObject *values) {
    PyObject *key, *value;
    Py_ssize_t at = 0, count = PyTuple_GET_SIZE(names);
    uint32_t seen = 0;
    Py_XSETREF(o->names, Py_NewRef(names));
    o->learned = 0;
    if (count > DICT_ORDER_MAX || PyDict_GET_SIZE(values) != count) return;
    for (int p = 0; PyDict_Next(values, &at, &key, &value); p++) {
        int index = 0;
        while (index < count && PyTuple_GET_ITEM(names, index) != key) index++;
        if (index == count || seen >> index & 1) return;
        seen |= (uint32_t)1 << index;
        o->order[p] = key;
        o->index_of[p] = (signed char)index;
    }
    o->learned = 1;
}

/* Whether ``values`` holds o's keys in o's order, its values then in ``fields`` (borrowed, by
 * position in names); a dict in another order is learned for the next ones. */
static int dict_order_read(DictOrder *o, PyObject *names, PyObject *values, PyObject **fields) {
    PyObject *key, *value;
    Py_ssize_t at = 0;
    if (o->names != names) dict_order_learn(o, names, values);
    if (o->learned && PyDict_GET_SIZE(values) == PyTuple_GET_SIZE(names)) {
        int p = 0;
        while (PyDict_Next(values, &at, &key, &value) && key == o->order[p])
            fields[o->index_of[p++]] = value;
        if (p == PyTuple_GET_SIZE(names)) return 1;
    }
    dict_order_learn(o, names, values);
    return 0;
}

/* How a column's parameter is made from the record's field (store._COLUMNS order). */
enum { AS_IS, JSON_LIST, ENUM_VALUE, ISO, UPDATED, ISO_OR_EMPTY, OR_EMPTY, METADATA };
static const char ROW_COLUMNS[] = {
    AS_IS, AS_IS, AS_IS, JSON_LIST, JSON_LIST, ENUM_VALUE, AS_IS, ISO, UPDATED,
    ISO_OR_EMPTY, AS_IS, ISO_OR_EMPTY, OR_EMPTY, OR_EMPTY, METADATA, AS_IS, ISO_OR_EMPTY,
    OR_EMPTY,
};
#define ROW_SIZE ((Py_ssize_t)sizeof(ROW_COLUMNS))

/* The strings one record_rows call shares, the Python functions it falls back on, and the
 * order of its records' __dict__s (their fields by column). */
typedef struct {
    PyObject *fields, *row_of, *strings_json, *metadata_json;
    PyObject *empty, *value_name, *iso_name, *no_list, *no_dict, *null_text, *true_text,
        *false_text;
    DictOrder order;
} RowMaker;

/* Whether json.encoder.encode_basestring writes ``s`` as it is between quotes: it escapes
 * '"', '\\' and the characters below U+0020, nothing else (ensure_ascii is off). */
static int json_plain(PyObject *s) {
    if (PyUnicode_READY(s) < 0) return -1;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (kind == PyUnicode_1BYTE_KIND) { /* most strings: a byte loop */
        const Py_UCS1 *c = data;
        for (Py_ssize_t i = 0; i < n; i++)
            if (c[i] < 0x20 || c[i] == '"' || c[i] == '\\') return 0;
        return 1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x20 || c == '"' || c == '\\') return 0;
    }
    return 1;
}

/* A str being written: made at its final length and widest kind, then filled left to right
 * (the JSON texts below were a PyUnicode_Join and a PyUnicode_FromFormat each: with the ISO
 * timestamps written without snprintf, record_rows went from 17.1k to 11.6k instructions a
 * bench row, callgrind). */
typedef struct {
    PyObject *text;
    Py_ssize_t at;
    int kind;
    void *data;
} Out;

/* A new str of size characters, none above max (the widest of the parts written into it:
 * each canonical, so the result is too). -1 on error. */
static int out_new(Out *o, Py_ssize_t size, Py_UCS4 max) {
    o->at = 0;
    if ((o->text = PyUnicode_New(size, max)) == NULL) return -1;
    o->kind = PyUnicode_KIND(o->text);
    o->data = PyUnicode_DATA(o->text);
    return 0;
}

/* Write the n ASCII characters of ascii. */
static void out_ascii(Out *o, const char *ascii, Py_ssize_t n) {
    if (o->kind == PyUnicode_1BYTE_KIND) memcpy((char *)o->data + o->at, ascii, (size_t)n);
    else
        for (Py_ssize_t i = 0; i < n; i++)
            PyUnicode_WRITE(o->kind, o->data, o->at + i, (Py_UCS4)ascii[i]);
    o->at += n;
}

/* Copy the str part (ready). -1 on error. */
static int out_str(Out *o, PyObject *part) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(part);
    if (PyUnicode_KIND(part) == o->kind)
        memcpy((char *)o->data + o->at * o->kind, PyUnicode_DATA(part), (size_t)(n * o->kind));
    else if (PyUnicode_CopyCharacters(o->text, o->at, part, 0, n) < 0)
        return -1;
    o->at += n;
    return 0;
}

/* The largest character a str (ready) can hold: its kind's, tight for a canonical str. */
static Py_UCS4 widest(Py_UCS4 max, PyObject *s) {
    Py_UCS4 mine = PyUnicode_MAX_CHAR_VALUE(s);
    return mine > max ? mine : max;
}

/* store._json_strings(items): '["a", "b"]' when every item is a plain str, else the Python. */
static PyObject *strings_json(const RowMaker *m, PyObject *items) {
    if (!PyTuple_CheckExact(items)) return PyObject_CallOneArg(m->strings_json, items);
    Py_ssize_t n = PyTuple_GET_SIZE(items), size = 4 * n;
    if (n == 0) return Py_NewRef(m->no_list);
    Py_UCS4 max = 127;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        int plain = PyUnicode_Check(item) ? json_plain(item) : 0;
        if (plain < 0) return NULL;
        if (!plain) return PyObject_CallOneArg(m->strings_json, items);
        size += PyUnicode_GET_LENGTH(item);
        max = widest(max, item);
    }
    Out o;
    if (out_new(&o, size, max) < 0) return NULL;
    out_ascii(&o, "[\"", 2);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i) out_ascii(&o, "\", \"", 4);
        if (out_str(&o, PyTuple_GET_ITEM(items, i)) < 0) {
            Py_DECREF(o.text);
            return NULL;
        }
    }
    out_ascii(&o, "\"]", 2);
    return o.text;
}

/* One metadata value as store._SCALAR_JSON writes it (a str still to quote: *quoted set);
 * NULL without an error: not one of its exact types, or a string to escape (the Python writes
 * the whole dict). */
static PyObject *scalar_json(const RowMaker *m, PyObject *value, int *quoted) {
    *quoted = 0;
    if (value == Py_None) return Py_NewRef(m->null_text);
    if (PyBool_Check(value)) return Py_NewRef(value == Py_True ? m->true_text : m->false_text);
    if (PyLong_CheckExact(value)) return PyObject_Repr(value);
    if (PyUnicode_CheckExact(value)) {
        int plain = json_plain(value);
        *quoted = 1;
        return plain > 0 ? Py_NewRef(value) : NULL;
    }
    return NULL;
}

/* The text of each value of a flat dict's plain keys (keys sorted; quoted[i]: a str to
 * quote) and the JSON's length and widest character; 0 without an error when the Python
 * writes this dict, -1 on error. texts[0 .. n) are new references either way (NULL after a
 * failure). */
static int metadata_texts(const RowMaker *m, PyObject *metadata, PyObject *keys,
                          PyObject **texts, char *quoted, Py_ssize_t *size, Py_UCS4 *max) {
    Py_ssize_t n = PyList_GET_SIZE(keys);
    *size = 2 + 4 * n - 2;
    *max = 127;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyList_GET_ITEM(keys, i), *value;
        int plain = PyUnicode_CheckExact(key) ? json_plain(key) : 0, q = 0;
        if (plain <= 0) return plain;
        if ((value = PyDict_GetItemWithError(metadata, key)) == NULL ||
            (texts[i] = scalar_json(m, value, &q)) == NULL)
            return PyErr_Occurred() ? -1 : 0;
        quoted[i] = (char)q;
        *size += PyUnicode_GET_LENGTH(key) + 2 + PyUnicode_GET_LENGTH(texts[i]) + 2 * q;
        *max = widest(widest(*max, key), texts[i]);
    }
    return 1;
}

/* '{"a": 1, "b": "x"}' of the sorted keys and their texts. NULL on error. */
static PyObject *metadata_text(PyObject *keys, PyObject **texts, const char *quoted,
                               Py_ssize_t size, Py_UCS4 max) {
    Out o;
    if (out_new(&o, size, max) < 0) return NULL;
    out_ascii(&o, "{", 1);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++) {
        if (i) out_ascii(&o, ", ", 2);
        out_ascii(&o, "\"", 1);
        if (out_str(&o, PyList_GET_ITEM(keys, i)) < 0) goto fail;
        out_ascii(&o, "\": \"", quoted[i] ? 4 : 3);
        if (out_str(&o, texts[i]) < 0) goto fail;
        if (quoted[i]) out_ascii(&o, "\"", 1);
    }
    out_ascii(&o, "}", 1);
    return o.text;
fail:
    Py_DECREF(o.text);
    return NULL;
}

/* store._metadata_json(metadata): '{"a": 1, "b": "x"}' for a flat dict of plain scalars. */
static PyObject *metadata_json(const RowMaker *m, PyObject *metadata) {
    if (!PyDict_CheckExact(metadata)) return PyObject_CallOneArg(m->metadata_json, metadata);
    Py_ssize_t n = PyDict_GET_SIZE(metadata), size = 0;
    if (n == 0) return Py_NewRef(m->no_dict);
    PyObject *keys = PyDict_Keys(metadata), *json = NULL;
    PyObject **texts = PyMem_Calloc((size_t)n, sizeof(PyObject *));
    char *quoted = PyMem_Malloc((size_t)n);
    Py_UCS4 max = 0;
    int plain = -1;
    if (texts == NULL || quoted == NULL) PyErr_NoMemory();
    else if (keys != NULL && PyList_Sort(keys) == 0) /* distinct str: as sorted(items) */
        plain = metadata_texts(m, metadata, keys, texts, quoted, &size, &max);
    if (plain > 0) json = metadata_text(keys, texts, quoted, size, max);
    else if (plain == 0) json = PyObject_CallOneArg(m->metadata_json, metadata);
    for (Py_ssize_t i = 0; texts != NULL && i < n; i++) Py_XDECREF(texts[i]);
    PyMem_Free(texts);
    PyMem_Free(quoted);
    Py_XDECREF(keys);
    return json;
}

/* value's last width decimal digits (zero-padded) at text. */
static void put_digits(char *text, int value, int width) {
    for (int i = width - 1; i >= 0; i--, value /= 10) text[i] = (char)('0' + value % 10);
}

/* when.isoformat(), written here for a datetime (exactly) in timezone.utc (snprintf was
 * ~3.8k instructions a row). */
static PyObject *iso_of(const RowMaker *m, PyObject *when) {
    if (!Py_IS_TYPE(when, PyDateTimeAPI->DateTimeType) ||
        PyDateTime_DATE_GET_TZINFO(when) != PyDateTime_TimeZone_UTC)
        return PyObject_CallMethodNoArgs(when, m->iso_name);
    char text[32] = "0000-00-00T00:00:00";
    int micro = PyDateTime_DATE_GET_MICROSECOND(when), n = 19;
    put_digits(text, PyDateTime_GET_YEAR(when), 4);
    put_digits(text + 5, PyDateTime_GET_MONTH(when), 2);
    put_digits(text + 8, PyDateTime_GET_DAY(when), 2);
    put_digits(text + 11, PyDateTime_DATE_GET_HOUR(when), 2);
    put_digits(text + 14, PyDateTime_DATE_GET_MINUTE(when), 2);
    put_digits(text + 17, PyDateTime_DATE_GET_SECOND(when), 2);
    if (micro) {
        text[n++] = '.';
        put_digits(text + n, micro, 6);
        n += 6;
    }
    memcpy(text + n, "+00:00", 6);
    PyObject *iso = PyUnicode_New(n + 6, 127);
    if (iso != NULL) memcpy(PyUnicode_1BYTE_DATA(iso), text, (size_t)n + 6);
    return iso;
}

/* Column ``at``'s parameter from the record's ``fields`` (by column); ``row``: the columns
 * made so far (column 7's, created_at, before any other). */
static PyObject *row_value(const RowMaker *m, Py_ssize_t at, PyObject **fields, PyObject *row) {
    PyObject *value = fields[at];
    switch (ROW_COLUMNS[at]) {
    case JSON_LIST: return strings_json(m, value);
    case ENUM_VALUE: return PyObject_GetAttr(value, m->value_name); /* .value, no descriptor */
    case ISO: return iso_of(m, value);
    case UPDATED: /* usually the very created_at object */
        if (value == fields[7]) return Py_NewRef(PyTuple_GET_ITEM(row, 7));
        return value == Py_None ? Py_NewRef(value) : iso_of(m, value);
    case ISO_OR_EMPTY: return value == Py_None ? Py_NewRef(m->empty) : iso_of(m, value);
    case OR_EMPTY: {
        int truth = PyObject_IsTrue(value);
        return truth < 0 ? NULL : Py_NewRef(truth ? value : m->empty);
    }
    case METADATA: return metadata_json(m, value);
    default: return Py_NewRef(value);
    }
}

/* The columns in the order store.record_to_row evaluates them (its errors come first). */
static const char ROW_ORDER[] = {7, 8, 0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 13, 14, 15, 16, 17};

/* The row of ``record`` from its ``values`` (its __dict__), or NULL with an error; ``row_of``
 * for a record without all its fields there (a subclass's own attributes, a broken record). */
static PyObject *row_of_values(RowMaker *m, PyObject *record, PyObject *values) {
    PyObject *fields[ROW_SIZE], *row = NULL;
    Py_ssize_t held = 0;
    if (dict_order_read(&m->order, m->fields, values, fields))
        for (; held < ROW_SIZE; held++) Py_INCREF(fields[held]); /* as below */
    for (; held < ROW_SIZE; held++) {
        fields[held] = PyDict_GetItemWithError(values, PyTuple_GET_ITEM(m->fields, held));
        if (fields[held] == NULL) break;
        Py_INCREF(fields[held]); /* kept while Python code (isoformat, fallbacks) runs */
    }
    if (held < ROW_SIZE) {
        if (!PyErr_Occurred()) row = PyObject_CallOneArg(m->row_of, record);
    } else if ((row = PyTuple_New(ROW_SIZE)) != NULL) {
        for (Py_ssize_t i = 0; i < ROW_SIZE; i++) {
            Py_ssize_t at = ROW_ORDER[i];
            PyObject *param = row_value(m, at, fields, row);
            if (param == NULL) {
                Py_CLEAR(row);
                break;
            }
            PyTuple_SET_ITEM(row, at, param);
        }
    }
    while (held > 0) Py_DECREF(fields[--held]);
    return row;
}

/* The row of one record (a new tuple), or NULL with an error. */
static PyObject *record_row(RowMaker *m, PyObject *record) {
    PyObject *values = PyObject_GenericGetDict(record, NULL);
    if (values == NULL || !PyDict_CheckExact(values)) { /* not a plain dataclass instance */
        Py_XDECREF(values);
        PyErr_Clear();
        return PyObject_CallOneArg(m->row_of, record);
    }
    PyObject *row = row_of_values(m, record, values);
    Py_DECREF(values);
    return row;
}

/* record_rows(records, fields, row_of, strings_json, metadata_json): store._py_record_rows,
 * the list of ``row_of(record)`` for each record; ``fields``: store._COLUMNS. */
static PyObject *textc_record_rows(PyObject *self, PyObject *args) {
    RowMaker m = {0};
    PyObject *records, *rows = NULL;
    if (!PyArg_ParseTuple(args, "OO!OOO:record_rows", &records, &PyTuple_Type, &m.fields,
                          &m.row_of, &m.strings_json, &m.metadata_json))
        return NULL;
    if (PyTuple_GET_SIZE(m.fields) != ROW_SIZE) {
        PyErr_SetString(PyExc_ValueError, "record_rows: fields must be store._COLUMNS");
        return NULL;
    }
    if (PyDateTimeAPI == NULL) {
        PyDateTime_IMPORT;
        if (PyDateTimeAPI == NULL) return NULL;
    }
    PyObject *seq = PySequence_Fast(records, "record_rows: records must be a sequence");
    if (seq == NULL) return NULL;
    if ((m.empty = PyUnicode_FromString("")) == NULL ||
        (m.null_text = PyUnicode_FromString("null")) == NULL ||
        (m.true_text = PyUnicode_FromString("true")) == NULL ||
        (m.false_text = PyUnicode_FromString("false")) == NULL ||
        (m.value_name = PyUnicode_InternFromString("_value_")) == NULL ||
        (m.iso_name = PyUnicode_InternFromString("isoformat")) == NULL ||
        (m.no_list = PyUnicode_FromString("[]")) == NULL ||
        (m.no_dict = PyUnicode_FromString("{}")) == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if ((rows = PyList_New(n)) == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = record_row(&m, PySequence_Fast_GET_ITEM(seq, i));
        if (row == NULL) {
            Py_CLEAR(rows);
            break;
        }
        PyList_SET_ITEM(rows, i, row);
    }
done:
    Py_DECREF(seq);
    Py_XDECREF(m.empty);
    Py_XDECREF(m.null_text);
    Py_XDECREF(m.true_text);
    Py_XDECREF(m.false_text);
    Py_XDECREF(m.value_name);
    Py_XDECREF(m.iso_name);
    Py_XDECREF(m.no_list);
    Py_XDECREF(m.no_dict);
    Py_XDECREF(m.order.names);
    return rows;
}

/* ---------------------------------------------------------------------------------------- */
/* A batch's multi-row INSERTs (store._py_insert_groups): each full group of rows as the
 * parameters of one statement, a value every row of the group shares bound once. */

/* Whether a and b bind as the same SQLite value: the same object, or equal exact str or int
 * (any other type only as the same object: 0.0 == -0.0, 1 == 1.0 == True). -1 on error. */
static int same_param(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (!Py_IS_TYPE(a, Py_TYPE(b)) || !(PyUnicode_CheckExact(a) || PyLong_CheckExact(a))) return 0;
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* Whether column col holds one value in the rows (tuples) rows[0 .. n). -1 on error. */
static int column_shared(PyObject **rows, Py_ssize_t n, int col) {
    PyObject *first = PyTuple_GET_ITEM(rows[0], col);
    for (Py_ssize_t r = 1; r < n; r++) {
        int same = same_param(PyTuple_GET_ITEM(rows[r], col), first);
        if (same <= 0) return same;
    }
    return 1;
}

/* The column sets a group may share (store._SHARED_SETS), and the twin columns. */
typedef struct {
    int nsets, len[16], cols[16][ROW_SIZE], copy, of;
} GroupShapes;

/* shapes from (sets, (copy, of)): -1 with an error for indexes out of range. */
static int group_shapes(PyObject *sets, int copy, int of, GroupShapes *s) {
    s->nsets = (int)PyTuple_GET_SIZE(sets);
    s->copy = copy;
    s->of = of;
    if (s->nsets > 16 || copy < 0 || copy >= ROW_SIZE || of < 0 || of >= copy) goto bad;
    for (int i = 0; i < s->nsets; i++) {
        PyObject *set = PyTuple_GET_ITEM(sets, i);
        if (!PyTuple_Check(set) || PyTuple_GET_SIZE(set) > ROW_SIZE) goto bad;
        s->len[i] = (int)PyTuple_GET_SIZE(set);
        for (int j = 0; j < s->len[i]; j++) {
            long col = PyLong_AsLong(PyTuple_GET_ITEM(set, j));
            if (col == -1 && PyErr_Occurred()) return -1;
            if (col < 0 || col >= ROW_SIZE) goto bad;
            s->cols[i][j] = (int)col;
        }
    }
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "insert_groups: column sets out of range");
    return -1;
}

/* The group's shape (bit i: every column of set i shared; bit nsets: column copy equals
 * column of in every row, neither shared) and which columns it shares. -1 on error. */
static long group_shape(const GroupShapes *s, PyObject **rows, Py_ssize_t n, char *shared) {
    long shape = 0;
    memset(shared, 0, ROW_SIZE);
    for (int i = 0; i < s->nsets; i++) {
        int all = 1;
        for (int j = 0; j < s->len[i] && all == 1; j++) all = column_shared(rows, n, s->cols[i][j]);
        if (all < 0) return -1;
        if (!all) continue;
        shape |= 1L << i;
        for (int j = 0; j < s->len[i]; j++) shared[s->cols[i][j]] = 1;
    }
    if (shared[s->copy] || shared[s->of]) return shape;
    for (Py_ssize_t r = 0; r < n; r++) {
        int same = same_param(PyTuple_GET_ITEM(rows[r], s->copy), PyTuple_GET_ITEM(rows[r], s->of));
        if (same <= 0) return same < 0 ? -1 : shape;
    }
    return shape | 1L << s->nsets;
}

/* The (shape, parameters) of rows[0 .. n): the shared values (first row's), then each row's
 * own, in column order. NULL on error. */
static PyObject *group_params(const GroupShapes *s, PyObject **rows, Py_ssize_t n) {
    char shared[ROW_SIZE];
    long shape = group_shape(s, rows, n, shared);
    if (shape < 0) return NULL;
    int own[ROW_SIZE], nown = 0, nshared = 0;
    int twin = (shape >> s->nsets) & 1;
    for (int c = 0; c < ROW_SIZE; c++) {
        if (shared[c]) nshared++;
        else if (!(twin && c == s->copy)) own[nown++] = c;
    }
    PyObject *params = PyList_New(nshared + n * nown);
    if (params == NULL) return NULL;
    Py_ssize_t at = 0;
    for (int c = 0; c < ROW_SIZE; c++)
        if (shared[c]) PyList_SET_ITEM(params, at++, Py_NewRef(PyTuple_GET_ITEM(rows[0], c)));
    for (Py_ssize_t r = 0; r < n; r++)
        for (int j = 0; j < nown; j++)
            PyList_SET_ITEM(params, at++, Py_NewRef(PyTuple_GET_ITEM(rows[r], own[j])));
    return Py_BuildValue("(lN)", shape, params);
}

/* insert_groups(rows, size, sets, (copy, of)): store._py_insert_groups, the (shape,
 * parameters) of each full group of size rows (tuples of store._COLUMNS' width). */
static PyObject *textc_insert_groups(PyObject *self, PyObject *args) {
    PyObject *rows, *sets;
    Py_ssize_t size;
    int copy, of;
    GroupShapes shapes;
    if (!PyArg_ParseTuple(args, "O!nO!(ii):insert_groups", &PyList_Type, &rows, &size,
                          &PyTuple_Type, &sets, &copy, &of) ||
        group_shapes(sets, copy, of, &shapes) < 0)
        return NULL;
    if (size < 1) {
        PyErr_SetString(PyExc_ValueError, "insert_groups: size must be positive");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != ROW_SIZE) {
            PyErr_SetString(PyExc_TypeError, "insert_groups: rows must be tuples of the columns");
            return NULL;
        }
    }
    PyObject *groups = PyList_New(n / size);
    for (Py_ssize_t g = 0; groups != NULL && g < n / size; g++) {
        /* the list's item array: nothing runs Python that could resize it (equal str or int) */
        PyObject *group = group_params(&shapes, &PyList_GET_ITEM(rows, g * size), size);
        if (group == NULL) Py_CLEAR(groups);
        else PyList_SET_ITEM(groups, g, group);
    }
    return groups;
}

/* ---------------------------------------------------------------------------------------- */
/* A record's packed row (recordtable._py_packed_row): its shared kind and the fields of the
 * row, for a new memory with every optional field at its default (bulk ingest's); anything
 * else (a field past its default, an updated_at of its own, a str subclass among the cues, a
 * created_at with no exact whole-second timestamp) takes recordtable._packed for the fields. */

enum { PK_METADATA, PK_TYPE, PK_SOURCE, PK_NAMESPACE, PK_ORIGIN, PK_ID, PK_CONTENT, PK_CUES,
       PK_CREATED, PK_UPDATED, PK_EXTRA }; /* recordtable._ROW_FIELDS, then _EXTRA_NAMES */
#define PK_MAX_FIELDS 32

/* Days from 1970-01-01 to the proleptic Gregorian date y-m-d (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* recordtable._stamp's shortcut: ``when.timestamp()`` of a datetime (exactly) in timezone.utc,
 * with no microsecond or fold, in the years it covers; NULL without an error otherwise. */
static PyObject *whole_stamp(PyObject *when) {
    if (PyDateTimeAPI == NULL) {
        PyDateTime_IMPORT;
        if (PyDateTimeAPI == NULL) return NULL;
    }
    if (!Py_IS_TYPE(when, PyDateTimeAPI->DateTimeType) ||
        PyDateTime_DATE_GET_TZINFO(when) != PyDateTime_TimeZone_UTC ||
        PyDateTime_DATE_GET_MICROSECOND(when) || PyDateTime_DATE_GET_FOLD(when))
        return NULL;
    int year = PyDateTime_GET_YEAR(when);
    if (year < 1900 || year > 9000) return NULL; /* recordtable._WHOLE_SECONDS_YEARS */
    int64_t days = days_from_civil(year, PyDateTime_GET_MONTH(when), PyDateTime_GET_DAY(when));
    int64_t seconds = days * 86400 + PyDateTime_DATE_GET_HOUR(when) * 3600 +
                      PyDateTime_DATE_GET_MINUTE(when) * 60 + PyDateTime_DATE_GET_SECOND(when);
    return PyFloat_FromDouble((double)seconds); /* exact: well within 2**53 */
}

/* recordtable.interned(cues) for a tuple of exact str; NULL without an error otherwise. */
static PyObject *interned_cues(PyObject *cues) {
    if (!PyTuple_CheckExact(cues)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(cues);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(cues, i))) return NULL;
    PyObject *kept = PyTuple_New(n);
    for (Py_ssize_t i = 0; kept != NULL && i < n; i++) {
        PyObject *cue = Py_NewRef(PyTuple_GET_ITEM(cues, i));
        PyUnicode_InternInPlace(&cue);
        PyTuple_SET_ITEM(kept, i, cue);
    }
    return kept;
}

/* recordtable._values (``shared``: the kind holds the names) or _flat of an exact dict. */
static PyObject *metadata_values(PyObject *metadata, int shared) {
    Py_ssize_t n = PyDict_GET_SIZE(metadata), at = 0, i = 0;
    PyObject *name, *value;
    if (n == 0) Py_RETURN_NONE;
    if (shared && n == 1) {
        PyDict_Next(metadata, &at, &name, &value);
        return Py_NewRef(value);
    }
    PyObject *held = PyTuple_New(shared ? n : 2 * n);
    while (held != NULL && PyDict_Next(metadata, &at, &name, &value)) {
        if (!shared) PyTuple_SET_ITEM(held, i++, Py_NewRef(name));
        PyTuple_SET_ITEM(held, i++, Py_NewRef(value));
    }
    return held;
}

/* recordtable._kind: the row's kind and its code, from the record's ``fields``. */
static PyObject *row_kind(PyObject **fields, PyObject *codes, PyObject *kinds,
                          Py_ssize_t kinds_max, Py_ssize_t own_code, Py_ssize_t *code) {
    PyObject *names = PyDict_Keys(fields[PK_METADATA]), *kind = NULL;
    if (names == NULL) return NULL;
    int plain = PyUnicode_CheckExact(fields[PK_NAMESPACE]) &&
                (fields[PK_SOURCE] == Py_None || PyUnicode_CheckExact(fields[PK_SOURCE]));
    for (Py_ssize_t i = 0; plain && i < PyList_GET_SIZE(names); i++)
        plain = PyUnicode_CheckExact(PyList_GET_ITEM(names, i));
    PyObject *held = PyList_AsTuple(names);
    Py_DECREF(names);
    if (held == NULL) return NULL;
    kind = PyTuple_Pack(5, fields[PK_TYPE], fields[PK_SOURCE], fields[PK_NAMESPACE],
                        fields[PK_ORIGIN], held);
    Py_DECREF(held);
    *code = own_code;
    if (kind == NULL || !plain) goto own;
    PyObject *known = PyDict_GetItemWithError(codes, kind);
    if (known == NULL && PyErr_Occurred()) goto fail;
    if (known == NULL && PyList_GET_SIZE(kinds) < kinds_max) {
        PyObject *next = PyLong_FromSsize_t(PyList_GET_SIZE(kinds));
        int failed = next == NULL || PyDict_SetItem(codes, kind, next) < 0 ||
                     PyList_Append(kinds, kind) < 0;
        Py_XDECREF(next);
        if (failed) goto fail;
        known = next; /* held by codes */
    }
    if (known != NULL) {
        *code = PyLong_AsSsize_t(known);
        if (*code == -1 && PyErr_Occurred()) goto fail;
        PyObject *shared = PySequence_GetItem(kinds, *code); /* kinds[code], the one kept */
        Py_DECREF(kind);
        return shared;
    }
own:
    if (kind != NULL) { /* (*kind[:4], None) */
        Py_SETREF(kind, PyTuple_Pack(5, fields[PK_TYPE], fields[PK_SOURCE], fields[PK_NAMESPACE],
                                     fields[PK_ORIGIN], Py_None));
    }
    return kind;
fail:
    Py_DECREF(kind);
    return NULL;
}

/* The row's fields after its kind when every optional field is its default (identically) and
 * updated_at is created_at: (memory_id, content, cues, stamp, metadata, ()); NULL without an
 * error for any other record (recordtable._packed writes its fields). */
static PyObject *default_fields(PyObject **fields, Py_ssize_t count, PyObject *defaults,
                                int shared) {
    if (fields[PK_UPDATED] != fields[PK_CREATED] || !PyDict_CheckExact(fields[PK_METADATA]))
        return NULL;
    for (Py_ssize_t i = PK_EXTRA; i < count; i++)
        if (fields[i] != PyTuple_GET_ITEM(defaults, i - PK_EXTRA)) return NULL;
    PyObject *stamp = whole_stamp(fields[PK_CREATED]), *cues = NULL, *metadata = NULL;
    PyObject *packed = NULL, *none = NULL;
    if (stamp != NULL && (cues = interned_cues(fields[PK_CUES])) != NULL &&
        (metadata = metadata_values(fields[PK_METADATA], shared)) != NULL &&
        (none = PyTuple_New(0)) != NULL)
        packed = PyTuple_Pack(6, fields[PK_ID], fields[PK_CONTENT], cues, stamp, metadata, none);
    Py_XDECREF(stamp);
    Py_XDECREF(cues);
    Py_XDECREF(metadata);
    Py_XDECREF(none);
    return packed;
}

/* The packed row of ``record`` from its ``fields``: (kind, code, *fields after the kind). */
static PyObject *packed_of_fields(PyObject **fields, Py_ssize_t count, PyObject *layout,
                                  PyObject *packed_fn, PyObject *codes, PyObject *kinds,
                                  Py_ssize_t kinds_max, PyObject *record) {
    Py_ssize_t code, own_code = PyLong_AsSsize_t(PyTuple_GET_ITEM(layout, 2));
    if (own_code == -1 && PyErr_Occurred()) return NULL;
    PyObject *kind = row_kind(fields, codes, kinds, kinds_max, own_code, &code), *rest;
    if (kind == NULL) return NULL;
    rest = default_fields(fields, count, PyTuple_GET_ITEM(layout, 1),
                          PyTuple_GET_ITEM(kind, 4) != Py_None);
    if (rest == NULL && !PyErr_Occurred()) { /* (memory_id, content, cues, kind, stamp, ...) */
        PyObject *all = PyObject_CallFunctionObjArgs(packed_fn, record, kind, NULL);
        if (all != NULL && (!PyTuple_CheckExact(all) || PyTuple_GET_SIZE(all) != 7))
            PyErr_SetString(PyExc_TypeError, "packed_row: _packed must return 7 fields");
        else if (all != NULL)
            rest = PyTuple_Pack(6, PyTuple_GET_ITEM(all, 0), PyTuple_GET_ITEM(all, 1),
                                PyTuple_GET_ITEM(all, 2), PyTuple_GET_ITEM(all, 4),
                                PyTuple_GET_ITEM(all, 5), PyTuple_GET_ITEM(all, 6));
        Py_XDECREF(all);
    }
    PyObject *row = NULL, *number = rest == NULL ? NULL : PyLong_FromSsize_t(code);
    if (number != NULL) {
        row = PyTuple_New(8);
        if (row != NULL) {
            PyTuple_SET_ITEM(row, 0, Py_NewRef(kind));
            PyTuple_SET_ITEM(row, 1, Py_NewRef(number));
            for (Py_ssize_t i = 0; i < 6; i++)
                PyTuple_SET_ITEM(row, 2 + i, Py_NewRef(PyTuple_GET_ITEM(rest, i)));
        }
    }
    Py_DECREF(kind);
    Py_XDECREF(rest);
    Py_XDECREF(number);
    return row;
}

/* packed_row(layout, reference, packed, record, codes, kinds, room):
 * recordtable._py_packed_row, ``(kind, code, memory_id, content, cues, stamp, metadata,
 * extra)``; ``room``: the kinds a table shares. ``layout``: the field names
 * (recordtable._ROW_FIELDS), the defaults of the optional ones and the code of a kind of its
 * own; ``reference(record, codes, kinds, room)`` for a record without all its fields in its
 * __dict__, ``packed(record, kind)`` (recordtable._packed) for one with a field past its
 * default. */
static PyObject *textc_packed_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* a fast call: parsing a tuple of its 7 arguments was ~900 instructions a bulk row */
    if (nargs != 7 || !PyTuple_Check(args[0]) || !PyDict_Check(args[4]) ||
        !PyList_Check(args[5]) || !PyLong_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "packed_row(layout: tuple, reference, packed, record, "
                                         "codes: dict, kinds: list, room: int)");
        return NULL;
    }
    PyObject *layout = args[0], *reference = args[1], *packed_fn = args[2], *record = args[3];
    PyObject *codes = args[4], *kinds = args[5], *room = args[6], *names, *defaults;
    Py_ssize_t kinds_max = PyLong_AsSsize_t(room);
    if (kinds_max == -1 && PyErr_Occurred()) return NULL;
    if (PyTuple_GET_SIZE(layout) != 3 || !PyTuple_Check(names = PyTuple_GET_ITEM(layout, 0)) ||
        !PyTuple_Check(defaults = PyTuple_GET_ITEM(layout, 1)) ||
        PyTuple_GET_SIZE(names) != PK_EXTRA + PyTuple_GET_SIZE(defaults) ||
        PyTuple_GET_SIZE(names) > PK_MAX_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "packed_row: layout must be recordtable._LAYOUT");
        return NULL;
    }
    PyObject *values = PyObject_GenericGetDict(record, NULL), *fields[PK_MAX_FIELDS], *row = NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(names), held = 0;
    if (values == NULL || !PyDict_CheckExact(values)) { /* not a plain dataclass instance */
        Py_XDECREF(values);
        PyErr_Clear();
        return PyObject_CallFunctionObjArgs(reference, record, codes, kinds, room, NULL);
    }
    static DictOrder order; /* (a bulk batch's rows come one call each) */
    if (dict_order_read(&order, names, values, fields))
        for (; held < count; held++) Py_INCREF(fields[held]); /* as below */
    for (; held < count; held++) {
        fields[held] = PyDict_GetItemWithError(values, PyTuple_GET_ITEM(names, held));
        if (fields[held] == NULL) break;
        Py_INCREF(fields[held]); /* kept while Python code (hashes, _packed) runs */
    }
    if (held < count) {
        if (!PyErr_Occurred())
            row = PyObject_CallFunctionObjArgs(reference, record, codes, kinds, room, NULL);
    } else if (!PyDict_CheckExact(fields[PK_METADATA])) { /* names read by iterating it */
        row = PyObject_CallFunctionObjArgs(reference, record, codes, kinds, room, NULL);
    } else {
        row = packed_of_fields(fields, count, layout, packed_fn, codes, kinds, kinds_max, record);
    }
    while (held > 0) Py_DECREF(fields[--held]);
    Py_DECREF(values);
    return row;
}

/* ---------------------------------------------------------------------------------------- */
/* Explaining a hit: the first member it carries of each concept (ranking._py_firsts). */

/* The entries (ints) of a hit's concept members, in a buffer that starts on the stack. */
typedef struct {
    Py_ssize_t *items, size, cap;
    Py_ssize_t local[64];
} Entries;

static int entries_add(Entries *e, PyObject *entry) {
    Py_ssize_t value = PyLong_AsSsize_t(entry);
    if (value < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "firsts: a negative entry");
        return -1;
    }
    if (e->size == e->cap) {
        Py_ssize_t cap = 2 * e->cap;
        Py_ssize_t *items = e->items == e->local ? PyMem_Malloc(cap * sizeof(Py_ssize_t))
                                                 : PyMem_Realloc(e->items, cap * sizeof(Py_ssize_t));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (e->items == e->local) memcpy(items, e->local, e->size * sizeof(Py_ssize_t));
        e->items = items;
        e->cap = cap;
    }
    e->items[e->size++] = value;
    return 0;
}

/* Add the entries of each of ``cues`` (a tuple) that ``members`` holds, and of ``more``. */
static int entries_of(Entries *e, PyObject *members, PyObject *more, PyObject *cues) {
    int any_more = PyDict_GET_SIZE(more) > 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(cues); i++) {
        PyObject *cue = PyTuple_GET_ITEM(cues, i);
        PyObject *entry = PyDict_GetItemWithError(members, cue);
        if (entry == NULL) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        if (entries_add(e, entry) < 0) return -1;
        if (!any_more) continue;
        PyObject *others = PyDict_GetItemWithError(more, cue);
        if (others == NULL) {
            if (PyErr_Occurred()) return -1;
            continue;
        }
        if (!PyList_Check(others)) {
            PyErr_SetString(PyExc_TypeError, "firsts: more's values must be lists");
            return -1;
        }
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(others); j++)
            if (entries_add(e, PyList_GET_ITEM(others, j)) < 0) return -1;
    }
    return 0;
}

static int entry_order(const void *a, const void *b) {
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return (x > y) - (x < y);
}

/* The member at each concept's first entry among e's (sorted), unless ``skip`` holds it. */
static PyObject *entries_firsts(Entries *e, PyObject *member_at, Py_ssize_t width, PyObject *skip) {
    qsort(e->items, (size_t)e->size, sizeof(Py_ssize_t), entry_order);
    PyObject *out = PyList_New(0);
    Py_ssize_t before = -1;
    for (Py_ssize_t i = 0; out != NULL && i < e->size; i++) {
        Py_ssize_t entry = e->items[i], at = entry / width;
        if (at == before) continue;
        before = at;
        if (skip != Py_None) {
            PyObject *key = PyLong_FromSsize_t(at);
            int skipped = key == NULL ? -1 : PySet_Contains(skip, key);
            Py_XDECREF(key);
            if (skipped != 0) {
                if (skipped < 0) Py_CLEAR(out);
                continue;
            }
        }
        if (entry >= PyList_GET_SIZE(member_at)) {
            PyErr_SetString(PyExc_IndexError, "firsts: an entry past member_at");
            Py_CLEAR(out);
        } else if (PyList_Append(out, PyList_GET_ITEM(member_at, entry)) < 0) {
            Py_CLEAR(out);
        }
    }
    if (out == NULL) return NULL;
    PyObject *result = PyList_AsTuple(out);
    Py_DECREF(out);
    return result;
}

/* firsts(table, cues, tags, skip): ranking._py_firsts. ``table`` is a ranking._Members
   (members, more, member_at, width); ``skip`` None or a set of concept positions. */
static PyObject *textc_firsts(PyObject *self, PyObject *args) {
    PyObject *table, *cues, *tags, *skip, *members, *more, *member_at;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "O!O!O!O:firsts", &PyTuple_Type, &table, &PyTuple_Type, &cues,
                          &PyTuple_Type, &tags, &skip))
        return NULL;
    if (!PyArg_ParseTuple(table, "O!O!O!n:firsts table", &PyDict_Type, &members, &PyDict_Type,
                          &more, &PyList_Type, &member_at, &width))
        return NULL;
    if (width < 1) {
        PyErr_SetString(PyExc_ValueError, "firsts: width must be at least 1");
        return NULL;
    }
    if (skip != Py_None && !PyAnySet_Check(skip)) {
        PyErr_SetString(PyExc_TypeError, "firsts: skip must be None or a set");
        return NULL;
    }
    Entries e = {NULL, 0, 64, {0}};
    e.items = e.local;
    PyObject *result = NULL;
    if (entries_of(&e, members, more, cues) == 0 && entries_of(&e, members, more, tags) == 0)
        result = entries_firsts(&e, member_at, width, skip);
    if (e.items != e.local) PyMem_Free(e.items);
    return result;
}

/* Whether ``names[0:count]`` holds ``name`` (a concept's few members: a scan). */
static int member_before(PyObject *names, Py_ssize_t count, PyObject *name) {
    for (Py_ssize_t i = 0; i < count; i++) {
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(names, i), name, Py_EQ);
        if (same != 0) return same;
    }
    return 0;
}

/* Give ``member`` its ``entry``: its first in ``members``, else one more in ``more``. */
static int member_entry(PyObject *members, PyObject *more, PyObject *member, Py_ssize_t entry) {
    PyObject *value = PyLong_FromSsize_t(entry);
    if (value == NULL) return -1;
    int held = PyDict_Contains(members, member), failed = held < 0;
    if (held == 0) {
        failed = PyDict_SetItem(members, member, value) < 0;
    } else if (held > 0) {
        PyObject *others = PyDict_GetItemWithError(more, member);
        if (others == NULL && !PyErr_Occurred()) {
            others = PyList_New(0);
            failed = others == NULL || PyDict_SetItem(more, member, others) < 0;
            Py_XDECREF(others); /* the dict holds it */
        }
        failed = failed || others == NULL || PyList_Append(others, value) < 0;
    }
    Py_DECREF(value);
    return failed ? -1 : 0;
}

/* members(concepts): ranking._py_members's (members, more, member_at, width) of a sequence of
   tuples of member strings. */
static PyObject *textc_members(PyObject *self, PyObject *arg) {
    PyObject *concepts = PySequence_Fast(arg, "members: concepts must be a sequence");
    if (concepts == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(concepts), width = 1;
    for (Py_ssize_t at = 0; at < count; at++) {
        PyObject *names = PySequence_Fast_GET_ITEM(concepts, at);
        if (!PyTuple_Check(names)) {
            PyErr_SetString(PyExc_TypeError, "members: each concept must be a tuple");
            Py_DECREF(concepts);
            return NULL;
        }
        if (PyTuple_GET_SIZE(names) >= width) width = PyTuple_GET_SIZE(names) + 1;
    }
    PyObject *members = PyDict_New(), *more = PyDict_New(), *member_at = PyList_New(width * count);
    int failed = members == NULL || more == NULL || member_at == NULL;
    for (Py_ssize_t i = 0; !failed && i < width * count; i++) {
        Py_INCREF(Py_None);
        PyList_SET_ITEM(member_at, i, Py_None);
    }
    for (Py_ssize_t at = 0; !failed && at < count; at++) {
        PyObject *names = PySequence_Fast_GET_ITEM(concepts, at);
        Py_ssize_t order = 0;
        for (Py_ssize_t i = 0; !failed && i < PyTuple_GET_SIZE(names); i++) {
            PyObject *member = PyTuple_GET_ITEM(names, i);
            int seen = i == 0 ? 0 : member_before(names, i, member); /* dict.fromkeys */
            if (seen != 0) {
                failed = seen < 0;
                continue;
            }
            Py_ssize_t entry = at * width + order++;
            failed = member_entry(members, more, member, entry) < 0;
            if (!failed) {
                Py_INCREF(member);
                PyList_SetItem(member_at, entry, member); /* drops the None */
            }
        }
    }
    Py_DECREF(concepts);
    PyObject *result = failed ? NULL : Py_BuildValue("(OOOn)", members, more, member_at, width);
    Py_XDECREF(members);
    Py_XDECREF(more);
    Py_XDECREF(member_at);
    return result;
}

/* lend(cues, lent, share, source): core._py_lend, one lender's cues into ``cues`` (a dict:
   cue -> (share, [source, ...])). */
static PyObject *textc_lend(PyObject *self, PyObject *args) {
    PyObject *cues, *given, *share, *source;
    if (!PyArg_ParseTuple(args, "O!OOO:lend", &PyDict_Type, &cues, &given, &share, &source))
        return NULL;
    PyObject *lent = PySequence_Fast(given, "lend: lent must be a sequence");
    if (lent == NULL) return NULL;
    int failed = 0;
    for (Py_ssize_t i = 0; !failed && i < PySequence_Fast_GET_SIZE(lent); i++) {
        PyObject *cue = PySequence_Fast_GET_ITEM(lent, i);
        PyObject *held = PyDict_GetItemWithError(cues, cue), *entry = NULL;
        if (held == NULL) {
            failed = PyErr_Occurred() != NULL;
            if (!failed) {
                /* (share, [source]) made directly: Py_BuildValue's format parsing per new cue
                   cost about as much as the entry itself */
                PyObject *sources = PyList_New(1);
                if (sources != NULL) {
                    PyList_SET_ITEM(sources, 0, Py_NewRef(source));
                    entry = PyTuple_Pack(2, share, sources);
                    Py_DECREF(sources);
                }
                failed = entry == NULL || PyDict_SetItem(cues, cue, entry) < 0;
            }
        } else if (!PyTuple_Check(held) || PyTuple_GET_SIZE(held) != 2 ||
                   !PyList_Check(PyTuple_GET_ITEM(held, 1))) {
            PyErr_SetString(PyExc_TypeError, "lend: each entry must be (share, list)");
            failed = 1;
        } else {
            PyObject *sources = PyTuple_GET_ITEM(held, 1);
            /* each cue's own list (the query's too) */
            int more = PyList_Append(sources, source) < 0
                           ? -1
                           : PyObject_RichCompareBool(share, PyTuple_GET_ITEM(held, 0), Py_GT);
            if (more > 0) {
                entry = PyTuple_Pack(2, share, sources);
                more = entry == NULL || PyDict_SetItem(cues, cue, entry) < 0 ? -1 : 1;
            }
            failed = more < 0;
        }
        Py_XDECREF(entry);
    }
    Py_DECREF(lent);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

/* A carried cue's concept's names: (cue, *members) without repeats (ranking._names), or
   ``members`` itself when it is (cue,). */
static PyObject *concept_names(PyObject *cue, PyObject *members) {
    if (!PyTuple_Check(members)) {
        PyErr_SetString(PyExc_TypeError, "single_concepts: members must be tuples");
        return NULL;
    }
    Py_ssize_t size = PyTuple_GET_SIZE(members);
    if (size == 1) {
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(members, 0), cue, Py_EQ);
        if (same != 0) return same < 0 ? NULL : Py_NewRef(members);
    }
    PyObject *names = PyTuple_New(size + 1);
    if (names == NULL) return NULL;
    PyTuple_SET_ITEM(names, 0, Py_NewRef(cue));
    Py_ssize_t count = 1;
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *name = PyTuple_GET_ITEM(members, i);
        int seen = member_before(names, count, name);
        if (seen < 0) {
            Py_DECREF(names);
            return NULL;
        }
        if (!seen) PyTuple_SET_ITEM(names, count++, Py_NewRef(name));
    }
    if (count < size + 1 && _PyTuple_Resize(&names, count) < 0) return NULL;
    return names;
}

/* single_concepts(concept_type, items, weights, found): ranking._py_single_concepts, each
   carried cue (a Carried) as its own concept: concept_type(names, weight, sources,
   self_factor). */
static PyObject *textc_single_concepts(PyObject *self, PyObject *args) {
    PyTypeObject *type;
    PyObject *items, *weights, *found;
    if (!PyArg_ParseTuple(args, "O!O!O!O!:single_concepts", &PyType_Type, &type, &PyList_Type,
                          &items, &PyList_Type, &weights, &PyList_Type, &found))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(items);
    if (!PyType_IsSubtype(type, &PyTuple_Type) || PyList_GET_SIZE(weights) != count ||
        PyList_GET_SIZE(found) != count) {
        PyErr_SetString(PyExc_ValueError, "single_concepts: a tuple type and lists of one size");
        return NULL;
    }
    PyObject *out = PyList_New(count);
    for (Py_ssize_t i = 0; out != NULL && i < count; i++) {
        PyObject *item = PyList_GET_ITEM(items, i), *pair = PyList_GET_ITEM(found, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4 || !PyTuple_Check(pair) ||
            PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "single_concepts: Carried items, (key, members) pairs");
            Py_CLEAR(out);
            break;
        }
        PyObject *sources = PyTuple_GET_ITEM(item, 2);
        PyObject *names = concept_names(PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(pair, 1));
        PyObject *frozen = PyFrozenSet_CheckExact(sources) ? Py_NewRef(sources)
                                                          : PyFrozenSet_New(sources);
        PyObject *concept = names == NULL || frozen == NULL ? NULL : type->tp_alloc(type, 4);
        if (concept == NULL) {
            Py_XDECREF(names);
            Py_XDECREF(frozen);
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(concept, 0, names);
        PyTuple_SET_ITEM(concept, 1, Py_NewRef(PyList_GET_ITEM(weights, i)));
        PyTuple_SET_ITEM(concept, 2, frozen);
        PyTuple_SET_ITEM(concept, 3, Py_NewRef(PyTuple_GET_ITEM(item, 3)));
        PyList_SET_ITEM(out, i, concept);
    }
    return out;
}

/* lent_carried(carried_type, cues, explicit, scale, alone): core._py_lent_carried, the
   feedback pass's carried cues: carried_type(cue, weight * scale, sources, 0.0) of each
   ``cue -> (weight, seqs)`` of ``cues`` not in ``explicit``, its sources alone[seq] for one
   seq, else frozenset(seqs). */
static PyObject *textc_lent_carried(PyObject *self, PyObject *args) {
    PyTypeObject *type;
    PyObject *cues, *explicit, *scale, *alone;
    if (!PyArg_ParseTuple(args, "O!O!O!OO!:lent_carried", &PyType_Type, &type, &PyDict_Type,
                          &cues, &PySet_Type, &explicit, &scale, &PyDict_Type, &alone))
        return NULL;
    if (!PyType_IsSubtype(type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "lent_carried: a tuple type");
        return NULL;
    }
    PyObject *out = PyList_New(0), *cue, *held, *zero = PyFloat_FromDouble(0.0);
    Py_ssize_t at = 0;
    while (out != NULL && zero != NULL && PyDict_Next(cues, &at, &cue, &held)) {
        int mine = PySet_Contains(explicit, cue);
        if (mine != 0) {
            if (mine < 0) Py_CLEAR(out);
            continue;
        }
        if (!PyTuple_Check(held) || PyTuple_GET_SIZE(held) != 2 ||
            !PyList_Check(PyTuple_GET_ITEM(held, 1))) {
            PyErr_SetString(PyExc_TypeError, "lent_carried: each entry must be (weight, list)");
            Py_CLEAR(out);
            break;
        }
        PyObject *seqs = PyTuple_GET_ITEM(held, 1), *sources;
        if (PyList_GET_SIZE(seqs) == 1) {
            sources = PyDict_GetItemWithError(alone, PyList_GET_ITEM(seqs, 0));
            if (sources == NULL && !PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, PyList_GET_ITEM(seqs, 0));
            Py_XINCREF(sources);
        } else {
            sources = PyFrozenSet_New(seqs);
        }
        PyObject *weight = sources == NULL ? NULL : PyNumber_Multiply(PyTuple_GET_ITEM(held, 0), scale);
        PyObject *carried = weight == NULL ? NULL : type->tp_alloc(type, 4);
        if (carried == NULL) {
            Py_XDECREF(sources);
            Py_XDECREF(weight);
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(carried, 0, Py_NewRef(cue));
        PyTuple_SET_ITEM(carried, 1, weight);
        PyTuple_SET_ITEM(carried, 2, sources);
        PyTuple_SET_ITEM(carried, 3, Py_NewRef(zero));
        if (PyList_Append(out, carried) < 0) Py_CLEAR(out);
        Py_DECREF(carried);
    }
    Py_XDECREF(zero);
    return out;
}

/* carried_parts(expanded, explicit): ranking._py_carried_parts, the carried cues of
   ``expanded`` (Carried tuples) whose cue ``explicit`` does not hold, their cues, and their
   weights as the strongest of one (from 0.0). */
static PyObject *textc_carried_parts(PyObject *self, PyObject *args) {
    PyObject *given, *explicit;
    if (!PyArg_ParseTuple(args, "OO!:carried_parts", &given, &PySet_Type, &explicit)) return NULL;
    PyObject *expanded = PySequence_Fast(given, "carried_parts: expanded must be a sequence");
    if (expanded == NULL) return NULL;
    PyObject *carried = PyList_New(0), *cues = PyList_New(0), *weights = PyList_New(0);
    PyObject *zero = PyFloat_FromDouble(0.0), *result = NULL;
    int failed = carried == NULL || cues == NULL || weights == NULL || zero == NULL;
    for (Py_ssize_t i = 0; !failed && i < PySequence_Fast_GET_SIZE(expanded); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(expanded, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4) {
            PyErr_SetString(PyExc_TypeError, "carried_parts: Carried items");
            failed = 1;
            break;
        }
        PyObject *cue = PyTuple_GET_ITEM(item, 0), *weight = PyTuple_GET_ITEM(item, 1);
        int mine = PySet_Contains(explicit, cue);
        if (mine != 0) {
            failed = mine < 0;
            continue;
        }
        int positive = PyObject_RichCompareBool(weight, zero, Py_GT);
        failed = positive < 0 || PyList_Append(carried, item) < 0 ||
                 PyList_Append(cues, cue) < 0 || PyList_Append(weights, positive ? weight : zero) < 0;
    }
    if (!failed) result = PyTuple_Pack(3, carried, cues, weights);
    Py_DECREF(expanded);
    Py_XDECREF(carried);
    Py_XDECREF(cues);
    Py_XDECREF(weights);
    Py_XDECREF(zero);
    return result;
}

/* ---- recall's per-query loops (carried concepts' evidence lists) ------------------------ */

/* ``item`` when it is a tuple of ``size`` items, else NULL with a TypeError saying ``what``
   (borrowed, as the item is). */
static PyObject *sized_tuple(PyObject *item, Py_ssize_t size, const char *what) {
    if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == size) return item;
    PyErr_SetString(PyExc_TypeError, what);
    return NULL;
}

/* The first member of ``sources`` (a set of one), as a new reference. */
static PyObject *only_source(PyObject *sources) {
    PyObject *it = PyObject_GetIter(sources);
    if (it == NULL) return NULL;
    PyObject *first = PyIter_Next(it);
    Py_DECREF(it);
    if (first == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "an empty set of sources");
    return first;
}

/* The concept's found lists (keys, postings, df): ``derived[(kinds, members)]`` when held,
   else ``found(members)`` (which memoizes them), as a new reference. */
static PyObject *found_lists(PyObject *derived, PyObject *kinds, PyObject *found,
                             PyObject *members) {
    PyObject *key = PyTuple_Pack(2, kinds, members);
    if (key == NULL) return NULL;
    PyObject *held = PyDict_GetItemWithError(derived, key);
    Py_DECREF(key);
    if (held != NULL) return Py_NewRef(held);
    return PyErr_Occurred() ? NULL : PyObject_CallOneArg(found, members);
}

/* One carried concept's list: list_type(signal, w_session * gain, postings, own, keys) with
   own = gain_type(gain, only, gain * factor), ``only`` its one source (None for several).
   ``*out`` stays NULL (and no error is set) when the concept is not carried: df is 0 or
   above ``most``. */
static int concept_list(PyTypeObject *list_type, PyTypeObject *gain_type, PyObject *signal,
                        PyObject *concept, PyObject *lists, Py_ssize_t n, Py_ssize_t most,
                        double w_session, double own_factor, PyObject **out) {
    *out = NULL;
    if (!PyTuple_Check(lists) || PyTuple_GET_SIZE(lists) != 3) {
        PyErr_SetString(PyExc_TypeError, "carried_lists: found lists must be (keys, postings, df)");
        return -1;
    }
    Py_ssize_t df = PyLong_AsSsize_t(PyTuple_GET_ITEM(lists, 2));
    if (df == -1 && PyErr_Occurred()) return -1;
    if (df <= 0 || df > most) return 0; /* too common to tell memories apart, or unknown */
    double weight = PyFloat_AsDouble(PyTuple_GET_ITEM(concept, 1));
    if (weight == -1.0 && PyErr_Occurred()) return -1;
    PyObject *sources = PyTuple_GET_ITEM(concept, 2), *given = PyTuple_GET_ITEM(concept, 3);
    double factor = own_factor;
    if (given != Py_None && (factor = PyFloat_AsDouble(given)) == -1.0 && PyErr_Occurred())
        return -1;
    Py_ssize_t size = PyObject_Size(sources);
    if (size < 0) return -1;
    /* bm25_idf(n, df) as topk writes it inline, in the same operations */
    double gain = weight * log(1.0 + ((double)(n - df) + 0.5) / ((double)df + 0.5));
    PyObject *only = size == 1 ? only_source(sources) : Py_NewRef(Py_None);
    PyObject *value = only == NULL ? NULL : PyFloat_FromDouble(gain);
    PyObject *mine = value == NULL ? NULL : PyFloat_FromDouble(gain * factor);
    PyObject *own = mine == NULL ? NULL : gain_type->tp_alloc(gain_type, 3);
    PyObject *bound = own == NULL ? NULL : PyFloat_FromDouble(w_session * gain);
    PyObject *made = bound == NULL ? NULL : list_type->tp_alloc(list_type, 5);
    if (made == NULL) {
        Py_XDECREF(only);
        Py_XDECREF(value);
        Py_XDECREF(mine);
        Py_XDECREF(own);
        Py_XDECREF(bound);
        return -1;
    }
    PyTuple_SET_ITEM(own, 0, value);
    PyTuple_SET_ITEM(own, 1, only);
    PyTuple_SET_ITEM(own, 2, mine);
    PyTuple_SET_ITEM(made, 0, Py_NewRef(signal));
    PyTuple_SET_ITEM(made, 1, bound);
    PyTuple_SET_ITEM(made, 2, Py_NewRef(PyTuple_GET_ITEM(lists, 1)));
    PyTuple_SET_ITEM(made, 3, own);
    PyTuple_SET_ITEM(made, 4, Py_NewRef(PyTuple_GET_ITEM(lists, 0)));
    *out = made;
    return 0;
}

/* carried_lists(list_type, gain_type, signal, concepts, derived, kinds, found, n, most,
   w_session, own_factor): topk._py_carried_lists, the evidence list of each carried concept
   (a Concept: members, weight, sources, self_factor) whose document frequency is in
   1..most. */
static PyObject *textc_carried_lists(PyObject *self, PyObject *args) {
    PyTypeObject *list_type, *gain_type;
    PyObject *signal, *given, *derived, *kinds, *found;
    Py_ssize_t n, most;
    double w_session, own_factor;
    if (!PyArg_ParseTuple(args, "O!O!UOO!OOnndd:carried_lists", &PyType_Type, &list_type,
                          &PyType_Type, &gain_type, &signal, &given, &PyDict_Type, &derived,
                          &kinds, &found, &n, &most, &w_session, &own_factor))
        return NULL;
    if (!PyType_IsSubtype(list_type, &PyTuple_Type) ||
        !PyType_IsSubtype(gain_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "carried_lists: tuple types");
        return NULL;
    }
    PyObject *concepts = PySequence_Fast(given, "carried_lists: concepts must be a sequence");
    if (concepts == NULL) return NULL;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < PySequence_Fast_GET_SIZE(concepts); i++) {
        PyObject *made = NULL, *concept = sized_tuple(PySequence_Fast_GET_ITEM(concepts, i), 4,
                                                      "carried_lists: Concept items");
        if (concept == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyObject *lists = found_lists(derived, kinds, found, PyTuple_GET_ITEM(concept, 0));
        int failed = lists == NULL || concept_list(list_type, gain_type, signal, concept, lists,
                                                   n, most, w_session, own_factor, &made) < 0;
        Py_XDECREF(lists);
        if (!failed && made != NULL) {
            failed = PyList_Append(out, made) < 0;
            Py_DECREF(made);
        }
        if (failed) Py_CLEAR(out);
    }
    Py_DECREF(concepts);
    return out;
}

/* One list's four descriptor integers and five doubles (kernel._py_describe): 1 when its gain
   is not exactly of type ``term_type`` (BM25) or ``gain_type`` (constant), -1 on an error. */
static int list_descriptor(PyObject *lst, PyTypeObject *term_type, PyTypeObject *gain_type,
                           PyObject *signals, int64_t *ints, double *doubles) {
    if (!PyTuple_Check(lst) || PyTuple_GET_SIZE(lst) != 5) {
        PyErr_SetString(PyExc_TypeError, "describe_lists: lists must be _List tuples");
        return -1;
    }
    PyObject *gain = PyTuple_GET_ITEM(lst, 3);
    int bm25 = Py_IS_TYPE(gain, term_type);
    if (!bm25 && !Py_IS_TYPE(gain, gain_type)) return 1;
    if (PyTuple_GET_SIZE(gain) != (bm25 ? 6 : 3)) {
        PyErr_SetString(PyExc_TypeError, "describe_lists: a gain of another size");
        return -1;
    }
    PyObject *code = PyDict_GetItemWithError(signals, PyTuple_GET_ITEM(lst, 0));
    if (code == NULL) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, PyTuple_GET_ITEM(lst, 0));
        return -1;
    }
    Py_ssize_t members = PyObject_Size(PyTuple_GET_ITEM(lst, 2));
    if (members < 0 || ((ints[0] = PyLong_AsLongLong(code)) == -1 && PyErr_Occurred())) return -1;
    ints[1] = bm25;
    ints[2] = members;
    ints[3] = -1;
    /* the doubles in _py_describe's order: BM25 (idf, 0, k1, b, avg); constant (value,
       special_value, 0, 0, 0); a _TermGain is (idf, bucket, lengths, avg, k1, b) */
    static const int at_bm25[5] = {0, -1, 4, 5, 3}, at_constant[5] = {0, 2, -1, -1, -1};
    const int *at = bm25 ? at_bm25 : at_constant;
    for (int i = 0; i < 5; i++) {
        doubles[i] = at[i] < 0 ? 0.0 : PyFloat_AsDouble(PyTuple_GET_ITEM(gain, at[i]));
        if (doubles[i] == -1.0 && PyErr_Occurred()) return -1;
    }
    PyObject *special = bm25 ? Py_None : PyTuple_GET_ITEM(gain, 1);
    if (special != Py_None) {
        PyObject *index = PyNumber_Index(special); /* as struct's "q" takes it */
        if (index == NULL) return -1;
        ints[3] = PyLong_AsLongLong(index);
        Py_DECREF(index);
        if (ints[3] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* Append the packed member descriptors of one kernel._Members tuple (an int64 array, its
   buffers, its postings) to ``*out`` (``*used`` of ``*room`` bytes, grown by realloc), and add
   its postings to ``*postings``. */
static int append_members(PyObject *held, char **out, Py_ssize_t *used, Py_ssize_t *room,
                          long long *postings) {
    if (!PyTuple_Check(held) || PyTuple_GET_SIZE(held) != 3) {
        PyErr_SetString(PyExc_TypeError, "describe_lists: members must be _Members tuples");
        return -1;
    }
    long long count = PyLong_AsLongLong(PyTuple_GET_ITEM(held, 2));
    if (count == -1 && PyErr_Occurred()) return -1;
    Py_buffer view;
    PyObject *packed = PyTuple_GET_ITEM(held, 0);
    if (PyObject_GetBuffer(packed, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    int failed = view.itemsize != 8 || view.format == NULL || strcmp(view.format, "q") != 0;
    if (failed) PyErr_SetString(PyExc_TypeError, "describe_lists: members must be array('q')");
    if (!failed && *used + view.len > *room) {
        Py_ssize_t grown = 2 * (*used + view.len);
        char *more = PyMem_Realloc(*out, (size_t)grown);
        failed = more == NULL;
        if (failed) PyErr_NoMemory();
        else *out = more, *room = grown;
    }
    if (!failed) {
        memcpy(*out + *used, view.buf, (size_t)view.len);
        *used += view.len;
        *postings += count;
    }
    PyBuffer_Release(&view);
    return failed ? -1 : 0;
}

/* describe_lists(lists, members, term_type, gain_type, signals): what kernel._py_describe
   packs for ``lists`` (topk._List tuples) given each one's member descriptors ``members``
   (kernel._Members): (ints, doubles, members, postings), the first three as bytes of native
   int64, double and int64 (4 integers and 5 doubles a list; the members' end to end), the
   last their postings; None when a gain is not exactly of ``term_type`` or ``gain_type``
   (the Python way then decides). ``signals``: a signal's name -> its code. */
static PyObject *textc_describe_lists(PyObject *self, PyObject *args) {
    PyObject *given, *held_given, *signals;
    PyTypeObject *term_type, *gain_type;
    if (!PyArg_ParseTuple(args, "OOO!O!O!:describe_lists", &given, &held_given, &PyType_Type,
                          &term_type, &PyType_Type, &gain_type, &PyDict_Type, &signals))
        return NULL;
    PyObject *lists = PySequence_Fast(given, "describe_lists: lists must be a sequence");
    PyObject *helds = lists == NULL ? NULL
                                    : PySequence_Fast(held_given, "describe_lists: members");
    if (helds == NULL) {
        Py_XDECREF(lists);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(lists), used = 0, room = 64 * n + 64;
    PyObject *ints = NULL, *doubles = NULL, *out = NULL;
    char *members = NULL;
    long long postings = 0;
    int failed = 0, unknown = 0;
    if (PySequence_Fast_GET_SIZE(helds) != n) {
        PyErr_SetString(PyExc_ValueError, "describe_lists: a member descriptor per list");
        failed = 1;
    } else if ((ints = PyBytes_FromStringAndSize(NULL, 32 * n)) == NULL ||
               (doubles = PyBytes_FromStringAndSize(NULL, 40 * n)) == NULL ||
               (members = PyMem_Malloc((size_t)room)) == NULL) {
        if (members == NULL && !PyErr_Occurred()) PyErr_NoMemory();
        failed = 1;
    }
    for (Py_ssize_t i = 0; !failed && !unknown && i < n; i++) {
        int64_t *to_ints = (int64_t *)PyBytes_AS_STRING(ints) + 4 * i;
        double *to_doubles = (double *)PyBytes_AS_STRING(doubles) + 5 * i;
        int kind = list_descriptor(PySequence_Fast_GET_ITEM(lists, i), term_type, gain_type,
                                   signals, to_ints, to_doubles);
        failed = kind < 0 || (kind == 0 && append_members(PySequence_Fast_GET_ITEM(helds, i),
                                                          &members, &used, &room,
                                                          &postings) < 0);
        unknown = kind > 0;
    }
    if (!failed && unknown) {
        out = Py_NewRef(Py_None);
    } else if (!failed) {
        PyObject *packed = PyBytes_FromStringAndSize(members, used);
        out = packed == NULL ? NULL : Py_BuildValue("(OONL)", ints, doubles, packed, postings);
    }
    PyMem_Free(members);
    Py_XDECREF(ints);
    Py_XDECREF(doubles);
    Py_DECREF(lists);
    Py_DECREF(helds);
    return out;
}

/* spread_evidence(raw, held, seqs, cue, tag, content, session): arrays._py_spread_evidence,
   each memory's raw sums (4 doubles of ``raw`` a memory, kernel.evidence's order) put in the
   dicts of the signals its ``held`` bits name (cue 1, tag 2, content 4, session 8), by seq. */
static PyObject *textc_spread_evidence(PyObject *self, PyObject *args) {
    PyObject *given, *into[4];
    Py_buffer raw, held;
    if (!PyArg_ParseTuple(args, "y*y*OO!O!O!O!:spread_evidence", &raw, &held, &given,
                          &PyDict_Type, &into[0], &PyDict_Type, &into[1], &PyDict_Type,
                          &into[2], &PyDict_Type, &into[3]))
        return NULL;
    PyObject *seqs = PySequence_Fast(given, "spread_evidence: seqs must be a sequence");
    Py_ssize_t n = seqs == NULL ? 0 : PySequence_Fast_GET_SIZE(seqs);
    int failed = seqs == NULL;
    if (!failed && (raw.len < 32 * n || held.len < n)) {
        PyErr_SetString(PyExc_ValueError, "spread_evidence: 4 sums and a byte per memory");
        failed = 1;
    }
    const double *sums = raw.buf;
    const unsigned char *bits = held.buf;
    for (Py_ssize_t i = 0; !failed && i < n; i++) {
        for (int signal = 0; !failed && signal < 4; signal++) {
            if (!(bits[i] & (1 << signal))) continue;
            PyObject *value = PyFloat_FromDouble(sums[4 * i + signal]);
            failed = value == NULL ||
                     PyDict_SetItem(into[signal], PySequence_Fast_GET_ITEM(seqs, i), value) < 0;
            Py_XDECREF(value);
        }
    }
    Py_XDECREF(seqs);
    PyBuffer_Release(&raw);
    PyBuffer_Release(&held);
    return failed ? NULL : Py_NewRef(Py_None);
}

/* rest_bounds(lists, session_cap): topk._py_rest_bounds, rest[i] the most that lists i..
   (topk _List tuples, or objects with a signal and a bound) add to one memory's score, and
   rest[n] = 0.0: the linear and the session bounds each summed from the last list back from
   0.0 (each list adding 0.0 to the sum it is not part of), the session sum capped at
   ``session_cap``. */
static PyObject *textc_rest_bounds(PyObject *self, PyObject *args) {
    PyObject *given;
    double cap;
    if (!PyArg_ParseTuple(args, "Od:rest_bounds", &given, &cap)) return NULL;
    PyObject *lists = PySequence_Fast(given, "rest_bounds: lists must be a sequence");
    if (lists == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(lists);
    PyObject *out = PyList_New(n + 1);
    double linear = 0.0, session = 0.0;
    for (Py_ssize_t i = n; out != NULL && i >= 0; i--) {
        if (i < n) {
            /* a _List's signal and bound are its first two items; anything else's, its
               attributes of those names (as topk reads them) */
            PyObject *lst = PySequence_Fast_GET_ITEM(lists, i), *signal, *given_bound;
            if (PyTuple_Check(lst) && PyTuple_GET_SIZE(lst) >= 2) {
                signal = Py_NewRef(PyTuple_GET_ITEM(lst, 0));
                given_bound = Py_NewRef(PyTuple_GET_ITEM(lst, 1));
            } else {
                signal = PyObject_GetAttrString(lst, "signal");
                given_bound = signal == NULL ? NULL : PyObject_GetAttrString(lst, "bound");
            }
            double bound = given_bound == NULL ? -1.0 : PyFloat_AsDouble(given_bound);
            int own_session = bound == -1.0 && PyErr_Occurred()
                                  ? -1
                                  : PyUnicode_Check(signal) &&
                                        PyUnicode_CompareWithASCIIString(signal, "session") == 0;
            Py_XDECREF(signal);
            Py_XDECREF(given_bound);
            if (own_session < 0) {
                Py_CLEAR(out);
                break;
            }
            linear += own_session ? 0.0 : bound;
            session += own_session ? bound : 0.0;
        }
        /* min(session, cap) as topk writes it: cap when cap < session, else session */
        PyObject *rest = i == n ? PyFloat_FromDouble(0.0)
                                : PyFloat_FromDouble(linear + (cap < session ? cap : session));
        if (rest == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, rest);
    }
    Py_DECREF(lists);
    return out;
}

/* buffer_address(obj): the address of ``obj``'s C-contiguous buffer (an error when it exports
   none: NumPy's ValueError for a strided array), what kernel._py_data finds by ctypes in
   ~0.8 us, some forty times a recall. */
static PyObject *textc_buffer_address(PyObject *self, PyObject *obj) {
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    void *address = view.buf;
    PyBuffer_Release(&view);
    return PyLong_FromVoidPtr(address);
}

/* unpacked_cues(packed, start, stop, names): recordtable._py_unpacked_cues, the cue tuple of
   the row ``packed[start:stop]`` (a count byte, that many native 2-byte codes into the list
   ``names``, then the other cues as UTF-8 joined by NUL: a NUL byte is no part of another
   character's bytes, so each piece decodes alone). The Python way made the codes' tuple, an
   itemgetter of them, the text's bytes, str and list and the joined tuple: 1.13 us a row of
   twenty cues against 0.24 here, some ten rows a recall (its hits' records and explanations). */
static PyObject *textc_unpacked_cues(PyObject *self, PyObject *args) {
    Py_buffer packed;
    Py_ssize_t start, stop;
    PyObject *names;
    if (!PyArg_ParseTuple(args, "y*nnO!:unpacked_cues", &packed, &start, &stop, &PyList_Type,
                          &names))
        return NULL;
    const unsigned char *bytes = packed.buf;
    Py_ssize_t count = 0 <= start && start < stop && stop <= packed.len ? bytes[start] : -1;
    Py_ssize_t end = start + 1 + 2 * count, pieces = 0;
    if (count < 0 || end > stop) {
        PyBuffer_Release(&packed);
        PyErr_SetString(PyExc_ValueError, "unpacked_cues: not a packed row");
        return NULL;
    }
    for (Py_ssize_t at = end; end < stop && at <= stop; at++) /* the text's NULs, and its end */
        pieces += at == stop || bytes[at] == 0;
    PyObject *out = PyTuple_New(count + pieces);
    for (Py_ssize_t i = 0; out != NULL && i < count; i++) {
        uint16_t code;
        memcpy(&code, bytes + start + 1 + 2 * i, sizeof code);
        if (code >= PyList_GET_SIZE(names)) {
            PyErr_SetString(PyExc_IndexError, "unpacked_cues: a code past names");
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, i, Py_NewRef(PyList_GET_ITEM(names, code)));
    }
    Py_ssize_t from = end, piece = count;
    for (Py_ssize_t at = end; out != NULL && end < stop && at <= stop; at++) {
        if (at < stop && bytes[at] != 0) continue;
        PyObject *cue = PyUnicode_DecodeUTF8((const char *)bytes + from, at - from, NULL);
        if (cue == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, piece++, cue);
        from = at + 1;
    }
    PyBuffer_Release(&packed);
    return out;
}

/* The sequence number at ``at`` of an array of int64 (``wide``) or int32 ones. */
static inline long long seq_at(const Py_buffer *held, int wide, Py_ssize_t at) {
    return wide ? ((const int64_t *)held->buf)[at] : ((const int32_t *)held->buf)[at];
}

/* holding(held, seqs): postings._py_holding, those of ``seqs`` (ints) that the ascending
   sequence numbers ``held`` (an array of typecode "i" or "q") hold, in their order, each
   found by a binary search in C: bisect_left over the array made an int object per probe
   (~3,200 instructions a search of a long list, some forty a recall explaining its hits).
   None (the reference decides) for another kind of array or a seq that is no int. */
static PyObject *textc_holding(PyObject *self, PyObject *args) {
    PyObject *given_held, *given;
    Py_buffer held;
    if (!PyArg_ParseTuple(args, "OO:holding", &given_held, &given)) return NULL;
    if (PyObject_GetBuffer(given_held, &held, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear(); /* exports no buffer: not an array this searches */
        return Py_NewRef(Py_None);
    }
    const char *format = held.format == NULL ? "B" : held.format;
    int wide = held.itemsize == 8 && strcmp(format, "q") == 0;
    if (!wide && !(held.itemsize == 4 && strcmp(format, "i") == 0)) {
        PyBuffer_Release(&held);
        return Py_NewRef(Py_None);
    }
    PyObject *seqs = PySequence_Fast(given, "holding: seqs must be a sequence");
    PyObject *out = seqs == NULL ? NULL : PyList_New(0);
    Py_ssize_t size = held.len / held.itemsize;
    int other = 0; /* a seq that is no int: the reference decides */
    for (Py_ssize_t i = 0; out != NULL && i < PySequence_Fast_GET_SIZE(seqs); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seqs, i);
        if (!PyLong_CheckExact(item)) {
            other = 1;
            break;
        }
        int overflow = 0;
        long long seq = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (overflow) continue; /* past int64: no array of these holds it */
        Py_ssize_t lo = 0, hi = size;
        while (lo < hi) { /* bisect_left */
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (seq_at(&held, wide, mid) < seq) lo = mid + 1;
            else hi = mid;
        }
        if (lo < size && seq_at(&held, wide, lo) == seq && PyList_Append(out, item) < 0)
            Py_CLEAR(out);
    }
    Py_XDECREF(seqs);
    PyBuffer_Release(&held);
    if (other) {
        Py_XDECREF(out);
        return Py_NewRef(Py_None);
    }
    return out;
}

/* alone(concepts): ranking._py_alone, memory -> the set of the positions of the carried
   concepts (Concept tuples) that came from it alone (one source) with self factor 0. */
static PyObject *textc_alone(PyObject *self, PyObject *given) {
    PyObject *concepts = PySequence_Fast(given, "alone: concepts must be a sequence");
    if (concepts == NULL) return NULL;
    PyObject *out = PyDict_New(), *zero = PyFloat_FromDouble(0.0);
    int failed = out == NULL || zero == NULL;
    for (Py_ssize_t i = 0; !failed && i < PySequence_Fast_GET_SIZE(concepts); i++) {
        PyObject *concept = sized_tuple(PySequence_Fast_GET_ITEM(concepts, i), 4,
                                        "alone: Concept items");
        int helpless = concept == NULL
                           ? -1
                           : PyObject_RichCompareBool(PyTuple_GET_ITEM(concept, 3), zero, Py_EQ);
        Py_ssize_t size = helpless > 0 ? PyObject_Size(PyTuple_GET_ITEM(concept, 2)) : 0;
        if (helpless < 0 || size < 0) {
            failed = 1;
            break;
        }
        if (size != 1) continue;
        PyObject *source = only_source(PyTuple_GET_ITEM(concept, 2));
        PyObject *at = source == NULL ? NULL : PyLong_FromSsize_t(i);
        PyObject *mine = at == NULL ? NULL : PyDict_GetItemWithError(out, source);
        if (mine != NULL) {
            failed = PySet_Add(mine, at) < 0;
        } else if (at == NULL || PyErr_Occurred() || (mine = PySet_New(NULL)) == NULL) {
            failed = 1;
        } else {
            failed = PySet_Add(mine, at) < 0 || PyDict_SetItem(out, source, mine) < 0;
            Py_DECREF(mine);
        }
        Py_XDECREF(at);
        Py_XDECREF(source);
    }
    Py_DECREF(concepts);
    Py_XDECREF(zero);
    if (failed) Py_CLEAR(out);
    return out;
}

/* shared_positions(found): ranking._py_shared_positions, the position of each concept key of
   ``found`` (a list of (key, members) pairs) that occurs more than once -> the list of its
   later positions. */
static PyObject *textc_shared_positions(PyObject *self, PyObject *found) {
    if (!PyList_Check(found)) {
        PyErr_SetString(PyExc_TypeError, "shared_positions: found must be a list");
        return NULL;
    }
    PyObject *owner = PyDict_New(), *shared = PyDict_New();
    int failed = owner == NULL || shared == NULL;
    for (Py_ssize_t i = 0; !failed && i < PyList_GET_SIZE(found); i++) {
        PyObject *pair = sized_tuple(PyList_GET_ITEM(found, i), 2,
                                     "shared_positions: (key, members) pairs");
        PyObject *at = pair == NULL ? NULL : PyLong_FromSsize_t(i);
        /* the key's first position (``at`` itself when new: positions are distinct) */
        PyObject *first = at == NULL ? NULL : PyDict_SetDefault(owner, PyTuple_GET_ITEM(pair, 0), at);
        PyObject *later = first == NULL || first == at ? NULL : PyDict_GetItemWithError(shared, first);
        if (first == NULL || (later == NULL && PyErr_Occurred())) {
            failed = 1;
        } else if (later != NULL) {
            failed = PyList_Append(later, at) < 0;
        } else if (first != at) {
            later = PyList_New(1);
            if (later != NULL) PyList_SET_ITEM(later, 0, Py_NewRef(at));
            failed = later == NULL || PyDict_SetItem(shared, first, later) < 0;
            Py_XDECREF(later);
        }
        Py_XDECREF(at);
    }
    Py_XDECREF(owner);
    if (failed) Py_CLEAR(shared);
    return shared;
}

/* ---- hits29: a hit's record from its packed row ---------------------------------------- */

/* The names record_of reads: the table's columns, then the record's fields it sets. */
enum { R_IDS, R_CONTENTS, R_CUES, R_CODES, R_KINDS, R_OWN_KINDS, R_STAMPS, R_DATES, R_METADATA,
       R_EXTRA, R_GET, R_DICT, R_MEMORY_ID, R_CONTENT, R_CREATED, R_UPDATED, R_FCUES, R_TYPE,
       R_SOURCE, R_NAMESPACE, R_ORIGIN, R_FMETADATA, R_NAMES };
static const char *const RECORD_NAMES[R_NAMES] = {
    "_ids", "_contents", "_cues", "_codes", "_kinds", "_own_kinds", "_stamps", "_dates",
    "_metadata", "_extra", "get", "__dict__", "memory_id", "content", "created_at", "updated_at",
    "cues", "type", "source", "namespace", "cue_origin", "metadata"};
static PyObject *record_names[R_NAMES];

/* ``table.<name>[seq]`` (list, array or dict column), as a new reference. */
static PyObject *column_at(PyObject *table, int name, PyObject *seq) {
    PyObject *column = PyObject_GetAttr(table, record_names[name]);
    if (column == NULL) return NULL;
    PyObject *value = PyObject_GetItem(column, seq);
    Py_DECREF(column);
    return value;
}

/* recordtable._metadata(names, metadata): the metadata dict of a row whose kind has these
   metadata ``names`` (None: ``metadata`` is a flat (name, value, ...) tuple or None). */
static PyObject *metadata_dict(PyObject *names, PyObject *metadata) {
    PyObject *out = PyDict_New();
    if (out == NULL || (names == Py_None && metadata == Py_None)) return out;
    PyObject *pairs = names == Py_None ? metadata : names;
    if (!PyTuple_Check(pairs) || (names == Py_None && PyTuple_GET_SIZE(pairs) % 2) ||
        (names != Py_None && PyTuple_GET_SIZE(names) > 1 &&
         (!PyTuple_Check(metadata) || PyTuple_GET_SIZE(metadata) != PyTuple_GET_SIZE(names)))) {
        PyErr_SetString(PyExc_ValueError, "record_of: metadata does not match its names");
        Py_DECREF(out);
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(pairs);
    for (Py_ssize_t i = 0; i < n; i += names == Py_None ? 2 : 1) {
        PyObject *value = names == Py_None ? PyTuple_GET_ITEM(pairs, i + 1)
                          : n == 1         ? metadata
                                           : PyTuple_GET_ITEM(metadata, i);
        if (PyDict_SetItem(out, PyTuple_GET_ITEM(pairs, i), value) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* The fields of row ``seq`` of ``table`` (a recordtable.RecordTable) set in ``values`` (a copy
   of the template): id, content, cues (``table._cues.get(seq)``), created and updated time
   (``fromtimestamp(stamp, utc)``, or the row's datetime), its kind's four, metadata, then the
   extra fields. 0, or -1 with an error (KeyError when no row is held at ``seq``). */
static int record_fields(PyObject *values, PyObject *table, PyObject *seq, PyObject *layout) {
    Py_ssize_t at = PyLong_AsSsize_t(seq);
    if (at == -1 && PyErr_Occurred()) return -1;
    PyObject *ids = PyObject_GetAttr(table, record_names[R_IDS]);
    if (ids == NULL) return -1;
    PyObject *memory_id = PyList_Check(ids) && at >= 0 && at < PyList_GET_SIZE(ids)
                              ? PyList_GET_ITEM(ids, at) : Py_None;
    int failed = memory_id == Py_None ||
                 PyDict_SetItem(values, record_names[R_MEMORY_ID], memory_id) < 0;
    if (memory_id == Py_None) PyErr_SetObject(PyExc_KeyError, seq);
    Py_DECREF(ids);
    if (failed) return -1;
    PyObject *item = column_at(table, R_CONTENTS, seq);
    failed = item == NULL || PyDict_SetItem(values, record_names[R_CONTENT], item) < 0;
    Py_XDECREF(item);
    PyObject *cues = failed ? NULL : PyObject_GetAttr(table, record_names[R_CUES]);
    item = cues == NULL ? NULL : PyObject_CallMethodOneArg(cues, record_names[R_GET], seq);
    failed = item == NULL || PyDict_SetItem(values, record_names[R_FCUES], item) < 0;
    Py_XDECREF(cues);
    Py_XDECREF(item);
    if (failed) return -1;
    /* created_at and updated_at: the stamp's datetime, or the row's own */
    PyObject *stamp = column_at(table, R_STAMPS, seq);
    double seconds = stamp == NULL ? 0.0 : PyFloat_AsDouble(stamp);
    PyObject *created = NULL;
    if (stamp != NULL && !(seconds == -1.0 && PyErr_Occurred())) {
        PyObject *call[2] = {stamp, PyTuple_GET_ITEM(layout, 3)};
        created = seconds == seconds
                      ? PyObject_Vectorcall(PyTuple_GET_ITEM(layout, 2), call, 2, NULL)
                      : column_at(table, R_DATES, seq);
    }
    Py_XDECREF(stamp);
    failed = created == NULL || PyDict_SetItem(values, record_names[R_CREATED], created) < 0 ||
             PyDict_SetItem(values, record_names[R_UPDATED], created) < 0;
    Py_XDECREF(created);
    if (failed) return -1;
    /* the kind: shared by its code, or the row's own */
    item = column_at(table, R_CODES, seq);
    long code = item == NULL ? -1 : PyLong_AsLong(item);
    Py_XDECREF(item);
    if (code == -1 && PyErr_Occurred()) return -1;
    PyObject *kind;
    if (code == PyLong_AsLong(PyTuple_GET_ITEM(layout, 4))) {
        kind = column_at(table, R_OWN_KINDS, seq);
    } else {
        PyObject *kinds = PyObject_GetAttr(table, record_names[R_KINDS]);
        kind = kinds == NULL ? NULL : PySequence_GetItem(kinds, code);
        Py_XDECREF(kinds);
    }
    if (kind == NULL) return -1;
    failed = !PyTuple_Check(kind) || PyTuple_GET_SIZE(kind) != 5;
    if (failed) PyErr_SetString(PyExc_ValueError, "record_of: a kind must be a 5-tuple");
    for (int i = 0; i < 4 && !failed; i++) {
        static const int field[4] = {R_TYPE, R_SOURCE, R_NAMESPACE, R_ORIGIN};
        failed = PyDict_SetItem(values, record_names[field[i]], PyTuple_GET_ITEM(kind, i)) < 0;
    }
    PyObject *metadata = failed ? NULL : column_at(table, R_METADATA, seq);
    item = metadata == NULL ? NULL : metadata_dict(PyTuple_GET_ITEM(kind, 4), metadata);
    failed = item == NULL || PyDict_SetItem(values, record_names[R_FMETADATA], item) < 0;
    Py_XDECREF(item);
    Py_XDECREF(metadata);
    Py_DECREF(kind);
    if (failed) return -1;
    /* the extra fields: (name, value, ...) of the rows that have some */
    PyObject *extras = PyObject_GetAttr(table, record_names[R_EXTRA]);
    PyObject *extra = extras == NULL ? NULL : PyDict_GetItemWithError(extras, seq);
    failed = extras == NULL || (extra == NULL && PyErr_Occurred());
    if (!failed && extra != NULL && (!PyTuple_Check(extra) || PyTuple_GET_SIZE(extra) % 2)) {
        PyErr_SetString(PyExc_ValueError, "record_of: extra must be (name, value, ...)");
        failed = 1;
    }
    for (Py_ssize_t i = 0; !failed && extra != NULL && i < PyTuple_GET_SIZE(extra); i += 2)
        failed = PyDict_SetItem(values, PyTuple_GET_ITEM(extra, i),
                                PyTuple_GET_ITEM(extra, i + 1)) < 0;
    Py_XDECREF(extras);
    return failed ? -1 : 0;
}

/* A new instance of cls whose __dict__ is values (stolen): object.__new__(cls), then
   object.__setattr__ of "__dict__" (what the frozen dataclass's own __setattr__ refuses);
   record_of and new_record build their records so. NULL on error. */
static PyObject *record_with_dict(PyTypeObject *cls, PyObject *values) {
    PyObject *none = PyTuple_New(0); /* object's tp_new of no arguments */
    PyObject *record = none == NULL ? NULL : PyBaseObject_Type.tp_new(cls, none, NULL);
    if (record != NULL && PyObject_GenericSetAttr(record, record_names[R_DICT], values) < 0)
        Py_CLEAR(record);
    Py_XDECREF(none);
    Py_DECREF(values);
    return record;
}

/* record_of(layout, table, seq): recordtable._py_record_at(table, seq), the record row ``seq``
   of ``table`` was packed from, where ``layout`` is (cls, template, fromtimestamp, utc,
   own_kind): a copy of ``template`` (every field at its default, in declaration order) with
   the row's fields set, held as the ``__dict__`` of a new ``cls`` (object.__setattr__'s way:
   the frozen dataclass's own __setattr__ refuses). */
static PyObject *textc_record_of(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != 5 ||
        !PyType_Check(PyTuple_GET_ITEM(args[0], 0)) || !PyDict_Check(PyTuple_GET_ITEM(args[0], 1))) {
        PyErr_SetString(PyExc_TypeError,
                        "record_of(layout, table, seq): layout (cls, template, fromtimestamp, "
                        "utc, own_kind)");
        return NULL;
    }
    PyObject *values = PyDict_Copy(PyTuple_GET_ITEM(args[0], 1));
    if (values == NULL) return NULL;
    if (record_fields(values, args[1], args[2], args[0]) < 0) {
        Py_DECREF(values);
        return NULL;
    }
    return record_with_dict((PyTypeObject *)PyTuple_GET_ITEM(args[0], 0), values);
}

/* Registers this block's functions and names in module ``m``: 0, or -1 with an error. */
static int add_record_of(PyObject *m) {
    static PyMethodDef defs[] = {
        {"record_of", (PyCFunction)(void (*)(void))textc_record_of, METH_FASTCALL,
         "recordtable._py_record_at."},
        {NULL, NULL, 0, NULL},
    };
    for (int i = 0; i < R_NAMES; i++)
        if ((record_names[i] = PyUnicode_InternFromString(RECORD_NAMES[i])) == NULL) return -1;
    return PyModule_AddFunctions(m, defs);
}

/* ---- validate30: the secret screen's triggers, compiled once (redact._may_match) --------- */

/* A trigger of a compiled rule: its bytes and its rule's position. */
typedef struct {
    const char *bytes;
    Py_ssize_t size;
    int rule;
} ScreenTrigger;

#define SCREEN_RULES_MAX 64 /* a rule is one bit of a uint64_t */

/* The rules of one key (text has "_", text has a digit): their triggers grouped by first byte,
 * the case-sensitive ones (side 0) and the case-insensitive ones (side 1, met by the text's
 * lower-cased byte), and the rules with an empty trigger (in every text, as str's `in`). */
typedef struct {
    Py_ssize_t rules;
    PyObject *payload[SCREEN_RULES_MAX];
    uint64_t always;
    uint16_t start[2][257]; /* the triggers of first byte c: start[side][c] .. start[side][c+1] */
    ScreenTrigger *triggers;
} ScreenKey;

/* pairs: a bit for each two bytes that some trigger of some key starts with (either case of a
 * letter of a nocase trigger; a one-byte trigger: with any second byte, the NUL that ends a
 * str's data included), so that the few places of a text where a trigger may start are found
 * with a bit test each. */
typedef struct {
    ScreenKey key[4]; /* by ("_" in text) * 2 + (text has a digit) */
    char *bytes;      /* the triggers' bytes */
    uint64_t pairs[1 << 10];
} ScreenTable;

#define SCREEN_LOWER(c) ((unsigned)(IS_UPPER(c) ? (c) + 32 : (c)))
#define SCREEN_UPPER(c) ((unsigned)(IS_LOWER(c) ? (c) - 32 : (c)))

static void screen_pair_set(ScreenTable *table, unsigned a, unsigned b) {
    unsigned at = a << 8 | b;
    table->pairs[at >> 6] |= (uint64_t)1 << (at & 63);
}

/* Set the pairs of every trigger of table's keys (side 1 of a key: its nocase triggers). */
static void screen_pairs_fill(ScreenTable *table) {
    for (int k = 0; k < 4; k++) {
        const ScreenKey *key = &table->key[k];
        for (int t = 0; t < key->start[1][256]; t++) {
            const ScreenTrigger *trigger = &key->triggers[t];
            int nocase = t >= key->start[1][0];
            unsigned char a = (unsigned char)trigger->bytes[0];
            unsigned firsts[2] = {a, nocase ? SCREEN_UPPER(a) : a};
            for (int i = 0; i < 2; i++) {
                if (trigger->size == 1) {
                    for (unsigned b = 0; b < 256; b++) screen_pair_set(table, firsts[i], b);
                    continue;
                }
                unsigned char b = (unsigned char)trigger->bytes[1];
                screen_pair_set(table, firsts[i], b);
                if (nocase) screen_pair_set(table, firsts[i], SCREEN_UPPER(b));
            }
        }
    }
}

static const char *SCREEN_CAPSULE = "cuemap_integrations._textc.screen_table";

static void screen_table_free(ScreenTable *table) {
    for (int k = 0; k < 4; k++) {
        for (Py_ssize_t r = 0; r < table->key[k].rules; r++) Py_XDECREF(table->key[k].payload[r]);
        PyMem_Free(table->key[k].triggers);
    }
    PyMem_Free(table->bytes);
    PyMem_Free(table);
}

static void screen_capsule_free(PyObject *capsule) {
    ScreenTable *table = PyCapsule_GetPointer(capsule, SCREEN_CAPSULE);
    if (table != NULL) screen_table_free(table);
}

/* The ASCII triggers of one rule (triggers, nocase, payload), checked: their count and byte
 * total added to *count and *size (a non-ASCII trigger never occurs in ASCII text: left out). */
static int screen_rule_arg(PyObject *rule, Py_ssize_t *count, Py_ssize_t *size) {
    if (!PyTuple_Check(rule) || PyTuple_GET_SIZE(rule) != 3 ||
        !PyTuple_Check(PyTuple_GET_ITEM(rule, 0))) {
        PyErr_SetString(PyExc_TypeError, "screen_table: each rule must be (triggers, nocase, payload)");
        return -1;
    }
    PyObject *triggers = PyTuple_GET_ITEM(rule, 0);
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(triggers); j++) {
        PyObject *trigger = PyTuple_GET_ITEM(triggers, j);
        if (!PyUnicode_Check(trigger)) {
            PyErr_SetString(PyExc_TypeError, "screen_table: a trigger must be a str");
            return -1;
        }
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(trigger) < 0) return -1;
#endif
        if (PyUnicode_IS_ASCII(trigger)) {
            (*count)++;
            *size += PyUnicode_GET_LENGTH(trigger);
        }
    }
    return 0;
}

/* Compile the rules of one key into k (its bytes from *bytes on): 0, or -1 with an error. */
static int screen_key_fill(ScreenKey *k, PyObject *rules, char **bytes) {
    Py_ssize_t count = 0, size = 0;
    if (!PyTuple_Check(rules) || PyTuple_GET_SIZE(rules) > SCREEN_RULES_MAX) {
        PyErr_Format(PyExc_TypeError, "screen_table: a key's rules: a tuple of at most %d",
                     SCREEN_RULES_MAX);
        return -1;
    }
    for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(rules); r++)
        if (screen_rule_arg(PyTuple_GET_ITEM(rules, r), &count, &size) < 0) return -1;
    if (count > UINT16_MAX) {
        PyErr_SetString(PyExc_ValueError, "screen_table: too many triggers");
        return -1;
    }
    k->triggers = PyMem_Calloc(count > 0 ? (size_t)count : 1, sizeof(ScreenTrigger));
    if (k->triggers == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    uint16_t fill[2][256] = {{0}};
    for (int pass = 0; pass < 2; pass++) { /* count by (side, first byte), then place */
        for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(rules); r++) {
            PyObject *rule = PyTuple_GET_ITEM(rules, r), *triggers = PyTuple_GET_ITEM(rule, 0);
            int nocase = PyObject_IsTrue(PyTuple_GET_ITEM(rule, 1));
            if (nocase < 0) return -1;
            if (pass == 0) {
                k->payload[r] = Py_NewRef(PyTuple_GET_ITEM(rule, 2));
                k->rules = r + 1;
            }
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(triggers); j++) {
                PyObject *trigger = PyTuple_GET_ITEM(triggers, j);
                if (!PyUnicode_IS_ASCII(trigger)) continue;
                Py_ssize_t m = PyUnicode_GET_LENGTH(trigger);
                const char *t = (const char *)PyUnicode_1BYTE_DATA(trigger);
                if (m == 0) {
                    k->always |= (uint64_t)1 << r;
                    continue;
                }
                unsigned char c = (unsigned char)t[0];
                if (pass == 0) {
                    k->start[nocase][c + 1]++;
                    continue;
                }
                ScreenTrigger *at = &k->triggers[k->start[nocase][c] + fill[nocase][c]++];
                memcpy(*bytes, t, (size_t)m);
                at->bytes = *bytes;
                at->size = m;
                at->rule = (int)r;
                *bytes += m;
            }
        }
        if (pass == 0) { /* counts to starts: side 1's after side 0's */
            uint16_t total = 0;
            for (int side = 0; side < 2; side++) {
                for (int c = 0; c < 256; c++) {
                    uint16_t n = k->start[side][c + 1];
                    k->start[side][c] = total;
                    total += n;
                }
                k->start[side][256] = total;
            }
        }
    }
    return 0;
}

/* screen_table(keys): the capsule screen() reads, from ``keys``, the rules of each of the four
 * keys of ASCII text (no "_" and no digit, a digit, a "_", both): each a tuple of (triggers,
 * nocase, payload). */
static PyObject *textc_screen_table(PyObject *self, PyObject *keys) {
    if (!PyTuple_Check(keys) || PyTuple_GET_SIZE(keys) != 4) {
        PyErr_SetString(PyExc_TypeError, "screen_table: expected a tuple of 4 rule tuples");
        return NULL;
    }
    Py_ssize_t count = 0, size = 0;
    for (int k = 0; k < 4; k++) {
        PyObject *rules = PyTuple_GET_ITEM(keys, k);
        if (!PyTuple_Check(rules)) {
            PyErr_SetString(PyExc_TypeError, "screen_table: a key's rules must be a tuple");
            return NULL;
        }
        for (Py_ssize_t r = 0; r < PyTuple_GET_SIZE(rules); r++)
            if (screen_rule_arg(PyTuple_GET_ITEM(rules, r), &count, &size) < 0) return NULL;
    }
    ScreenTable *table = PyMem_Calloc(1, sizeof(ScreenTable));
    if (table == NULL) return PyErr_NoMemory();
    table->bytes = PyMem_Malloc(size > 0 ? (size_t)size : 1);
    if (table->bytes == NULL) {
        PyMem_Free(table);
        return PyErr_NoMemory();
    }
    char *bytes = table->bytes;
    for (int k = 0; k < 4; k++) {
        if (screen_key_fill(&table->key[k], PyTuple_GET_ITEM(keys, k), &bytes) < 0) {
            screen_table_free(table);
            return NULL;
        }
    }
    screen_pairs_fill(table);
    PyObject *capsule = PyCapsule_New(table, SCREEN_CAPSULE, screen_capsule_free);
    if (capsule == NULL) screen_table_free(table);
    return capsule;
}

/* Whether the nocase trigger t (m bytes) is at d (with m bytes left): d's bytes lower-cased
 * (A-Z only, as str.lower() of ASCII text) equal t's. */
static int screen_folded_at(const char *d, const char *t, Py_ssize_t m) {
    for (Py_ssize_t j = 0; j < m; j++)
        if (SCREEN_LOWER((unsigned char)d[j]) != (unsigned char)t[j]) return 0;
    return 1;
}

/* The rules of k (bits) with a trigger that starts at d[i] (of n bytes), beyond those of hit. */
static uint64_t screen_at(const ScreenKey *k, const char *d, Py_ssize_t i, Py_ssize_t n,
                          uint64_t hit) {
    unsigned char c = (unsigned char)d[i];
    for (int side = 0; side < 2; side++) {
        unsigned first = side ? SCREEN_LOWER(c) : c;
        for (uint16_t at = k->start[side][first]; at < k->start[side][first + 1]; at++) {
            const ScreenTrigger *t = &k->triggers[at];
            if (hit >> t->rule & 1 || t->size > n - i) continue;
            if (side ? screen_folded_at(d + i, t->bytes, t->size)
                     : memcmp(d + i, t->bytes, (size_t)t->size) == 0)
                hit |= (uint64_t)1 << t->rule;
        }
    }
    return hit;
}

#define SCREEN_SPOTS 64 /* places kept while the text's key is not yet known */

/* Whether the two bytes at d (the second may be the NUL after a str's data) start a trigger. */
static int screen_spot(const ScreenTable *table, const unsigned char *d) {
    unsigned pair = (unsigned)d[0] << 8 | d[1];
    return table->pairs[pair >> 6] >> (pair & 63) & 1;
}

/* screen(text, table): for ASCII text, the payloads (a tuple, in rule order) of the rules of
 * text's key in ``table`` (screen_table) of which a trigger occurs in text, or, for the
 * nocase ones, in text.lower(): redact._triggered_rules. One pass finds the key and the
 * places where a trigger may start (the first SCREEN_SPOTS of them; the rest are found again
 * once the key is known); only those are compared with the key's triggers. */
static PyObject *textc_screen(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    const char *text;
    Py_ssize_t n;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "screen(text, table)");
        return NULL;
    }
    if (ascii_arg(args[0], &text, &n) < 0) return NULL;
    ScreenTable *table = PyCapsule_GetPointer(args[1], SCREEN_CAPSULE);
    if (table == NULL) return NULL;
    const unsigned char *d = (const unsigned char *)text; /* d[n] is the str's NUL */
    Py_ssize_t spots[SCREEN_SPOTS], found = 0, rest = n;
    int underscore = 0, digit = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        underscore |= d[i] == '_';
        digit |= IS_DIGIT(d[i]);
        if (screen_spot(table, d + i)) {
            if (found < SCREEN_SPOTS)
                spots[found++] = i;
            else if (rest == n)
                rest = i;
        }
    }
    const ScreenKey *k = &table->key[underscore * 2 + digit];
    uint64_t hit = k->always;
    for (Py_ssize_t j = 0; j < found; j++) hit = screen_at(k, text, spots[j], n, hit);
    for (Py_ssize_t i = rest; i < n; i++)
        if (screen_spot(table, d + i)) hit = screen_at(k, text, i, n, hit);
    if (hit == 0) return PyTuple_New(0);
    int rules = 0;
    for (uint64_t h = hit; h; h &= h - 1) rules++;
    PyObject *out = PyTuple_New(rules);
    if (out == NULL) return NULL;
    for (Py_ssize_t r = 0, j = 0; r < k->rules; r++)
        if (hit >> r & 1) PyTuple_SET_ITEM(out, j++, Py_NewRef(k->payload[r]));
    return out;
}

/* Registers this block's functions in module ``m``: 0, or -1 with an error. */
static int add_screen(PyObject *m) {
    static PyMethodDef defs[] = {
        {"screen_table", textc_screen_table, METH_O, "The compiled table of screen."},
        {"screen", (PyCFunction)(void (*)(void))textc_screen, METH_FASTCALL,
         "redact._triggered_rules (ASCII)."},
        {NULL, NULL, 0, NULL},
    };
    return PyModule_AddFunctions(m, defs);
}

/* ---- validate30: a new memory's record from an add_many item (core.CueMap._build) ------- */

/* The layout new_record reads: (cls, fields, options, allowed, max_chars, expiry_free, now,
 * utc, types, note, member_type, default_namespace, derived, derive, template); template: a
 * dict of the fields (None each), in their order. */
enum {
    NB_CLS, NB_FIELDS, NB_OPTIONS, NB_ALLOWED, NB_MAX_CHARS, NB_EXPIRY_FREE, NB_NOW, NB_UTC,
    NB_TYPES, NB_NOTE, NB_MEMBER, NB_NAMESPACE, NB_DERIVED, NB_DERIVE, NB_TEMPLATE, NB_SIZE
};
/* the options, in the order of the layout's ``options`` */
enum {
    NO_CONTENT, NO_NAMESPACE, NO_CUES, NO_ID, NO_CREATED, NO_TYPE, NO_TAGS, NO_EXPIRES,
    NO_UPDATED, NO_SOURCE, NO_SUPERSEDES, NO_KEY, NO_METADATA, NO_SIZE
};
#define NB_FIELD_COUNT 18 /* records.RECORD_FIELDS */
/* the places of some fields in RECORD_FIELDS (the tests compare the records with _build's) */
enum { NF_CONTENT = 1, NF_CUES = 4, NF_TAGS = 5, NF_ACCESS_COUNT = 10, NF_METADATA = 16 };

/* Whether every byte of d[0:n] is one str.isspace() says is blank (ASCII: \t-\r, \x1c-\x20). */
static int nb_blank(const char *d, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)d[i];
        if (!((c >= 9 && c <= 13) || (c >= 28 && c <= 32))) return 0;
    }
    return 1;
}

/* Whether ``value`` is an id records.validate_memory_id returns as it is by its first check:
 * an exact str of 1-256 printable ASCII characters, not all blanks. */
static int nb_plain_id(PyObject *value) {
    if (!PyUnicode_CheckExact(value) || !PyUnicode_IS_ASCII(value)) return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(value);
    const char *d = (const char *)PyUnicode_1BYTE_DATA(value);
    if (n == 0 || n > 256) return 0;
    int blank = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (d[i] < 32 || d[i] > 126) return 0;
        blank &= d[i] == ' ';
    }
    return !blank;
}

/* Whether ``value`` is an exact datetime in ``utc`` (coerce_timestamp returns it as it is). */
static int nb_utc(PyObject *value, PyObject *utc) {
    return PyDateTime_CheckExact(value) &&
           ((PyDateTime_DateTime *)value)->hastzinfo &&
           ((PyDateTime_DateTime *)value)->tzinfo == utc;
}

/* Whether ``value`` is a dict records._flat_ascii passes (what json_safe_copy copies as is). */
static int nb_flat(PyObject *value) {
    PyObject *key, *item;
    Py_ssize_t at = 0;
    while (PyDict_Next(value, &at, &key, &item)) {
        if (!PyUnicode_CheckExact(key) || !PyUnicode_IS_ASCII(key)) return 0;
        if (item == Py_None || PyLong_CheckExact(item) || PyBool_Check(item)) continue;
        if (!PyUnicode_CheckExact(item) || !PyUnicode_IS_ASCII(item)) return 0;
    }
    return 1;
}

/* The item's options (borrowed; NULL when absent, or None where None means absent to _build:
 * not for content, namespace and type) if every key is allowed; -1 when one is not (the
 * general path names it), -1 with an error on failure. */
/* Whether every option name of ``names`` is in ``allowed``: 1, 0, or -1 with an error
 * (remembered for the last frozenset asked, which cannot change). */
static int nb_names_allowed(PyObject *names, PyObject *allowed) {
    static PyObject *last_names, *last_allowed;
    static int last;
    if (names == last_names && allowed == last_allowed) return last;
    int ok = 1;
    for (Py_ssize_t i = 0; ok == 1 && i < PyTuple_GET_SIZE(names); i++)
        ok = PySet_Contains(allowed, PyTuple_GET_ITEM(names, i));
    if (ok >= 0 && PyFrozenSet_CheckExact(allowed) && PyTuple_CheckExact(names)) {
        Py_XSETREF(last_names, Py_NewRef(names));
        Py_XSETREF(last_allowed, Py_NewRef(allowed));
        last = ok;
    }
    return ok;
}

/* nb_options for an item whose every key is one of the option names themselves (an item's
 * literal keys), all of them allowed: one pass over the item, where a lookup of each option
 * and a set test of each key were ~2,200 instructions a bench item. 1 when it is such an
 * item (``got`` filled, None not yet read as absent), 0 if not, -1 on error. */
static int nb_named_options(PyObject *item, PyObject *names, PyObject *allowed, PyObject **got) {
    PyObject *key, *value;
    Py_ssize_t at = 0;
    int ok = nb_names_allowed(names, allowed);
    if (ok <= 0) return ok;
    for (int i = 0; i < NO_SIZE; i++) got[i] = NULL;
    while (PyDict_Next(item, &at, &key, &value)) {
        int i = 0;
        while (i < NO_SIZE && PyTuple_GET_ITEM(names, i) != key) i++;
        if (i == NO_SIZE) return 0;
        got[i] = value;
    }
    return 1;
}

static int nb_options(PyObject *item, PyObject *layout, PyObject **got) {
    PyObject *allowed = PyTuple_GET_ITEM(layout, NB_ALLOWED), *key, *value;
    PyObject *names = PyTuple_GET_ITEM(layout, NB_OPTIONS);
    Py_ssize_t at = 0;
    int named = nb_named_options(item, names, allowed, got);
    if (named < 0) return -1;
    for (int i = 0; named && i < NO_SIZE; i++) {
        int none_is_absent = i != NO_CONTENT && i != NO_NAMESPACE && i != NO_TYPE;
        if (got[i] == Py_None && none_is_absent) got[i] = NULL;
    }
    if (named) return 0;
    while (PyDict_Next(item, &at, &key, &value)) {
        int known = PySet_Contains(allowed, key);
        if (known <= 0) return -1;
    }
    for (int i = 0; i < NO_SIZE; i++) {
        PyObject *v = PyDict_GetItemWithError(item, PyTuple_GET_ITEM(names, i));
        if (v == NULL && PyErr_Occurred()) return -1;
        int none_is_absent = i != NO_CONTENT && i != NO_NAMESPACE && i != NO_TYPE;
        got[i] = v == Py_None && none_is_absent ? NULL : v;
    }
    return 0;
}

/* The fields of a new memory from its options, in ``values`` (borrowed references, the cues
 * left out); 0, or -1 when the general path must build it (it raises, or takes a case this
 * does not: a namespace, cues or tags given, no id, a timestamp or type to coerce, an
 * expiry from ttl_days, metadata to walk). */
static int nb_values(PyObject **o, PyObject *layout, PyObject **values) {
    PyObject *content = o[NO_CONTENT], *utc = PyTuple_GET_ITEM(layout, NB_UTC);
    if (content == NULL || !PyUnicode_CheckExact(content) || !PyUnicode_IS_ASCII(content))
        return -1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(content);
    const char *d = (const char *)PyUnicode_1BYTE_DATA(content);
    Py_ssize_t max_chars = PyLong_AsSsize_t(PyTuple_GET_ITEM(layout, NB_MAX_CHARS));
    if (max_chars < 0 && PyErr_Occurred()) PyErr_Clear();
    if (n == 0 || n > max_chars || nb_blank(d, n) || memchr(d, 0, (size_t)n) != NULL) return -1;
    PyObject *namespace =
        o[NO_NAMESPACE] == NULL ? PyTuple_GET_ITEM(layout, NB_NAMESPACE) : o[NO_NAMESPACE];
    if (namespace != PyTuple_GET_ITEM(layout, NB_NAMESPACE) && !nb_plain_id(namespace)) return -1;
    if (o[NO_CUES] != NULL || o[NO_TAGS] != NULL) return -1;
    if (o[NO_ID] == NULL || !nb_plain_id(o[NO_ID])) return -1;
    PyObject *created = o[NO_CREATED] == NULL ? PyTuple_GET_ITEM(layout, NB_NOW) : o[NO_CREATED];
    if (!nb_utc(created, utc)) return -1;
    PyObject *kind = o[NO_TYPE];
    if (kind == NULL) {
        kind = PyTuple_GET_ITEM(layout, NB_NOTE);
    } else if (!Py_IS_TYPE(kind, (PyTypeObject *)PyTuple_GET_ITEM(layout, NB_MEMBER)) &&
               PyUnicode_CheckExact(kind)) { /* a member is its own value */
        kind = PyDict_GetItemWithError(PyTuple_GET_ITEM(layout, NB_TYPES), kind);
        if (kind == NULL) {
            PyErr_Clear();
            return -1;
        }
    } else if (!Py_IS_TYPE(kind, (PyTypeObject *)PyTuple_GET_ITEM(layout, NB_MEMBER))) {
        return -1;
    }
    PyObject *expires = o[NO_EXPIRES];
    if (expires == NULL ? !PyObject_IsTrue(PyTuple_GET_ITEM(layout, NB_EXPIRY_FREE))
                        : !nb_utc(expires, utc))
        return -1;
    PyObject *updated = o[NO_UPDATED] == NULL ? created : o[NO_UPDATED];
    if (!nb_utc(updated, utc)) return -1;
    PyObject *source = o[NO_SOURCE];
    if (source != NULL && (!PyUnicode_CheckExact(source) || !PyUnicode_IS_ASCII(source)))
        return -1;
    if ((o[NO_SUPERSEDES] != NULL && !nb_plain_id(o[NO_SUPERSEDES])) ||
        (o[NO_KEY] != NULL && !nb_plain_id(o[NO_KEY])))
        return -1;
    PyObject *metadata = o[NO_METADATA];
    if (metadata != NULL && (!PyDict_CheckExact(metadata) || !nb_flat(metadata))) return -1;
    PyObject *fields[NB_FIELD_COUNT] = {
        o[NO_ID], content, created, updated, NULL /* cues */, NULL /* tags: () */, kind,
        source, namespace, NULL, NULL /* access_count: 0 */, expires, o[NO_SUPERSEDES],
        NULL, NULL, o[NO_KEY], metadata, PyTuple_GET_ITEM(layout, NB_DERIVED)};
    memcpy(values, fields, sizeof(fields));
    return 0;
}


/* The value of field ``i`` (not the cues) from nb_values' ``v`` (a new reference): () for
 * tags, 0 for access_count, a copy of the metadata (a new {} without), None for an unset
 * field. */
static PyObject *nb_field(int i, PyObject **v) {
    switch (i) {
    case NF_TAGS: return PyTuple_New(0);
    case NF_ACCESS_COUNT: return PyLong_FromLong(0);
    case NF_METADATA: return v[i] == NULL ? PyDict_New() : PyDict_Copy(v[i]);
    default: return Py_NewRef(v[i] == NULL ? Py_None : v[i]);
    }
}

/* new_record(item, layout): core.CueMap._build(item, ...) for the usual add_many item (a dict
 * with an id and no cues, namespace nor tags... see nb_values), its cues from layout's
 * ``derive`` (TextMemo.derived_cues); None for any other item (the general path builds it,
 * or raises). */
static PyObject *textc_new_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *layout = nargs == 2 ? args[1] : NULL;
    if (nargs != 2 || !PyDict_CheckExact(args[0]) || !PyTuple_CheckExact(layout) ||
        PyTuple_GET_SIZE(layout) != NB_SIZE || !PyType_Check(PyTuple_GET_ITEM(layout, NB_CLS)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(layout, NB_FIELDS)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(layout, NB_FIELDS)) != NB_FIELD_COUNT ||
        !PyTuple_Check(PyTuple_GET_ITEM(layout, NB_OPTIONS)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(layout, NB_OPTIONS)) != NO_SIZE ||
        !PyAnySet_Check(PyTuple_GET_ITEM(layout, NB_ALLOWED)) ||
        !PyDict_Check(PyTuple_GET_ITEM(layout, NB_TYPES)) ||
        !PyType_Check(PyTuple_GET_ITEM(layout, NB_MEMBER)) ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(layout, NB_TEMPLATE)) ||
        PyDict_GET_SIZE(PyTuple_GET_ITEM(layout, NB_TEMPLATE)) != NB_FIELD_COUNT) {
        PyErr_SetString(PyExc_TypeError, "new_record(item: dict, layout): see core._layout");
        return NULL;
    }
    if (PyDateTimeAPI == NULL) {
        PyDateTime_IMPORT;
        if (PyDateTimeAPI == NULL) return NULL;
    }
    PyObject *o[NO_SIZE], *v[NB_FIELD_COUNT];
    if (nb_options(args[0], layout, o) < 0 || nb_values(o, layout, v) < 0) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    /* the fields first, so that the dict holds the item's values while derive runs Python
     * code; then the cues in their place. The dict is a copy of the template (every field at
     * its default, in order: its keys copied at their final size) with each field that is not
     * the template's value set in place: grown from empty, the dict was resized twice on the
     * way to its 18 fields, and half of them are the defaults (None, (), 0, note, "default"):
     * ~9,000 instructions of item stores a bench memory, ~2,200 so */
    PyObject *template = PyTuple_GET_ITEM(layout, NB_TEMPLATE), *name, *preset;
    PyObject *values = PyDict_Copy(template), *names = PyTuple_GET_ITEM(layout, NB_FIELDS);
    Py_ssize_t at = 0;
    for (int i = 0; values != NULL && i < NB_FIELD_COUNT; i++) {
        if (!PyDict_Next(template, &at, &name, &preset) || name != PyTuple_GET_ITEM(names, i))
            preset = NULL; /* (not the fields in order: each is set) */
        if (i == NF_CUES) continue; /* set once derived */
        PyObject *value = nb_field(i, v);
        if (value == NULL ||
            (value != preset && PyDict_SetItem(values, PyTuple_GET_ITEM(names, i), value) < 0))
            Py_CLEAR(values);
        Py_XDECREF(value);
    }
    if (values == NULL) return NULL;
    /* the item's content, which the dict holds */
    PyObject *cues = PyObject_CallOneArg(PyTuple_GET_ITEM(layout, NB_DERIVE), v[NF_CONTENT]);
    if (cues == NULL || PyDict_SetItem(values, PyTuple_GET_ITEM(names, NF_CUES), cues) < 0) {
        Py_XDECREF(cues);
        Py_DECREF(values);
        return NULL;
    }
    Py_DECREF(cues);
    return record_with_dict((PyTypeObject *)PyTuple_GET_ITEM(layout, NB_CLS), values);
}

/* Registers this block's function in module ``m``: 0, or -1 with an error. */
static int add_new_record(PyObject *m) {
    static PyMethodDef defs[] = {
        {"new_record", (PyCFunction)(void (*)(void))textc_new_record, METH_FASTCALL,
         "core.CueMap._build of the usual add_many item."},
        {NULL, NULL, 0, NULL},
    };
    return PyModule_AddFunctions(m, defs);
}

/* ---- ing35: a batch's records, each answered in C (the functions below) ---------------- */

/* names[i] = the interned text[i], once (a function's attribute names): 0, or -1 with an error. */
static int interned_once(PyObject **names, const char *const *text, int count) {
    for (int i = 0; names[count - 1] == NULL && i < count; i++)
        if (names[i] == NULL && (names[i] = PyUnicode_InternFromString(text[i])) == NULL)
            return -1;
    return 0;
}

/* What a batch function answers for one record (a, its item of the second list b): a new
 * reference, or NULL with an error. */
typedef PyObject *(*PairAnswer)(PyObject *a, PyObject *b, PyObject *const *args,
                                PyObject *const *names);

/* The list of ``answer`` of each a[i], b[i] of the lists a and b (of one length: checked by
 * the caller); each item is held while Python code (an attribute, an __eq__, a callback)
 * runs, and a list that changes size meanwhile is an error. */
static PyObject *answers_of(const char *name, PyObject *a, PyObject *b, PairAnswer answer,
                            PyObject *const *args, PyObject *const *names) {
    Py_ssize_t n = PyList_GET_SIZE(a);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        if (i >= PyList_GET_SIZE(a) || i >= PyList_GET_SIZE(b)) {
            PyErr_Format(PyExc_RuntimeError, "%s: a list changed size", name);
            Py_CLEAR(out);
            break;
        }
        PyObject *x = Py_NewRef(PyList_GET_ITEM(a, i)), *y = Py_NewRef(PyList_GET_ITEM(b, i));
        PyObject *value = answer(x, y, args, names);
        Py_DECREF(x);
        Py_DECREF(y);
        if (value == NULL) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, value);
    }
    return out;
}

/* A bool answer (1 or 0) as a new reference; NULL for -1 (an error). */
static PyObject *bool_answer(int answer) {
    return answer < 0 ? NULL : Py_NewRef(answer ? Py_True : Py_False);
}

/* ---- ing35: a bulk batch's plainly clean records (redact._py_plainly_clean_records) ------ */

/* Whether ``metadata`` (a non-empty dict) is one redact._plainly_clean passes at once: an
 * exact dict of exact str keys in ``clean_keys`` to values whose type is in ``scalars``
 * (bool, int, None: no screen, no finiteness check); 0 for any other (the caller asks the
 * Python function), -1 on error. No Python code runs (str keys, types compared by identity). */
static int pc_plain_metadata(PyObject *metadata, PyObject *clean_keys, PyObject *scalars) {
    PyObject *key, *value;
    Py_ssize_t at = 0;
    if (!PyDict_CheckExact(metadata)) return 0;
    while (PyDict_Next(metadata, &at, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) return 0;
        int clean = PySet_Contains(clean_keys, key);
        if (clean <= 0) return clean;
        int scalar = 0;
        for (Py_ssize_t i = 0; !scalar && i < PyTuple_GET_SIZE(scalars); i++)
            scalar = (PyObject *)Py_TYPE(value) == PyTuple_GET_ITEM(scalars, i);
        if (!scalar) return 0;
    }
    return 1;
}

/* redact._py_plainly_clean_records' answer for one record (``secret``: its content's screen
 * said it may hold one): 1, 0, or -1 with an error. The same reads in the same order, each
 * condition only when the ones before it hold. */
static int pc_check(PyObject *record, PyObject *secret, PyObject *const *args,
                    PyObject *const *names) {
    PyObject *value = PyObject_GetAttr(record, names[0]); /* cue_origin */
    PyObject *same = value == NULL ? NULL : PyObject_RichCompare(value, names[3], Py_EQ);
    int ok = same == NULL ? -1 : PyObject_IsTrue(same); /* ==, no identity shortcut */
    Py_XDECREF(same);
    Py_XDECREF(value);
    if (ok <= 0) return ok;
    if ((value = PyObject_GetAttr(record, names[1])) == NULL) return -1; /* tags */
    ok = PyObject_Not(value);
    Py_DECREF(value);
    if (ok <= 0) return ok;
    if ((ok = PyObject_Not(secret)) <= 0) return ok;
    if ((value = PyObject_GetAttr(record, names[2])) == NULL) return -1; /* metadata */
    ok = PyObject_Not(value);
    if (ok == 0 && (ok = pc_plain_metadata(value, args[2], args[3])) == 0) {
        PyObject *clean = PyObject_CallOneArg(args[4], value);
        ok = clean == NULL ? -1 : PyObject_IsTrue(clean);
        Py_XDECREF(clean);
    }
    Py_DECREF(value);
    return ok;
}

static PyObject *pc_answer(PyObject *record, PyObject *secret, PyObject *const *args,
                           PyObject *const *names) {
    return bool_answer(pc_check(record, secret, args, names));
}

/* plainly_clean(records, held, clean_keys, scalars, metadata_clean):
 * redact._py_plainly_clean_records(records, held), the list of each record's answer:
 * ``cue_origin == "derived" and not tags and not held[i] and (not metadata or
 * metadata_clean(metadata))``, the metadata of a bench memory ({"i": n}) found clean here
 * (see pc_plain_metadata), any other asking ``metadata_clean`` (redact._plainly_clean). */
static PyObject *textc_plainly_clean(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    static PyObject *names[4];
    static const char *const text[4] = {"cue_origin", "tags", "metadata", "derived"};
    if (interned_once(names, text, 4) < 0) return NULL;
    if (nargs != 5 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) ||
        PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1]) || !PyAnySet_Check(args[2]) ||
        !PyTuple_CheckExact(args[3])) {
        PyErr_SetString(PyExc_TypeError, "plainly_clean(records: list, held: list of the same "
                                         "length, clean_keys: set, scalars: tuple, metadata_clean)");
        return NULL;
    }
    return answers_of("plainly_clean", args[0], args[1], pc_answer, args, names);
}

/* ---- ing35: a bulk batch's index cues (textkeys.TextMemo._py_index_cues_of) ------------- */

/* Whether ``record``'s cues (in *cues, a new reference, once read) are its own derived ones,
 * to be indexed as they are (1), or must be expanded (0); -1 on error. In the Python's order:
 * its key's aliases are empty, its cues are the very object the memo derived from its content
 * (None if it derived none), and ``terms.isdisjoint(cues)``. */
static int ic_own(PyObject *record, PyObject *key, PyObject *const *args, PyObject *const *names,
                  PyObject **cues) {
    PyObject *aliases = Py_IS_TYPE(key, (PyTypeObject *)args[4]) && PyTuple_GET_SIZE(key) > 1
                            ? Py_NewRef(PyTuple_GET_ITEM(key, 1)) /* TextKeys.aliases */
                            : PyObject_GetAttr(key, names[0]);
    int ok = aliases == NULL ? -1 : PyObject_Not(aliases);
    Py_XDECREF(aliases);
    if (ok <= 0) return ok;
    if ((*cues = PyObject_GetAttr(record, names[1])) == NULL) return -1;
    PyObject *content = PyObject_GetAttr(record, names[2]);
    PyObject *derived = content == NULL ? NULL : PyDict_GetItemWithError(args[2], content);
    Py_XDECREF(content);
    if (derived == NULL && PyErr_Occurred()) return -1;
    if (*cues != (derived == NULL ? Py_None : derived)) return 0;
    if (!PyTuple_CheckExact(*cues)) { /* (not the memo's tuples): the method itself */
        PyObject *name = PyUnicode_InternFromString("isdisjoint"); /* (not CallMethod's "O":
                                                                    it unpacks a tuple) */
        PyObject *disjoint = name == NULL ? NULL : PyObject_CallMethodOneArg(args[3], name, *cues);
        Py_XDECREF(name);
        ok = disjoint == NULL ? -1 : PyObject_IsTrue(disjoint);
        Py_XDECREF(disjoint);
        return ok;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(*cues); i++) { /* terms.isdisjoint(cues) */
        int held = PySet_Contains(args[3], PyTuple_GET_ITEM(*cues, i));
        if (held != 0) return held < 0 ? -1 : 0;
    }
    return 1;
}

static PyObject *ic_answer(PyObject *record, PyObject *key, PyObject *const *args,
                           PyObject *const *names) {
    PyObject *cues = NULL;
    int own = ic_own(record, key, args, names, &cues);
    if (own > 0) return cues;
    Py_XDECREF(cues);
    return own < 0 ? NULL : PyObject_CallFunctionObjArgs(args[5], record, key, NULL);
}

/* index_cues_of(records, keys, derived, terms, keys_type, expand): textkeys.TextMemo.
 * _py_index_cues_of's list: each record's own cues where ic_own says so, else
 * ``expand(record, key)`` (index_cues with the store's aliases). ``derived``: the memo's dict
 * of derived cues; ``terms``: the alias table's terms; ``keys_type``: TextKeys. */
static PyObject *textc_index_cues_of(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    static PyObject *names[3];
    static const char *const text[3] = {"aliases", "cues", "content"};
    if (interned_once(names, text, 3) < 0) return NULL;
    if (nargs != 6 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) ||
        PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1]) || !PyDict_CheckExact(args[2]) ||
        !PyAnySet_Check(args[3]) || !PyType_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "index_cues_of(records: list, keys: list of the same "
                                         "length, derived: dict, terms: set, keys_type, expand)");
        return NULL;
    }
    return answers_of("index_cues_of", args[0], args[1], ic_answer, args, names);
}

/* ---- ing35: content digests (lifecycle._py_content_digests): BLAKE2b-128 (RFC 7693) ---- */

static const uint64_t B2_IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};
/* the message schedule of rounds 0-9 (rounds 10 and 11 take rows 0 and 1 again) */
static const uint8_t B2_SIGMA[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
};

/* A BLAKE2b state: the chain, the bytes compressed so far, the pending block. */
typedef struct {
    uint64_t h[8];
    uint64_t t;
    uint8_t block[128];
    size_t filled;
} Blake2b;

static uint64_t b2_rotr(uint64_t x, int n) { return x >> n | x << (64 - n); }

static uint64_t b2_load(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t x;
    memcpy(&x, p, sizeof(x)); /* the words are little-endian: as they are */
#else
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) x = x << 8 | p[i];
#endif
    return x;
}

#define B2_G(a, b, c, d, x, y)                                                                   \
    do {                                                                                         \
        v[a] = v[a] + v[b] + (x);                                                                \
        v[d] = b2_rotr(v[d] ^ v[a], 32);                                                         \
        v[c] = v[c] + v[d];                                                                      \
        v[b] = b2_rotr(v[b] ^ v[c], 24);                                                         \
        v[a] = v[a] + v[b] + (y);                                                                \
        v[d] = b2_rotr(v[d] ^ v[a], 16);                                                         \
        v[c] = v[c] + v[d];                                                                      \
        v[b] = b2_rotr(v[b] ^ v[c], 63);                                                         \
    } while (0)

/* Compress the state's block (``last``: the final one; t counts its bytes already). */
static void b2_compress(Blake2b *s, int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = b2_load(s->block + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = s->h[i];
        v[i + 8] = B2_IV[i];
    }
    v[12] ^= s->t; /* (the counter's high word stays 0: a text under 2**64 bytes) */
    if (last) v[14] = ~v[14];
    /* the rounds written out, so that each message word's index is a constant (a loop over
     * the rounds loaded them from the table: twice hashlib's instructions) */
#define B2_ROUND(r)                                                                              \
    do {                                                                                         \
        B2_G(0, 4, 8, 12, m[B2_SIGMA[(r) % 10][0]], m[B2_SIGMA[(r) % 10][1]]);                                 \
        B2_G(1, 5, 9, 13, m[B2_SIGMA[(r) % 10][2]], m[B2_SIGMA[(r) % 10][3]]);                                 \
        B2_G(2, 6, 10, 14, m[B2_SIGMA[(r) % 10][4]], m[B2_SIGMA[(r) % 10][5]]);                                \
        B2_G(3, 7, 11, 15, m[B2_SIGMA[(r) % 10][6]], m[B2_SIGMA[(r) % 10][7]]);                                \
        B2_G(0, 5, 10, 15, m[B2_SIGMA[(r) % 10][8]], m[B2_SIGMA[(r) % 10][9]]);                                \
        B2_G(1, 6, 11, 12, m[B2_SIGMA[(r) % 10][10]], m[B2_SIGMA[(r) % 10][11]]);                              \
        B2_G(2, 7, 8, 13, m[B2_SIGMA[(r) % 10][12]], m[B2_SIGMA[(r) % 10][13]]);                               \
        B2_G(3, 4, 9, 14, m[B2_SIGMA[(r) % 10][14]], m[B2_SIGMA[(r) % 10][15]]);                               \
    } while (0)
    B2_ROUND(0);
    B2_ROUND(1);
    B2_ROUND(2);
    B2_ROUND(3);
    B2_ROUND(4);
    B2_ROUND(5);
    B2_ROUND(6);
    B2_ROUND(7);
    B2_ROUND(8);
    B2_ROUND(9);
    B2_ROUND(10);
    B2_ROUND(11);
#undef B2_ROUND
    for (int i = 0; i < 8; i++) s->h[i] ^= v[i] ^ v[i + 8];
}

/* A state for a digest of ``size`` bytes (no key, salt nor personalization: hashlib's
 * blake2b(digest_size=size)). */
static void b2_init(Blake2b *s, int size) {
    memcpy(s->h, B2_IV, sizeof(s->h));
    s->h[0] ^= 0x01010000ULL ^ (uint64_t)size;
    s->t = 0;
    s->filled = 0;
}

static void b2_update(Blake2b *s, const uint8_t *data, size_t n) {
    while (n > 0) {
        if (s->filled == sizeof(s->block)) { /* a full block with more to come: not the last */
            s->t += sizeof(s->block);
            b2_compress(s, 0);
            s->filled = 0;
        }
        size_t take = sizeof(s->block) - s->filled;
        if (take > n) take = n;
        memcpy(s->block + s->filled, data, take);
        s->filled += take;
        data += take;
        n -= take;
    }
}

/* The digest's ``size`` bytes (little-endian words of the chain) into out. */
static void b2_final(Blake2b *s, uint8_t *out, int size) {
    s->t += s->filled;
    memset(s->block + s->filled, 0, sizeof(s->block) - s->filled);
    b2_compress(s, 1);
    for (int i = 0; i < size; i++) out[i] = (uint8_t)(s->h[i / 8] >> (8 * (i % 8)));
}

#define DIGEST_SIZE 16 /* lifecycle.content_digests' digest_size */

/* The digest of ``namespace`` "\x00" ``text`` (exact str), UTF-8 with lone surrogates passed
 * (a new bytes object), or NULL with an error. */
static PyObject *content_digest_of(PyObject *namespace, PyObject *text) {
    Blake2b s;
    uint8_t out[DIGEST_SIZE];
    b2_init(&s, DIGEST_SIZE);
    if (PyUnicode_IS_ASCII(namespace) && PyUnicode_IS_ASCII(text)) { /* the bytes are the chars */
        b2_update(&s, PyUnicode_1BYTE_DATA(namespace), (size_t)PyUnicode_GET_LENGTH(namespace));
        b2_update(&s, (const uint8_t *)"", 1);
        b2_update(&s, PyUnicode_1BYTE_DATA(text), (size_t)PyUnicode_GET_LENGTH(text));
    } else {
        PyObject *bytes[2] = {
            PyUnicode_AsEncodedString(namespace, "utf-8", "surrogatepass"),
            PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass")};
        if (bytes[0] != NULL && bytes[1] != NULL) {
            b2_update(&s, (const uint8_t *)PyBytes_AS_STRING(bytes[0]), (size_t)PyBytes_GET_SIZE(bytes[0]));
            b2_update(&s, (const uint8_t *)"", 1);
            b2_update(&s, (const uint8_t *)PyBytes_AS_STRING(bytes[1]), (size_t)PyBytes_GET_SIZE(bytes[1]));
        }
        int failed = bytes[0] == NULL || bytes[1] == NULL;
        Py_XDECREF(bytes[0]);
        Py_XDECREF(bytes[1]);
        if (failed) return NULL;
    }
    b2_final(&s, out, DIGEST_SIZE);
    return PyBytes_FromStringAndSize((const char *)out, DIGEST_SIZE);
}

/* content_digests(namespaces, texts, reference): lifecycle._py_content_digests, the list of
 * each pair's 16-byte BLAKE2b digest of its UTF-8 ``namespace + "\x00" + text`` (the bytes
 * hashed here: hashlib's object, the joined string and its encoding were ~6,000 of the
 * ~9,500 instructions a bench memory); lists of the same length of str (any other input: the
 * Python ``reference``, which raises what it raises). */
static PyObject *textc_content_digests(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "content_digests(namespaces, texts, reference)");
        return NULL;
    }
    int plain = PyList_CheckExact(args[0]) && PyList_CheckExact(args[1]) &&
                PyList_GET_SIZE(args[0]) == PyList_GET_SIZE(args[1]);
    for (Py_ssize_t i = 0; plain && i < PyList_GET_SIZE(args[0]); i++)
        plain = PyUnicode_CheckExact(PyList_GET_ITEM(args[0], i)) &&
                PyUnicode_CheckExact(PyList_GET_ITEM(args[1], i)); /* (a str subclass's own
                                                                     __format__: the Python's) */
    if (!plain) return PyObject_CallFunctionObjArgs(args[2], args[0], args[1], NULL);
    Py_ssize_t n = PyList_GET_SIZE(args[0]);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *digest = content_digest_of(PyList_GET_ITEM(args[0], i), PyList_GET_ITEM(args[1], i));
        if (digest == NULL) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, digest);
    }
    return out;
}

/* ---- ing35: which records of a batch are transcript turns (threads._py_turns) ---------- */

/* threads._py_turns' answer for one record: 1, 0, or -1 with an error. */
static int turn_of(PyObject *record, PyObject *const *args, PyObject *const *names) {
    PyObject *kind = PyObject_GetAttr(record, names[0]); /* type */
    if (kind == NULL) return -1;
    Py_DECREF(kind); /* (compared by identity only) */
    if (kind != args[1]) return 0;
    PyObject *metadata = PyObject_GetAttr(record, names[1]);
    if (metadata == NULL) return -1;
    int found = 0;
    if (PyDict_CheckExact(metadata)) { /* keys().isdisjoint(keys): each key looked up in turn */
        for (Py_ssize_t i = 0; !found && i < PyTuple_GET_SIZE(args[2]); i++)
            found = PyDict_Contains(metadata, PyTuple_GET_ITEM(args[2], i));
    } else { /* another mapping: its own keys() */
        PyObject *view = PyObject_CallMethod(metadata, "keys", NULL);
        PyObject *name = view == NULL ? NULL : PyUnicode_InternFromString("isdisjoint");
        PyObject *disjoint = name == NULL ? NULL : PyObject_CallMethodOneArg(view, name, args[2]);
        Py_XDECREF(name);
        found = disjoint == NULL ? -1 : PyObject_Not(disjoint);
        Py_XDECREF(disjoint);
        Py_XDECREF(view);
    }
    Py_DECREF(metadata);
    if (found <= 0) return found;
    PyObject *thread = PyObject_CallOneArg(args[3], record);
    if (thread == NULL) return -1;
    Py_DECREF(thread);
    return thread != Py_None;
}

static PyObject *turn_answer(PyObject *record, PyObject *same, PyObject *const *args,
                             PyObject *const *names) {
    return bool_answer(turn_of(record, args, names));
}

/* turns(records, event, keys, thread_of): threads._py_turns(records), the list of each
 * record's ``type is event and not metadata.keys().isdisjoint(keys) and thread_of(record) is
 * not None`` (``keys``: threads._THREAD_KEYS), without a comprehension step, a keys view and
 * a method call per record (bulk ingest asks it of every memory). */
static PyObject *textc_turns(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    static PyObject *names[2];
    static const char *const text[2] = {"type", "metadata"};
    if (interned_once(names, text, 2) < 0) return NULL;
    if (nargs != 4 || !PyList_CheckExact(args[0]) || !PyTuple_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "turns(records: list, event, keys: tuple, thread_of)");
        return NULL;
    }
    return answers_of("turns", args[0], args[0], turn_answer, args, names);
}

/* ---------------------------------------------------------------------------------------- */
/* A rehashed table's slots: keytables._place                                                */
/* ---------------------------------------------------------------------------------------- */

/* place(slots, seqs, hashes): keytables._place, put each of ``seqs`` (a list of distinct keys'
 * seqs) in the first -1 (_EMPTY) slot of ``slots`` (an array "i" or "q" a power of two long)
 * from its hash in ``hashes`` (a list of ints, taken modulo 2**64 as Python's ``&`` takes
 * them) on, without comparing keys: SeqOf's and SeqsByDigest's rehash. */
static PyObject *textc_place(PyObject *self, PyObject *args) {
    PyObject *slots, *seqs, *hashes;
    if (!PyArg_ParseTuple(args, "OO!O!:place", &slots, &PyList_Type, &seqs, &PyList_Type,
                          &hashes))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(seqs);
    if (PyList_GET_SIZE(hashes) != n) {
        PyErr_SetString(PyExc_ValueError, "place: a hash for each seq");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(slots, &view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) return NULL;
    Py_ssize_t size = view.itemsize > 0 ? view.len / view.itemsize : 0;
    int wide = view.format != NULL && strcmp(view.format, "q") == 0 && view.itemsize == 8;
    int narrow = view.format != NULL && strcmp(view.format, "i") == 0 && view.itemsize == 4;
    if ((!wide && !narrow) || size == 0 || (size & (size - 1)) != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError,
                        "place: slots must be an array \"i\" or \"q\" of a power of two "
                        "slots");
        return NULL;
    }
    int32_t *small = (int32_t *)view.buf;
    int64_t *large = (int64_t *)view.buf;
    uint64_t mask = (uint64_t)size - 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        long long seq = PyLong_AsLongLong(PyList_GET_ITEM(seqs, i));
        if (seq == -1 && PyErr_Occurred()) break;
        if (narrow && (seq < INT32_MIN || seq > INT32_MAX)) {
            PyErr_SetString(PyExc_OverflowError, "place: a seq past the slots' typecode");
            break;
        }
        PyObject *hash = PyList_GET_ITEM(hashes, i);
        if (!PyLong_Check(hash)) {
            PyErr_SetString(PyExc_TypeError, "place: hashes must be ints");
            break;
        }
        uint64_t at = (uint64_t)PyLong_AsUnsignedLongLongMask(hash) & mask;
        if (PyErr_Occurred()) break;
        Py_ssize_t probes = 0; /* a full table has no slot to find: an error, not a hang */
        while ((wide ? large[at] : small[at]) != -1 && ++probes < size) at = (at + 1) & mask;
        if (probes == size) {
            PyErr_SetString(PyExc_ValueError, "place: no empty slot left");
            break;
        }
        if (wide)
            large[at] = (int64_t)seq;
        else
            small[at] = (int32_t)seq;
    }
    PyBuffer_Release(&view);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"porter", textc_porter, METH_O, "text._porter of a word."},
    {"drop_apostrophes", textc_drop_apostrophes, METH_O, "text._drop_apostrophes (ASCII)."},
    {"latin_tokens", textc_latin_tokens, METH_O, "text._latin_tokens (ASCII)."},
    {"normalize", textc_normalize, METH_O, "text.normalize (ASCII)."},
    {"stems_terms", textc_stems_terms, METH_VARARGS, "text.stems_and_terms from tokens."},
    {"salient", textc_salient, METH_VARARGS, "text._salient_cues from tokens."},
    {"name_cues", textc_name_cues, METH_VARARGS, "The cues of text._ascii_name_runs."},
    {"identifier_cues", textc_identifier_cues, METH_VARARGS, "text._identifier_cues from tokens."},
    {"first_valid", textc_first_valid, METH_VARARGS, "text._first_valid."},
    {"quoted_cues", textc_quoted_cues, METH_VARARGS, "text._quoted_cues (ASCII)."},
    {"derive_keys", textc_derive_keys, METH_VARARGS, "text.derive_cues_and_keys (ASCII)."},
    {"derive_plain", (PyCFunction)(void (*)(void))textc_derive_plain, METH_FASTCALL,
     "derive_keys of plain ASCII content."},
    {"memo_derived", (PyCFunction)(void (*)(void))textc_memo_derived, METH_FASTCALL,
     "textkeys.TextMemo.derived_cues of plain ASCII content."},
    {"pack_cues", (PyCFunction)(void (*)(void))textc_pack_cues, METH_FASTCALL,
     "recordtable._packed_cues."},
    {"flush_postings", textc_flush_postings, METH_VARARGS, "index.NamespaceIndex.flush's postings."},
    {"id_slot", textc_id_slot, METH_VARARGS, "keytables._id_slot."},
    {"digest_slot", textc_digest_slot, METH_VARARGS, "keytables._digest_slot."},
    {"digests_place", textc_digests_place, METH_VARARGS, "SeqsByDigest.add_many's step."},
    {"ids_place", textc_ids_place, METH_VARARGS, "SeqOf.set_many's step."},
    {"record_rows", textc_record_rows, METH_VARARGS, "store._py_record_rows."},
    {"insert_groups", textc_insert_groups, METH_VARARGS, "store._py_insert_groups."},
    {"packed_row", (PyCFunction)(void (*)(void))textc_packed_row, METH_FASTCALL,
     "recordtable._py_packed_row."},
    {"firsts", textc_firsts, METH_VARARGS, "ranking._py_firsts."},
    {"members", textc_members, METH_O, "ranking._py_members."},
    {"lend", textc_lend, METH_VARARGS, "core._py_lend."},
    {"single_concepts", textc_single_concepts, METH_VARARGS, "ranking._py_single_concepts."},
    {"lent_carried", textc_lent_carried, METH_VARARGS, "core._py_lent_carried."},
    {"carried_parts", textc_carried_parts, METH_VARARGS, "ranking._py_carried_parts."},
    {"carried_lists", textc_carried_lists, METH_VARARGS, "topk._py_carried_lists."},
    {"describe_lists", textc_describe_lists, METH_VARARGS, "kernel._py_describe's packing."},
    {"spread_evidence", textc_spread_evidence, METH_VARARGS, "arrays._py_spread_evidence."},
    {"rest_bounds", textc_rest_bounds, METH_VARARGS, "topk._py_rest_bounds."},
    {"buffer_address", textc_buffer_address, METH_O, "kernel._py_data of a contiguous buffer."},
    {"holding", textc_holding, METH_VARARGS, "postings._py_holding."},
    {"unpacked_cues", textc_unpacked_cues, METH_VARARGS, "recordtable._py_unpacked_cues."},
    {"alone", textc_alone, METH_O, "ranking._py_alone."},
    {"shared_positions", textc_shared_positions, METH_O, "ranking._py_shared_positions."},
    {"place", textc_place, METH_VARARGS, "keytables._place."},
    {"plainly_clean", (PyCFunction)(void (*)(void))textc_plainly_clean, METH_FASTCALL,
     "redact._py_plainly_clean_records."},
    {"index_cues_of", (PyCFunction)(void (*)(void))textc_index_cues_of, METH_FASTCALL,
     "textkeys.TextMemo._py_index_cues_of."},
    {"content_digests", (PyCFunction)(void (*)(void))textc_content_digests, METH_FASTCALL,
     "lifecycle._py_content_digests."},
    {"turns", (PyCFunction)(void (*)(void))textc_turns, METH_FASTCALL, "threads._py_turns."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_textc",
    .m_doc = "The ASCII fast path of cuemap_integrations.text.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__textc(void) {
    fill_classes();
    memo_seed = (uint64_t)HASH_BYTES("cuemap_integrations._textc.StemMemo", 35);
    if (PyType_Ready(&StemMemoType) < 0) return NULL;
    if ((SEQS_NAME = PyUnicode_InternFromString("_seqs")) == NULL ||
        (VALUES_NAME = PyUnicode_InternFromString("_values")) == NULL ||
        (SHARED_NAME = PyUnicode_InternFromString("_shared")) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddIntConstant(m, "ABI_VERSION", 21) < 0 ||
                      PyModule_AddObjectRef(m, "StemMemo", (PyObject *)&StemMemoType) < 0 ||
                      add_record_of(m) < 0 || add_screen(m) < 0 || add_new_record(m) < 0))
        Py_CLEAR(m);
    return m;
}
