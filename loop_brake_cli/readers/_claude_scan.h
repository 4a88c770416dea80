/* scan_claude_lines(data, number): the lines of a Claude Code transcript, read for replay in C.
 *
 * Included by _event_scan.c after its JSON reader (string, value, any_value,
 * separator), whose grammar and canonical form it reuses. What replay reads of a
 * transcript when it wants neither results nor user turns (formats/claude_code.py,
 * analysis/replay_claude.py) is the assistant lines' session, message id, model,
 * four usage figures and tool_use blocks; most bytes are other lines (tool results,
 * prompts) and the assistant's text. ``data`` is one or more lines as
 * reader.Source.bodies gives them (no bytes object per line), and each line is
 * answered by claude_read:
 *
 * - nothing: the line gives no record. Either it has neither the bytes "usage" nor
 *   "tool_use" (quotes included) and the outline of an object (the adapter skips
 *   such a line unparsed), or it is one valid JSON object (as canonical.parse_json
 *   reads it, see any_value) whose "type" is a plain string other than "assistant"
 *   (the adapter reads it and makes nothing of it);
 * - (number, session, turn, model, figures, calls): an assistant line of the common
 *   shape, the same records the adapter makes of it: "sessionId" a string without
 *   escapes, "isSidechain" anything but true, "message" an object whose "id" and
 *   "model" (each absent, or a string without escapes) name the turn and model, whose
 *   "usage" (absent, or an object) has each of its four figures absent, null or a
 *   non-negative integer of at most 15 digits, and whose "content" is an array; turn
 *   and model are None when absent, figures None without usage, else the four (None
 *   when absent or null); calls is one (path, name, call_id, digest) per tool_use block
 *   in order, path "$.message.content[i]", call_id None when it has no "id", digest
 *   sha256(name + "\n" + canonical_json(input)) as scan_event proves it (input an
 *   object inside the reader's subset);
 * - (number, line): anything else (not valid JSON, an escape in a member name or a
 *   value it reads, a duplicate member it reads, a value of another type, more than
 *   CLAUDE_MAX_CALLS calls...): the caller reads the line the adapter's way, which
 *   decides and reports errors as before.
 *
 * Nothing is allocated per line but the answer's objects: the calls are a fixed array,
 * canonical inputs go to the module's out_buf (never longer than the line), and the
 * session and model strings of the last line, the first PATH_SLOTS paths and a few
 * tool names are kept and given again for the same bytes (one transcript is mostly one
 * session, one model, a few tools: their hashes are then already known).
 */

#define CLAUDE_MAX_CALLS 32
/* Usage figures of more digits are declined: canonical.parse_json reads an integer of
 * more than 15 digits as a double (and orjson as the integer), so where the exact parser
 * reads the line the figure could differ. */
#define CLAUDE_FIGURE_DIGITS 15

typedef struct {
    size_t index;   /* in message.content */
    Span name;      /* quotes included */
    Span id;        /* start NULL: no "id" */
    unsigned char digest[32];
} ClaudeCall;

typedef struct {
    int unsure;  /* whatever the line's type, the Python way reads it */
    int odd;     /* an assistant line the Python way reads */
    int assistant;
    Span type, session, turn, model;
    int seen_message, seen_sidechain, seen_usage, seen_content;
    int figure_seen[4];
    long long figures[4]; /* -1: None */
    size_t calls;
    ClaudeCall call[CLAUDE_MAX_CALLS];
} ClaudeLine;

/* A string at r->p (on its quote) with no escape, of strict UTF-8 and no control
 * character: OK with r->p past it, else NO. Only read, never written. */
static int plain_string(Reader *r)
{
    r->p++; /* '"' */
    while (r->p < r->end) {
        r->p = plain_run(r->p, r->end);
        if (r->p >= r->end)
            break;
        unsigned char c = *r->p;
        if (c == '"') {
            r->p++;
            return OK;
        }
        if (c == '\\' || c < 0x20)
            return NO;
        if (c < 0x80) {
            r->p++;
            continue;
        }
        size_t size = utf8_size(r->p, r->end);
        if (size == 0)
            return NO;
        r->p += size;
    }
    return NO;
}

