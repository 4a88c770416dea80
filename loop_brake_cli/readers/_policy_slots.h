/* A policy's rule step in C (issue 41 goal 1), included by _session_slots.h.
 *
 * core/streak.py's policy_step for the policies filter's fast path reads (no
 * results, no user turns: no progress mode, no [same_error], no [same_result]):
 * the counting (step: the duplicate rule, the streak), the call's tool rule (its
 * limit, exempt, warn_at: handed in per call as a plan the caller took from
 * streak.tool_rule), then streak, cycle, window, stop and warn, in that order. The
 * rules' numbers are fixed when the table is made (readers/policy_table.py decides
 * once per policy whether this step covers it, else the dict and policy_step count).
 *
 * Per session the entry keeps the streak (Entry) and a PolicyEntry: the decision
 * of its latest counted call, and from its second call on a block of
 *
 *     runs[max_period - 1]   uint64: cycles.advance's runs (with [cycles])
 *     digests[depth][32]     the earlier counted calls' digests, a ring, oldest at head
 *     tools[depth]           uint32: their tool numbers (with [cycles]), each holding a use
 *
 * where depth = max(window calls, max_period) - 1 <= 63: the latest call's digest is
 * the entry's own, so the last max_period (the cycle window) and the last `calls`
 * (the window) counted calls are always at hand. Every size is fixed by the policy
 * (load.py bounds max_period by 16 and calls by 64; policy_table.py checks again).
 *
 * policy_call answers an int, so the hot loop makes no PolicySlot: -2 a duplicate
 * (the session's state is the counted call's), -1 a call whose verdict line the
 * exact writer writes (a cycle's denial, which names the cycle's calls, or numbers
 * past the key's fields), else a key that, with the tool, fixes every byte of the
 * verdict line but the line number, session, call id and hash prefix (the count,
 * denials, repeats, rule, whether the window decided, denied, warned). policy_state
 * gives the whole state back as plain values for policy_table.py to build the
 * PolicySlot that policy_step would have returned. */

#define RULE_STREAK 0
#define RULE_CYCLE 1
#define RULE_WINDOW 2
#define RULE_STOP 3
#define PF_DENIED 1u
#define PF_EXEMPT 2u
#define PF_WARNED 4u
#define POLICY_DUPLICATE (-2)
#define POLICY_EXACT (-1)
#define POLICY_MAX_PERIOD 16
#define POLICY_MAX_WINDOW 64
#define POLICY_INT_BOUND ((int64_t)1 << 62) /* every number handed in is within +-this */

static size_t history_bytes(const PolicyConfig *c)
{
    return c->tools_at + (c->max_period ? (size_t)c->depth * sizeof(uint32_t) : 0);
}

static uint64_t *history_runs(unsigned char *h)
{
    return (uint64_t *)h;
}

/* Ring position of the i-th most recent earlier call (i = 1: the newest held; i = 0:
 * where the next goes while the ring is not full). head < depth and i <= held <= depth,
 * so head + held - i lies in [0, 2 * depth): one subtraction, no division. */
static inline uint32_t ring_at(const PolicyConfig *c, const PolicyEntry *p, uint32_t i)
{
    uint32_t at = (uint32_t)p->head + p->held - i;
    return at >= c->depth ? at - c->depth : at;
}

static inline unsigned char *history_digest(const PolicyConfig *c, unsigned char *h,
                                            uint32_t at)
{
    return h + c->digests_at + (size_t)at * 32;
}

static inline uint32_t *history_tool(const PolicyConfig *c, unsigned char *h, uint32_t at)
{
    return (uint32_t *)(h + c->tools_at) + at;
}

/* An entry's policy state forgotten: its block freed, the tools it held released. */
static void policy_forget(SessionSlots *t, uint32_t n)
{
    PolicyEntry *p = &t->policy[n];
    const PolicyConfig *c = &t->config;
    if (p->history != NULL && c->max_period) {
        for (uint32_t i = 1; i <= p->held; i++)
            tool_release(t, *history_tool(c, p->history, ring_at(c, p, i)));
    }
    PyMem_Free(p->history);
    p->history = NULL;
    p->held = 0;
}

