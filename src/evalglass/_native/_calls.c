/* The per-trajectory hot path of a recorded tool-call replay, in C: an optional accelerator of two pure-Python
 * functions, which stay the reference (evalglass/_native/__init__.py says when this module is used).
 *
 * own_calls(value, absent): evalglass.core.trajectory.own_calls for the usual record (an agent lane's: every call
 *     EvalGlass's own {name, arguments}, one-part messages that add up), `absent` being fieldpath.ABSENT. It
 *     returns (items, names, arguments) only when the pure function returns exactly that without running its careful
 *     check; anything else (another shape, a record the careful check must read, a value of a type JSON never parses
 *     to, any error) returns None, and the caller runs the pure function, which decides and words every refusal.
 * pair_flat(names, arguments, wanted_names, wanted_arguments): evalglass.metrics.callmatch._pairing_by_key of two
 *     own-form call lists whose arguments are all flat objects (text keys; text without lone surrogates, 64-bit
 *     integer, boolean or null values): the pairing list; None for anything else (the pure function decides).
 *
 * Every object read is held by a reference of ours across any call that can run Python code (a comparison, or an
 * allocation of a tracked object: in 3.11 it can start the cycle collector, whose finalizers and gc.callbacks run
 * Python code), so a value that changes the record meanwhile cannot free what is being read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The keys this module reads, looked up by one pass over each (small) dict rather than one hash lookup a key: a
 * dict's keys are compared by pointer with the last object met with the same text (orjson makes one object per key
 * text and shares it), and by text otherwise. */
enum {
    K_ROLE, K_TOOL_CALLS, K_MESSAGES, K_STEPS, K_FINISH, K_NAME, K_ARGUMENTS, K_PARTS, K_TYPE, K_ID, K_RESULT,
    K_RESPONSE, K_FUNCTION, K_INVALID_ARGUMENTS, K_COUNT
};
static const char *const key_text[K_COUNT] = {
    "role", "tool_calls", "messages", "steps", "finish", "name", "arguments", "parts", "type", "id", "result",
    "response", "function", "invalid_arguments",
};
static Py_ssize_t key_length[K_COUNT];
static PyObject *seen[K_COUNT]; /* strong references: the last key object met with each text */

/* out[k]: the value (borrowed) under key text k of `dict`, NULL when absent. 0 when a key is not an exact str
 * (what a JSON object's keys always are): the pure code decides such a dict (a key of another type can compare
 * equal to a text through its own __eq__). No Python code runs here. */
static int
fields(PyObject *dict, PyObject **out)
{
    memset(out, 0, sizeof(PyObject *) * K_COUNT);
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(dict, &pos, &key, &item)) {
        int k = 0;
        while (k < K_COUNT && key != seen[k])
            k++;
        if (k == K_COUNT) {
            if (!PyUnicode_CheckExact(key))
                return 0;
            if (PyUnicode_READY(key) < 0) { /* a legacy string (3.11) that cannot be made ready: decline */
                PyErr_Clear();
                return 0;
            }
            if (PyUnicode_KIND(key) != PyUnicode_1BYTE_KIND)
                continue;
            Py_ssize_t length = PyUnicode_GET_LENGTH(key);
            const char *text = (const char *)PyUnicode_1BYTE_DATA(key);
            for (k = 0; k < K_COUNT; k++) {
                if (key_length[k] == length && memcmp(key_text[k], text, (size_t)length) == 0)
                    break;
            }
            if (k == K_COUNT)
                continue;
            Py_INCREF(key);
            Py_XSETREF(seen[k], key);
        }
        out[k] = item;
    }
    return 1;
}

static int
is_ascii(PyObject *text, const char *ascii)
{
    return PyUnicode_CompareWithASCIIString(text, ascii) == 0;
}

/* `a != b` as Python evaluates it in an `if` (no identity shortcut): 1 true, 0 false, -1 error. Holds both. */
static int
differ(PyObject *a, PyObject *b)
{
    Py_INCREF(a);
    Py_INCREF(b);
    PyObject *ne = PyObject_RichCompare(a, b, Py_NE);
    Py_DECREF(a);
    Py_DECREF(b);
    if (ne == NULL)
        return -1;
    int truth = PyObject_IsTrue(ne);
    Py_DECREF(ne);
    return truth;
}