/* A member's name at r->p (on its quote): OK with ``name``/``size`` set (no escape),
 * NEXT for a valid name with an escape (it could spell any name: the caller does not
 * know it), NO when not a string. The name is only read, never written. */
static int member_name(Reader *r, const unsigned char **name, size_t *size)
{
    if (r->p >= r->end || *r->p != '"')
        return NO;
    const unsigned char *start = r->p;
    int got = plain_string(r);
    if (got == OK) {
        *name = start + 1;
        *size = (size_t)(r->p - start) - 2;
    }
    else {
        r->p = start;
        if (any_string(r) != OK)
            return NO;
        got = NEXT;
    }
    skip_space(r);
    if (r->p >= r->end || *r->p != ':')
        return NO;
    r->p++;
    skip_space(r);
    return got;
}

/* A string value without escapes into ``span`` (OK), or any other valid value, read
 * and dropped (NEXT: the caller decides what that means), or NO. */
static int plain_value(Reader *r, Span *span)
{
    if (r->p < r->end && *r->p == '"') {
        const unsigned char *start = r->p;
        if (plain_string(r) == OK) {
            span->start = start;
            span->size = (size_t)(r->p - start);
            return OK;
        }
        r->p = start;
    }
    return any_value(r) == OK ? NEXT : NO;
}

/* One of usage's four figures: a non-negative integer of at most CLAUDE_FIGURE_DIGITS
 * digits (OK, ``*figure`` set), null (OK, -1), else read and dropped (NEXT) or NO. */
static int figure(Reader *r, long long *figure)
{
    const unsigned char *p = r->p, *end = r->end;
    if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
        r->p += 4;
        *figure = -1;
        return OK;
    }
    long long value = 0;
    size_t digits = 0;
    while (p < end && *p >= '0' && *p <= '9' && digits < CLAUDE_FIGURE_DIGITS) {
        value = value * 10 + (*p - '0');
        p++;
        digits++;
    }
    if (digits == 0 || (digits > 1 && *r->p == '0') ||
        (p < end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9'))))
        return any_value(r) == OK ? NEXT : NO;
    r->p = p;
    *figure = value;
    return OK;
}

static const char *const FIGURE_NAMES[4] = {
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
};

/* message.usage (r->p on its '{'): the four figures, every other member dropped. */
static int claude_usage(Reader *r, ClaudeLine *line)
{
    if (++r->depth > MAX_DEPTH)
        return NO;
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        r->depth--;
        return OK;
    }
    for (;;) {
        const unsigned char *name = NULL;
        size_t size = 0;
        int got = member_name(r, &name, &size);
        if (got == NO)
            return NO;
        int which = -1;
        if (got == NEXT)
            line->odd = 1; /* an escaped name could spell a figure's */
        else {
            for (int i = 0; i < 4; i++) {
                if (name_is(name, size, FIGURE_NAMES[i]))
                    which = i;
            }
        }
        if (which >= 0) {
            if (line->figure_seen[which]++)
                line->odd = 1; /* the last one counts there: not worth it */
            got = figure(r, &line->figures[which]);
            if (got == NEXT)
                line->odd = 1;
        }
        else
            got = any_value(r) == OK ? OK : NO;
        if (got == NO)
            return NO;
        got = separator(r, '}');
        if (got == CLOSED)
            break;
        if (got != NEXT)
            return NO;
    }
    r->depth--;
    return OK;
}

