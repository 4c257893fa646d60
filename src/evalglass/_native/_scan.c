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
static int
scan_line(const unsigned char *p, const unsigned char *end)
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
            while (*p == ' ') /* the usual space after it, without a dispatch (the NUL after `end` stops it) */
                p++;
            break;
        case C_COLON:
            while (*p == ' ')
                p++;
            break;
        case C_OPEN:
            if (++depth > MAX_DEPTH)
                return 0;
            is_object[depth] = expect_key = (c == '{');
            first_key[depth] = keys;
            break;
        case C_CLOSE:
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
        if (!scan_line(start, start + PyBytes_GET_SIZE(line)))
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

static PyMethodDef methods[] = {
    {"exact", exact, METH_O,
     "True when the lines hold no repeated key, 64-bit overflow or deep nesting; False: the pure checks decide."},
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
