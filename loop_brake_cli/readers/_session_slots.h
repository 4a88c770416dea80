/* SessionSlots: filter's session table in C (issue 41 goal 6), included by _event_scan.c.
 *
 * The same table as core/table.py's MemoryTable (unbounded) and BoundedMemoryTable
 * (max_sessions, least recently used first), for the seed's rule only (no policy):
 * count_call applies core/streak.py's step to the session's slot and answers
 * (Slot, duplicate) exactly as step does. What changes is what a session costs. In
 * a dict, a session held a key string (~64 bytes), a Slot tuple (80), a bytes digest
 * (80), a call id string (~64) and the dict's entry (~42): about 320 bytes of RSS.
 * Here it holds one Entry (72 bytes: the whole 32-byte digest, the count, the
 * links) in an array, the key's and the call id's bytes back to back in one
 * arena (no allocation per session), and 4 to 8 bytes of an open-addressing
 * index of entry numbers (CPython's compact dict, without the Python objects).
 *
 * - Keys: the session's UTF-8 (surrogatepass for a lone surrogate: still one text
 *   per string, since strict UTF-8 never holds those bytes), hashed by Python's
 *   string hash (seeded: no chosen-collision flood). Equal strings, equal bytes.
 * - Call ids: an exact str as its UTF-8 (surrogatepass), an exact int that fits
 *   64 bits as its 8 bytes, None as nothing, anything else as a reference to the
 *   object (compared with ==). Two ids of one kind are equal when their bytes are;
 *   across kinds the stored id is made an object again and compared with ==, so
 *   equality is always Python's, as in step.
 * - Tools: each distinct name once (tools, with how many entries use it), an entry
 *   holds its number; a name no entry uses is forgotten.
 * - The arena: a removed session or a longer call id leaves garbage; when the
 *   arena is full and at least half garbage it is copied compact, else doubled.
 *
 * Made with a policy (SessionSlots(slot_type, max_sessions, policy)), the table counts
 * by policy_call instead: policy_step's rules in C, each entry with its decision and
 * earlier calls beside it (_policy_slots.h; readers/policy_table.py).
 *
 * Not reentrant (an id's __eq__ that uses the table is refused): LoopBrake holds its
 * lock around the library's calls, and filter is one thread. */

#define SLOT_NIL UINT32_MAX
#define INDEX_EMPTY UINT32_MAX
#define INDEX_DUMMY (UINT32_MAX - 1)
#define ENTRY_FREE SIZE_MAX
#define ID_NONE 0u
#define ID_STR 1u
#define ID_INT 2u
#define ID_OBJ 3u
#define ID_KIND(id) ((id) >> 30)
#define ID_SIZE(id) ((id) & 0x3FFFFFFFu)
#define ID_MAX_SIZE 0x3FFFFFFFu
#define MAX_ENTRIES (UINT32_MAX - 2)

typedef struct {
    unsigned char digest[32]; /* the streak's call, whole */
    uint64_t count;
    size_t data;       /* arena offset of the key then the call id; ENTRY_FREE when free */
    uint32_t hash;     /* the low 32 bits of the key's string hash */
    uint32_t key_size; /* bytes of the key's UTF-8 */
    uint32_t id;       /* the call id: its kind (two high bits) and its bytes' size */
    uint32_t tool;     /* its number in tools */
    uint32_t older, newer; /* the LRU list (bounded tables); newer links the free list */
} Entry;

/* What a policy adds (_policy_slots.h): the rules the C step applies, fixed at the
 * table's creation, and per entry the decision and the earlier calls those rules read. */
typedef struct {
    int on;                 /* a policy table: policy_call, policy_state */
    uint32_t window_calls;  /* [window] calls; 0: no [window] */
    int64_t window_max;     /* [window] max_repeats */
    uint32_t max_period;    /* [cycles] max_period; 0: no [cycles] */
    int64_t cycle_max;      /* [cycles] max_repeats */
    int has_stop;
    int64_t stop_after;     /* [stop] after_denials */
    uint32_t depth;         /* earlier digests kept: max(window_calls, max_period) - 1 */
    size_t digests_at, tools_at; /* offsets in an entry's history block */
} PolicyConfig;

typedef struct {
    int64_t rule_limit; /* Decision.limit (an exempt call: none, PF_EXEMPT) */
    int64_t call_limit; /* Decision.max_repeats */
    int64_t warn_at;    /* Decision.warn_at when PF_WARNED */
    uint64_t repeats, denials;
    unsigned char *history; /* runs, earlier digests, their tools; NULL until a second call */
    uint8_t flags, rule, period, window_on;
    uint8_t held, head; /* earlier digests held in the ring, and where its oldest is */
} PolicyEntry;