/* A content block (r->p on its '{'): a tool_use block's name, id and input digest. */
static int claude_block(Reader *r, ClaudeLine *line, size_t index)
{
    if (++r->depth > MAX_DEPTH)
        return NO;
    r->p++;
    skip_space(r);
    Span type = {NULL, 0}, name = {NULL, 0}, id = {NULL, 0};
    int seen_type = 0, seen_name = 0, seen_id = 0, seen_input = 0, odd = 0;
    int unknown_type = 0; /* a "type" that may be "tool_use" spelled otherwise */
    size_t input_start = 0, input_size = 0;
    int input_ok = 0;
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        r->depth--;
        return OK;
    }
    for (;;) {
        const unsigned char *member = NULL;
        size_t size = 0;
        int got = member_name(r, &member, &size);
        if (got == NO)
            return NO;
        if (got == NEXT) {
            unknown_type = 1; /* could spell "type" */
            got = any_value(r) == OK ? OK : NO;
        }
        else if (name_is(member, size, "type")) {
            if (seen_type++)
                unknown_type = 1;
            got = plain_value(r, &type);
            if (got == NEXT) {
                /* a string with an escape may spell "tool_use"; another value is not one */
                type.start = NULL;
                if (r->p[-1] == '"')
                    unknown_type = 1;
                got = OK;
            }
        }
        else if (name_is(member, size, "name")) {
            if (seen_name++)
                odd = 1;
            got = plain_value(r, &name);
            if (got == NEXT) {
                odd = 1;
                got = OK;
            }
        }
        else if (name_is(member, size, "id")) {
            if (seen_id++)
                odd = 1;
            got = plain_value(r, &id);
            if (got == NEXT) {
                odd = 1;
                got = OK;
            }
        }
        else if (name_is(member, size, "input")) {
            if (seen_input++)
                odd = 1;
            const unsigned char *start = r->p;
            size_t mark = r->out;
            size_t depth = r->depth;
            input_ok = 0;
            if (r->p < r->end && *r->p == '{') {
                r->open_members = 0;
                got = value(r); /* canonical, into out_buf at mark */
                if (got == FAIL)
                    return FAIL;
                if (got == OK) {
                    input_ok = 1;
                    input_start = mark;
                    input_size = r->out - mark;
                }
            }
            if (!input_ok) { /* outside the subset, or not an object: read again, dropped */
                r->p = start;
                r->out = mark;
                r->depth = depth;
                got = any_value(r) == OK ? OK : NO;
            }
        }
        else
            got = any_value(r) == OK ? OK : NO;
        if (got != OK)
            return got;
        got = separator(r, '}');
        if (got == CLOSED)
            break;
        if (got != NEXT)
            return NO;
    }
    r->depth--;
    int tool_use = type.start != NULL && name_is(type.start + 1, type.size - 2, "tool_use");
    if (unknown_type) {
        line->odd = 1;
        return OK;
    }
    if (!tool_use)
        return OK;
    if (odd || !seen_name || !seen_input || !input_ok || line->calls >= CLAUDE_MAX_CALLS) {
        line->odd = 1; /* the Python way says why, or reads it */
        return OK;
    }
    ClaudeCall *call = &line->call[line->calls++];
    call->index = index;
    call->name = name;
    call->id = id;
    Sha256 sha;
    sha_init(&sha);
    sha_update(&sha, name.start + 1, name.size - 2);
    sha_update(&sha, (const unsigned char *)"\n", 1);
    sha_update(&sha, out_buf + input_start, input_size);
    sha_final(&sha, call->digest);
    r->out = input_start; /* the next block's input goes here */
    return OK;
}

/* message.content (r->p on its '['): each object a block, anything else dropped. */
static int claude_content(Reader *r, ClaudeLine *line)
{
    if (++r->depth > MAX_DEPTH)
        return NO;
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        r->depth--;
        return OK;
    }
    for (size_t index = 0;; index++) {
        int got;
        if (r->p < r->end && *r->p == '{')
            got = claude_block(r, line, index);
        else
            got = any_value(r) == OK ? OK : NO;
        if (got != OK)
            return got;
        got = separator(r, ']');
        if (got == CLOSED)
            break;
        if (got != NEXT)
            return NO;
    }
    r->depth--;
    return OK;
}

