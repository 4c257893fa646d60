/* The reader's exactness proof in C: an optional accelerator of evalglass.readers.jsonsource's checks, which stay
 * the reference (evalglass/_native/__init__.py says when this module is used).
 *
 * exact(lines): True when none of `lines` (bytes, each one JSON document that orjson parsed) holds a key repeated
 *     in one object, an integer beyond 64 bits or nesting deeper than MAX_DEPTH, so orjson's values are what the
 *     text says; False for anything else ("look closer": the pure checks decide and word every refusal). One pass
 *     tokenizes each line: strings are skipped with their escapes (a colon, bracket or escaped quote inside one is
 *     not structure), and outside strings it
 *     - keeps the keys of the objects open (each key is the string after `{` or an object's `,`) and compares each
 *       new key's bytes with the others of its object: without escapes, equal bytes are exactly equal keys (orjson
 *       reads only valid UTF-8, where a character has one spelling), so a key spelled with an escape ("\u0061"
 *       beside "a"), or more than KEYS_OPEN keys open at once, answers False;
 *     - counts the open objects and arrays: more than MAX_DEPTH at once answers False;
 *     - counts each number's integer digits: 19 or more with no fraction or exponent answers False (below 19 digits
 *       every integer fits in 64 bits; the pure check decides the rest);
 *     and anything that is not JSON structure (a byte order mark, a stray byte) answers False.
 *
 * Only the bytes of the lines are read: no Python object is allocated, compared or walked, so no Python code (a
 * collection's finalizers or callbacks) can run meanwhile, and the list is held by a reference of ours all the same.
 *
 * exact_kept(lines, key): the same proof, and for a batch it proves, the bytes orjson writes for the values at `key`
 * copied from the lines without their white space, where that copy is provably orjson's (see below); the run keeps
 * them instead of writing the parsed values again.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* readers/jsonsource.MAX_DEPTH (tests/engine/test_native_scan.py checks the two are equal). */
#define MAX_DEPTH 128
/* Integer digits from which a number may not fit in 64 bits (2**63 has 19). */
#define LONG_DIGITS 19

/* What each byte outside a string is (table built at import). */
enum { C_OTHER = 0, C_SPACE, C_OPEN, C_CLOSE, C_COLON, C_COMMA, C_QUOTE, C_NUMBER, C_WORD };
static unsigned char byte_class[256];
/* Inside a string: 1 for a byte that ends the plain run (quote, backslash, NUL: the bytes object's terminator). */
static unsigned char string_stop[256];

/* The first byte at or after `p` that is a quote or a backslash (or the terminating NUL at `end`, or an inner NUL). */
static inline const unsigned char *
string_run(const unsigned char *p, const unsigned char *end)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i nul = _mm_setzero_si128();
    while (end - p >= 16) {
        __m128i block = _mm_loadu_si128((const __m128i *)p);
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash)),
                                   _mm_cmpeq_epi8(block, nul));
        int mask = _mm_movemask_epi8(hit);
        if (mask)
            return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    while (!string_stop[*p]) /* the bytes object ends with a NUL, so this stops at `end` at the latest */
        p++;
    return p;
}

/* Keys of the objects open at once that one line may hold (beyond: decline, the pure checks decide): each new key is
 * compared with those of its own object, so this also bounds that work. */
#define KEYS_OPEN 256

/* One line: 1 when it is plain JSON nesting at most MAX_DEPTH, with no key repeated in one object (and none spelled
 * with an escape) and no integer of LONG_DIGITS digits or more; 0 otherwise (decline). `p` must point into a bytes
 * object (NUL after `end`) that orjson parsed. */
/* Where one line's value at a top-level key is (found by scan_line when asked): `value` to `value_end` (the `,` or
 * `}` after it). */
typedef struct {
    const char *key;
    Py_ssize_t key_length;
    int state; /* 0 the key not met yet, 1 met (its value next), 2 in its value, 3 done */
    const unsigned char *value, *value_end;
} Span;