/* What _adds_up reads of tool_calls: each call's name, arguments, id and result (strong references or NULL). */
typedef struct {
    PyObject *names, *arguments; /* lists */
    PyObject **ids, **results;   /* arrays of `made` */
    Py_ssize_t made;
} Calls;

/* One message of _adds_up's loop. Returns 1 to go on, 0 not proven, -1 error. */
static int
read_message(PyObject *message, const Calls *calls, Py_ssize_t *said, Py_ssize_t *turns, Py_ssize_t *last,
             PyObject *results)
{
    PyObject *f[K_COUNT];
    if (!PyDict_CheckExact(message) || !fields(message, f))
        return 0;
    PyObject *parts = f[K_PARTS], *role = f[K_ROLE];
    if (parts == NULL || role == NULL || !PyList_CheckExact(parts) || !PyUnicode_CheckExact(role)
        || PyList_GET_SIZE(parts) != 1)
        return 0;
    PyObject *part = PyList_GET_ITEM(parts, 0);
    if (!PyDict_CheckExact(part))
        return 0;
    int model = is_ascii(role, "assistant") || is_ascii(role, "model");
    if (!fields(part, f))
        return 0;
    PyObject *kind = f[K_TYPE];
    if (kind == NULL || !PyUnicode_CheckExact(kind))
        return 0; /* another type's == is the pure code's to run */
    if (is_ascii(kind, "tool_call")) {
        PyObject *name = f[K_NAME], *given = f[K_ARGUMENTS];
        if (name == NULL || *said == calls->made || !PyUnicode_CheckExact(name) || given == NULL
            || f[K_FUNCTION] != NULL || f[K_INVALID_ARGUMENTS] != NULL
            || PyUnicode_Compare(PyList_GET_ITEM(calls->names, *said), name) != 0)
            return PyErr_Occurred() ? -1 : 0;
        int other = differ(PyList_GET_ITEM(calls->arguments, *said), given);
        if (other != 0)
            return other < 0 ? -1 : 0;
        if (model) {
            *last = *said;
            *turns += 1;
        }
        *said += 1;
        return 1;
    }
    if (is_ascii(kind, "tool_call_response")) {
        /* Kept as (id, response): held by this list, whatever a comparison does to the record meanwhile. */
        PyObject *answered = f[K_ID], *response = f[K_RESPONSE];
        if (answered == NULL || response == NULL)
            return 0;
        Py_INCREF(answered); /* held across the tuple's allocation */
        Py_INCREF(response);
        PyObject *pair = PyTuple_Pack(2, answered, response);
        Py_DECREF(answered);
        Py_DECREF(response);
        if (pair == NULL)
            return -1;
        int appended = PyList_Append(results, pair);
        Py_DECREF(pair);
        if (appended < 0)
            return -1;
    }
    if (model)
        *last = *said;
    return 1;
}

/* The results of _adds_up: each answers a call of tool_calls (the last with its id) whose "result" equals its
 * "response". 1 proven, 0 not, -1 error. */
static int
results_agree(const Calls *calls, PyObject *results)
{
    for (Py_ssize_t index = 0; index < calls->made; index++) { /* ids = [item["id"] ...], each text */
        if (calls->ids[index] == NULL || !PyUnicode_CheckExact(calls->ids[index]))
            return 0;
    }
    for (Py_ssize_t at = 0; at < PyList_GET_SIZE(results); at++) {
        PyObject *pair = PyList_GET_ITEM(results, at);
        PyObject *answered = PyTuple_GET_ITEM(pair, 0), *response = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_CheckExact(answered))
            return 0;
        Py_ssize_t index = calls->made - 1; /* dict(zip(ids, items))[answered]: the last call with that id */
        while (index >= 0 && PyUnicode_Compare(calls->ids[index], answered) != 0)
            index--;
        if (index < 0 || calls->results[index] == NULL)
            return 0;
        int other = differ(calls->results[index], response);
        if (other != 0)
            return other < 0 ? -1 : 0;
    }
    return 1;
}

/* core.trajectory._adds_up of a trajectory whose fields are `f` (those read here held by the caller): 1 proven,
 * 0 not proven, -1 error. */