/* The line's "message" (r->p on its '{'). */
static int claude_message(Reader *r, ClaudeLine *line)
{
    if (++r->depth > MAX_DEPTH)
        return NO;
    r->p++;
    skip_space(r);
    int seen_id = 0, seen_model = 0;
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        r->depth--;
        return OK;
    }
    for (;;) {
        const unsigned char *name = NULL;
        size_t size = 0;
        int got = member_name(r, &name, &size);
        if (got == NO)
            return NO;
        if (got == NEXT) {
            line->odd = 1;
            got = any_value(r) == OK ? OK : NO;
        }
        else if (name_is(name, size, "id") || name_is(name, size, "model")) {
            int is_id = name[0] == 'i';
            if ((is_id ? seen_id++ : seen_model++) != 0)
                line->odd = 1;
            got = plain_value(r, is_id ? &line->turn : &line->model);
            if (got == NEXT) {
                line->odd = 1; /* not a string, or escaped: the Python way reads it */
                got = OK;
            }
        }
        else if (name_is(name, size, "usage")) {
            if (line->seen_usage++)
                line->odd = 1;
            if (r->p < r->end && *r->p == '{')
                got = claude_usage(r, line);
            else {
                line->odd = 1;
                got = any_value(r) == OK ? OK : NO;
            }
        }
        else if (name_is(name, size, "content")) {
            if (line->seen_content++)
                line->odd = 1;
            if (r->p < r->end && *r->p == '[')
                got = claude_content(r, line);
            else {
                line->odd = 1;
                got = any_value(r) == OK ? OK : NO;
            }
        }
        else
            got = any_value(r) == OK ? OK : NO;
        if (got != OK)
            return got;
        got = separator(r, '}');
        if (got == CLOSED)
            break;
        if (got != NEXT)
            return NO;
    }
    r->depth--;
    return OK;
}

/* The whole line: one object, nothing after it but whitespace. */
static int claude_line(Reader *r, ClaudeLine *line)
{
    skip_space(r);
    if (r->p >= r->end || *r->p != '{')
        return NO;
    r->p++;
    r->depth = 1;
    skip_space(r);
    int seen_type = 0, seen_session = 0;
    if (r->p < r->end && *r->p == '}')
        r->p++;
    else {
        for (;;) {
            const unsigned char *name = NULL;
            size_t size = 0;
            int got = member_name(r, &name, &size);
            if (got == NO)
                return NO;
            if (got == NEXT) {
                line->unsure = 1; /* could spell "type" */
                got = any_value(r) == OK ? OK : NO;
            }
            else if (name_is(name, size, "type")) {
                if (seen_type++)
                    line->unsure = 1;
                got = plain_value(r, &line->type);
                if (got == NEXT) {
                    line->unsure = 1;
                    got = OK;
                }
            }
            else if (name_is(name, size, "sessionId")) {
                if (seen_session++)
                    line->odd = 1;
                got = plain_value(r, &line->session);
                if (got == NEXT) {
                    line->odd = 1;
                    got = OK;
                }
            }
            else if (name_is(name, size, "isSidechain")) {
                if (line->seen_sidechain++)
                    line->odd = 1;
                if (r->end - r->p >= 4 && memcmp(r->p, "true", 4) == 0)
                    line->odd = 1; /* a subagent's own session key */
                got = any_value(r) == OK ? OK : NO;
            }
            else if (name_is(name, size, "message")) {
                if (line->seen_message++)
                    line->odd = 1;
                if (r->p < r->end && *r->p == '{')
                    got = claude_message(r, line);
                else {
                    line->odd = 1;
                    got = any_value(r) == OK ? OK : NO;
                }
            }
            else
                got = any_value(r) == OK ? OK : NO;
            if (got != OK)
                return got;
            got = separator(r, '}');
            if (got == CLOSED)
                break;
            if (got != NEXT)
                return NO;
        }
    }
    skip_space(r);
    if (r->p != r->end)
        return NO;
    if (line->unsure || line->type.start == NULL)
        return NO;
    line->assistant = name_is(line->type.start + 1, line->type.size - 2, "assistant");
    if (line->assistant &&
        (line->odd || line->session.start == NULL || !line->seen_message || !line->seen_content))
        return NO;
    return OK;
}