/* cycles.advance's runs after a call with digest d, before the ring takes the
 * latest call: the call p before d is the latest (p = 1) or an earlier one. */
static void advance_runs(const PolicyConfig *c, PolicyEntry *p, const unsigned char *d)
{
    uint64_t *runs = history_runs(p->history);
    for (uint32_t period = 2; period <= c->max_period; period++) {
        uint32_t back = period - 1; /* the call `period` before d is earlier call `back` */
        int same = back <= p->held &&
                   memcmp(history_digest(c, p->history, ring_at(c, p, back)), d, 32) == 0;
        runs[period - 2] = same ? runs[period - 2] + 1 : 0;
    }
}

/* The latest call (its digest, and its tool, whose use passes to the ring) becomes
 * the newest earlier call; the oldest goes when the ring is full. */
static void ring_push(SessionSlots *t, PolicyEntry *p, const unsigned char *digest,
                      uint32_t tool)
{
    const PolicyConfig *c = &t->config;
    uint32_t at;
    if (p->held == c->depth) {
        at = p->head;
        if (c->max_period)
            tool_release(t, *history_tool(c, p->history, at));
        p->head = (uint8_t)((uint32_t)p->head + 1u == c->depth ? 0u : p->head + 1u);
    }
    else {
        at = ring_at(c, p, 0);
        p->held++;
    }
    memcpy(history_digest(c, p->history, at), digest, 32);
    if (c->max_period)
        *history_tool(c, p->history, at) = tool;
    else
        tool_release(t, tool);
}

/* cycles.find_cycle over the latest max_period calls (the latest is d, of a tool
 * that is not exempt): the shortest period whose run reached max_repeats
 * repetitions, with two distinct digests and no exempt tool; 0 when none. */
static uint32_t find_cycle(SessionSlots *t, const PolicyEntry *p, const unsigned char *d,
                           uint64_t *repeats)
{
    const PolicyConfig *c = &t->config;
    if (p->history == NULL)
        return 0;
    const uint64_t *runs = history_runs(p->history);
    for (uint32_t period = 2; period <= c->max_period; period++) {
        uint64_t run = runs[period - 2];
        if (run < period || period - 1 > p->held) /* a run of period holds the period */
            continue;
        uint64_t found = (run + period) / period;
        if ((int64_t)found < c->cycle_max) /* found <= count of calls < 2**62 */
            continue;
        int distinct = 0, exempt = 0;
        for (uint32_t i = 1; i < period; i++) {
            uint32_t at = ring_at(c, p, i);
            distinct |= memcmp(history_digest(c, p->history, at), d, 32) != 0;
            exempt |= t->tool_exempt[*history_tool(c, p->history, at)];
        }
        if (!distinct || exempt)
            continue;
        *repeats = found;
        return period;
    }
    return 0;
}

/* The window's count of d among the latest `calls` counted calls, d included. */
static uint64_t window_times(const PolicyConfig *c, const PolicyEntry *p, const unsigned char *d)
{
    uint64_t times = 1;
    uint32_t earlier = c->window_calls - 1;
    if (p->history == NULL)
        return times;
    if (earlier > p->held)
        earlier = p->held;
    for (uint32_t i = 1; i <= earlier; i++)
        times += memcmp(history_digest(c, p->history, ring_at(c, p, i)), d, 32) == 0;
    return times;
}

/* policy_step's rules for entry n, counted at `count`, after the ring took the
 * previous call: the decision, kept in the entry. */