static int
adds_up(PyObject **f, const Calls *calls)
{
    PyObject *messages = f[K_MESSAGES], *steps = f[K_STEPS], *finish = f[K_FINISH];
    if (messages == NULL || !PyList_CheckExact(messages))
        return 0;
    int stop = 0, max_steps = 0; /* finish == "stop" / "max_steps", for text or None only */
    if (finish != NULL && finish != Py_None) {
        if (!PyUnicode_CheckExact(finish))
            return 0;
        stop = is_ascii(finish, "stop");
        max_steps = is_ascii(finish, "max_steps");
    }
    int counted = 0;
    long long step_count = 0;
    if (steps != NULL && PyLong_CheckExact(steps)) {
        int overflow = 0;
        step_count = PyLong_AsLongLongAndOverflow(steps, &overflow);
        if (overflow || (step_count == -1 && PyErr_Occurred()))
            return PyErr_Occurred() ? -1 : 0;
        counted = 1;
    }
    Py_ssize_t said = 0, turns = 0, last = -1;
    PyObject *results = PyList_New(0);
    if (results == NULL)
        return -1;
    int proven = 1;
    for (Py_ssize_t index = 0; proven == 1 && index < PyList_GET_SIZE(messages); index++) {
        PyObject *message = PyList_GET_ITEM(messages, index);
        Py_INCREF(message);
        proven = read_message(message, calls, &said, &turns, &last, results);
        Py_DECREF(message);
    }
    if (proven == 1) {
        Py_ssize_t made = calls->made;
        if (said != made || (counted && (step_count < turns || (step_count == 0 && made))))
            proven = 0;
        else if (last >= 0 && ((stop && said > last) || (max_steps && said == last)))
            proven = 0;
        else if (PyList_GET_SIZE(results))
            proven = results_agree(calls, results);
    }
    Py_DECREF(results);
    return proven;
}

/* own_calls(value, absent) -> (items, names, arguments) | None */
static PyObject *
own_calls(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "own_calls(value, absent)");
        return NULL;
    }
    PyObject *value = args[0], *absent = args[1], *items = value;
    PyObject *top[K_COUNT], *f[K_COUNT];
    int redundant = 0;
    if (PyDict_CheckExact(value)) {
        if (!fields(value, top) || top[K_ROLE] != NULL)
            Py_RETURN_NONE;
        items = top[K_TOOL_CALLS];
        redundant = top[K_MESSAGES] != NULL || top[K_STEPS] != NULL || top[K_FINISH] != NULL;
    }
    if (items == NULL || !PyList_CheckExact(items))
        Py_RETURN_NONE;
    Py_INCREF(value);
    Py_INCREF(items);
    if (redundant) { /* what adds_up reads of the record, held before anything is allocated */
        Py_XINCREF(top[K_MESSAGES]);
        Py_XINCREF(top[K_STEPS]);
        Py_XINCREF(top[K_FINISH]);
    }
    Py_ssize_t count = PyList_GET_SIZE(items);
    Calls calls = {PyList_New(count), PyList_New(count), NULL, NULL, count};
    PyObject *found = NULL;
    /* No allocation in the loop below: items is read as it is once the lists are made. */
    if (calls.names == NULL || calls.arguments == NULL || PyList_GET_SIZE(items) != count)
        goto out;
    if (redundant) {
        calls.ids = PyMem_Calloc((size_t)count + 1, sizeof(PyObject *));
        calls.results = PyMem_Calloc((size_t)count + 1, sizeof(PyObject *));
        if (calls.ids == NULL || calls.results == NULL)
            goto out;
    }
    for (Py_ssize_t index = 0; index < count; index++) {
        PyObject *item = PyList_GET_ITEM(items, index);
        if (!PyDict_CheckExact(item) || !fields(item, f))
            goto out;
        if (f[K_FUNCTION] || f[K_TYPE] || f[K_INVALID_ARGUMENTS] || f[K_ROLE])
            goto out;
        PyObject *name = f[K_NAME], *given = f[K_ARGUMENTS];
        if (name == NULL || !PyUnicode_CheckExact(name))
            goto out;
        if (given == NULL)
            given = absent;
        else if (PyUnicode_CheckExact(given))
            goto out; /* arguments as JSON text */
        Py_INCREF(name);
        PyList_SET_ITEM(calls.names, index, name);
        Py_INCREF(given);
        PyList_SET_ITEM(calls.arguments, index, given);
        if (redundant) {
            Py_XINCREF(f[K_ID]);
            calls.ids[index] = f[K_ID];
            Py_XINCREF(f[K_RESULT]);
            calls.results[index] = f[K_RESULT];
        }
    }
    if (redundant) {
        /* The pure reading compares from two Python frames deeper (own_calls, _adds_up), each a level of the
         * recursion limit in this interpreter: taken here too, so a value nested near the limit is compared, or
         * refused with RecursionError (the pure function then raises it), at the same depth. */
        if (Py_EnterRecursiveCall(" in own_calls"))
            goto out;
        if (Py_EnterRecursiveCall(" in _adds_up")) {
            Py_LeaveRecursiveCall();
            goto out;
        }
        int proven = adds_up(top, &calls);
        Py_LeaveRecursiveCall();
        Py_LeaveRecursiveCall();
        if (proven != 1)
            goto out;
    }
    found = PyTuple_Pack(3, items, calls.names, calls.arguments);