/* Whether the line holds the bytes "usage" or "tool_use" (the adapter's needles). */
static int claude_needles(const unsigned char *p, const unsigned char *end)
{
    while (p < end) {
        const unsigned char *quote = memchr(p, '"', (size_t)(end - p));
        if (quote == NULL)
            return 0;
        size_t left = (size_t)(end - quote) - 1;
        if ((left >= 6 && memcmp(quote + 1, "usage\"", 6) == 0) ||
            (left >= 9 && memcmp(quote + 1, "tool_use\"", 9) == 0))
            return 1;
        p = quote + 1;
    }
    return 0;
}

/* bytes.strip()'s whitespace */
static inline int is_ascii_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c';
}

/* The adapter's outline of one object: first and last non-space bytes '{' and '}'. */
static int claude_outline(const unsigned char *p, const unsigned char *end)
{
    while (p < end && is_ascii_space(*p))
        p++;
    while (end > p && is_ascii_space(end[-1]))
        end--;
    return end - p >= 1 && *p == '{' && end[-1] == '}';
}

/* The text of a span as str; ``cached``: the last one given, reused for equal bytes. */
static PyObject *span_text(const Span *span, PyObject **cached)
{
    if (span->start == NULL)
        Py_RETURN_NONE;
    const char *text = (const char *)span->start + 1;
    Py_ssize_t size = (Py_ssize_t)span->size - 2;
    if (cached != NULL && *cached != NULL) {
        Py_ssize_t known = 0;
        const char *bytes = PyUnicode_AsUTF8AndSize(*cached, &known);
        if (bytes != NULL && known == size && memcmp(bytes, text, (size_t)size) == 0) {
            Py_INCREF(*cached);
            return *cached;
        }
        if (bytes == NULL)
            return NULL;
    }
    PyObject *made = PyUnicode_DecodeUTF8(text, size, "strict");
    if (made != NULL && cached != NULL) {
        Py_XDECREF(*cached);
        Py_INCREF(made);
        *cached = made;
    }
    return made;
}

/* The last session and model given, and a few tool names (by the name's size and
 * first byte): the same str object again for the same bytes, its hash already known. */
#define NAME_SLOTS 64
static PyObject *last_session, *last_model, *names[NAME_SLOTS];

/* "$.message.content[i]", where a call's block is (the adapter's ``_path``): made once
 * for the first PATH_SLOTS places. */
#define PATH_SLOTS 64
static PyObject *paths[PATH_SLOTS];

static PyObject *content_path(size_t index)
{
    if (index < PATH_SLOTS && paths[index] != NULL) {
        Py_INCREF(paths[index]);
        return paths[index];
    }
    PyObject *made = PyUnicode_FromFormat("$.message.content[%zu]", index);
    if (made != NULL && index < PATH_SLOTS) {
        Py_INCREF(made);
        paths[index] = made;
    }
    return made;
}