/* Inlined at its two calls, so exact()'s (span NULL) has none of the span's tests: cases 1 and 2 (short lines) took
 * 45 more instructions a line with them. */
#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

static ALWAYS_INLINE int
scan_line(const unsigned char *p, const unsigned char *end, Span *span)
{
    int depth = 0;
    unsigned char is_object[MAX_DEPTH + 1];
    /* The keys of the open objects (where each starts in the line, and its length), and where each open object's
     * own keys start in that stack. */
    const unsigned char *key_at[KEYS_OPEN];
    Py_ssize_t key_length[KEYS_OPEN];
    int first_key[MAX_DEPTH + 1];
    int keys = 0;
    int expect_key = 0; /* after `{` or an object's `,`: the next string is a key */
    is_object[0] = 0;
    first_key[0] = 0;
    while (p < end) {
        unsigned char c = *p++;
        switch (byte_class[c]) {
        case C_SPACE:
            break;
        case C_COMMA:
            expect_key = is_object[depth];
            if (span != NULL && depth == 1 && span->state == 2) {
                span->value_end = p - 1;
                span->state = 3;
            }
            while (*p == ' ') /* the usual space after it, without a dispatch (the NUL after `end` stops it) */
                p++;
            break;
        case C_COLON:
            while (*p == ' ')
                p++;
            if (span != NULL && span->state == 1) {
                span->value = p;
                span->state = 2;
            }
            break;
        case C_OPEN:
            if (++depth > MAX_DEPTH)
                return 0;
            is_object[depth] = expect_key = (c == '{');
            first_key[depth] = keys;
            break;
        case C_CLOSE:
            if (span != NULL && depth == 1 && span->state == 2) {
                span->value_end = p - 1;
                span->state = 3;
            }
            if (--depth < 0)
                return 0;
            keys = first_key[depth + 1];
            expect_key = 0;
            break;
        case C_QUOTE: {
            const unsigned char *text = p;
            int escaped = 0;
            for (;;) {
                p = string_run(p, end);
                if (p >= end)
                    return 0; /* unterminated */
                c = *p++;
                if (c == '"')
                    break;
                if (c != '\\')
                    return 0; /* a NUL inside a string: not JSON */
                if (p >= end)
                    return 0;
                escaped = 1;
                p++; /* the escaped byte (a \u's hex digits hold no quote or backslash) */
            }
            if (expect_key) {
                /* Two keys without escapes are one key exactly when their bytes are equal (orjson reads only valid
                 * UTF-8, whose every character has one spelling); a key with an escape is left to the pure check. */
                Py_ssize_t length = p - 1 - text;
                if (escaped || keys == KEYS_OPEN)
                    return 0;
                for (int k = first_key[depth]; k < keys; k++) {
                    if (key_length[k] == length && memcmp(key_at[k], text, (size_t)length) == 0)
                        return 0;
                }
                key_at[keys] = text;
                key_length[keys] = length;
                keys++;
                expect_key = 0;
                if (span != NULL && depth == 1 && span->state == 0 && length == span->key_length &&
                    memcmp(text, span->key, (size_t)length) == 0)
                    span->state = 1;
            }
            break;
        }
        case C_NUMBER: {
            const unsigned char *digits = c == '-' ? p : p - 1;
            while (p < end && *p >= '0' && *p <= '9')
                p++;
            if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) { /* a float: its digits are a float's either way */
                p++;
                while (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' ||
                                   *p == '-'))
                    p++;
            }
            else if (p - digits >= LONG_DIGITS)
                return 0;
            break;
        }
        case C_WORD: /* true, false, null */
            while (p < end && *p >= 'a' && *p <= 'z')
                p++;
            break;
        default:
            return 0;
        }
    }
    return depth == 0;
}