typedef struct {
    PyObject_HEAD
    PyObject *slot_type; /* core.streak.Slot, what count_call answers */
    allocfunc slot_alloc;
    Py_ssize_t max_sessions; /* 0: unbounded */
    Py_ssize_t evictions;
    int busy;
    /* index: entry numbers by hash; INDEX_EMPTY, INDEX_DUMMY (a removed entry's) */
    uint32_t *index;
    size_t mask, dummies;
    /* entries: live ones, and free ones chained from free_entry */
    Entry *entries;
    uint32_t used, capacity, live, free_entry;
    uint32_t oldest, newest;
    /* arena: keys and call ids */
    unsigned char *arena;
    size_t arena_used, arena_size, garbage;
    /* tools: names (NULL when free), how many entries use each, a dict name -> number */
    PyObject **tool_names;
    uint32_t *tool_users; /* of a free number: the next free one */
    uint32_t tools_used, tools_capacity, free_tool;
    PyObject *tool_numbers;
    PyObject *last_tool; /* the last name asked for (held), and its number */
    uint32_t last_tool_number;
    /* a policy table only: the rules, an entry's policy state (beside entries), and
     * whether each tool is exempt (the cycle rule skips cycles through one) */
    PolicyConfig config;
    PolicyEntry *policy;
    uint8_t *tool_exempt;
} SessionSlots;

static void policy_forget(SessionSlots *t, uint32_t n);

/* A call id or key as bytes: borrowed from the str (or held in holder) */
typedef struct {
    uint32_t kind;
    const char *bytes;
    size_t size;
    PyObject *holder; /* a bytes object to release, or NULL */
    int64_t number;
    PyObject *object;
} IdBytes;

static void id_release(IdBytes *id)
{
    Py_XDECREF(id->holder);
    id->holder = NULL;
}

/* The UTF-8 of a str, surrogatepass when it holds a lone surrogate. */
static int text_bytes(PyObject *text, IdBytes *out)
{
    Py_ssize_t size;
    out->holder = NULL;
    out->bytes = PyUnicode_AsUTF8AndSize(text, &size);
    if (out->bytes == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return -1;
        PyErr_Clear();
        out->holder = PyUnicode_AsEncodedString(text, "utf-8", "surrogatepass");
        if (out->holder == NULL)
            return -1;
        out->bytes = PyBytes_AsString(out->holder);
        size = PyBytes_Size(out->holder);
    }
    out->size = (size_t)size;
    return 0;
}

static int id_bytes(PyObject *call_id, IdBytes *out)
{
    out->holder = NULL;
    out->object = call_id;
    if (call_id == Py_None) {
        out->kind = ID_NONE;
        out->bytes = NULL;
        out->size = 0;
        return 0;
    }
    if (PyUnicode_CheckExact(call_id)) {
        if (text_bytes(call_id, out) < 0)
            return -1;
        if (out->size <= ID_MAX_SIZE) {
            out->kind = ID_STR;
            return 0;
        }
        id_release(out);
    }
    else if (PyLong_CheckExact(call_id)) {
        int overflow = 0;
        long long value = PyLong_AsLongLongAndOverflow(call_id, &overflow);
        if (value == -1 && PyErr_Occurred())
            return -1;
        if (!overflow) {
            out->kind = ID_INT;
            out->number = (int64_t)value;
            out->bytes = (const char *)&out->number;
            out->size = sizeof(int64_t);
            return 0;
        }
    }
    out->kind = ID_OBJ;
    out->bytes = (const char *)&out->object;
    out->size = sizeof(PyObject *);
    return 0;
}

/* The stored id of an entry as a Python object (a new reference). */
static PyObject *stored_id(SessionSlots *t, const Entry *e)
{
    const char *at = (const char *)t->arena + e->data + e->key_size;
    switch (ID_KIND(e->id)) {
    case ID_STR:
        return PyUnicode_DecodeUTF8(at, (Py_ssize_t)ID_SIZE(e->id), "surrogatepass");
    case ID_INT: {
        int64_t value;
        memcpy(&value, at, sizeof value);
        return PyLong_FromLongLong((long long)value);
    }
    case ID_OBJ: {
        PyObject *object;
        memcpy(&object, at, sizeof object);
        return Py_NewRef(object);
    }
    default:
        return Py_NewRef(Py_None);
    }
}

static PyObject *stored_object(SessionSlots *t, const Entry *e)
{
    PyObject *object = NULL;
    if (ID_KIND(e->id) == ID_OBJ)
        memcpy(&object, t->arena + e->data + e->key_size, sizeof object);
    return object;
}

/* 1 when the entry's id equals call_id (neither None), 0 when not, -1 on an error. */
static int same_id(SessionSlots *t, const Entry *e, const IdBytes *id)
{
    uint32_t kind = ID_KIND(e->id);
    if (kind == ID_NONE || id->kind == ID_NONE)
        return 0;
    if (kind == id->kind && kind != ID_OBJ)
        return ID_SIZE(e->id) == id->size &&
               memcmp(t->arena + e->data + e->key_size, id->bytes, id->size) == 0;
    PyObject *stored = stored_id(t, e);
    if (stored == NULL)
        return -1;
    int equal = PyObject_RichCompareBool(id->object, stored, Py_EQ);
    Py_DECREF(stored);
    return equal;
}