static void policy_decide(SessionSlots *t, uint32_t n, uint64_t count, int64_t limit,
                          int exempt, int warns, int64_t warn_at, uint64_t prev_denials)
{
    const PolicyConfig *c = &t->config;
    PolicyEntry *p = &t->policy[n];
    const unsigned char *d = t->entries[n].digest;
    int denied = !exempt && (int64_t)count >= limit; /* streak */
    uint8_t rule = RULE_STREAK;
    int64_t rule_limit = limit;
    uint64_t repeats = 0;
    uint32_t period = 0;
    int window_on = 0;
    if (c->max_period && !denied && !exempt) { /* cycle */
        period = find_cycle(t, p, d, &repeats);
        if (period) {
            denied = 1;
            rule = RULE_CYCLE;
            rule_limit = c->cycle_max;
        }
    }
    if (c->window_calls && !denied && !exempt) { /* window */
        uint64_t times = window_times(c, p, d);
        if ((int64_t)times >= c->window_max) {
            denied = 1;
            rule = RULE_WINDOW;
            rule_limit = c->window_max;
            window_on = 1;
            repeats = times;
        }
    }
    uint64_t denials = denied ? prev_denials + 1 : 0; /* stop */
    if (denied && c->has_stop && (int64_t)denials >= c->stop_after) {
        rule = RULE_STOP;
        rule_limit = c->stop_after;
    }
    int warned = warns && !denied && !exempt && (int64_t)count >= warn_at; /* warn */
    p->flags = (uint8_t)((denied ? PF_DENIED : 0) | (exempt ? PF_EXEMPT : 0) |
                         (warned ? PF_WARNED : 0));
    p->rule = rule;
    p->rule_limit = rule_limit;
    p->call_limit = limit;
    p->warn_at = warn_at;
    p->repeats = repeats;
    p->denials = denials;
    p->period = (uint8_t)period;
    p->window_on = (uint8_t)window_on;
}

/* The key of entry n's decision (the header's comment), or POLICY_EXACT. */
static long long policy_key(const SessionSlots *t, uint32_t n)
{
    const PolicyEntry *p = &t->policy[n];
    uint64_t count = t->entries[n].count;
    if (p->period || count >> 31 || p->denials >> 20 || p->repeats >> 7)
        return POLICY_EXACT;
    uint64_t key = count | p->denials << 31 | p->repeats << 51 | (uint64_t)p->rule << 58 |
                   (uint64_t)p->window_on << 60 | (uint64_t)(p->flags & PF_DENIED) << 61 |
                   (uint64_t)((p->flags & PF_WARNED) != 0) << 62;
    return (long long)key; /* 63 bits: never negative */
}

/* An int within POLICY_INT_BOUND, or -1 with an error set. */
static int bounded_int(PyObject *value, int64_t *out, const char *what)
{
    long long number = PyLong_AsLongLong(value);
    if (number == -1 && PyErr_Occurred())
        return -1;
    if (number <= -POLICY_INT_BOUND || number >= POLICY_INT_BOUND) {
        PyErr_Format(PyExc_ValueError, "%s is out of the C step's range", what);
        return -1;
    }
    *out = (int64_t)number;
    return 0;
}

/* policy_call(session, tool, digest, call_id, plan) -> int: count one call under the
 * table's policy; plan = (limit, exempt, warn_at or None) of the call's tool
 * (streak.tool_rule: the limit is the brake's max_repeats for an exempt tool or
 * one without its own). The answer: the header's comment. */