static int
batch_exact(PyObject *lines)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines); i++) {
        PyObject *line = PyList_GET_ITEM(lines, i);
        if (!PyBytes_CheckExact(line))
            return 0;
        const unsigned char *start = (const unsigned char *)PyBytes_AS_STRING(line);
        if (!scan_line(start, start + PyBytes_GET_SIZE(line), NULL))
            return 0;
    }
    return 1;
}

static PyObject *
exact(PyObject *Py_UNUSED(module), PyObject *lines)
{
    if (!PyList_CheckExact(lines))
        Py_RETURN_FALSE;
    Py_INCREF(lines); /* (nothing here runs Python code or allocates; held all the same) */
    int answer = batch_exact(lines);
    Py_DECREF(lines);
    return PyBool_FromLong(answer);
}

/* --- exact_kept(lines, key): exact(), and what orjson writes for the batch's column of `key`, taken from the lines'
 * own bytes. ------------------------------------------------------------------------------------------------------
 *
 * For a line exact() proved (no key repeated, no integer of 19 digits, shallow) that holds no backslash, orjson's
 * value written back is the line without its white space outside strings, when every number in it is written as
 * orjson writes numbers:
 * - a string (a key too) without a backslash holds no quote and no control character (orjson refuses one raw), and
 *   orjson writes every other character as its UTF-8 bytes, which are the line's (orjson reads only valid UTF-8);
 * - an integer of at most 18 digits is read exactly and written in the same digits, except `-0` (written `0`);
 *   a float (a `.` or an exponent) may be written otherwise (`1E2` as `100.0`): any of those declines;
 * - true, false and null, brackets, `,` and `:` are written as they are, with no white space;
 * - the keys of an object are kept in their order, and none is dropped (exact() proved none repeated).
 * So the value at a top-level key is written as its text without white space. scan_line finds where it is while it
 * proves the line (Span); minify() copies it. Anything else takes nothing (True): the caller writes the column with
 * orjson as before. (jsonsource checks once that the orjson in use writes strings and integers so.) Only the lines'
 * bytes are read; the bytes object made holds copies of them, and no Python code runs meanwhile. */


/* One 16-byte piece of a span, as bit masks (bit i: byte i). */
typedef struct {
    unsigned quote, backslash, space, dot, exponent, digit, minus, zero;
} Piece;

static inline Piece
piece_portable(const unsigned char *v)
{
    Piece m = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 16; i++) {
        unsigned char c = v[i];
        unsigned bit = 1u << i;
        m.quote |= c == '"' ? bit : 0;
        m.backslash |= c == '\\' ? bit : 0;
        m.space |= c <= ' ' ? bit : 0;
        m.dot |= c == '.' ? bit : 0;
        m.exponent |= (c | 0x20) == 'e' ? bit : 0;
        m.digit |= c >= '0' && c <= '9' ? bit : 0;
        m.minus |= c == '-' ? bit : 0;
        m.zero |= c == '0' ? bit : 0;
    }
    return m;
}

#if defined(__SSE2__)
static inline Piece
piece_sse2(const unsigned char *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    Piece m;
    m.quote = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
    m.backslash = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    /* c <= ' ' (unsigned): white space outside strings (no other control byte is JSON there) */
    __m128i space = _mm_set1_epi8(' ');
    m.space = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(v, space), v));
    m.dot = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('.')));
    m.exponent = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_or_si128(v, space), _mm_set1_epi8('e')));
    /* '0'..'9' shifted to -128..-119, every other byte to -118 or more (a signed compare is all SSE2 has) */
    m.digit = (unsigned)_mm_movemask_epi8(
        _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8((char)(0x80 - '0'))), _mm_set1_epi8((char)(-128 + 10))));
    m.minus = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
    m.zero = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('0')));
    return m;
}
#endif

/* `src` to `end` (starting outside a string, in a line exact() proved) copied to `out` without its white space
 * outside strings; returns the byte after the copy, or NULL to decline: a backslash, a float (a `.`, or an `e`/`E`
 * after a digit, outside strings) or `-0` (JSON allows no other number starting `-0` but a float). `out` has room for
 * the span and 16 bytes more. Sixteen bytes at a time: which are inside strings is the running XOR of the quotes
 * (no backslash, so every quote opens or closes one); the kept bytes are stored in runs. */