/* ---- the arena -------------------------------------------------------------- */

/* Room for size more bytes: compacted when at least half garbage, else grown. */
static int arena_reserve(SessionSlots *t, size_t size)
{
    if (size <= t->arena_size - t->arena_used)
        return 0;
    size_t live = t->arena_used - t->garbage;
    if (t->garbage >= live) {
        size_t new_size = (live + size) * 2 + 4096;
        unsigned char *fresh = PyMem_Malloc(new_size);
        if (fresh == NULL)
            return -1;
        size_t at = 0;
        for (uint32_t i = 0; i < t->used; i++) {
            Entry *e = &t->entries[i];
            if (e->data == ENTRY_FREE)
                continue;
            size_t n = e->key_size + ID_SIZE(e->id);
            memcpy(fresh + at, t->arena + e->data, n);
            e->data = at;
            at += n;
        }
        PyMem_Free(t->arena);
        t->arena = fresh;
        t->arena_size = new_size;
        t->arena_used = at;
        t->garbage = 0;
        return 0;
    }
    size_t new_size = t->arena_size ? t->arena_size * 2 : 4096;
    while (new_size - t->arena_used < size)
        new_size *= 2;
    unsigned char *grown = PyMem_Realloc(t->arena, new_size);
    if (grown == NULL)
        return -1;
    t->arena = grown;
    t->arena_size = new_size;
    return 0;
}

/* ---- the index -------------------------------------------------------------- */

#define PROBE_NEXT(i, perturb, mask)                                                         \
    do {                                                                                   \
        perturb >>= 5;                                                                     \
        i = (i * 5 + 1 + perturb) & mask;                                                  \
    } while (0)

/* The entry number of a key, or SLOT_NIL; *where: its index position, or where a new
 * key goes (the first dummy met, else the empty slot that ended the probe). */
static uint32_t find(SessionSlots *t, uint32_t hash, const char *key, size_t size,
                     size_t *where)
{
    size_t mask = t->mask, i = hash & mask, perturb = hash, dummy = SIZE_MAX;
    for (;;) {
        uint32_t n = t->index[i];
        if (n == INDEX_EMPTY) {
            *where = dummy != SIZE_MAX ? dummy : i;
            return SLOT_NIL;
        }
        if (n == INDEX_DUMMY) {
            if (dummy == SIZE_MAX)
                dummy = i;
        }
        else {
            const Entry *e = &t->entries[n];
            if (e->hash == hash && e->key_size == size &&
                memcmp(t->arena + e->data, key, size) == 0) {
                *where = i;
                return n;
            }
        }
        PROBE_NEXT(i, perturb, mask);
    }
}

/* Rebuilt with room for one more entry at most half full. */
static int index_rebuild(SessionSlots *t, size_t live)
{
    size_t size = 8;
    while (size < (live + 1) * 2)
        size *= 2;
    uint32_t *index = PyMem_Malloc(size * sizeof(uint32_t));
    if (index == NULL)
        return -1;
    memset(index, 0xFF, size * sizeof(uint32_t));
    size_t mask = size - 1;
    for (uint32_t n = 0; n < t->used; n++) {
        const Entry *e = &t->entries[n];
        if (e->data == ENTRY_FREE)
            continue;
        size_t i = e->hash & mask, perturb = e->hash;
        while (index[i] != INDEX_EMPTY)
            PROBE_NEXT(i, perturb, mask);
        index[i] = n;
    }
    PyMem_Free(t->index);
    t->index = index;
    t->mask = mask;
    t->dummies = 0;
    return 0;
}

/* ---- tools ------------------------------------------------------------------ */

/* The number of a tool name, used once more by an entry; -1 on an error. */
static int64_t tool_acquire(SessionSlots *t, PyObject *tool)
{
    if (tool == t->last_tool) {
        t->tool_users[t->last_tool_number]++;
        return t->last_tool_number;
    }
    if (!PyUnicode_Check(tool)) {
        PyErr_SetString(PyExc_TypeError, "the tool name must be a str");
        return -1;
    }
    uint32_t number;
    PyObject *known = PyDict_GetItemWithError(t->tool_numbers, tool);
    if (known != NULL) {
        number = (uint32_t)PyLong_AsUnsignedLong(known);
    }
    else {
        if (PyErr_Occurred())
            return -1;
        if (t->free_tool != SLOT_NIL) {
            number = t->free_tool;
        }
        else {
            if (t->tools_used == t->tools_capacity) {
                uint32_t capacity = t->tools_capacity ? t->tools_capacity * 2 : 16;
                PyObject **names = PyMem_Realloc(t->tool_names, capacity * sizeof *names);
                if (names == NULL)
                    return -1;
                t->tool_names = names;
                uint8_t *exempt = PyMem_Realloc(t->tool_exempt, capacity);
                if (exempt == NULL)
                    return -1;
                t->tool_exempt = exempt;
                uint32_t *users = PyMem_Realloc(t->tool_users, capacity * sizeof *users);
                if (users == NULL)
                    return -1;
                t->tool_users = users;
                t->tools_capacity = capacity;
            }
            number = t->tools_used;
        }
        PyObject *value = PyLong_FromUnsignedLong(number);
        if (value == NULL)
            return -1;
        int failed = PyDict_SetItem(t->tool_numbers, tool, value);
        Py_DECREF(value);
        if (failed)
            return -1;
        if (number == t->free_tool)
            t->free_tool = t->tool_users[number];
        else
            t->tools_used++;
        t->tool_names[number] = Py_NewRef(tool);
        t->tool_users[number] = 0;
        t->tool_exempt[number] = 0;
    }
    PyObject *last = t->last_tool;
    t->last_tool = Py_NewRef(tool);
    t->last_tool_number = number;
    Py_XDECREF(last);
    t->tool_users[number]++;
    return number;
}