out:
    for (Py_ssize_t index = 0; index < count; index++) {
        if (calls.ids != NULL)
            Py_XDECREF(calls.ids[index]);
        if (calls.results != NULL)
            Py_XDECREF(calls.results[index]);
    }
    PyMem_Free(calls.ids);
    PyMem_Free(calls.results);
    Py_XDECREF(calls.names);
    Py_XDECREF(calls.arguments);
    if (redundant) {
        Py_XDECREF(top[K_MESSAGES]);
        Py_XDECREF(top[K_STEPS]);
        Py_XDECREF(top[K_FINISH]);
    }
    Py_DECREF(items);
    Py_DECREF(value);
    if (found == NULL)
        PyErr_Clear(); /* whatever went wrong, the pure function meets it again and answers as it does */
    if (found != NULL)
        return found;
    Py_RETURN_NONE;
}

/* A flat JSON scalar as flat_arguments_key accepts it (orjson writes it, and its text is its JSON identity): exact
 * text without lone surrogates, a 64-bit integer, a boolean or null. */
static int
flat_scalar(PyObject *value)
{
    if (value == Py_None || value == Py_True || value == Py_False)
        return 1;
    if (PyUnicode_CheckExact(value)) {
        if (PyUnicode_READY(value) < 0) {
            PyErr_Clear();
            return 0;
        }
        int kind = PyUnicode_KIND(value);
        if (kind == PyUnicode_1BYTE_KIND)
            return 1;
        const void *data = PyUnicode_DATA(value);
        for (Py_ssize_t at = 0; at < PyUnicode_GET_LENGTH(value); at++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, at);
            if (c >= 0xD800 && c <= 0xDFFF)
                return 0;
        }
        return 1;
    }
    if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (number == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        return !overflow;
    }
    return 0;
}

/* Every argument an exact dict of exact-text keys and flat scalars; names exact text. */
static int
flat_list(PyObject *names, PyObject *arguments)
{
    if (!PyList_CheckExact(names) || !PyList_CheckExact(arguments)
        || PyList_GET_SIZE(names) != PyList_GET_SIZE(arguments))
        return 0;
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(arguments); index++) {
        PyObject *object = PyList_GET_ITEM(arguments, index);
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(names, index)) || !PyDict_CheckExact(object))
            return 0;
        Py_ssize_t pos = 0;
        PyObject *key, *item;
        while (PyDict_Next(object, &pos, &key, &item)) {
            if (!PyUnicode_CheckExact(key) || !flat_scalar(key) || !flat_scalar(item))
                return 0;
        }
    }
    return 1;
}

/* Two flat scalars equal as JSON: the same kind and value (true is not 1). */
static int
same_scalar(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (PyUnicode_CheckExact(a))
        return PyUnicode_CheckExact(b) && PyUnicode_Compare(a, b) == 0;
    if (PyLong_CheckExact(a) && PyLong_CheckExact(b))
        return PyLong_AsLongLong(a) == PyLong_AsLongLong(b); /* both checked to fit */
    return 0; /* None, True, False: one object each */
}