static unsigned char *
minify(unsigned char *out, const unsigned char *src, const unsigned char *end, int portable)
{
    unsigned in_string = 0;   /* 0xffff when the previous piece ended inside a string */
    unsigned digit_before = 0; /* 1 when the previous piece ended in a digit outside strings */
    unsigned minus_before = 0; /* 1 when it ended in a `-` outside strings */
    unsigned char padded[16];
    unsigned char piece[32]; /* the piece, then 16 bytes a run's store may read past it */
    memset(piece, 0, sizeof piece);
    for (const unsigned char *base = src; base < end; base += 16) {
        const unsigned char *v = base;
        unsigned valid = 0xffff;
        if (end - base < 16) { /* the last piece, padded (its padding dropped like white space) */
            memset(padded, ' ', sizeof padded);
            memcpy(padded, base, (size_t)(end - base));
            v = padded;
            valid = (1u << (end - base)) - 1;
        }
#if defined(__SSE2__)
        Piece m = portable ? piece_portable(v) : piece_sse2(v);
#else
        (void)portable;
        Piece m = piece_portable(v);
#endif
        if (m.backslash & valid)
            return NULL;
        unsigned inside = m.quote;
        inside ^= inside << 1;
        inside ^= inside << 2;
        inside ^= inside << 4;
        inside ^= inside << 8;
        inside = (inside ^ in_string) & 0xffff; /* an opening quote and its string, not the closing quote */
        in_string = inside >> 15 ? 0xffff : 0;
        unsigned outside = ~inside & valid;
        unsigned digits = m.digit & outside;
        if ((m.dot & outside) || (m.exponent & outside & ((digits << 1) | digit_before)) ||
            (((m.minus & outside) << 1 | minus_before) & m.zero & 0xffff))
            return NULL;
        digit_before = digits >> 15;
        minus_before = (m.minus & outside) >> 15;
        unsigned keep = ~(m.space & outside) & valid;
        memcpy(piece, v, 16);
        if (keep == 0xffff) {
            memcpy(out, piece, 16);
            out += 16;
            continue;
        }
        while (keep) { /* each run of kept bytes, stored 16 at once (`out` has room; the next run overwrites) */
            int at = __builtin_ctz(keep);
            int run = __builtin_ctz(~(keep >> at)); /* (bits past the piece are 0 in keep, so ~ stops there) */
            memcpy(out, piece + at, 16);
            out += run;
            keep &= ~(((1u << run) - 1) << at);
        }
    }
    return out;
}

/* exact_kept(lines, key): exact(lines), and when True, what orjson writes for the column of `key` taken from the
 * lines' bytes: False (not proven), True (proven, nothing taken: a line without the key, a backslash, a float,
 * `-0`), or the column. */