static void tool_release(SessionSlots *t, uint32_t number)
{
    if (--t->tool_users[number])
        return;
    PyObject *name = t->tool_names[number];
    if (PyDict_DelItem(t->tool_numbers, name) < 0)
        PyErr_Clear(); /* a str key that is there: cannot fail */
    if (t->last_tool != NULL && t->last_tool_number == number) {
        Py_CLEAR(t->last_tool);
    }
    t->tool_names[number] = NULL;
    t->tool_users[number] = t->free_tool;
    t->free_tool = number;
    Py_DECREF(name);
}

/* ---- entries ---------------------------------------------------------------- */

static void lru_unlink(SessionSlots *t, uint32_t n)
{
    Entry *e = &t->entries[n];
    if (e->older != SLOT_NIL)
        t->entries[e->older].newer = e->newer;
    else
        t->oldest = e->newer;
    if (e->newer != SLOT_NIL)
        t->entries[e->newer].older = e->older;
    else
        t->newest = e->older;
}

static void lru_append(SessionSlots *t, uint32_t n)
{
    Entry *e = &t->entries[n];
    e->older = t->newest;
    e->newer = SLOT_NIL;
    if (t->newest != SLOT_NIL)
        t->entries[t->newest].newer = n;
    else
        t->oldest = n;
    t->newest = n;
}

/* Forget entry n, found at index position where; its id object (if any) is returned
 * for the caller to release once the table is consistent. */
static PyObject *entry_remove(SessionSlots *t, uint32_t n, size_t where)
{
    Entry *e = &t->entries[n];
    PyObject *object = stored_object(t, e);
    if (t->max_sessions)
        lru_unlink(t, n);
    t->index[where] = INDEX_DUMMY;
    t->dummies++;
    t->garbage += e->key_size + ID_SIZE(e->id);
    if (t->config.on)
        policy_forget(t, n);
    tool_release(t, e->tool);
    e->data = ENTRY_FREE;
    e->newer = t->free_entry;
    t->free_entry = n;
    t->live--;
    return object;
}

/* The index position of entry n (it is in the index). */
static size_t position_of(SessionSlots *t, uint32_t n)
{
    size_t mask = t->mask, i = t->entries[n].hash & mask, perturb = t->entries[n].hash;
    while (t->index[i] != n)
        PROBE_NEXT(i, perturb, mask);
    return i;
}

/* A Slot(digest, count, call_id, tool), as step makes it. */
static PyObject *make_slot(SessionSlots *t, PyObject *digest, uint64_t count, PyObject *call_id,
                           PyObject *tool)
{
    PyObject *number = PyLong_FromUnsignedLongLong(count);
    if (number == NULL)
        return NULL;
    PyObject *slot = t->slot_alloc((PyTypeObject *)t->slot_type, 4);
    if (slot == NULL) {
        Py_DECREF(number);
        return NULL;
    }
    PyTuple_SetItem(slot, 0, Py_NewRef(digest)); /* steals; cannot fail on a new tuple */
    PyTuple_SetItem(slot, 1, number);
    PyTuple_SetItem(slot, 2, Py_NewRef(call_id));
    PyTuple_SetItem(slot, 3, Py_NewRef(tool));
    return slot;
}

/* The Slot an entry holds (a new reference). */
static PyObject *entry_slot(SessionSlots *t, const Entry *e)
{
    PyObject *digest = PyBytes_FromStringAndSize((const char *)e->digest, 32);
    if (digest == NULL)
        return NULL;
    PyObject *call_id = stored_id(t, e);
    if (call_id == NULL) {
        Py_DECREF(digest);
        return NULL;
    }
    PyObject *slot = make_slot(t, digest, e->count, call_id, t->tool_names[e->tool]);
    Py_DECREF(digest);
    Py_DECREF(call_id);
    return slot;
}