/* A tuple of ``size`` new references (stolen, also on failure); NULL if one is NULL. */
static PyObject *pack(PyObject **items, Py_ssize_t size)
{
    PyObject *tuple = PyTuple_New(size);
    for (Py_ssize_t i = 0; i < size; i++) {
        if (items[i] == NULL || tuple == NULL) {
            for (Py_ssize_t j = 0; j < size; j++)
                Py_XDECREF(items[j]);
            Py_XDECREF(tuple);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < size; i++)
        PyTuple_SetItem(tuple, i, items[i]); /* steals; cannot fail on a new tuple */
    return tuple;
}

static PyObject *figure_object(long long figure)
{
    if (figure < 0)
        Py_RETURN_NONE;
    return PyLong_FromLongLong(figure);
}

/* (number, session, turn, model, figures, calls) for an assistant line read whole. */
static PyObject *claude_answer(long long number, const ClaudeLine *line)
{
    PyObject *figures, *calls = PyTuple_New((Py_ssize_t)line->calls);
    if (line->seen_usage) {
        PyObject *four[4];
        for (int i = 0; i < 4; i++)
            four[i] = figure_object(line->figures[i]);
        figures = pack(four, 4);
    }
    else {
        figures = Py_None;
        Py_INCREF(figures);
    }
    for (size_t i = 0; calls != NULL && i < line->calls; i++) {
        const ClaudeCall *call = &line->call[i];
        size_t slot = (call->name.size * 31 + call->name.start[1]) % NAME_SLOTS;
        PyObject *item[4] = {
            content_path(call->index),
            span_text(&call->name, &names[slot]),
            span_text(&call->id, NULL),
            PyBytes_FromStringAndSize((const char *)call->digest, 32),
        };
        PyObject *packed = pack(item, 4);
        if (packed == NULL) {
            Py_DECREF(calls);
            calls = NULL;
        }
        else
            PyTuple_SetItem(calls, (Py_ssize_t)i, packed); /* steals */
    }
    PyObject *items[6] = {
        PyLong_FromLongLong(number),
        span_text(&line->session, &last_session),
        span_text(&line->turn, NULL),
        span_text(&line->model, &last_model),
        figures,
        calls,
    };
    return pack(items, 6);
}

/* Outcomes of one line: no record, the caller reads it, read here. */
enum { CLAUDE_SKIP = 0, CLAUDE_DECLINE = 1, CLAUDE_READ = 2 };

static int claude_read(const unsigned char *text, size_t size, ClaudeLine *line)
{
    if (!claude_needles(text, text + size))
        return claude_outline(text, text + size) ? CLAUDE_SKIP : CLAUDE_DECLINE;
    if (reserve(size + 1) < 0)
        return FAIL;
    Reader r = {text, text + size, 0, 0, 0};
    memset(line, 0, offsetof(ClaudeLine, call)); /* the calls are written as found */
    for (int i = 0; i < 4; i++)
        line->figures[i] = -1;
    int got = claude_line(&r, line);
    if (got == FAIL)
        return FAIL;
    if (got != OK)
        return CLAUDE_DECLINE;
    return line->assistant ? CLAUDE_READ : CLAUDE_SKIP;
}

/* JSON whitespace only (reader.py's blank line, skipped but counted) */
static int claude_blank(const unsigned char *p, const unsigned char *end)
{
    for (; p < end; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            return 0;
    }
    return 1;
}

/* scan_claude_lines(data, number) -> (found, next number): the lines of data (split at
 * '\n', numbered from ``number``; each as reader.Source.lines gives it: one CR before
 * its end dropped, a blank line skipped but counted), each answered by claude_read:
 * nothing in ``found`` for a line that gives no record, (number, line) for one the
 * caller reads, (number, session, turn, model, figures, calls) for one read here. */
static PyObject *scan_claude_lines(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "scan_claude_lines() takes bytes and an int");
        return NULL;
    }
    long long number = PyLong_AsLongLong(args[1]);
    if (number == -1 && PyErr_Occurred())
        return NULL;
    const unsigned char *p = (const unsigned char *)PyBytes_AsString(args[0]);
    const unsigned char *end = p + PyBytes_Size(args[0]);
    PyObject *found = PyList_New(0);
    if (found == NULL)
        return NULL;
    static ClaudeLine line; /* the GIL is held throughout */
    for (;; number++) {
        const unsigned char *stop = memchr(p, '\n', (size_t)(end - p));
        const unsigned char *next = stop == NULL ? end : stop + 1;
        if (stop == NULL)
            stop = end;
        if (stop > p && stop[-1] == '\r')
            stop--;
        if (!claude_blank(p, stop)) {
            int got = claude_read(p, (size_t)(stop - p), &line);
            PyObject *item = NULL;
            if (got == FAIL)
                PyErr_NoMemory();
            else if (got == CLAUDE_READ)
                item = claude_answer(number, &line);
            else if (got == CLAUDE_DECLINE) {
                PyObject *two[2] = {
                    PyLong_FromLongLong(number),
                    PyBytes_FromStringAndSize((const char *)p, stop - p),
                };
                item = pack(two, 2);
            }
            if (got != CLAUDE_SKIP) {
                if (item == NULL || PyList_Append(found, item) < 0) {
                    Py_XDECREF(item);
                    Py_DECREF(found);
                    release_large();
                    return NULL;
                }
                Py_DECREF(item);
            }
        }
        if (next >= end)
            break;
        p = next;
    }
    release_large();
    PyObject *pair[2] = {found, PyLong_FromLongLong(number + 1)};
    return pack(pair, 2);
}