static PyObject *
exact_kept(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "exact_kept(lines, key) takes two arguments");
        return NULL;
    }
    PyObject *lines = args[0];
    if (!PyList_CheckExact(lines) || !PyUnicode_CheckExact(args[1]))
        Py_RETURN_FALSE;
    Py_ssize_t key_length;
    const char *key = PyUnicode_AsUTF8AndSize(args[1], &key_length);
    if (key == NULL)
        return NULL;
    Py_INCREF(lines); /* (the lines are only read; held all the same) */
    PyObject *answer = NULL, *column = NULL;
    Py_ssize_t count = PyList_GET_SIZE(lines);
    Span *spans = PyMem_Malloc(sizeof(Span) * (size_t)(count ? count : 1));
    if (spans == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* First the proof of every line, finding each one's span on the way. */
    int whole = 1; /* every line has the key */
    Py_ssize_t column_size = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *line = PyList_GET_ITEM(lines, i);
        if (!PyBytes_CheckExact(line)) {
            answer = Py_NewRef(Py_False);
            goto done;
        }
        const unsigned char *start = (const unsigned char *)PyBytes_AS_STRING(line);
        Span *span = &spans[i];
        span->key = key;
        span->key_length = key_length;
        span->state = 0;
        span->value = span->value_end = NULL;
        if (!scan_line(start, start + PyBytes_GET_SIZE(line), span)) {
            answer = Py_NewRef(Py_False);
            goto done;
        }
        if (span->state != 3)
            whole = 0;
        else
            column_size += span->value_end - span->value;
    }
    if (!whole) {
        answer = Py_NewRef(Py_True);
        goto done;
    }
    /* Then the copy: at most the spans, with `[`, `]` and a comma a line, and 16 bytes of room. */
    column = PyBytes_FromStringAndSize(NULL, column_size + 2 * count + 2 + 16);
    if (column == NULL)
        goto done;
    unsigned char *column_at = (unsigned char *)PyBytes_AS_STRING(column);
    *column_at++ = '[';
    for (Py_ssize_t i = 0; i < count; i++) {
        if (i)
            *column_at++ = ',';
        column_at = minify(column_at, spans[i].value, spans[i].value_end, 0);
        if (column_at == NULL)
            break;
    }
    if (column_at == NULL) {
        answer = Py_NewRef(Py_True);
        goto done;
    }
    *column_at++ = ']';
    if (_PyBytes_Resize(&column, (Py_ssize_t)(column_at - (unsigned char *)PyBytes_AS_STRING(column))) < 0)
        goto done;
    answer = Py_NewRef(column);
done:
    PyMem_Free(spans);
    Py_XDECREF(column);
    Py_DECREF(lines);
    return answer;
}

/* minify() with the portable piece masks, for the tests: minify_portable(data) is minify(data) or None. */
static PyObject *
minify_text(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "minify(data: bytes, portable: bool)");
        return NULL;
    }
    int portable = PyObject_IsTrue(args[1]);
    if (portable < 0)
        return NULL;
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    PyObject *out = PyBytes_FromStringAndSize(NULL, size + 16);
    if (out == NULL)
        return NULL;
    const unsigned char *src = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    unsigned char *at = minify((unsigned char *)PyBytes_AS_STRING(out), src, src + size, portable);
    if (at == NULL) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&out, (Py_ssize_t)(at - (unsigned char *)PyBytes_AS_STRING(out))) < 0)
        return NULL;
    return out;
}

static PyMethodDef methods[] = {
    {"exact", exact, METH_O,
     "True when the lines hold no repeated key, 64-bit overflow or deep nesting; False: the pure checks decide."},
    {"exact_kept", (PyCFunction)(void (*)(void))exact_kept, METH_FASTCALL,
     "exact(lines), and when True what orjson writes for the column of key from the lines' bytes: False, True "
     "(nothing taken) or the column."},
    {"minify", (PyCFunction)(void (*)(void))minify_text, METH_FASTCALL,
     "The text without white space outside strings (SSE2 or, with portable, the byte loop), or None (a backslash, a "
     "float, -0); for the tests."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "evalglass._native._scan",
    .m_doc = "The reader's exactness proof (see the C source).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    for (int c = '0'; c <= '9'; c++)
        byte_class[c] = C_NUMBER;
    byte_class['-'] = C_NUMBER;
    for (int c = 'a'; c <= 'z'; c++)
        byte_class[c] = C_WORD;
    byte_class[' '] = byte_class['\t'] = byte_class['\n'] = byte_class['\r'] = C_SPACE;
    byte_class['['] = byte_class['{'] = C_OPEN;
    byte_class[']'] = byte_class['}'] = C_CLOSE;
    byte_class[':'] = C_COLON;
    byte_class[','] = C_COMMA;
    byte_class['"'] = C_QUOTE;
    string_stop['"'] = string_stop['\\'] = string_stop[0] = 1;
    return PyModule_Create(&module_def);
}