/* The session's key: its bytes and hash. */
static int session_key(PyObject *session, IdBytes *key, uint32_t *hash)
{
    if (!PyUnicode_CheckExact(session)) {
        PyErr_SetString(PyExc_TypeError, "the session must be a str");
        return -1;
    }
    Py_hash_t full = PyObject_Hash(session);
    if (full == -1)
        return -1;
    *hash = (uint32_t)(size_t)full;
    if (text_bytes(session, key) < 0)
        return -1;
    if (key->size > UINT32_MAX) {
        id_release(key);
        PyErr_SetString(PyExc_ValueError, "session key too long");
        return -1;
    }
    return 0;
}

/* Room for one more entry: in the index and in the array. */
static int entries_reserve(SessionSlots *t)
{
    if ((t->live + t->dummies + 1) * 3 > (t->mask + 1) * 2 && index_rebuild(t, t->live) < 0)
        return -1;
    if (t->free_entry != SLOT_NIL || t->used < t->capacity)
        return 0;
    if (t->capacity >= MAX_ENTRIES) {
        PyErr_SetString(PyExc_OverflowError, "too many sessions");
        return -1;
    }
    uint32_t capacity = t->capacity ? (t->capacity > MAX_ENTRIES / 2 ? MAX_ENTRIES : t->capacity * 2)
                                    : 64;
    Entry *grown = PyMem_Realloc(t->entries, (size_t)capacity * sizeof(Entry));
    if (grown == NULL)
        return -1;
    t->entries = grown;
    if (t->config.on) {
        PolicyEntry *states = PyMem_Realloc(t->policy, (size_t)capacity * sizeof(PolicyEntry));
        if (states == NULL)
            return -1;
        t->policy = states;
    }
    t->capacity = capacity;
    return 0;
}

/* count_call for a session the table lacks: a new entry at count 1. */
static int add_entry(SessionSlots *t, size_t where, uint32_t hash, const IdBytes *key,
                     const unsigned char *digest, const IdBytes *id, PyObject *tool)
{
    int64_t tool_number = tool_acquire(t, tool);
    if (tool_number < 0)
        return -1;
    if (arena_reserve(t, key->size + id->size) < 0) {
        tool_release(t, (uint32_t)tool_number);
        PyErr_NoMemory();
        return -1;
    }
    uint32_t n = t->free_entry;
    if (n != SLOT_NIL)
        t->free_entry = t->entries[n].newer;
    else
        n = t->used++;
    Entry *e = &t->entries[n];
    memcpy(e->digest, digest, 32);
    e->count = 1;
    e->data = t->arena_used;
    memcpy(t->arena + t->arena_used, key->bytes, key->size);
    if (id->size)
        memcpy(t->arena + t->arena_used + key->size, id->bytes, id->size);
    t->arena_used += key->size + id->size;
    e->hash = hash;
    e->key_size = (uint32_t)key->size;
    e->id = (id->kind << 30) | (uint32_t)id->size;
    e->tool = (uint32_t)tool_number;
    if (id->kind == ID_OBJ)
        Py_INCREF(id->object);
    if (t->index[where] == INDEX_DUMMY)
        t->dummies--;
    t->index[where] = n;
    t->live++;
    if (t->max_sessions)
        lru_append(t, n);
    return 0;
}

/* count_call for a session the table holds, not a duplicate: step's new slot. The
 * replaced id object (if any) is left in *old for the caller to release. */
static int update_entry(SessionSlots *t, uint32_t n, const unsigned char *digest,
                        const IdBytes *id, PyObject *tool, PyObject **old)
{
    int64_t tool_number = tool_acquire(t, tool);
    if (tool_number < 0)
        return -1;
    Entry *e = &t->entries[n];
    size_t had = ID_SIZE(e->id);
    *old = stored_object(t, e);
    if (id->size > had) { /* the key and the id move to the arena's end */
        if (arena_reserve(t, e->key_size + id->size) < 0) {
            tool_release(t, (uint32_t)tool_number);
            *old = NULL;
            PyErr_NoMemory();
            return -1;
        }
        memcpy(t->arena + t->arena_used, t->arena + e->data, e->key_size);
        t->garbage += e->key_size + had;
        e->data = t->arena_used;
        t->arena_used += e->key_size + id->size;
    }
    else {
        t->garbage += had - id->size;
    }
    if (id->size)
        memcpy(t->arena + e->data + e->key_size, id->bytes, id->size);
    e->id = (id->kind << 30) | (uint32_t)id->size;
    if (id->kind == ID_OBJ)
        Py_INCREF(id->object);
    e->count = memcmp(e->digest, digest, 32) == 0 ? e->count + 1 : 1;
    memcpy(e->digest, digest, 32);
    tool_release(t, e->tool);
    e->tool = (uint32_t)tool_number;
    return 0;
}

static const char *const COUNT_CALL_NAMES[] = {"session", "tool", "digest", "call_id",
                                               "max_repeats", "policy", "now"};

/* count_call(session, tool, digest, call_id=None, max_repeats=0, policy=None, now=None)
 * -> (Slot, duplicate): the SessionTable method (core/table.py), without a policy. */