static PyObject *slots_policy_call(SessionSlots *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "policy_call() takes session, tool, digest, call_id and plan");
        return NULL;
    }
    if (!t->config.on) {
        PyErr_SetString(PyExc_ValueError, "this table was made without a policy");
        return NULL;
    }
    PyObject *session = args[0], *tool = args[1], *digest = args[2], *call_id = args[3];
    PyObject *plan = args[4];
    if (!PyBytes_Check(digest) || PyBytes_Size(digest) != 32) {
        PyErr_SetString(PyExc_TypeError, "the digest must be 32 bytes");
        return NULL;
    }
    if (!PyTuple_Check(plan) || PyTuple_Size(plan) != 3) {
        PyErr_SetString(PyExc_TypeError, "the plan must be (limit, exempt, warn_at)");
        return NULL;
    }
    int64_t limit, warn_at = 0;
    if (bounded_int(PyTuple_GetItem(plan, 0), &limit, "the limit") < 0)
        return NULL;
    int exempt = PyObject_IsTrue(PyTuple_GetItem(plan, 1));
    if (exempt < 0)
        return NULL;
    PyObject *warn = PyTuple_GetItem(plan, 2);
    int warns = warn != Py_None;
    if (warns && bounded_int(warn, &warn_at, "warn_at") < 0)
        return NULL;
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
    PyObject *old = NULL, *evicted = NULL;
    long long answer = 0;
    int failed = 1;
    const PolicyConfig *c = &t->config;
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
        n = t->index[where]; /* where add_entry put it */
        memset(&t->policy[n], 0, sizeof(PolicyEntry));
        t->tool_exempt[t->entries[n].tool] = (uint8_t)exempt;
        policy_decide(t, n, 1, limit, exempt, warns, warn_at, 0);
        answer = policy_key(t, n);
        if (t->max_sessions && (Py_ssize_t)t->live > t->max_sessions) {
            uint32_t oldest = t->oldest;
            evicted = entry_remove(t, oldest, position_of(t, oldest));
            t->evictions++;
        }
        failed = 0;
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
        answer = POLICY_DUPLICATE;
        failed = 0;
        goto done;
    }
    PolicyEntry *p = &t->policy[n];
    if (c->depth && p->history == NULL) {
        p->history = PyMem_Calloc(1, history_bytes(c));
        if (p->history == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        p->held = p->head = 0;
    }
    unsigned char latest[32];
    Entry *e = &t->entries[n];
    uint32_t latest_tool = e->tool;
    memcpy(latest, e->digest, 32);
    uint64_t prev_denials = p->denials;
    t->tool_users[latest_tool]++; /* the latest call's tool, held for the ring */
    if (update_entry(t, n, sum, &id, tool, &old) < 0) {
        tool_release(t, latest_tool);
        goto done;
    }
    e = &t->entries[n];
    t->tool_exempt[e->tool] = (uint8_t)exempt;
    if (c->depth) {
        if (c->max_period)
            advance_runs(c, p, sum);
        ring_push(t, p, latest, latest_tool);
    }
    else {
        tool_release(t, latest_tool);
    }
    policy_decide(t, n, e->count, limit, exempt, warns, warn_at, prev_denials);
    answer = policy_key(t, n);
    failed = 0;
done:
    t->busy = 0;
    id_release(&key);
    id_release(&id);
    Py_XDECREF(old);
    Py_XDECREF(evicted);
    if (failed)
        return NULL;
    return PyLong_FromLongLong(answer);
}

/* policy_state(session) -> None | (digest, count, call_id, tool, flags, rule,
 * rule_limit, call_limit, warn_at, period, repeats, denials, window_on, digests,
 * tools, runs): the session's state as plain values, the counted calls' digests
 * (and tools, and the cycle runs, with [cycles]) oldest first, the latest last. */