/* Two calls of checked flat lists equal: the same name and the same arguments as JSON (no Python code runs). */
static int
same_call(PyObject *name, PyObject *arguments, PyObject *wanted_name, PyObject *wanted)
{
    if (PyUnicode_Compare(name, wanted_name) != 0 || PyDict_GET_SIZE(arguments) != PyDict_GET_SIZE(wanted))
        return 0;
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    while (PyDict_Next(arguments, &pos, &key, &item)) {
        PyObject *other = PyDict_GetItemWithError(wanted, key);
        if (other == NULL || !same_scalar(item, other))
            return 0;
    }
    return 1;
}

/* Above this many comparisons the pure pairing by dictionary (linear) is the better path. */
#define MAX_COMPARISONS (1 << 16)

/* pair_flat(names, arguments, wanted_names, wanted_arguments) -> list[int] | None */
static PyObject *
pair_flat(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "pair_flat(names, arguments, wanted_names, wanted_arguments)");
        return NULL;
    }
    PyObject *names = args[0], *arguments = args[1], *wanted_names = args[2], *wanted = args[3];
    if (!PyList_CheckExact(names) || !PyList_CheckExact(wanted))
        Py_RETURN_NONE;
    Py_ssize_t made = PyList_GET_SIZE(names), expected = PyList_GET_SIZE(wanted);
    if (made && expected > MAX_COMPARISONS / made)
        Py_RETURN_NONE;
    /* Made before the lists are checked: its allocation can run Python code (the cycle collector's), which could
     * change them; nothing from the checks on runs any. */
    PyObject *pairing = PyList_New(expected);
    if (pairing == NULL)
        return NULL;
    if (!flat_list(names, arguments) || !flat_list(wanted_names, wanted) || PyList_GET_SIZE(names) != made
        || PyList_GET_SIZE(wanted) != expected) {
        Py_DECREF(pairing);
        Py_RETURN_NONE;
    }
    int same = made == expected;
    for (Py_ssize_t index = 0; same && index < made; index++) {
        same = same_call(PyList_GET_ITEM(names, index), PyList_GET_ITEM(arguments, index),
                         PyList_GET_ITEM(wanted_names, index), PyList_GET_ITEM(wanted, index));
    }
    char *taken = NULL;
    if (!same && made) {
        taken = PyMem_Calloc((size_t)made, 1);
        if (taken == NULL) {
            Py_DECREF(pairing);
            return PyErr_NoMemory();
        }
    }
    for (Py_ssize_t position = 0; position < expected; position++) {
        Py_ssize_t found = same ? position : -1;
        /* The first call made not yet taken with the same key: what _pairing_of_keys pops from its list. */
        for (Py_ssize_t index = 0; !same && index < made; index++) {
            if (!taken[index]
                && same_call(PyList_GET_ITEM(names, index), PyList_GET_ITEM(arguments, index),
                             PyList_GET_ITEM(wanted_names, position), PyList_GET_ITEM(wanted, position))) {
                taken[index] = 1;
                found = index;
                break;
            }
        }
        PyObject *number = PyLong_FromSsize_t(found);
        if (number == NULL) {
            PyMem_Free(taken);
            Py_DECREF(pairing);
            return NULL;
        }
        PyList_SET_ITEM(pairing, position, number);
    }
    PyMem_Free(taken);
    return pairing;
}

static PyMethodDef methods[] = {
    {"own_calls", (PyCFunction)(void (*)(void))own_calls, METH_FASTCALL,
     "core.trajectory.own_calls for the usual record, or None: the pure function decides."},
    {"pair_flat", (PyCFunction)(void (*)(void))pair_flat, METH_FASTCALL,
     "callmatch._pairing_by_key of two flat own-form call lists, or None: the pure function decides."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "evalglass._native._calls",
    .m_doc = "The replay's per-trajectory hot path (see the C source).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__calls(void)
{
    for (int k = 0; k < K_COUNT; k++)
        key_length[k] = (Py_ssize_t)strlen(key_text[k]);
    return PyModule_Create(&module_def);
}