static PyObject *slots_count_call(SessionSlots *t, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames)
{
    PyObject *given[7] = {NULL, NULL, NULL, Py_None, NULL, Py_None, Py_None};
    if (nargs > 7) {
        PyErr_SetString(PyExc_TypeError, "count_call() takes at most 7 arguments");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        given[i] = args[i];
    Py_ssize_t keywords = kwnames ? PyTuple_Size(kwnames) : 0;
    for (Py_ssize_t k = 0; k < keywords; k++) {
        const char *name = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(kwnames, k), NULL);
        if (name == NULL)
            return NULL;
        int i = 0;
        while (i < 7 && strcmp(name, COUNT_CALL_NAMES[i]) != 0)
            i++;
        if (i == 7 || i < nargs) {
            PyErr_Format(PyExc_TypeError, "count_call() got an unexpected argument '%s'", name);
            return NULL;
        }
        given[i] = args[nargs + k];
    }
    if (given[0] == NULL || given[1] == NULL || given[2] == NULL) {
        PyErr_SetString(PyExc_TypeError, "count_call() needs session, tool and digest");
        return NULL;
    }
    if (given[5] != Py_None || t->config.on) {
        PyErr_SetString(PyExc_ValueError,
                        "count_call counts the seed's rule only: a policy's state needs "
                        "core.table.MemoryTable, or a policy table's policy_call");
        return NULL;
    }
    PyObject *session = given[0], *tool = given[1], *digest = given[2], *call_id = given[3];
    if (!PyBytes_Check(digest) || PyBytes_Size(digest) != 32) {
        PyErr_SetString(PyExc_TypeError, "the digest must be 32 bytes");
        return NULL;
    }
    if (t->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the session table is in use (reentered)");
        return NULL;
    }
    IdBytes key, id;
    uint32_t hash;
    if (session_key(session, &key, &hash) < 0)
        return NULL;
    if (id_bytes(call_id, &id) < 0) {
        id_release(&key);
        return NULL;
    }
    t->busy = 1;
    PyObject *slot = NULL, *old = NULL, *evicted = NULL;
    int duplicate = 0;
    const unsigned char *sum = (const unsigned char *)PyBytes_AsString(digest);
    size_t where;
    uint32_t n = find(t, hash, key.bytes, key.size, &where);
    if (n == SLOT_NIL) {
        uint32_t *index = t->index;
        if (entries_reserve(t) < 0) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            goto done;
        }
        if (t->index != index) /* rebuilt: the key goes elsewhere */
            find(t, hash, key.bytes, key.size, &where);
        if (add_entry(t, where, hash, &key, sum, &id, tool) < 0)
            goto done;
        if (t->max_sessions && (Py_ssize_t)t->live > t->max_sessions) {
            uint32_t oldest = t->oldest;
            evicted = entry_remove(t, oldest, position_of(t, oldest));
            t->evictions++;
        }
        slot = make_slot(t, digest, 1, call_id, tool);
        goto done;
    }
    if (t->max_sessions && t->newest != n) { /* a use, a duplicate's too */
        lru_unlink(t, n);
        lru_append(t, n);
    }
    int same = same_id(t, &t->entries[n], &id);
    if (same < 0)
        goto done;
    if (same) {
        duplicate = 1;
        slot = entry_slot(t, &t->entries[n]);
        goto done;
    }
    if (update_entry(t, n, sum, &id, tool, &old) < 0)
        goto done;
    slot = make_slot(t, digest, t->entries[n].count, call_id, tool);
done:
    t->busy = 0;
    id_release(&key);
    id_release(&id);
    Py_XDECREF(old);
    Py_XDECREF(evicted);
    if (slot == NULL)
        return NULL;
    PyObject *answer = PyTuple_New(2);
    if (answer == NULL) {
        Py_DECREF(slot);
        return NULL;
    }
    PyTuple_SetItem(answer, 0, slot);
    PyTuple_SetItem(answer, 1, Py_NewRef(duplicate ? Py_True : Py_False));
    return answer;
}

/* The entry number of a session (SLOT_NIL: none) and its index position; -1 on an error. */
static int lookup(SessionSlots *t, PyObject *session, uint32_t *n, size_t *where)
{
    IdBytes key;
    uint32_t hash;
    if (session_key(session, &key, &hash) < 0)
        return -1;
    *n = find(t, hash, key.bytes, key.size, where);
    id_release(&key);
    return 0;
}

/* end_call(session, call_id, now=None) -> bool: the call ended, its id may count again
 * (streak.call_ended); an end is not a use, so the LRU order stays. */