static PyObject *slots_policy_state(SessionSlots *t, PyObject *session)
{
    if (!t->config.on) {
        PyErr_SetString(PyExc_ValueError, "this table was made without a policy");
        return NULL;
    }
    uint32_t n;
    size_t where;
    if (lookup(t, session, &n, &where) < 0)
        return NULL;
    if (n == SLOT_NIL)
        Py_RETURN_NONE;
    const PolicyConfig *c = &t->config;
    const Entry *e = &t->entries[n];
    const PolicyEntry *p = &t->policy[n];
    uint32_t held = p->history == NULL ? 0 : p->held;
    PyObject *digests = PyTuple_New((Py_ssize_t)held + 1);
    PyObject *tools = PyTuple_New(c->max_period ? (Py_ssize_t)held + 1 : 0);
    PyObject *runs = PyTuple_New(c->max_period ? (Py_ssize_t)c->max_period - 1 : 0);
    PyObject *call_id = stored_id(t, e);
    if (digests == NULL || tools == NULL || runs == NULL || call_id == NULL)
        goto failed;
    for (uint32_t i = 0; i <= held; i++) { /* oldest first: earlier call held - i */
        const unsigned char *d = i == held
                                     ? e->digest
                                     : history_digest(c, p->history, ring_at(c, p, held - i));
        PyObject *item = PyBytes_FromStringAndSize((const char *)d, 32);
        if (item == NULL)
            goto failed;
        PyTuple_SetItem(digests, i, item);
        if (c->max_period) {
            uint32_t number =
                i == held ? e->tool : *history_tool(c, p->history, ring_at(c, p, held - i));
            PyTuple_SetItem(tools, i, Py_NewRef(t->tool_names[number]));
        }
    }
    for (uint32_t i = 0; c->max_period && i + 1 < c->max_period; i++) {
        PyObject *run = PyLong_FromUnsignedLongLong(p->history ? history_runs(p->history)[i] : 0);
        if (run == NULL)
            goto failed;
        PyTuple_SetItem(runs, i, run);
    }
    PyObject *state = Py_BuildValue(
        "(y#KOOiiLLLiKKiNNN)", (const char *)e->digest, (Py_ssize_t)32,
        (unsigned long long)e->count, call_id, t->tool_names[e->tool], (int)p->flags, (int)p->rule,
        (long long)p->rule_limit, (long long)p->call_limit, (long long)p->warn_at,
        (int)p->period, (unsigned long long)p->repeats, (unsigned long long)p->denials,
        (int)p->window_on, digests, tools, runs);
    Py_DECREF(call_id);
    return state; /* N: the tuples are stolen, even on a failure */
failed:
    Py_XDECREF(digests);
    Py_XDECREF(tools);
    Py_XDECREF(runs);
    Py_XDECREF(call_id);
    return NULL;
}

/* The policy argument of SessionSlots(slot_type, max_sessions, policy): None, or
 * (window_calls, window_max, max_period, cycle_max, stop_after), 0 for a section the
 * policy lacks (stop_after: -1). */
static int policy_config(PyObject *given, PolicyConfig *c)
{
    memset(c, 0, sizeof *c);
    if (given == Py_None)
        return 0;
    int64_t v[5];
    if (!PyTuple_Check(given) || PyTuple_Size(given) != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "policy must be (window_calls, window_max, max_period, cycle_max, "
                        "stop_after)");
        return -1;
    }
    for (Py_ssize_t i = 0; i < 5; i++)
        if (bounded_int(PyTuple_GetItem(given, i), &v[i], "a policy number") < 0)
            return -1;
    if ((v[0] != 0 && (v[0] < 2 || v[0] > POLICY_MAX_WINDOW)) ||
        (v[2] != 0 && (v[2] < 2 || v[2] > POLICY_MAX_PERIOD))) {
        PyErr_SetString(PyExc_ValueError, "window calls or max_period out of the C step's range");
        return -1;
    }
    c->on = 1;
    c->window_calls = (uint32_t)v[0];
    c->window_max = v[1];
    c->max_period = (uint32_t)v[2];
    c->cycle_max = v[3];
    c->has_stop = v[4] >= 0;
    c->stop_after = v[4];
    uint32_t longest = c->window_calls > c->max_period ? c->window_calls : c->max_period;
    c->depth = longest ? longest - 1 : 0;
    c->digests_at = c->max_period ? (size_t)(c->max_period - 1) * sizeof(uint64_t) : 0;
    c->tools_at = c->digests_at + (size_t)c->depth * 32;
    return 0;
}