static PyObject *slots_end_call(SessionSlots *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "end_call() takes session, call_id[, now]");
        return NULL;
    }
    if (args[1] == Py_None)
        Py_RETURN_FALSE;
    if (t->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the session table is in use (reentered)");
        return NULL;
    }
    uint32_t n;
    size_t where;
    if (lookup(t, args[0], &n, &where) < 0)
        return NULL;
    if (n == SLOT_NIL)
        Py_RETURN_FALSE;
    IdBytes id;
    if (id_bytes(args[1], &id) < 0)
        return NULL;
    t->busy = 1;
    int same = same_id(t, &t->entries[n], &id);
    t->busy = 0;
    id_release(&id);
    if (same <= 0)
        return same < 0 ? NULL : Py_NewRef(Py_False);
    Entry *e = &t->entries[n];
    PyObject *object = stored_object(t, e);
    t->garbage += ID_SIZE(e->id);
    e->id = 0;
    Py_XDECREF(object);
    Py_RETURN_TRUE;
}

/* Every entry forgotten, the memory given back; the id objects held are returned in a
 * list to release once the table is consistent (NULL on an error: nothing changed). */
static int slots_clear(SessionSlots *t, PyObject **held)
{
    uint32_t *index = PyMem_Malloc(8 * sizeof(uint32_t));
    PyObject *objects = PyList_New(0);
    if (index == NULL || objects == NULL) {
        PyMem_Free(index);
        Py_XDECREF(objects);
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t n = 0; n < t->used; n++) {
        Entry *e = &t->entries[n];
        if (t->config.on && e->data != ENTRY_FREE) {
            PyMem_Free(t->policy[n].history); /* its tools go with every name, below */
            t->policy[n].history = NULL;
        }
        PyObject *object = e->data == ENTRY_FREE ? NULL : stored_object(t, e);
        if (object != NULL) {
            PyList_Append(objects, object); /* on failure: a reference kept, not freed */
            Py_DECREF(object);
        }
    }
    memset(index, 0xFF, 8 * sizeof(uint32_t));
    PyMem_Free(t->index);
    t->index = index;
    t->mask = 7;
    t->dummies = 0;
    PyMem_Free(t->entries);
    t->entries = NULL;
    PyMem_Free(t->policy);
    t->policy = NULL;
    t->used = t->capacity = t->live = 0;
    t->free_entry = t->oldest = t->newest = SLOT_NIL;
    PyMem_Free(t->arena);
    t->arena = NULL;
    t->arena_used = t->arena_size = t->garbage = 0;
    for (uint32_t i = 0; i < t->tools_used; i++)
        Py_XDECREF(t->tool_names[i]); /* str: releasing one runs no code */
    PyMem_Free(t->tool_names);
    PyMem_Free(t->tool_users);
    PyMem_Free(t->tool_exempt);
    t->tool_exempt = NULL;
    t->tool_names = NULL;
    t->tool_users = NULL;
    t->tools_used = t->tools_capacity = 0;
    t->free_tool = SLOT_NIL;
    Py_CLEAR(t->last_tool);
    PyDict_Clear(t->tool_numbers);
    *held = objects;
    return 0;
}

/* reset(session=None) -> int: forget one session or all; how many were removed. */
static PyObject *slots_reset(SessionSlots *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "reset() takes at most one argument");
        return NULL;
    }
    if (t->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the session table is in use (reentered)");
        return NULL;
    }
    if (nargs == 0 || args[0] == Py_None) {
        uint32_t removed = t->live;
        PyObject *held;
        if (slots_clear(t, &held) < 0)
            return NULL;
        Py_DECREF(held);
        return PyLong_FromUnsignedLong(removed);
    }
    uint32_t n;
    size_t where;
    if (lookup(t, args[0], &n, &where) < 0)
        return NULL;
    if (n == SLOT_NIL)
        return PyLong_FromLong(0);
    Py_XDECREF(entry_remove(t, n, where));
    return PyLong_FromLong(1);
}

/* get(session) -> Slot | None: the session's slot (for tests and for reading). */
static PyObject *slots_get(SessionSlots *t, PyObject *session)
{
    uint32_t n;
    size_t where;
    if (lookup(t, session, &n, &where) < 0)
        return NULL;
    if (n == SLOT_NIL)
        Py_RETURN_NONE;
    return entry_slot(t, &t->entries[n]);
}

/* sessions() -> list[str]: the keys held, oldest use first when bounded. */
static PyObject *slots_sessions(SessionSlots *t, PyObject *unused)
{
    PyObject *keys = PyList_New(0);
    if (keys == NULL)
        return NULL;
    uint32_t n = t->max_sessions ? t->oldest : 0;
    for (;;) {
        if (t->max_sessions ? n == SLOT_NIL : n >= t->used)
            break;
        const Entry *e = &t->entries[n];
        if (e->data != ENTRY_FREE) {
            PyObject *key = PyUnicode_DecodeUTF8((const char *)t->arena + e->data,
                                                 (Py_ssize_t)e->key_size, "surrogatepass");
            if (key == NULL || PyList_Append(keys, key) < 0) {
                Py_XDECREF(key);
                Py_DECREF(keys);
                return NULL;
            }
            Py_DECREF(key);
        }
        n = t->max_sessions ? e->newer : n + 1;
    }
    return keys;
}

static Py_ssize_t slots_length(SessionSlots *t)
{
    return (Py_ssize_t)t->live;
}

static PyObject *slots_evictions(SessionSlots *t, void *closure)
{
    return PyLong_FromSsize_t(t->evictions);
}

static PyObject *slots_max_sessions(SessionSlots *t, void *closure)
{
    if (!t->max_sessions)
        Py_RETURN_NONE;
    return PyLong_FromSsize_t(t->max_sessions);
}

#include "_policy_slots.h"

static PyObject *slots_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"slot_type", "max_sessions", "policy", NULL};
    PyObject *slot_type, *bound = Py_None, *rules = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:SessionSlots", names, &slot_type,
                                     &bound, &rules))
        return NULL;
    PolicyConfig config;
    if (policy_config(rules, &config) < 0)
        return NULL;
    if (!PyType_Check(slot_type) || !PyType_IsSubtype((PyTypeObject *)slot_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "slot_type must be a tuple type (streak.Slot)");
        return NULL;
    }
    Py_ssize_t max_sessions = 0;
    if (bound != Py_None) {
        max_sessions = PyLong_AsSsize_t(bound);
        if (max_sessions == -1 && PyErr_Occurred())
            return NULL;
        if (max_sessions < 1) {
            PyErr_SetString(PyExc_ValueError, "max_sessions must be at least 1");
            return NULL;
        }
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    SessionSlots *t = (SessionSlots *)alloc(type, 0);
    if (t == NULL)
        return NULL;
    t->slot_type = Py_NewRef(slot_type);
    t->slot_alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)slot_type, Py_tp_alloc);
    t->max_sessions = max_sessions;
    t->config = config;
    t->free_entry = t->oldest = t->newest = t->free_tool = SLOT_NIL;
    t->tool_numbers = PyDict_New();
    t->index = PyMem_Malloc(8 * sizeof(uint32_t));
    if (t->tool_numbers == NULL || t->index == NULL || t->slot_alloc == NULL) {
        Py_DECREF(t);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    memset(t->index, 0xFF, 8 * sizeof(uint32_t));
    t->mask = 7;
    return (PyObject *)t;
}

static void slots_dealloc(SessionSlots *t)
{
    PyTypeObject *type = Py_TYPE(t);
    PyObject *held = NULL;
    if (t->index != NULL && slots_clear(t, &held) < 0)
        PyErr_Clear();
    Py_XDECREF(held);
    PyMem_Free(t->index);
    Py_XDECREF(t->tool_numbers);
    Py_XDECREF(t->slot_type);
    freefunc free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free(t);
    Py_DECREF(type);
}

static PyMethodDef slots_methods[] = {
    {"count_call", (PyCFunction)(void (*)(void))slots_count_call, METH_FASTCALL | METH_KEYWORDS,
     "count_call(session, tool, digest, call_id=None, max_repeats=0, policy=None, now=None)"
     " -> (Slot, duplicate)\n\nCount one call by streak.step (no policy)."},
    {"end_call", (PyCFunction)(void (*)(void))slots_end_call, METH_FASTCALL,
     "end_call(session, call_id, now=None) -> bool\n\nThe call ended: its id may count again."},
    {"reset", (PyCFunction)(void (*)(void))slots_reset, METH_FASTCALL,
     "reset(session=None) -> int\n\nForget one session or all; how many were removed."},
    {"get", (PyCFunction)slots_get, METH_O, "get(session) -> Slot | None"},
    {"policy_call", (PyCFunction)(void (*)(void))slots_policy_call, METH_FASTCALL,
     "policy_call(session, tool, digest, call_id, plan) -> int\n\nCount one call under the "
     "table's policy (_policy_slots.h): -2 a duplicate, -1 a line for the exact writer, "
     "else the key of its verdict line."},
    {"policy_state", (PyCFunction)slots_policy_state, METH_O,
     "policy_state(session) -> tuple | None\n\nThe session's policy state as plain values."},
    {"sessions", (PyCFunction)slots_sessions, METH_NOARGS,
     "sessions() -> list[str]\n\nThe sessions held (least recently used first when bounded)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef slots_getset[] = {
    {"evictions", (getter)slots_evictions, NULL, "sessions evicted by max_sessions", NULL},
    {"max_sessions", (getter)slots_max_sessions, NULL, "the bound, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot slots_type_slots[] = {
    {Py_tp_new, slots_new},
    {Py_tp_dealloc, slots_dealloc},
    {Py_tp_methods, slots_methods},
    {Py_tp_getset, slots_getset},
    {Py_sq_length, slots_length},
    {Py_mp_length, slots_length},
    {Py_tp_doc, "SessionSlots(slot_type, max_sessions=None)\n\nfilter's session table "
                "(core/table.py's MemoryTable, LRU when bounded), compact: see "
                "_session_slots.h."},
    {0, NULL},
};

static PyType_Spec slots_type_spec = {
    "loop_brake_cli.readers._event_scan.SessionSlots",
    sizeof(SessionSlots),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    slots_type_slots,
};
